"""Search quality of the shipped sampler choices against NSGA-II, TPE, GP and random search.

Run: python benchmarks/bench_search_quality.py [--quick] [--only grid,truth,full,catalog]
                                               [--seeds 5] [--jobs 2] [--samplers nsga2,tpe,gp,random]
                                               [--trials N] [--trials-cap 4]

Four tables, each measured in one run (hypervolume, HV, always of a run's feasible front;
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

4. ``catalog``: ``studies/catalog.toml`` (three models, three objectives, constraints) as shipped
   (its sampler and ``[search]`` knee phase, read at run time) against optuna's samplers as the
   study names them, NSGA-II (population = the study's batch), TPE (defaults; constant liar
   within a batch), GP (``optuna.samplers.GPSampler`` defaults: the ``gp`` extra) and random, on
   seeds 0..``--seeds``-1, at two budgets: **equal trials** (the shipped study's trial target; a
   stock sampler gets no knee phase) and **equal wall time** (each stock run is interrupted, as
   by Ctrl-C, once the shipped run's wall time on the same seed is spent: the trials told by
   then are kept). An equal-trials stock run is interrupted after ``--trials-cap`` (default 4)
   times the shipped run's wall time: one that stops short of the target (GP: its asks cost
   about a minute of CPU each on this study) is listed as ``capped``, out of the equal-trials
   verdict. Every run is its own process (``dse run --jobs N`` as users run it: ``--jobs``,
   default 2) with its own SQLite file; its wall time is its run's, its CPU time the process's
   and its workers' over the same run. Per run: its hypervolume share of the union front of all
   runs of the table (normaliser as ``full``), and its **knee regret**: the best knee score of
   all runs minus the run's own, a run's knee score being the knee utility
   (``dse.search.front.knee``) of its top knee candidate
   (``dse.search.review.quality.knee_candidates``) on one scale common to all runs (the
   ``Scale`` of the union front and the knees: relative coordinates, ``-sum ln |f|`` with
   maximised objectives inverted, so 0.05 is a figure of merit about 5 % worse). The verdict:
   the shipped sampler's mean HV share at least the best stock sampler's mean and its mean
   regret at most the best stock sampler's, at both budgets. ``--quick``: 2 seeds, a quarter
   of the trials; ``--trials N`` overrides.

``--quick``: 3 seeds for grid / truth, 2 for full at half its trials (a smoke run, not the
reported figures). Evaluations of grid / truth / full run in this process (one core).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
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


# -- catalog: the shipped sampler against optuna's own, at equal trials and equal wall time ------------

CATALOG = ROOT / "studies/catalog.toml"
STOCK = ("nsga2", "tpe", "gp", "random")      # optuna's samplers as a study names them (settings: _stock_settings)
BUDGETS = ("trials", "wall")                  # equal trials, equal wall time


def _stock_settings(sampler: str, batch: int) -> dict:
    """NSGA-II with a population of one batch (as ``full``'s baseline); the others at their defaults."""
    return {"population_size": batch} if sampler == "nsga2" else {}


def catalog_run(spec: dict) -> dict:
    """One run of the catalog study in this process (the benchmark runs each in a child process):
    ``spec`` = {study, db, seed, trials, jobs, sampler (None: as shipped), wall (None: no limit)}.
    ``wall``: the run is interrupted after that many seconds as by Ctrl-C (``dse run`` keeps the
    trials told by then; the evaluations in flight are lost). Returns trials, distinct designs,
    wall and CPU seconds, whether it was interrupted, (finished trials, seconds) after each batch,
    the feasible front (minimisation array) and its top knee candidate's objectives
    (minimisation) and own score."""
    import resource
    import signal

    from dse.search.execute.runner import run_study
    from dse.search.execute.workers import stop_workers
    from dse.search.propose.knee import KneeSearch
    from dse.search.review.quality import knee_candidates
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    cfg = load_study(Path(spec["study"]), seed=spec["seed"], trials=spec["trials"], storage=f"sqlite:///{spec['db']}")
    if spec["sampler"] is not None:      # a stock sampler: no knee phase, run to its trial target
        cfg = replace(cfg, sampler=spec["sampler"], sampler_settings=_stock_settings(spec["sampler"], cfg.batch),
                      knee=KneeSearch())
    batches: list[tuple[int, float]] = []

    def interrupt(*_) -> None:
        raise KeyboardInterrupt

    def cpu() -> float:
        return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                     resource.getrusage(resource.RUSAGE_CHILDREN)))
    c0, t0, stopped = cpu(), time.perf_counter(), False
    if spec.get("wall"):
        signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, spec["wall"])
    try:
        run_study(cfg, jobs=spec["jobs"],
                  on_batch=lambda line: batches.append((line["complete"], time.perf_counter() - t0)))
    except KeyboardInterrupt:
        if not spec.get("wall"):
            raise
        stopped = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    wall = time.perf_counter() - t0
    stop_workers()                       # the workers' CPU counts once they are gone (reaped)
    res = load_results(cfg)
    fr = res.front()
    knee, own = None, None
    if fr:
        kfr, kc = knee_candidates(res)
        if kc.candidates:
            knee, own = res.F([kfr[kc.candidates[0].index]])[0].tolist(), kc.candidates[0].score
    return {"sampler": cfg.sampler, "trials": len(res.complete), "designs": len({r.design_key for r in res.complete}),
            "wall": wall, "cpu": cpu() - c0, "stopped": stopped, "batches": batches, "front": res.F(fr).tolist(),
            "knee": knee, "own_score": own}


def _child_run(spec: dict) -> dict:
    """``catalog_run(spec)`` in a fresh process (cold workers and caches, as ``dse run``)."""
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--catalog-run", json.dumps(spec)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"[catalog] run {spec} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def union_front(fronts: list[np.ndarray]) -> np.ndarray:
    """The non-dominated rows of all ``fronts`` (minimisation arrays) together."""
    from dse.search.front import pareto
    parts = [np.asarray(F, dtype=float) for F in fronts if len(F)]
    if not parts:
        return np.zeros((0, 0))
    U = np.vstack(parts)
    return U[pareto.nondominated(U)]


def hv_shares(fronts: list[np.ndarray]) -> list[float]:
    """Each front's hypervolume as a share of the union front's (``Normaliser`` on the union)."""
    U = union_front(fronts)
    if not len(U):
        return [0.0] * len(fronts)
    hv = Normaliser(U)
    return [hv(np.asarray(F, dtype=float).reshape(-1, U.shape[1])) / hv.total for F in fronts]


def knee_scores(knees: list, U: np.ndarray) -> np.ndarray:
    """The knee utility of each run's knee objectives (minimisation; None: no knee, -inf) on one
    scale for all runs: ``knee.Scale`` of the union front ``U`` and the knees together (relative
    coordinates, ``ln |f|``, where an objective keeps one sign on them, so a design's score does
    not depend on the other designs; the knees are included because an objective constant on
    the union front alone would be dropped from the scale and its losses not counted)."""
    from dse.search.front.knee import Scale
    out = np.full(len(knees), -math.inf)
    rows = [i for i, k in enumerate(knees) if k is not None]
    if rows:
        K = np.array([knees[i] for i in rows], dtype=float)
        scale = Scale.of(np.vstack([np.asarray(U, dtype=float).reshape(-1, K.shape[1]), K]))
        out[rows] = scale.utility(K)
    return out


def knee_regrets(scores: np.ndarray) -> np.ndarray:
    """The best score of all runs minus each run's (0 for the best; inf for a run without a knee)."""
    scores = np.asarray(scores, dtype=float)
    finite = scores[np.isfinite(scores)]
    if not len(finite):
        return np.full(len(scores), math.inf)
    return np.where(np.isfinite(scores), finite.max() - scores, math.inf)


@dataclass
class CatalogRow:
    sampler: str        # "guided" (the shipped run: shipped=True) or a stock sampler
    budget: str         # "shipped", "trials" or "wall"
    seed: int
    run: dict           # catalog_run's answer
    share: float = float("nan")
    score: float = float("nan")
    regret: float = float("nan")


def score_rows(rows: list[CatalogRow]) -> np.ndarray:
    """Fill each row's HV share and knee score and regret; return the union front."""
    fronts = [np.asarray(r.run["front"], dtype=float) for r in rows]
    U = union_front(fronts)
    for r, share in zip(rows, hv_shares(fronts)):
        r.share = share
    scores = knee_scores([r.run["knee"] for r in rows], U)
    for r, sc, rg in zip(rows, scores, knee_regrets(scores)):
        r.score, r.regret = float(sc), float(rg)
    return U


def summarise(rows: list[CatalogRow]) -> dict[tuple[str, str], dict[str, float]]:
    """Per (sampler, budget): mean and worst HV share, mean and worst regret, mean trials, wall, CPU."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for key in dict.fromkeys((r.sampler, r.budget) for r in rows):
        g = [r for r in rows if (r.sampler, r.budget) == key]
        out[key] = {"runs": len(g), "hv_mean": statistics.fmean(r.share for r in g),
                    "hv_worst": min(r.share for r in g), "regret_mean": statistics.fmean(r.regret for r in g),
                    "regret_worst": max(r.regret for r in g),
                    "trials": statistics.fmean(r.run["trials"] for r in g),
                    "wall": statistics.fmean(r.run["wall"] for r in g),
                    "cpu": statistics.fmean(r.run["cpu"] for r in g)}
    return out


def catalog_verdict(summary: dict[tuple[str, str], dict[str, float]], shipped: str) -> dict[str, bool]:
    """Per budget: the shipped sampler's mean HV share >= the best stock sampler's mean, and its mean
    knee regret <= the best stock sampler's mean (at that budget)."""
    me = summary[(shipped, "shipped")]
    out = {}
    for budget in BUDGETS:
        stock = [v for (s, b), v in summary.items() if b == budget]
        if not stock:
            continue
        out[budget] = (me["hv_mean"] >= max(v["hv_mean"] for v in stock) - 1e-12
                       and me["regret_mean"] <= min(v["regret_mean"] for v in stock) + 1e-12)
    return out


def against_stock(study: Path, seeds: int, trials: int | None, jobs: int, samplers: list[str], cap: float,
                  tmp: Path) -> bool:
    """The catalog table (module docstring, 4.): runs, per-run rows, per-sampler rows, the verdict.
    ``cap``: an equal-trials stock run is interrupted after ``cap`` x the shipped run's wall time
    on its seed; one that stops short of the trial target is listed as ``capped``, not in the
    equal-trials verdict."""
    from dse.search.study.study import load_study
    cfg = load_study(study)
    trials = trials or cfg.trials
    print(f"[catalog] {study.relative_to(ROOT)}: shipped sampler {cfg.sampler} {dict(cfg.sampler_settings)}, "
          f"knee share {cfg.knee.share}, stop {cfg.knee.stop!r}, {trials} trials, batch {cfg.batch}, "
          f"--jobs {jobs}; stock: {', '.join(samplers)} (equal trials capped at {cap:g}x the shipped wall time)",
          flush=True)
    rows: list[CatalogRow] = []

    def run(sampler: str | None, budget: str, seed: int, target: int, wall: float | None = None) -> CatalogRow:
        db = tmp / f"catalog-{sampler or 'shipped'}-{budget}-{seed}-{len(rows)}.db"
        load = os.getloadavg()[0]
        spec = {"study": str(study), "db": str(db), "seed": seed, "trials": target, "jobs": jobs,
                "sampler": sampler, "wall": wall}
        r = CatalogRow(sampler or cfg.sampler, budget, seed, _child_run(spec))
        r.run["load"] = load
        if budget == "trials" and r.run["trials"] < target:
            r.budget = "capped"
        rows.append(r)
        ends = [t for _, t in r.run["batches"]]
        per = [b - a for a, b in zip([0.0] + ends, ends)]
        longest = f", longest {max(per):.1f} s" if per else ""
        print(f"[catalog] ran {r.sampler:8s} {r.budget:7s} seed {seed}: {r.run['trials']} trials, "
              f"front {len(r.run['front'])}, {r.run['wall']:.1f} s wall, {r.run['cpu']:.1f} s CPU (load {load:.1f}); "
              f"{len(per)} batches{longest}"
              f"{', interrupted' if r.run['stopped'] else ''}", flush=True)
        return r

    for seed in range(seeds):
        shipped = run(None, "shipped", seed, trials)
        for sampler in samplers:
            run(sampler, "trials", seed, trials, wall=cap * shipped.run["wall"])
            run(sampler, "wall", seed, 20 * trials, wall=shipped.run["wall"])
    return _catalog_table(rows, cfg.sampler)


def _catalog_table(rows: list[CatalogRow], shipped: str) -> bool:
    U = score_rows(rows)
    for r in rows:
        if r.run["own_score"] is not None and abs(r.run["own_score"] - r.score) > 1e-9:
            print(f"[catalog] note: {r.sampler} {r.budget} seed {r.seed}: own knee score {r.run['own_score']:.4f} "
                  f"on its front's scale, {r.score:.4f} on the common one")
    print(f"[catalog] union front of {len(rows)} runs: {len(U)} designs; best knee score "
          f"{max(r.score for r in rows):.4f} (knee = -ln of the product of objectives, maximised ones inverted)")
    print(f"{'sampler':8s} {'budget':7s} {'seed':>4s} {'trials':>6s} {'designs':>7s} {'front':>5s} {'HV share':>8s} "
          f"{'knee':>8s} {'regret':>7s} {'wall s':>7s} {'CPU s':>7s} {'load':>5s}")
    for r in rows:
        print(f"{r.sampler:8s} {r.budget:7s} {r.seed:4d} {r.run['trials']:6d} {r.run['designs']:7d} "
              f"{len(r.run['front']):5d} {r.share:8.3f} {r.score:8.4f} {r.regret:7.4f} {r.run['wall']:7.1f} "
              f"{r.run['cpu']:7.1f} {r.run['load']:5.1f}")
    summary = summarise(rows)
    print(f"\n{'sampler':8s} {'budget':7s} {'runs':>4s} {'HV mean':>7s} {'HV worst':>8s} {'regret mean':>11s} "
          f"{'regret worst':>12s} {'trials':>6s} {'wall s':>7s} {'CPU s':>7s}")
    for (sampler, budget), v in summary.items():
        print(f"{sampler:8s} {budget:7s} {v['runs']:4d} {v['hv_mean']:7.3f} {v['hv_worst']:8.3f} "
              f"{v['regret_mean']:11.4f} {v['regret_worst']:12.4f} {v['trials']:6.0f} {v['wall']:7.1f} {v['cpu']:7.1f}")
    capped = sorted({r.sampler for r in rows if r.budget == "capped"})
    if capped:
        print(f"[catalog] capped (stopped short of the trial budget, not in the equal-trials verdict): "
              f"{', '.join(capped)}")
    verdict = catalog_verdict(summary, shipped)
    for budget, ok in verdict.items():
        print(f"[catalog] at equal {'trials' if budget == 'trials' else 'wall time'}: "
              f"{shipped} at least as good as the best stock sampler on both measures: {'yes' if ok else 'no'}")
    ok = bool(verdict) and all(verdict.values())
    print(f"[catalog] {shipped} at least as good as the best stock sampler on both measures: "
          f"{'yes' if ok else 'no'}")
    return ok


def _tag(sampler: str, settings: dict) -> str:
    return sampler + ("-mv-noliar" if settings.get("multivariate") and settings.get("constant_liar") is False else "")


def _cpu_all() -> float:
    """CPU seconds of this process and its reaped children (the catalog runs and their workers)."""
    import resource
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def _verdict(label: str, ok: bool, what: str) -> None:
    print(f"[{label}] {'MEETS' if ok else 'MISSES'}: {what}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds and a shorter full study (smoke run)")
    ap.add_argument("--only", default="grid,truth,full,catalog",
                    help="comma-separated sections: grid, truth, full, catalog")
    ap.add_argument("--seeds", type=int, help="catalog: seeds 0..N-1 (default 5; --quick 2)")
    ap.add_argument("--jobs", type=int, default=2, help="catalog: evaluation worker processes per run (default 2)")
    ap.add_argument("--trials", type=int, help="catalog: this trial budget instead of the study's (--quick: a quarter)")
    ap.add_argument("--samplers", default=",".join(STOCK), help="catalog: the stock samplers (default: all four)")
    ap.add_argument("--trials-cap", type=float, default=4.0,
                    help="catalog: stop an equal-trials stock run after this x the shipped run's wall time (default 4)")
    ap.add_argument("--catalog-run", help=argparse.SUPPRESS)     # one catalog run, in a child process
    args = ap.parse_args()
    if args.catalog_run:
        print(json.dumps(catalog_run(json.loads(args.catalog_run))))
        return
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
        if "catalog" in only:
            from dse.search.study.study import load_study
            trials = args.trials or (max(1, load_study(CATALOG).trials // 4) if args.quick else None)
            t0, c0 = time.perf_counter(), _cpu_all()
            ok = against_stock(CATALOG, args.seeds or (2 if args.quick else 5), trials, args.jobs,
                               [s for s in args.samplers.split(",") if s], args.trials_cap, tmp)
            _verdict("catalog", ok, "the shipped sampler at least as good as the best stock sampler on the "
                     "catalog study (mean HV share and mean knee regret, equal trials and equal wall time)")
            print(f"[catalog] total {time.perf_counter() - t0:.0f} s wall, {_cpu_all() - c0:.0f} s CPU "
                  f"(this process and its runs)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"[machine] load average {load:.2f} at the end")


if __name__ == "__main__":
    main()
