"""The flagship study across seeds: run time, knee regret against many runs pooled, one verdict.

Run: python benchmarks/bench_catalog.py [--seeds 0-9] [--jobs 2] [--reference-factor 10]
                                        [--reference-seed 1000] [--reference-storage URL]
                                        [--out FILE.json] [--keep DIR]

Each seed runs ``studies/catalog.toml`` as shipped (``dse run`` at ``--jobs 2``: the driver and one
worker process) in a process and SQLite file of its own; one *reference* run of the same study on
another seed gets ``--reference-factor`` times the trial budget and runs it to the end (``stop =
"trials"``; ``--reference-storage`` pools one kept from an earlier run instead: 14,400 trials take
about ten minutes). Per seed the table prints:

* wall and CPU seconds of the run (CPU: the run's process and its workers), trials it ran (the
  knee phase stops once its verdict is settled), and the evaluations' **busy share**: seconds
  spent evaluating designs in the worker and in the driver over 2 x the run's wall (``busy``:
  both slots), and apart: the worker process's share of the wall (``worker``: issue 48's
  measure, "the evaluation workers, not the driver, are the busy ones"; it measured 5 % before)
  and the driver's (``driver``: the designs it evaluates itself while it would wait for a
  result; the rest of its time it plans, asks and tells);
* its knee: the top knee candidate's architecture (``[search] knee_keys``) and score (the knee
  utility, ``-sum ln |objective|`` with maximised objectives inverted: one scale for every run,
  whatever its front);
* its **knee regret**: the best knee score of all runs pooled (every seed and the reference run,
  ``dse front --storage ... --storage ...``) minus its own (0.02 is the ambiguity margin: 2 % in
  latency x cost / MFU);
* its verdict (``dse.search.propose.knee.verdict``: clear, ambiguous, not settled) and whether a
  *clear* knee is the pooled front's knee architecture.

Last: how many seeds name the most common knee architecture, and the pooled knee. Targets (issue
48): at most 120 s wall per seed, the evaluation worker busy at least 0.6 of it, regret at most 0.02 on every seed, the
same architecture on at least 9 of 10 seeds or every run ambiguous, no run calling clear a knee
the pooled front does not share.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "catalog.toml"
sys.path.insert(0, str(ROOT / "benchmarks"))
from measure import busy_evaluate  # noqa: E402


def one_run(seed: int, storage: str, jobs: int, trials: int | None, to_the_end: bool) -> dict:
    """Run the study (in this process) and return its figures (the child's side of ``run``)."""
    from dataclasses import replace

    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    cfg = load_study(STUDY, seed=seed, storage=storage, trials=trials)
    if to_the_end:
        cfg = replace(cfg, knee=replace(cfg.knee, stop="trials"))
    with tempfile.TemporaryDirectory(prefix="dse-cat-busy-") as busy:
        t0, c0 = time.perf_counter(), _cpu()
        s = run_study(cfg, jobs=jobs, evaluator=functools.partial(busy_evaluate, busy))
        wall = time.perf_counter() - t0
        by_pid = {p.name: [tuple(map(float, ln.split())) for ln in p.read_text().splitlines()]
                  for p in Path(busy).iterdir()}
        intervals = [iv for ivs in by_pid.values() for iv in ivs]
    return {"seed": seed, "wall_s": wall, "cpu_s": _cpu() - c0, "trials": s.complete, "evaluations": s.evaluations,
            "busy_s": sum(b - a for a, b in intervals), "processes": jobs,
            "driver_busy_s": sum(b - a for a, b in by_pid.get(str(os.getpid()), []))}


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (the run's workers, once stopped)."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def run(seed: int, storage: str, jobs: int, trials: int | None = None, to_the_end: bool = False) -> dict:
    """``one_run`` in a fresh process (its caches, its workers, its CPU counted apart)."""
    arg = json.dumps({"seed": seed, "storage": storage, "jobs": jobs, "trials": trials, "to_the_end": to_the_end})
    out = subprocess.run([sys.executable, __file__, "--child", arg], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def knee(storage: str, seed: int):
    """(top knee candidate's architecture, score, verdict word) of one run."""
    from dse.search.review import quality
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    res = load_results(load_study(STUDY, seed=seed, storage=storage))
    fr, kc = quality.knee_candidates(res)
    v = quality.study_verdict(res, fr, kc)
    top = kc.candidates[0]
    return dict(zip(kc.keys, top.group)), top.score, v.word, v.reason


def pooled(storages: list[str]):
    """(architecture, score) of the pooled front's top knee candidate (``dse front`` pooling)."""
    from dse.search.review import merge, quality
    from dse.search.study.study import load_study
    res, _ = merge.pool(merge.runs_in(load_study(STUDY), storages))
    _, kc = quality.knee_candidates(res)
    top = kc.candidates[0]
    return dict(zip(kc.keys, top.group)), top.score, kc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-9", help="seeds, e.g. 0-9 or 0,3,5 (default 0-9)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--reference-factor", type=int, default=10, help="trial budget of the reference run (x)")
    ap.add_argument("--reference-seed", type=int, default=1000)
    ap.add_argument("--reference-storage", help="pool this reference run (of --reference-seed) instead of running one")
    ap.add_argument("--out", help="write every figure as JSON here")
    ap.add_argument("--keep", help="keep the runs' SQLite files in this folder (default: a temporary one)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        kw = json.loads(a.child)
        print(json.dumps(one_run(kw["seed"], kw["storage"], kw["jobs"], kw["trials"], kw["to_the_end"])))
        return 0
    seeds = _seeds(a.seeds)
    rev = subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "unknown"
    print(f"bench_catalog at commit {rev}: seeds {a.seeds}, --jobs {a.jobs}, load {os.getloadavg()[0]:.1f}", flush=True)
    folder = Path(a.keep or tempfile.mkdtemp(prefix="dse-bench-catalog-"))
    folder.mkdir(parents=True, exist_ok=True)
    from dse.search.study.study import load_study
    base_trials = load_study(STUDY).trials
    rows = []
    for s in seeds:
        url = f"sqlite:///{folder / f'seed{s}.db'}"
        r = run(s, url, a.jobs)
        r["architecture"], r["score"], r["verdict"], r["reason"] = knee(url, s)
        r["storage"] = url
        rows.append(r)
        print(f"seed {s}: {r['wall_s']:.1f} s wall, {r['trials']} trials, knee {r['architecture']} "
              f"score {r['score']:.4f}, {r['verdict']}", flush=True)
    ref = None
    if a.reference_storage:
        from dse.search.study.results import load_results
        url = a.reference_storage
        n = len(load_results(load_study(STUDY, seed=a.reference_seed, storage=url)).records)
        ref = {"seed": a.reference_seed, "trials": n, "wall_s": float("nan"), "storage": url}
        ref["architecture"], ref["score"], ref["verdict"], ref["reason"] = knee(url, a.reference_seed)
        print(f"reference (seed {a.reference_seed}, {n} trials, kept): knee {ref['architecture']} "
              f"score {ref['score']:.4f}, {ref['verdict']}", flush=True)
    elif a.reference_factor > 0:
        url = f"sqlite:///{folder / f'reference{a.reference_seed}.db'}"
        ref = run(a.reference_seed, url, a.jobs, base_trials * a.reference_factor, to_the_end=True)
        ref["architecture"], ref["score"], ref["verdict"], ref["reason"] = knee(url, a.reference_seed)
        ref["storage"] = url
        print(f"reference (seed {a.reference_seed}, {ref['trials']} trials): {ref['wall_s']:.1f} s wall, knee "
              f"{ref['architecture']} score {ref['score']:.4f}, {ref['verdict']}", flush=True)
    arch, best, kc = pooled([r["storage"] for r in rows] + ([ref["storage"]] if ref else []))
    print(table(rows, arch, best))
    summary = summarise(rows, arch, best, kc)
    for line in summary["lines"]:
        print(line)
    if a.out:
        out = {"commit": rev, "runs": rows, "reference": ref, "pooled": {"architecture": arch, "score": best},
               "summary": summary}
        Path(a.out).write_text(json.dumps(out, indent=1, default=str))
    return 0


def _span(xs: list[str]) -> str:
    """``lo-hi`` of figures printed as text (``-`` where none)."""
    v = sorted(float(x) for x in xs if x != "-")
    return f"{v[0]:.2f}-{v[-1]:.2f}" if v else "-"


def _seeds(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def table(rows: list[dict], arch: dict, best: float) -> str:
    from dse.report import table as fmt_table
    body = [[r["seed"], f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}", r["trials"],
             f"{r['busy_s'] / (r['processes'] * r['wall_s']):.2f}", *_apart(r),
             "/".join(str(v) for v in r["architecture"].values()), f"{r['score']:.4f}", f"{best - r['score']:.4f}",
             r["verdict"], "yes" if r["architecture"] == arch else "no"] for r in rows]
    return fmt_table(body, ["seed", "wall s", "CPU s", "trials", "busy", "worker", "driver", "knee", "score",
                            "regret", "verdict", "pooled knee's"], align="rrrrrrrlrrll")


def _apart(r: dict) -> list[str]:
    """The worker processes' busy share of the wall and the driver's (``one_run``)."""
    if "driver_busy_s" not in r:
        return ["-", "-"]
    workers = max(1, r["processes"] - 1)
    w = (r["busy_s"] - r["driver_busy_s"]) / (workers * r["wall_s"])
    return [f"{w:.2f}", f"{r['driver_busy_s'] / r['wall_s']:.2f}"]


def summarise(rows: list[dict], arch: dict, best: float, kc) -> dict:
    """The issue's measures over the seeds (module docstring)."""
    from collections import Counter
    regret = [best - r["score"] for r in rows]
    names = Counter(tuple(r["architecture"].items()) for r in rows)
    common, n_common = names.most_common(1)[0]
    wrong_clear = [r["seed"] for r in rows if r["verdict"] == "clear" and r["architecture"] != arch]
    busy = [r["busy_s"] / (r["processes"] * r["wall_s"]) for r in rows]
    lines = [
        f"pooled knee: {arch} score {best:.4f} ({'ambiguous' if kc.ambiguous else 'clear'} by {kc.margin:.3f})",
        f"wall: {min(r['wall_s'] for r in rows):.1f}-{max(r['wall_s'] for r in rows):.1f} s (target <= 120 s)",
        f"evaluation worker busy: {_span([_apart(r)[0] for r in rows])} of the wall (target >= 0.6: the issue's "
        f"measure, the worker process, not the driver); both slots: {min(busy):.2f}-{max(busy):.2f} (the driver's "
        f"own evaluations {_span([_apart(r)[1] for r in rows])} of the wall)",
        f"knee regret: mean {sum(regret) / len(regret):.4f}, worst {max(regret):.4f}; "
        f"{sum(x <= 0.02 for x in regret)} of {len(rows)} seeds within 0.02",
        f"most common knee architecture: {dict(common)} on {n_common} of {len(rows)} seeds; "
        f"verdicts: {dict(Counter(r['verdict'] for r in rows))}",
        f"runs calling clear a knee the pooled front does not share: {wrong_clear or 'none'}",
    ]
    return {"lines": lines, "regret": regret, "busy": busy, "same_architecture": n_common,
            "wrong_clear": wrong_clear}


if __name__ == "__main__":
    raise SystemExit(main())
