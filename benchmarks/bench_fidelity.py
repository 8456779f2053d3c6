"""Multi-fidelity search against the plain study: trace-driven evaluations and hypervolume.

Run: python benchmarks/bench_fidelity.py [--seeds 0,1] [--trials N] [--budget]   (README: seeds 0-4)

For each seed, in this process (one core), each in a fresh SQLite file, at each study file's own
trial budget unless ``--trials`` sets the plain runs':

* ``plain tpe``: ``studies/full.toml`` with the single-fidelity sampler TPE (optuna defaults,
  constant liar within a batch: the choice shipped before the guided sampler);
* ``plain nsga2``: the same with NSGA-II, population 24 (as ``studies/full.toml`` shipped it when
  the target was set; optuna's other defaults);
* ``plain guided``: ``studies/full.toml`` as shipped (the closed-form-guided sampler: itself a
  multi-fidelity search, every proposal picked on the closed form);
* ``multi``: ``studies/full-multifidelity.toml`` (``[search] fidelity = "multi"``: the
  closed-form-guided sampler, whose proposals the closed-form screen then checks again);
* ``guided, N trials`` (when the shipped sampler is guided): ``studies/full.toml`` as shipped,
  stopped at the multi-fidelity study's trials: what the screen adds to a sampler that already
  picks every design on the closed form, at the same number of trace-driven evaluations (not a
  plain run of the target: printed with its own verdict line).

Per run: trials, trace-driven evaluations (distinct designs evaluated on the trace), screened
trials, repeated designs, the size of its feasible front, its hypervolume on the common reference
of the seed (the union of the seed's runs' feasible fronts: its ideal and nadir normalise every
objective to [0, 1], reference point 1.1) as a share of the union front's, and the ratios of
evaluations and hypervolume to ``plain tpe``. Each seed ends with the verdicts of every multi run
against every plain run: multi spends <= 1/3 of its trace-driven evaluations with the same or
better hypervolume. The last lines say on how many seeds that holds against the shipped plain
study (the target) and against each single-fidelity plain study (with ``--budget``, for the
budgeted run).

``oracle`` is a diagnostic of the plain TPE run: the evaluations that even a perfect screen (one
that knew every trace-driven value in advance) would have spent on its trajectory, i.e. the
feasible designs that were not weakly dominated by the front of the trials before their batch
(the first evaluation of each design). No screen of TPE's proposals can go below it.

``--estimator``: how well the closed form predicts the trace-driven values, the ceiling of any
screen or pick made on it. On seed 0's shipped plain run, the guided sampler's regression
(``dse.search.propose.bound.estimate.Estimator``) is fitted on the first N evaluated designs and predicts the
designs evaluated after trial 240: RMS of log(trace-driven value / estimate) per objective,
beside the same error of the bound alone, for N = 48, 96, 156 and 240.

``--budget``: also runs the multi-fidelity study until it has spent one third of the fewest
trace-driven evaluations of the single-fidelity plain runs (at most 3x their trials): ``multi,
1/3 budget``.

``--cache DIR``: keeps each plain run's summary, front and oracle count in ``DIR`` (one JSON file
per seed, run and trial budget, keyed by a hash of ``studies/full.toml``) and reuses them: the
plain runs do not change when only the multi-fidelity study's settings do. ``--multi STUDY``:
another multi-fidelity study file in place of ``studies/full-multifidelity.toml`` (a variant
being measured).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PLAIN, MULTI = ROOT / "studies" / "full.toml", ROOT / "studies" / "full-multifidelity.toml"


# single-fidelity plain runs and their settings: TPE (optuna defaults), and NSGA-II as
# studies/full.toml shipped it when the target was set (population 24)
SINGLE = {"tpe": {}, "nsga2": {"population_size": 24}}


def label(sampler: str | None) -> str:
    """A plain run's sampler with its settings, for file names."""
    return (sampler or "shipped") + "".join(f"-{k}{v}" for k, v in SINGLE.get(sampler or "", {}).items())


def run(study: Path, seed: int, trials: int | None, tmp: Path, max_evaluations: int | None = None,
        sampler: str | None = None):
    """(config, run summary, seconds) of one fresh run (``sampler``: replaces the study's, with
    its settings in ``SINGLE``, else optuna's defaults)."""
    from dataclasses import replace

    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    tag = f"{study.stem}-{label(sampler)}-{seed}-{trials}-{max_evaluations}"
    cfg = load_study(study, seed=seed, trials=trials, storage=f"sqlite:///{tmp / (tag + '.db')}")
    if sampler is not None:
        cfg = replace(cfg, sampler=sampler, sampler_settings=dict(SINGLE.get(sampler, {})))
    t0 = time.perf_counter()
    s = run_study(cfg, max_evaluations=max_evaluations)
    return cfg, s, time.perf_counter() - t0


def cached_run(study: Path, seed: int, trials: int | None, tmp: Path, cache: Path | None,
               sampler: str | None = None, oracle: bool = False) -> tuple:
    """(summary dict, front, seconds, oracle evaluations or None) of a plain run, from ``cache``
    when it holds one for the same study file, seed, trials and sampler."""
    key = hashlib.sha256(study.read_bytes()).hexdigest()[:12]
    path = cache / f"{study.stem}-{label(sampler)}-{seed}-{trials}-{key}.json" if cache else None
    if path is not None and path.exists():
        d = json.loads(path.read_text())
        return d["summary"], np.array(d["front"], dtype=float).reshape(-1, d["m"]), d["seconds"], d["oracle"]
    cfg, s, dt = run(study, seed, trials, tmp, sampler=sampler)
    F = fronts([cfg])[0]
    summ = {k: getattr(s, k) for k in ("complete", "evaluations", "screened", "duplicates")}
    need = oracle_evaluations(cfg) if oracle else None
    if path is not None:
        cache.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"summary": summ, "front": F.tolist(), "m": F.shape[1], "seconds": dt,
                                    "oracle": need}))
    return summ, F, dt, need


def oracle_evaluations(cfg) -> int:
    """Evaluations a perfect screen would still spend on the plain run's trajectory (see above)."""
    from dse.search.study.results import load_results
    res = load_results(cfg)
    recs = sorted(res.complete, key=lambda r: r.number)
    need = 0
    for r in recs:
        if r.duplicate_of is not None or not r.feasible or r.values is None:
            continue
        start = r.number - r.number % cfg.batch
        before = [x for x in res.candidates() if x.number < start]
        F, v = res.F(before), res.F([r])[0]
        need += not (len(F) and bool((F <= v).all(axis=1).any()))
    return need


def fronts(cfgs) -> list[np.ndarray]:
    """Each run's feasible front (minimisation array)."""
    from dse.search.study.results import load_results
    return [(lambda r: r.F(r.front()))(load_results(c)) for c in cfgs]


def hypervolume_shares(Fs: list[np.ndarray]) -> list[float]:
    """Each front's HV as a share of the union front's, normalised on the union front."""
    from dse.search.front import pareto
    U = np.vstack([F for F in Fs if len(F)])
    U = U[pareto.nondominated(U)]
    lo, hi = U.min(axis=0), U.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    ref = np.full(U.shape[1], 1.1)
    total = pareto.hypervolume((U - lo) / span, ref)
    return [pareto.hypervolume((F - lo) / span, ref) / total if len(F) else 0.0 for F in Fs]


def one_seed(seed: int, trials: int | None, tmp: Path, budget: bool, cache: Path | None = None,
             multi: Path = MULTI) -> tuple[list[tuple], list[tuple]]:
    """The seed's table rows and verdicts ((plain run, multi run, met, line) each)."""
    from types import SimpleNamespace as NS

    from dse.search.study.study import load_study
    runs, need = [], 0
    for sampler in SINGLE:
        summ, F, dt, n = cached_run(PLAIN, seed, trials, tmp, cache, sampler=sampler, oracle=sampler == "tpe")
        runs.append((f"plain {sampler}", NS(**summ), dt, F))
        need = n if sampler == "tpe" else need
    shipped = load_study(PLAIN)
    if shipped.sampler not in SINGLE or dict(shipped.sampler_settings):
        s2, F2, dt2, _ = cached_run(PLAIN, seed, trials, tmp, cache)
        runs.append((f"plain {shipped.sampler}", NS(**s2), dt2, F2))
    cfg, s, dt = run(multi, seed, None, tmp)
    runs.append(("multi", s, dt, fronts([cfg])[0]))
    if shipped.sampler == "guided":       # the shipped sampler stopped at the multi study's trials
        n = load_study(multi).trials
        s3, F3, dt3, _ = cached_run(PLAIN, seed, n, tmp, cache)
        runs.append((f"guided, {n} trials", NS(**s3), dt3, F3))
    if budget:                    # 1/3 of the fewest evaluations of a single-fidelity plain run
        cap = min(r[1].evaluations for r in runs[:len(SINGLE)]) // 3
        multi_trials = load_study(multi).trials
        cfg, s, dt = run(multi, seed, 3 * max(multi_trials, runs[0][1].complete), tmp, max_evaluations=cap)
        runs.append(("multi, 1/3 budget", s, dt, fronts([cfg])[0]))
    shares = hypervolume_shares([F for *_, F in runs])
    base_eval, base_hv = runs[0][1].evaluations, shares[0]
    rows = []
    for (tag, s, dt, F), hv in zip(runs, shares):
        rows.append((seed, tag, s.complete, s.evaluations, s.screened, s.duplicates, len(F), hv,
                     s.evaluations / base_eval, hv / base_hv if base_hv else math.nan, dt))
    rows.append((seed, "oracle (plain tpe)", runs[0][1].complete, need, 0, 0, 0, math.nan, need / base_eval,
                 math.nan, 0.0))
    verdicts = []
    for g in (r for r in rows if r[1].startswith("guided, ")):
        m = next(r for r in rows if r[1] == "multi")
        verdicts.append((g[1], "multi", None,
                         f"seed {seed}: multi vs {g[1]} (the shipped sampler at the same trials, for information): "
                         f"{m[3] / g[3]:.3f} of its trace-driven evaluations, hypervolume x "
                         f"{m[7] / g[7] if g[7] else math.inf:.3f}"))
    for m in (r for r in rows if r[1].startswith("multi")):
        for r in (r for r in rows if r[1].startswith("plain")):
            ok = m[3] * 3 <= r[3] and m[7] >= r[7]
            verdicts.append((r[1], m[1], ok,
                             f"seed {seed}: {m[1]} vs {r[1]}: {m[3] / r[3]:.3f} of its trace-driven evaluations "
                             f"(<= 1/3: {m[3] * 3 <= r[3]}), hypervolume x {m[7] / r[7] if r[7] else math.inf:.3f} "
                             f"(same or better: {m[7] >= r[7]})"))
    return rows, verdicts


def estimator_error(tmp: Path, sizes=(48, 96, 156, 240), test_from: int = 240) -> None:
    """``--estimator`` (module docstring): held-out error of the closed-form estimates."""
    from dse.search.execute.runner import run_study
    from dse.search.front import pareto
    from dse.search.propose.bound.estimate import BoundMemo, Estimator
    from dse.search.propose.sample.guided import DEFAULTS, Evaluated
    from dse.search.storage.storage import open_study
    from dse.search.study.study import load_study
    cfg = load_study(PLAIN, seed=0, storage=f"sqlite:///{tmp / 'estimator.db'}")
    run_study(cfg)
    study, _ = open_study(cfg, create=False)
    trials = study.get_trials(deepcopy=False)
    s = {**DEFAULTS, **cfg.sampler_settings}
    test = Evaluated(cfg, [t for t in trials if t.number >= test_from])
    memo = BoundMemo()
    B, _, H = memo.arrays(cfg, test.designs)
    keep = test.feasible
    names = [o.name for o in cfg.objectives.objectives]
    with np.errstate(all="ignore"):
        bound_err = np.sqrt(np.nanmean(np.log(np.abs(test.values[keep]) / np.abs(B[keep])) ** 2, axis=0))
    print(f"estimator (seed 0, {PLAIN.name} as shipped, {len(trials)} trials): RMS of log(trace-driven value / "
          f"estimate) over the {int(keep.sum())} feasible designs evaluated from trial {test_from} on")
    w = max(len(n) for n in names)
    print(f"{'fitted on':>10s} " + " ".join(f"{n:>{w}s}" for n in names))
    print(f"{'bound only':>10s} " + " ".join(f"{v:{w}.3f}" for v in bound_err))
    for n in sizes:
        ev = Evaluated(cfg, [t for t in trials if t.number < n])
        est = Estimator(cfg, ev, float(s["ridge"]), bool(s["logistic"]), memo)
        E, _ = est(list(test.params), B, H)
        T = pareto.to_min(test.values, cfg.objectives.directions)
        err = np.sqrt(np.mean(np.log(np.abs(T[keep]) / np.abs(E[keep])) ** 2, axis=0))
        print(f"{n:>10d} " + " ".join(f"{v:{w}.3f}" for v in err))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=None, help="trials of the plain runs (default: the study's)")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--budget", action="store_true", help="also the run limited to 1/3 of the evaluations")
    ap.add_argument("--cache", type=Path, default=None, help="keep and reuse the plain runs' results here")
    ap.add_argument("--multi", type=Path, default=MULTI, help="the multi-fidelity study file to measure")
    ap.add_argument("--estimator", action="store_true", help="also the closed form's held-out error (see above)")
    a = ap.parse_args()
    from dse.search.storage.storage import quiet_optuna
    head = (f"{'seed':>4s} {'run':18s} {'trials':>6s} {'trace evals':>11s} {'screened':>8s} {'repeats':>7s} "
            f"{'front':>5s} {'HV share':>8s} {'evals/tpe':>11s} {'HV/tpe':>8s} {'time s':>7s}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_fidelity: {PLAIN.name} vs {a.multi.name}, seeds {a.seeds}; {os.cpu_count()} cores, "
          f"load average {load:.2f} at start")
    print(head, flush=True)
    verdicts = []
    with tempfile.TemporaryDirectory() as d, quiet_optuna():
        for seed in (int(x) for x in a.seeds.split(",")):
            rows, said = one_seed(seed, a.trials, Path(d), a.budget, a.cache, a.multi.resolve())
            verdicts += said
            for r in rows:
                print(f"{r[0]:4d} {r[1]:18s} {r[2]:6d} {r[3]:11d} {r[4]:8d} {r[5]:7d} {r[6]:5d} {r[7]:8.3f} "
                      f"{r[8]:11.3f} {r[9]:8.3f} {r[10]:7.1f}", flush=True)
    for *_, line in verdicts:
        print(line)
    if a.estimator:
        with tempfile.TemporaryDirectory() as d, quiet_optuna():
            estimator_error(Path(d))
    from dse.search.study.study import load_study
    shipped = load_study(PLAIN).sampler
    summary(verdicts, f"plain {shipped}", "multi", "the shipped plain study")
    if shipped not in SINGLE:
        best = "multi, 1/3 budget" if a.budget else "multi"
        for sampler in SINGLE:
            summary(verdicts, f"plain {sampler}", best, "a single-fidelity plain study")


def summary(verdicts: list[tuple], plain: str, multi: str, what: str) -> None:
    """The verdict line of ``multi`` against ``plain`` over the seeds."""
    mine = [ok for p, m, ok, _ in verdicts if p == plain and m == multi and ok is not None]
    print(f"against {what} ({plain}), {multi}: <= 1/3 of its trace-driven evaluations with the same or better "
          f"hypervolume on {sum(mine)} of {len(mine)} seeds: {'MET' if mine and all(mine) else 'NOT MET'}")


if __name__ == "__main__":
    main()
