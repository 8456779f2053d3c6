"""The guided sampler's per-batch plan, before and after its fast paths, measured in one run.

Run: python benchmarks/bench_plan.py [--seed 0] [--history 240] [--repeat 3] [--jobs 1] [--skip-runs]

Two paths, patched in for the measurement (``use``): "before" is the reference paths the fast
ones are tested against: draws through ``Space.suggest`` with a ``draw.Draw`` per knob
(``draw.reference_uniform`` / ``reference_mutant``), the closed-form bounds read row by row
(``fidelity.closed_form_bounds_reference``) and scored one design at a time
(``estimate.bound_arrays_reference``); "after" is the code as shipped (the draws compiled, the
bounds of a pool scored on numpy columns by ``dse.search.propose.bound_table``). Both must propose the
same designs (the benchmark stops otherwise) and run the same trials.

1. **One plan**: ``studies/full.toml`` (its seed, or ``--seed``) is run to ``--history`` trials
   in a temporary SQLite file; then the plan of the next batch (``guided.plan``: a pool of
   candidates, their closed-form bounds, estimates and the greedy pick) is made ``--repeat``
   times with each path, in turn, from the same seeded generator; the median times and
   their ratios are printed.
2. **Whole runs** (unless ``--skip-runs``): ``dse run studies/full.toml --jobs J --json`` for each
   J of ``--jobs`` (comma-separated; ``1,2`` for the 2-process comparison) and each path, each
   in a fresh SQLite file in its own process; wall-clock seconds, CPU seconds (driver and
   workers), and whether the run's trials (parameters and values) are those of "before".

On a shared machine only the ratios measured side by side mean something.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
STUDY = ROOT / "studies" / "full.toml"


MODES = ("before", "after")


def use(mode: str) -> None:
    """Patch the paths of ``mode`` into the modules the guided sampler calls: ``before`` the
    reference paths, ``after`` the shipped ones."""
    from dse.search.propose import draw, estimate, fidelity, guided
    saved = use.__dict__.setdefault("saved", (draw.uniform, draw.mutant, fidelity.closed_form_bounds_many,
                                              guided.bound_arrays, estimate.bound_arrays))
    draw.uniform, draw.mutant, fidelity.closed_form_bounds_many, guided.bound_arrays, estimate.bound_arrays = saved
    if mode == "before":
        draw.uniform, draw.mutant = draw.reference_uniform, draw.reference_mutant
        fidelity.closed_form_bounds_many = fidelity.closed_form_bounds_reference
        guided.bound_arrays = estimate.bound_arrays = estimate.bound_arrays_reference


def one_plan(seed: int | None, history: int, repeat: int) -> None:
    import numpy as np
    from dse.search.propose import guided
    from dse.search.execute.runner import run_study
    from dse.search.storage.storage import quiet_optuna
    from dse.search.study.study import load_study
    quiet_optuna()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_study(STUDY, seed=seed, trials=history, storage=f"sqlite:///{Path(tmp) / 'plan.db'}")
        run_study(cfg)
        import optuna
        trials = [t for t in optuna.load_study(study_name=cfg.name, storage=cfg.storage).get_trials(deepcopy=False)
                  if t.state.is_finished()]
    times: dict[str, list[float]] = {m: [] for m in MODES}
    picks: dict[str, list] = {}
    for _ in range(repeat):
        for mode in MODES:
            use(mode)
            rng = np.random.default_rng(12345)
            t0 = time.perf_counter()
            picks[mode] = guided.plan(cfg, trials, rng, cfg.batch, cfg.sampler_settings)
            times[mode].append(time.perf_counter() - t0)
    use("after")
    if any(picks[m] != picks["before"] for m in MODES):
        sys.exit("bench_plan: a fast plan proposes other designs than the reference")
    t = {m: statistics.median(times[m]) for m in MODES}
    pool = cfg.sampler_settings.get("pool", guided.DEFAULTS["pool"])
    print(f"one plan of {cfg.batch} designs after {len(trials)} trials (pool {pool}), median of {repeat}: "
          + ", ".join(f"{m} {t[m]:.3f} s" for m in MODES)
          + f"; after {t['before'] / t['after']:.2f}x faster than before; "
          f"same proposals: True", flush=True)


def whole_run(jobs: int, mode: str, seed: int | None, tmp: Path) -> tuple[float, float, dict, list]:
    """(wall s, CPU s of the driver, summary, trials) of one ``dse run`` in a child process."""
    db = tmp / f"run-{jobs}-{mode}.db"
    args = ["run", str(STUDY), "--jobs", str(jobs), "--json", "--no-progress", "--storage", f"sqlite:///{db}"]
    if seed is not None:
        args += ["--seed", str(seed)]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); import bench_plan; "
            "bench_plan.use(sys.argv[3]); from dse.cli import main; sys.exit(main(sys.argv[4:]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(ROOT), str(ROOT / "benchmarks"), mode, *args],
                         capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"bench_plan: dse run failed: {out.stderr.strip().splitlines()[-1:]}")
    import optuna
    from dse.search.storage.storage import quiet_optuna
    quiet_optuna()
    summary = json.loads(out.stdout)
    st = optuna.load_study(study_name=optuna.get_all_study_names(f"sqlite:///{db}")[0], storage=f"sqlite:///{db}")
    trials = [(t.number, sorted(t.params.items()), t.values) for t in st.get_trials(deepcopy=False)]
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, summary, trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=None, help="seed override (default: the study's)")
    ap.add_argument("--history", type=int, default=240, help="finished trials before the measured plan")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", default="1", help="comma-separated --jobs of the whole runs (e.g. 1,2)")
    ap.add_argument("--skip-runs", action="store_true")
    a = ap.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_plan: {STUDY.name}; {os.cpu_count()} cores, load average {load:.2f} at start", flush=True)
    one_plan(a.seed, a.history, a.repeat)
    if a.skip_runs:
        return
    walls: dict[tuple[int, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (int(j) for j in a.jobs.split(",")):
            res = {mode: whole_run(jobs, mode, a.seed, Path(tmp)) for mode in MODES}
            wb, cb, _, tb = res["before"]
            for mode in MODES:
                w, c, s, tr = res[mode]
                walls[jobs, mode] = w
                print(f"dse run --jobs {jobs}, {mode:7s}: {s['complete']} trials, {w:5.1f} s wall ({c:5.1f} s CPU): "
                      f"{wb / w:.2f}x faster wall, {cb / c:.2f}x less CPU than before; "
                      f"trials identical to before: {tr == tb}", flush=True)
    for mode in MODES:
        if (1, mode) in walls and (2, mode) in walls:
            print(f"{mode}: --jobs 2 over --jobs 1: {walls[1, mode] / walls[2, mode]:.2f}x")


if __name__ == "__main__":
    main()
