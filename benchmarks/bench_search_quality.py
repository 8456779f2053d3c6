"""Search quality of the shipped sampler choices against NSGA-II, TPE and random search.

Run: python benchmarks/bench_search_quality.py [--quick] [--only grid,truth,full]

Three tables, each measured in one run (hypervolume, HV, always of a run's feasible front;
objectives normalised between the ideal and the nadir of the reference front, reference point
1.1 in every objective):

1. ``grid``: the quickstart study (``studies/quickstart.toml``: its space, objectives and
   sampler as shipped) against the exhaustive front of its grid (252 points since issue 51, 700
   before), with 10 % of the grid's evaluations (distinct designs evaluated; a repeated proposal costs none), 5 seeds.
   Target: mean >= 98 %, worst >= 96 %.
2. ``truth``: ``studies/ground-truth.toml`` (the 100,800-point ``spaces/ground-truth.toml``,
   closed form) against its exact front, computed by exhaustive evaluation (the scalar path),
   with 1 % of the points' evaluations.
   Target: >= 95 %, and ahead of random search at the same budget on every seed.
3. ``full``: ``studies/full.toml`` as shipped against NSGA-II (population 24), TPE (optuna
   defaults, constant liar within a batch: the choice shipped before the guided sampler),
   multivariate TPE without constant liar, random search and the closed-form-guided sampler
   (``dse.search.propose.sample.guided``, its defaults) at the same trial budget (a baseline equal to the
   shipped choice is not run twice), 3 seeds each; each run's HV as a share of the HV of the
   union front of all runs. Target: the shipped sampler >= 0.95 on every seed.

``--quick``: 3 seeds for grid / truth, 2 for full at half its trials (a smoke run, not the
reported figures). Evaluations run in this process (one core).
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BASELINES = [("nsga2", {"population_size": 24}), ("tpe", {}), ("tpe", {"multivariate": True, "constant_liar": False}),
             ("random", {}), ("guided", {})]


def _variant(cfg, tmp: Path, sampler: str | None, settings: dict | None, seed: int, trials: int | None = None):
    """The study with another sampler / seed, in its own fresh SQLite file."""
    sampler = sampler or cfg.sampler
    settings = dict(cfg.sampler_settings if settings is None else settings)
    name = f"{cfg.base_name}-{sampler}-{seed}-{len(list(tmp.iterdir()))}"
    return replace(cfg, sampler=sampler, sampler_settings=settings, seed=seed, name=name,
                   trials=trials or cfg.trials, storage=f"sqlite:///{tmp / (name + '.db')}")


def _front_F(cfg) -> np.ndarray:
    from dse.search.study.results import load_results
    res = load_results(cfg)
    return res.F(res.front())


class Normaliser:
    """HV of a minimisation array, normalised on a reference front's ideal and nadir."""

    def __init__(self, F_ref: np.ndarray):
        from dse.search.front import pareto
        self.lo, hi = F_ref.min(axis=0), F_ref.max(axis=0)
        self.span = np.where(hi > self.lo, hi - self.lo, 1.0)
        self.ref = np.full(F_ref.shape[1], 1.1)
        self.pareto = pareto
        self.total = self(F_ref)

    def __call__(self, F: np.ndarray) -> float:
        if len(F) == 0:
            return 0.0
        return self.pareto.hypervolume((F - self.lo) / self.span, self.ref)


def exhaustive_front(cfg) -> tuple[np.ndarray, int, int, float]:
    """Exact feasible front of a discrete space by evaluating every point with the scalar path
    (the reference; ``dse grid`` computes the same front vectorised): minimisation array,
    points, feasible points, seconds."""
    from dse.search.execute.runner import evaluate_design
    from dse.search.front import pareto
    from dse.search.space.objectives import score
    t0 = time.perf_counter()
    pts, n = [], 0
    for params in cfg.space.grid(cfg.base_env()):
        n += 1
        sc = score(evaluate_design(cfg.design(params), cfg.models), cfg.objectives)
        if sc.feasible:
            pts.append(sc.values)
    F = pareto.to_min(np.array(pts), cfg.objectives.directions)
    return F[pareto.nondominated(F)], n, len(pts), time.perf_counter() - t0


def against_exhaustive(label: str, study: Path, seeds: int, budget: float, tmp: Path,
                       samplers: list[tuple[str, dict | None]]) -> dict[str, list[float]]:
    """Runs of each sampler with ``budget`` x grid-size evaluations, HV as a share of the exact front's."""
    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    cfg = load_study(study)
    F, n, nfeas, dt = exhaustive_front(cfg)
    hv = Normaliser(F)
    n_eval = max(1, int(round(budget * n)))
    print(f"[{label}] {study.relative_to(ROOT)}: {n} points ({nfeas} feasible), exact front {len(F)} designs "
          f"in {dt:.1f} s; budget {n_eval} evaluations = {n_eval / n:.1%} of the points")
    print(f"{'sampler':22s} {'seed':>4s} {'trials':>6s} {'evaluated':>9s} {'front':>5s} {'HV share':>8s} "
          f"{'time s':>7s}")
    rows: dict[str, list[float]] = {}
    for sampler, settings in samplers:
        tag = "shipped " + cfg.sampler if sampler is None else sampler
        for seed in range(seeds):
            c = _variant(cfg, tmp, sampler, settings, seed, trials=20 * n_eval)
            t0 = time.perf_counter()
            s = run_study(c, max_evaluations=n_eval)
            Fr = _front_F(c)
            share = hv(Fr) / hv.total
            rows.setdefault(tag, []).append(share)
            print(f"{tag:22s} {seed:4d} {s.complete:6d} {s.evaluations:9d} {len(Fr):5d} {share:8.1%} "
                  f"{time.perf_counter() - t0:7.1f}", flush=True)
    for tag, xs in rows.items():
        print(f"[{label}] {tag}: mean {statistics.fmean(xs):.1%}, worst {min(xs):.1%} over {len(xs)} seeds")
    return rows


def against_union(study: Path, seeds: int, trials: int | None, tmp: Path) -> dict[str, list[float]]:
    """The shipped study and the baselines at the same trial budget; HV shares of the union front."""
    from dse.search.execute.runner import run_study
    from dse.search.front import pareto
    from dse.search.study.study import load_study
    cfg = load_study(study)
    runs: list[tuple[str, int, np.ndarray, float]] = []
    samplers = [(None, None)] + [(k, v) for k, v in BASELINES
                                 if (k, v) != (cfg.sampler, dict(cfg.sampler_settings))]
    print(f"[full] {study.relative_to(ROOT)}: shipped sampler {cfg.sampler} {cfg.sampler_settings}, "
          f"{trials or cfg.trials} trials, batch {cfg.batch}")
    for sampler, settings in samplers:
        tag = "shipped " + cfg.sampler if sampler is None else _tag(sampler, settings)
        for seed in range(seeds):
            c = _variant(cfg, tmp, sampler, settings, seed, trials=trials)
            t0 = time.perf_counter()
            run_study(c)
            runs.append((tag, seed, _front_F(c), time.perf_counter() - t0))
            print(f"[full] ran {tag} seed {seed}: front {len(runs[-1][2])}, {runs[-1][3]:.1f} s", flush=True)
    U = np.vstack([r[2] for r in runs])
    U = U[pareto.nondominated(U)]
    hv = Normaliser(U)
    print(f"[full] union front of {len(runs)} runs: {len(U)} designs")
    print(f"{'sampler':22s} {'seed':>4s} {'front':>5s} {'HV/union':>8s} {'time s':>7s}")
    rows: dict[str, list[float]] = {}
    for tag, seed, F, dt in runs:
        share = hv(F) / hv.total
        rows.setdefault(tag, []).append(share)
        print(f"{tag:22s} {seed:4d} {len(F):5d} {share:8.3f} {dt:7.1f}")
    for tag, xs in rows.items():
        print(f"[full] {tag}: " + " / ".join(f"{x:.3f}" for x in xs) + f" (worst {min(xs):.3f})")
    return rows


def _tag(sampler: str, settings: dict) -> str:
    return sampler + ("-mv-noliar" if settings.get("multivariate") and settings.get("constant_liar") is False else "")


def _verdict(label: str, ok: bool, what: str) -> None:
    print(f"[{label}] {'MEETS' if ok else 'MISSES'}: {what}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds and a shorter full study (smoke run)")
    ap.add_argument("--only", default="grid,truth,full", help="comma-separated sections: grid, truth, full")
    args = ap.parse_args()
    only = set(args.only.split(","))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"[machine] {os.cpu_count()} cores, load average {load:.2f} at start")
    base = [(None, None), ("tpe", {}), ("nsga2", {"population_size": 10}), ("random", {})]
    with tempfile.TemporaryDirectory(prefix="bench_quality_") as d:
        tmp = Path(d)
        if "grid" in only:
            rows = against_exhaustive("grid", ROOT / "studies/quickstart.toml", 3 if args.quick else 5, 0.10,
                                      tmp, base)
            xs = next(v for k, v in rows.items() if k.startswith("shipped"))
            _verdict("grid", statistics.fmean(xs) >= 0.98 and min(xs) >= 0.96,
                     f"shipped sampler mean {statistics.fmean(xs):.1%} (>= 98 %), worst {min(xs):.1%} (>= 96 %)")
        if "truth" in only:
            rows = against_exhaustive("truth", ROOT / "studies/ground-truth.toml", 3 if args.quick else 5, 0.01,
                                      tmp, [(None, None), ("random", {})])
            xs = next(v for k, v in rows.items() if k.startswith("shipped"))
            ahead = all(a > b for a, b in zip(xs, rows["random"]))
            _verdict("truth", min(xs) >= 0.95 and ahead,
                     f"shipped sampler worst {min(xs):.1%} (>= 95 %), ahead of random on every seed: {ahead}")
        if "full" in only:
            rows = against_union(ROOT / "studies/full.toml", 2 if args.quick else 3, 240 if args.quick else None, tmp)
            xs = next(v for k, v in rows.items() if k.startswith("shipped"))
            _verdict("full", min(xs) >= 0.95, f"shipped sampler worst {min(xs):.3f} of the union HV (>= 0.95)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"[machine] load average {load:.2f} at the end")


if __name__ == "__main__":
    main()
