"""Multi-fidelity search against the plain study: trace-driven evaluations and hypervolume.

Run: python benchmarks/bench_fidelity.py [--trials 480] [--seeds 0,1] [--budget]   (README: seeds 0-4, --budget)

For each seed, ``studies/full.toml`` (plain) and ``studies/full-multifidelity.toml`` (the same
study with ``[search] fidelity = "multi"``) run at the same trial budget, in this process (one
core), each in a fresh SQLite file. Per seed the table gives, for each run: trials, trace-driven
evaluations (distinct designs evaluated on the trace), screened trials, repeated designs, the
size of its feasible front, its
hypervolume on the common reference of the seed (the union of both runs' feasible fronts: its
ideal and nadir normalise every objective to [0, 1], reference point 1.1) as a share of the union
front's, and the ratios multi / plain.

``oracle`` is a diagnostic of the plain run: the evaluations that even a perfect screen (one that
knew every trace-driven value in advance) would have spent on its trajectory, i.e. the feasible
designs that were not weakly dominated by the front of the trials before their batch (the first
evaluation of each design). No bound-based screen of proposals can go below it at the same trials.

``--budget``: also runs the multi-fidelity study until it has spent one third of the plain run's
trace-driven evaluations (at most 3x the trials): the variant that counts trace-driven evaluations
instead of trials.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PLAIN, MULTI = ROOT / "studies" / "full.toml", ROOT / "studies" / "full-multifidelity.toml"


def run(study: Path, seed: int, trials: int, tmp: Path, max_evaluations: int | None = None):
    """(config, run summary, seconds) of one fresh run."""
    from dse.search.runner import run_study
    from dse.search.study import load_study
    cfg = load_study(study, seed=seed, trials=trials, storage=f"sqlite:///{tmp / f'{study.stem}-{seed}-{trials}.db'}")
    t0 = time.perf_counter()
    s = run_study(cfg, max_evaluations=max_evaluations)
    return cfg, s, time.perf_counter() - t0


def oracle_evaluations(cfg) -> int:
    """Evaluations a perfect screen would still spend on the plain run's trajectory (see above)."""
    from dse.search import pareto
    from dse.search.results import load_results
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
    from dse.search.results import load_results
    return [(lambda r: r.F(r.front()))(load_results(c)) for c in cfgs]


def hypervolume_shares(Fs: list[np.ndarray]) -> list[float]:
    """Each front's HV as a share of the union front's, normalised on the union front."""
    from dse.search import pareto
    U = np.vstack([F for F in Fs if len(F)])
    U = U[pareto.nondominated(U)]
    lo, hi = U.min(axis=0), U.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    ref = np.full(U.shape[1], 1.1)
    total = pareto.hypervolume((U - lo) / span, ref)
    return [pareto.hypervolume((F - lo) / span, ref) / total if len(F) else 0.0 for F in Fs]


def one_seed(seed: int, trials: int, tmp: Path, budget: bool) -> list[tuple]:
    rows = []
    plain = run(PLAIN, seed, trials, tmp)
    multi = run(MULTI, seed, trials, tmp)
    runs = [("plain", *plain), ("multi", *multi)]
    if budget:
        cap = math.ceil(plain[1].evaluations / 3)
        runs.append(("multi, 1/3 evals", *run(MULTI, seed, 3 * trials, tmp, max_evaluations=cap)))
    Fs = fronts([c for _, c, _, _ in runs])
    shares = hypervolume_shares(Fs)
    base_eval, base_hv = plain[1].evaluations, shares[0]
    for (tag, cfg, s, dt), hv, F in zip(runs, shares, Fs):
        rows.append((seed, tag, s.complete, s.evaluations, s.screened, s.duplicates, len(F), hv,
                     s.evaluations / base_eval, hv / base_hv if base_hv else math.nan, dt))
    need = oracle_evaluations(plain[0])
    rows.append((seed, "oracle (plain)", plain[1].complete, need, 0, 0, 0, math.nan, need / base_eval, math.nan, 0.0))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=480)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--budget", action="store_true", help="also the run limited to 1/3 of the evaluations")
    a = ap.parse_args()
    from dse.search.storage import quiet_optuna
    head = (f"{'seed':>4s} {'run':18s} {'trials':>6s} {'trace evals':>11s} {'screened':>8s} {'repeats':>7s} "
            f"{'front':>5s} {'HV share':>8s} {'evals ratio':>11s} {'HV ratio':>8s} {'time s':>7s}")
    print(f"bench_fidelity: {PLAIN.name} vs {MULTI.name}, {a.trials} trials, seeds {a.seeds}")
    print(head, flush=True)
    with tempfile.TemporaryDirectory() as d, quiet_optuna():
        for seed in (int(x) for x in a.seeds.split(",")):
            for r in one_seed(seed, a.trials, Path(d), a.budget):
                print(f"{r[0]:4d} {r[1]:18s} {r[2]:6d} {r[3]:11d} {r[4]:8d} {r[5]:7d} {r[6]:5d} {r[7]:8.3f} "
                      f"{r[8]:11.3f} {r[9]:8.3f} {r[10]:7.1f}", flush=True)


if __name__ == "__main__":
    main()
