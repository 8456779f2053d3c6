"""The guided sampler's per-batch plan: its fast paths and its bounds on the workers, measured in one run.

Run: python benchmarks/bench_plan.py [--seed 0] [--history 240] [--repeat 3] [--jobs 1,2]
     [--modes before,after] [--runs 2] [--skip-runs] [--skip-plan]

Paths patched in for the measurement (``use``); the pool is drawn column by column
(``draw_pool.pool``) in the first three:

* "reference": the reference paths the fast ones are tested against: the plan's other draws
  through ``Space.suggest`` with a ``draw.Draw`` per knob (``draw.reference_uniform`` /
  ``reference_mutant``), the closed-form bounds read row by row
  (``fidelity.closed_form_bounds_reference``) and scored one design at a time
  (``estimate.bound_arrays_reference``); the plan in the driver;
* "before": the fast paths (the draws compiled, the bounds of a pool scored on numpy columns by
  ``dse.search.propose.bound.columns``) as they were before the plan used the workers: the whole
  plan in the driver while the workers wait at the batch barrier (``EvaluationPool.submit_call``
  patched to refuse);
* "after": as shipped: the candidates' bounds computed in chunks of ``estimate.OFFLOAD_CHUNK`` on
  the idle workers while the driver draws the rest of the pool (``estimate.offloading``), the
  chunks reassembled in order;
* "sequential": "before" with the pool drawn design by design (``draw_pool.sequential_pool``: the
  draw before ``draw_pool.pool``; another random stream, so other trials).

The first three must propose the same designs (the benchmark stops otherwise) and run the same trials.

1. **One plan**: ``studies/full.toml`` (its seed, or ``--seed``) is run to ``--history`` trials
   in a temporary SQLite file; then the plan of the next batch (``guided.plan``: a pool of
   candidates, their closed-form bounds, estimates and the greedy pick) is made ``--repeat``
   times with each path, in turn, from the same seeded generator (with a pool of one worker
   process beside this one, which "after" alone uses); the median times and their ratios are
   printed; then each step of the plan (``plan_stages``) with the pool drawn design by design
   ("sequential") and column by column ("before"), on the thread's CPU clock.
2. **Whole runs** (unless ``--skip-runs``): ``dse run studies/full.toml --jobs J --json`` for each
   J of ``--jobs`` and each mode of ``--modes``, ``--runs`` times, alternated, each in a fresh
   SQLite file and a fresh cache folder holding only the traces (generated once beforehand), in
   its own process; wall-clock seconds, CPU seconds (driver and workers), and whether the run's
   trials (parameters and values) are those of the first mode's ``--jobs 1`` run (not so across
   "sequential" and another mode); then, per mode, the median wall times and ``--jobs 2`` over
   ``--jobs 1``.

On a shared machine only the ratios measured side by side mean something (the load average is
printed at the start and the end).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
STUDY = ROOT / "studies" / "full.toml"


MODES = ("reference", "before", "after")


def use(mode: str) -> None:
    """Patch the paths of ``mode`` (module docstring) into the modules the guided sampler calls."""
    from dse.search.execute.pool import EvaluationPool
    from dse.search.propose.bound import estimate, fidelity
    from dse.search.propose.sample import draw, guided
    from dse.search.propose.sample import pool as draw_pool
    saved = use.__dict__.setdefault("saved", (draw.uniform, draw.mutant, fidelity.closed_form_bounds_many,
                                              guided.bound_arrays, estimate.bound_arrays, estimate.bound_arrays_here,
                                              EvaluationPool.submit_call, draw_pool.pool))
    (draw.uniform, draw.mutant, fidelity.closed_form_bounds_many, guided.bound_arrays, estimate.bound_arrays,
     estimate.bound_arrays_here, EvaluationPool.submit_call, draw_pool.pool) = saved
    if mode == "sequential":
        draw_pool.pool = lambda *a: draw_pool.sequential_pool(*a, guided.param_key)
    if mode in ("reference", "before", "sequential"):
        EvaluationPool.submit_call = lambda self, fn, *args: None
    if mode == "reference":
        draw.uniform, draw.mutant = draw.reference_uniform, draw.reference_mutant
        fidelity.closed_form_bounds_many = fidelity.closed_form_bounds_reference
        guided.bound_arrays = estimate.bound_arrays = estimate.bound_arrays_here = estimate.bound_arrays_reference


def _started_pool():
    """An affinity pool of one worker process beside this one, its worker started."""
    from dse.search.execute.pool import EvaluationPool
    pool = EvaluationPool(2, affinity=True)
    pool.result(pool.submit(_noop, {}, ("m",)))
    while not pool.started[0]:
        time.sleep(0.01)
    return pool


def _noop(design, models):
    return {m: {} for m in models}


def one_plan(seed: int | None, history: int, repeat: int) -> None:
    import numpy as np

    from dse.search.execute.pool import quick_dispatch
    from dse.search.execute.runner import run_study
    from dse.search.propose.bound import estimate
    from dse.search.propose.sample import guided
    from dse.search.storage.storage import quiet_optuna
    from dse.search.study.study import load_study
    quiet_optuna()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_study(STUDY, seed=seed, trials=history, storage=f"sqlite:///{Path(tmp) / 'plan.db'}")
        run_study(cfg)
        import optuna
        trials = [t for t in optuna.load_study(study_name=cfg.name, storage=cfg.storage).get_trials(deepcopy=False)
                  if t.state.is_finished()]
    pool = _started_pool()
    times: dict[str, list[float]] = {m: [] for m in MODES}
    cpu: dict[str, list[float]] = {m: [] for m in MODES}
    picks: dict[str, list] = {}
    for _ in range(repeat):
        for mode in MODES:
            use(mode)
            rng = np.random.default_rng(12345)
            with quick_dispatch(), estimate.offloading(pool.submit_call):    # as in the run loop
                t0, c0 = time.perf_counter(), time.process_time()
                picks[mode] = guided.plan(cfg, trials, rng, cfg.batch, cfg.sampler_settings)
                times[mode].append(time.perf_counter() - t0)
                cpu[mode].append(time.process_time() - c0)
    use("after")
    pool.close()
    plan_stages(cfg, trials, max(repeat, 5))
    if any(picks[m] != picks["reference"] for m in MODES):
        sys.exit("bench_plan: a fast plan proposes other designs than the reference")
    t = {m: statistics.median(times[m]) for m in MODES}
    pool_n = cfg.sampler_settings.get("pool", guided.DEFAULTS["pool"])
    print(f"one plan of {cfg.batch} designs after {len(trials)} trials (pool {pool_n}), median of {repeat}: "
          + ", ".join(f"{m} {t[m]:.3f} s ({' '.join(f'{x:.3f}' for x in times[m])})" for m in MODES)
          + f"; before {t['reference'] / t['before']:.2f}x faster than reference, after (1 worker) "
          f"{t['before'] / t['after']:.2f}x faster than before; same proposals: True", flush=True)
    c = {m: statistics.median(cpu[m]) for m in MODES}
    print("  CPU of this process (every thread) per plan, median: " + ", ".join(f"{m} {c[m]:.3f} s" for m in MODES)
          + f"; after / before {c['after'] / c['before']:.2f} (the worker's CPU is not counted: its "
          "chunks need a core of their own, or they compete with this process for one)", flush=True)


STAGES = ("Evaluated", "candidates", "bounds", "estimator", "greedy_hv")


def plan_stages(cfg, trials, repeat: int) -> None:
    """Each step of one plan, in the driver (no worker), on this thread's CPU clock, median of
    ``repeat``: with the pool drawn design by design ("sequential", as before ``draw_pool.pool``)
    and column by column (as shipped). The two draw other pools (another random stream)."""
    import numpy as np

    from dse.search.propose.bound import estimate
    from dse.search.propose.sample import guided
    spent: dict[str, float] = {}

    def timed(name, fn):
        def wrapper(*args, **kw):
            t0 = time.thread_time()
            try:
                return fn(*args, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.thread_time() - t0
        return wrapper

    saved = (guided.Evaluated, guided.candidates, estimate.ChunkedBounds.arrays, guided.Estimator.__call__,
             guided.greedy_hv)
    guided.Evaluated, guided.candidates = timed("Evaluated", saved[0]), timed("candidates", saved[1])
    estimate.ChunkedBounds.arrays, guided.Estimator.__call__ = timed("bounds", saved[2]), timed("estimator", saved[3])
    guided.greedy_hv = timed("greedy_hv", saved[4])
    rows: dict[str, dict[str, list[float]]] = {}
    try:
        for _ in range(repeat):
            for mode in ("sequential", "before"):
                use(mode)
                spent.clear()
                t0, c0 = time.perf_counter(), time.thread_time()
                guided.plan(cfg, trials, np.random.default_rng(12345), cfg.batch, cfg.sampler_settings)
                spent["whole plan"], spent["whole plan, wall"] = time.thread_time() - c0, time.perf_counter() - t0
                for k, v in spent.items():
                    rows.setdefault(mode, {}).setdefault(k, []).append(v)
    finally:
        (guided.Evaluated, guided.candidates, estimate.ChunkedBounds.arrays, guided.Estimator.__call__,
         guided.greedy_hv) = saved
        use("after")
    print(f"plan steps (thread CPU ms, median of {repeat}; the pool drawn design by design / column by column):")
    for k in (*STAGES, "whole plan", "whole plan, wall"):
        a, b = (statistics.median(rows[m][k]) * 1e3 for m in ("sequential", "before"))
        print(f"  {k:17s} {a:7.1f} / {b:7.1f} ms  ({a / b:.1f}x)", flush=True)


def warm_cache(tmp: Path, seed: int | None) -> Path:
    """A cache folder holding the study's traces only (copied into each run's own folder)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
            "from dse.search.execute.warm import warm_traces; from dse.search.study.study import load_study; "
            "warm_traces(load_study(Path(sys.argv[2])))")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DSE_")}, "DSE_CACHE_DIR": str(tmp / "warm")}
    subprocess.run([sys.executable, "-c", code, str(ROOT), str(STUDY)], check=True, env=env)
    return tmp / "warm" / "traces"


def whole_run(jobs: int, mode: str, seed: int | None, tmp: Path, traces: Path, tag: str
              ) -> tuple[float, float, dict, list]:
    """(wall s, CPU s of the run's processes, summary, trials) of one ``dse run`` in a child process
    with a fresh cache folder (the traces copied in)."""
    db = tmp / f"run-{tag}.db"
    cache = tmp / f"cache-{tag}"
    shutil.copytree(traces, cache / "traces")
    args = ["run", str(STUDY), "--jobs", str(jobs), "--json", "--no-progress", "--storage", f"sqlite:///{db}"]
    if seed is not None:
        args += ["--seed", str(seed)]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); import bench_plan; "
            "bench_plan.use(sys.argv[3]); from dse.cli import main; sys.exit(main(sys.argv[4:]))")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DSE_")},
           "PYTHONPATH": str(ROOT), "DSE_CACHE_DIR": str(cache)}
    from measure import run_measured
    out, err, wall, usage, rc = run_measured([sys.executable, "-c", code, str(ROOT), str(ROOT / "benchmarks"), mode,
                                               *args], env, cwd=tmp)
    if rc:
        sys.exit(f"bench_plan: dse run failed: {err.strip().splitlines()[-1:]}")
    shutil.rmtree(cache, ignore_errors=True)
    import optuna

    from dse.search.storage.storage import quiet_optuna
    quiet_optuna()
    summary = json.loads(out)
    st = optuna.load_study(study_name=optuna.get_all_study_names(f"sqlite:///{db}")[0], storage=f"sqlite:///{db}")
    trials = [(t.number, sorted(t.params.items()), t.values) for t in st.get_trials(deepcopy=False)]
    return wall, usage.ru_utime + usage.ru_stime, summary, trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=None, help="seed override (default: the study's)")
    ap.add_argument("--history", type=int, default=240, help="finished trials before the measured plan")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", default="1,2", help="comma-separated --jobs of the whole runs")
    ap.add_argument("--modes", default="before,after",
                    help=f"comma-separated modes of the whole runs {MODES + ('sequential',)}")
    ap.add_argument("--runs", type=int, default=2, help="whole runs per (jobs, mode), alternated")
    ap.add_argument("--skip-runs", action="store_true")
    ap.add_argument("--skip-plan", action="store_true")
    a = ap.parse_args()
    print(f"bench_plan: {STUDY.name}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start",
          flush=True)
    if not a.skip_plan:
        one_plan(a.seed, a.history, a.repeat)
    if a.skip_runs:
        return
    modes = a.modes.split(",")
    jobs_list = [int(j) for j in a.jobs.split(",")]
    walls: dict[tuple[int, str], list[float]] = {}
    ref = None
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        traces = warm_cache(tmp, a.seed)
        for r in range(a.runs):
            for jobs in jobs_list:
                for mode in modes:
                    w, c, s, tr = whole_run(jobs, mode, a.seed, tmp, traces, f"{r}-{jobs}-{mode}")
                    ref = tr if ref is None else ref
                    walls.setdefault((jobs, mode), []).append(w)
                    print(f"run {r + 1}: dse run --jobs {jobs}, {mode:9s}: {s['complete']} trials, {w:5.1f} s wall "
                          f"({c:5.1f} s CPU), load {os.getloadavg()[0]:.2f}; trials identical to the first run's: "
                          f"{tr == ref}", flush=True)
    for mode in modes:
        med = {j: statistics.median(walls[j, mode]) for j in jobs_list}
        line = ", ".join(f"--jobs {j} {med[j]:.2f} s" for j in jobs_list)
        if 1 in med and 2 in med:
            line += f"; --jobs 2 over --jobs 1: {med[1] / med[2]:.2f}x (target 1.6x)"
        print(f"{mode:9s} median of {a.runs}: {line}")
    for j in jobs_list:
        if len(modes) > 1:
            m0, m1 = modes[0], modes[-1]
            pairs = " ".join(f"{b / a:.2f}" for a, b in zip(walls[j, m0], walls[j, m1]))
            med = statistics.median(walls[j, m1]) / statistics.median(walls[j, m0])
            print(f"--jobs {j}: wall {m1} / {m0}, median {med:.2f}"
                  f" (per run: {pairs}; below 1: {m1} faster)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
