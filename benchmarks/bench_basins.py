"""How many knobs apart a run's knee is from the best design of its architecture in many runs pooled.

Run: python benchmarks/bench_basins.py --runs DIR [--seeds 0-9] [--reference-storage URL]
                                       [--reference-seed 1000] [--exact-max 12]

``DIR`` holds the runs of ``studies/catalog.toml`` that ``bench_catalog.py --keep DIR`` kept
(``seed{S}.db``). For each seed: the run's best design by knee score (``-sum ln |objective|``,
maximised objectives inverted: ``bench_catalog.py``'s score), and the best design of the *same
architecture* (``[search] knee_keys``) in every run given pooled (the seeds and the reference run).
Every subset of the knobs in which the two differ is moved to the pooled design's values and
evaluated on the trace as the study evaluates a trial (``evaluate_design``, scored by the study's
objectives and constraints; a hybrid that is no design counts as infeasible; all subsets up to
``--exact-max`` knobs apart, else subsets of up to three knobs and all of them). Per seed the table
prints the knobs apart, the gap in knee score, the best gain of a feasible hybrid moving one, two
and three knobs, and the fewest knobs that close half the gap.

What it tells (issue 48): when no single knob moved towards the pooled design improves the run's
knee and the gap closes only with many knobs at once, the run ended in another basin of the
inner knobs (a local optimum of one- and two-knob moves), not short of trials in the same one.
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "catalog.toml"
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_catalog import _seeds  # noqa: E402


def knee_score(values: list[float], directions: tuple[str, ...]) -> float:
    """``-sum ln |f|`` with maximised objectives inverted (every catalog objective is positive)."""
    return -sum(math.log(abs(v)) * (1 if d == "minimize" else -1) for v, d in zip(values, directions))


def best_by_architecture(records: list, keys: tuple[str, ...], directions: tuple[str, ...]) -> dict:
    """{architecture: (score, params)} of the feasible records' best design per architecture."""
    out: dict[tuple, tuple[float, dict]] = {}
    for r in records:
        if not r.feasible or not r.values:
            continue
        g = tuple(r.params.get(k) for k in keys)
        s = knee_score(r.values, directions)
        if s > out.get(g, (-math.inf,))[0]:
            out[g] = (s, dict(r.params))
    return out


def hybrids(cfg: Any, a: dict, b: dict, exact_max: int) -> tuple[list[str], dict[tuple, float | None]]:
    """(knobs in which ``a`` and ``b`` differ, {subset moved to ``b``'s values: knee score or None
    where infeasible}) over the subsets of the module docstring."""
    from dse.errors import ConfigError
    from dse.search.execute.evaluation import evaluate_design
    from dse.search.space.objectives import score
    differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    n = len(differ)
    sizes = range(1, n + 1) if n <= exact_max else sorted({r for r in (1, 2, 3, n) if r <= n})
    dirs = tuple(cfg.objectives.directions)
    out: dict[tuple, float | None] = {}
    for r in sizes:
        for sub in itertools.combinations(differ, r):
            q = {k: v for k, v in {**a, **{k: b.get(k) for k in sub}}.items() if v is not None}
            try:
                sc = score(evaluate_design(cfg.design(q), cfg.models), cfg.objectives)
            except (ConfigError, ValueError):      # a hybrid that is no design (a knob's bound broken)
                out[sub] = None
                continue
            out[sub] = knee_score(sc.values, dirs) if sc.feasible else None
    return differ, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", required=True, help="folder of bench_catalog.py --keep (seed{S}.db)")
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--reference-storage", help="pool this run too (the kept 10x reference run)")
    ap.add_argument("--reference-seed", type=int, default=1000)
    ap.add_argument("--exact-max", type=int, default=12, help="every subset up to this many knobs apart")
    a = ap.parse_args(argv)
    from dse.report import table
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    seeds = _seeds(a.seeds)
    runs = {s: f"sqlite:///{Path(a.runs).resolve() / f'seed{s}.db'}" for s in seeds}
    missing = [s for s in seeds if not (Path(a.runs) / f"seed{s}.db").exists()]
    if missing:
        print(f"bench_basins: no seed{missing[0]}.db in {a.runs} (run bench_catalog.py --keep {a.runs})",
              file=sys.stderr)
        return 2
    from dse.search.review.quality import knee_keys
    results = {s: load_results(load_study(STUDY, seed=s, storage=u)) for s, u in runs.items()}
    first = next(iter(results.values()))
    keys, dirs = knee_keys(first), tuple(first.cfg.objectives.directions)
    per_run = {s: best_by_architecture(res.records, keys, dirs) for s, res in results.items()}
    pooled: dict[tuple, tuple[float, dict]] = {}
    sources = list(per_run.values())
    if a.reference_storage:
        ref = load_study(STUDY, seed=a.reference_seed, storage=a.reference_storage)
        sources.append(best_by_architecture(load_results(ref).records, keys, dirs))
    for best in sources:
        for g, v in best.items():
            if v[0] > pooled.get(g, (-math.inf,))[0]:
                pooled[g] = v
    body = []
    for s in seeds:
        g = max(per_run[s], key=lambda x: per_run[s][x][0])
        own, p = per_run[s][g]
        top, q = pooled[g]
        differ, got = hybrids(results[s].cfg, p, q, a.exact_max)
        gain = {r: max((v - own for sub, v in got.items() if len(sub) == r and v is not None), default=None)
                for r in (1, 2, 3)}
        half = next((len(sub) for sub, v in sorted(got.items(), key=lambda x: len(x[0]))
                     if v is not None and v - own >= (top - own) / 2 and top > own), None)
        body.append([s, "/".join(str(v) for v in g), f"{own:.3f}", f"{top - own:.3f}", len(differ),
                     *[("-" if gain[r] is None else f"{gain[r]:+.3f}") for r in (1, 2, 3)],
                     "-" if half is None else half])
        print(f"seed {s}: {len(got)} hybrids of {len(differ)} knobs evaluated", file=sys.stderr, flush=True)
    print(table(body, ["seed", "knee architecture", "score", "gap", "knobs apart", "best 1", "best 2", "best 3",
                       "knobs for half"], align="rlrrrrrrr"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
