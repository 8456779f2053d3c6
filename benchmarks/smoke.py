"""The speed guard of CI: each key path as a ratio to a reference measured in the same run.

Run: python benchmarks/smoke.py [--only NAME,...] [--set-floors [--runs 3]] [--slow-closed-form N]

A shared machine moves wall and CPU times, not (much) the ratio of two things measured side by
side, so each figure here is a ratio, higher is better, and each has a floor: a third of what
it was when the floors were set (``benchmarks/smoke_floors.toml``, with the date, the commit and
the runs they came from). The script prints every ratio beside its floor and exits 1 when one is
below. About 25 s of CPU on the 2-core machine (90 s of wall at most, idle).

* ``closed_form``: the vectorised closed form (``dse.vector.evaluate_chunks`` on random designs,
  points per CPU second) as a share of numpy's arithmetic limit, measured in this process (three
  times each, in turn, the best of each kept): the
  elementwise float64 operations numpy does per CPU second on arrays of the chunk size, divided
  by the operations one design costs (``ops_per_point``, counted by
  ``bench_closed_form.ops_per_point`` when the floors were set, kept fixed so that a change that
  adds arithmetic shows).
* ``plan``: the guided sampler's planner against the evaluations it plans for: a few batches of
  ``studies/full.toml`` at ``--jobs 1``, evaluation CPU per evaluated design over the CPU of
  ``guided.plan`` per trial.
* ``bands``: model-uncertainty bands (``dse evaluate --uncertainty``: the nominal design and its
  draws, Qwen3.5-397B-A17B) on a warm trace cache against an empty one: the CPU seconds of the
  warm run over those of the cold one, each in a fresh process (imports not counted).
* ``utilisation``: the evaluation processes' busy share at ``--jobs 2``: the seconds spent in
  evaluations by the worker and the driver over twice the span from the first evaluation's start
  to the last one's end (``studies/full.toml`` with the random sampler, so that the pool, not
  the planner, is measured: ``plan`` covers the planner).

``--slow-closed-form N`` evaluates every chunk N times (a deliberately slowed closed form: with
N = 5 the guard must fail). ``--set-floors`` measures ``--runs`` times, each in a fresh process
(as CI runs it), and rewrites the floors file with a third of the lowest run of each ratio. The
floors hold for the whole run (``--only`` measures a part in other conditions: caches another
part would have warmed are cold).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FLOORS = HERE / "smoke_floors.toml"
STUDY = ROOT / "studies" / "full.toml"
FLOOR_SHARE = 1 / 3            # a floor is this share of the ratio measured when it was set
CLOSED_FORM_POINTS = 1 << 18   # 4 chunks of random designs
NUMPY_SECONDS = 0.2            # CPU seconds spent measuring numpy's rate, each time
REPEATS = 3                    # closed form and numpy rate measured in turn; the best of each
PLAN_BATCHES = 5               # full.toml batches (24 trials each) at --jobs 1
UTIL_BATCHES = 5               # full.toml batches at --jobs 2, random sampler
BANDS = ("qwen3.5-397b-a17b", 32, 4)   # model, batch, uncertainty draws
NAMES = ("closed_form", "plan", "bands", "utilisation")
WHAT = {"closed_form": "vectorised closed form / numpy's arithmetic limit (CPU)",
        "plan": "evaluation CPU per design / guided plan CPU per trial (full.toml, --jobs 1)",
        "bands": "397B bands: CPU on a warm trace cache / on an empty one",
        "utilisation": "evaluations' busy share of 2 processes x their span (--jobs 2)"}


# ---- the ratios, from timings (pure: tests/test_smoke_bench.py checks them) ----------------------

def closed_form_share(points: int, cpu_s: float, numpy_ops_per_s: float, ops_per_point: float) -> float:
    """Points per CPU second over the arithmetic limit ``numpy_ops_per_s / ops_per_point``."""
    return (points / cpu_s) / (numpy_ops_per_s / ops_per_point)


def plan_ratio(eval_cpu_s: float, evaluations: int, plan_cpu_s: float, trials: int) -> float:
    """Evaluation CPU per evaluated design over the plan's CPU per trial."""
    return (eval_cpu_s / evaluations) / (plan_cpu_s / trials)


def bands_ratio(cold_cpu_s: float, warm_cpu_s: float) -> float:
    """CPU on a warm cache over CPU on an empty one (1: the empty cache costs nothing more)."""
    return warm_cpu_s / cold_cpu_s


def utilisation(intervals: dict[str, list[tuple[float, float]]], processes: int) -> float:
    """Busy seconds (``intervals``: (start, end) of each evaluation, per process) over
    ``processes`` x the span from the first start to the last end."""
    spans = [iv for ivs in intervals.values() for iv in ivs]
    span = max(b for _, b in spans) - min(a for a, _ in spans)
    return sum(b - a for a, b in spans) / (processes * span)


def check(ratios: dict[str, float], floors: dict[str, float]) -> tuple[list[str], bool]:
    """One line per ratio (value, floor, verdict) and whether every one is at or above its floor."""
    lines, ok = [], True
    for name, value in ratios.items():
        floor = floors.get(name)
        if floor is None:
            lines.append(f"{name:12s} {value:8.4f}  floor   (none)  NO FLOOR: {WHAT.get(name, name)}")
            ok = False
            continue
        good = value >= floor
        ok &= good
        lines.append(f"{name:12s} {value:8.4f}  floor {floor:8.4f}  {'ok  ' if good else 'LOW '} "
                     f"{value / floor:5.2f}x the floor: {WHAT.get(name, name)}")
    return lines, ok


def read_floors(path: Path = FLOORS) -> dict:
    """The floors file as a dict (``floor``: name -> floor; ``ops_per_point``; ``date``, ``commit``)."""
    data = tomllib.loads(path.read_text())
    return {**data, "floor": {k: v["floor"] for k, v in data["ratio"].items()}}


def floors_text(runs: list[dict[str, float]], ops_per_point: float, date: str, commit: str, load: str) -> str:
    """The floors file for the ``runs`` measured (each ratio's floor: a third of its lowest run)."""
    out = [f"# Floors of `python benchmarks/smoke.py`: {FLOOR_SHARE:.3g} of the lowest of {len(runs)} runs of each",
           "# ratio, set by `python benchmarks/smoke.py --set-floors` (do not edit the numbers by hand; set",
           "# them again after a change that makes a path faster on purpose, and say so in HISTORY).",
           f'date = "{date}"', f'commit = "{commit}"', f'load = "{load}"',
           "# elementwise operations per design of the vectorised closed form at that commit",
           "# (bench_closed_form.ops_per_point): the arithmetic limit's divisor, kept fixed",
           f"ops_per_point = {ops_per_point:g}", ""]
    for name in runs[0]:
        vals = [r[name] for r in runs]
        out += [f"[ratio.{name}]", f'what = "{WHAT.get(name, name)}"',
                f"measured = [{', '.join(f'{v:.4f}' for v in vals)}]",
                f"floor = {min(vals) * FLOOR_SHARE:.4f}", ""]
    return "\n".join(out)


# ---- the measurements -------------------------------------------------------------------------

def measure_closed_form(ops_per_point: float, slow: int = 1) -> tuple[float, str]:
    sys.path.insert(0, str(HERE))
    from bench_closed_form import numpy_rate, vector_columns

    from dse.vector import evaluate
    from dse.vector.evaluate import CHUNK
    if slow > 1:                     # a deliberately slowed closed form (the guard must fail)
        once = evaluate.evaluate_columns
        def slowed(cols, need=None):
            for _ in range(slow - 1):
                once(cols, need)
            return once(cols, need)
        evaluate.evaluate_columns = slowed
    cols = vector_columns(CLOSED_FORM_POINTS)
    for _ in evaluate.evaluate_chunks(cols.take(slice(0, 2000))):   # imports and caches warm
        pass
    cpus, rates = [], []
    for _ in range(REPEATS):         # interleaved, so both see the same machine; the best of each
        c0 = time.process_time()
        for _ in evaluate.evaluate_chunks(cols):
            pass
        cpus.append(time.process_time() - c0)
        rates.append(numpy_rate(CHUNK, NUMPY_SECONDS))
    cpu, rate = min(cpus), max(rates)
    share = closed_form_share(CLOSED_FORM_POINTS, cpu, rate, ops_per_point)
    return share, (f"{CLOSED_FORM_POINTS / cpu:,.0f} points per CPU s; numpy {rate / 1e6:,.0f} M ops per CPU s "
                   f"/ {ops_per_point:g} ops per point = {rate / ops_per_point:,.0f} points/s")


def measure_plan() -> tuple[float, str]:
    from dse.search.execute.evaluation import evaluate_design
    from dse.search.execute.runner import run_study
    from dse.search.propose.sample import guided
    from dse.search.study.study import load_study
    acc = {"plan": 0.0, "eval": 0.0, "evals": 0}
    plan = guided.plan

    def timed_plan(*a, **kw):
        c = time.process_time()
        try:
            return plan(*a, **kw)
        finally:
            acc["plan"] += time.process_time() - c

    def timed_eval(design, models):
        c = time.process_time()
        try:
            return evaluate_design(design, models)
        finally:
            acc["eval"] += time.process_time() - c
            acc["evals"] += 1

    with tempfile.TemporaryDirectory(prefix="dse-smoke-") as d:
        cfg = load_study(STUDY, storage=f"sqlite:///{Path(d) / 'plan.db'}")
        evaluate_design({}, cfg.models)            # the study's trace generated and loaded
        guided.plan = timed_plan
        try:
            s = run_study(cfg, jobs=1, evaluator=timed_eval, max_batches=PLAN_BATCHES)
        finally:
            guided.plan = plan
    if not acc["plan"] or not acc["evals"]:
        raise SystemExit("smoke.py: the guided sampler never called dse.search.propose.sample.guided.plan (renamed? "
                         "time the planner where it now is, in measure_plan)")
    r = plan_ratio(acc["eval"], acc["evals"], acc["plan"], s.new_trials)
    return r, (f"{s.new_trials} trials, {acc['evals']} evaluations: {acc['eval'] * 1e3 / acc['evals']:.1f} ms CPU per "
               f"evaluation, plan {acc['plan'] * 1e3 / s.new_trials:.1f} ms CPU per trial")


def measure_utilisation() -> tuple[float, str]:
    import dataclasses

    from dse.search.execute.evaluation import evaluate_design
    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from measure import busy_evaluate
    with tempfile.TemporaryDirectory(prefix="dse-smoke-") as d:
        cfg = load_study(STUDY, storage=f"sqlite:///{Path(d) / 'util.db'}")
        cfg = dataclasses.replace(cfg, sampler="random", sampler_settings={})
        evaluate_design({}, cfg.models)
        busy = Path(d) / "busy"
        busy.mkdir()
        t0 = time.perf_counter()
        s = run_study(cfg, jobs=2, evaluator=functools.partial(busy_evaluate, str(busy)), max_batches=UTIL_BATCHES)
        wall = time.perf_counter() - t0
        intervals = {p.name: [tuple(map(float, ln.split())) for ln in p.read_text().splitlines()]
                     for p in busy.iterdir()}
    u = utilisation(intervals, 2)
    per = ", ".join(str(len(v)) for v in intervals.values())
    return u, f"{s.evaluations} evaluations in {len(intervals)} processes ({per}); run {wall:.1f} s wall"


def bands_child() -> None:
    """One ``dse evaluate --uncertainty`` in this fresh process: its CPU seconds after the imports."""
    from dse.pipeline.evaluate import evaluate
    from dse.pipeline.uncertainty import point_bands
    from dse.spec import DesignPoint
    model, batch, draws = BANDS
    point = DesignPoint.from_dict({}, overrides=[f"model={model}", f"batch={batch}", "trace=synthetic",
                                                 "trace_seed=0"])
    c0 = time.process_time()
    evaluate(point)
    point_bands(point, draws, 0)
    print(json.dumps({"cpu": time.process_time() - c0}))


def measure_bands() -> tuple[float, str]:
    with tempfile.TemporaryDirectory(prefix="dse-smoke-bands-") as d:
        env = {**os.environ, "DSE_CACHE_DIR": d}
        cpu = []
        for _ in ("cold", "warm"):
            r = subprocess.run([sys.executable, __file__, "--child", "bands"], capture_output=True, text=True,
                               env=env, check=True)
            cpu.append(json.loads(r.stdout.strip().splitlines()[-1])["cpu"])
    model, batch, draws = BANDS
    return bands_ratio(*cpu), f"{model} B={batch}, {draws} draws: {cpu[0]:.2f} s CPU cold, {cpu[1]:.2f} s warm"


def measure(names: list[str], ops_per_point: float, slow: int = 1) -> dict[str, float]:
    """Each ratio of ``names`` (printed as measured, with its figures)."""
    out = {}
    for name in names:
        t0, c0 = time.perf_counter(), time.process_time()
        if name == "closed_form":
            value, detail = measure_closed_form(ops_per_point, slow)
        else:
            value, detail = {"plan": measure_plan, "bands": measure_bands, "utilisation": measure_utilisation}[name]()
        out[name] = value
        print(f"  {name:12s} {value:8.4f}  ({detail}; {time.perf_counter() - t0:.1f} s wall, "
              f"{time.process_time() - c0:.1f} s CPU here)", flush=True)
    return out


def commit() -> str:
    """The checkout's commit, "-dirty" when the package or this script differ from it; "unknown"
    without git."""
    git = ["git", "-C", str(ROOT)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run([*git, "status", "--porcelain", "--", "dse", "benchmarks/smoke.py"],
                               capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"
    if head.returncode or not head.stdout.strip():
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty else "")


def set_floors(names: list[str], runs: int) -> None:
    """Measure ``runs`` times, each in a fresh process (as CI runs it: no cache of an earlier run
    warm), and rewrite the floors file."""
    sys.path.insert(0, str(HERE))
    from bench_closed_form import ops_per_point

    from dse.vector.evaluate import CHUNK
    ops = ops_per_point(CHUNK)[0]
    load0, measured = os.getloadavg()[0], []
    with tempfile.TemporaryDirectory(prefix="dse-smoke-") as d:
        for i in range(runs):
            print(f"run {i + 1} of {runs}:", flush=True)
            out = Path(d) / f"run{i}.json"
            subprocess.run([sys.executable, __file__, "--only", ",".join(names), "--ops", repr(ops),
                            "--ratios-to", str(out)], check=True)
            measured.append(json.loads(out.read_text()))
    load = f"{load0:.1f}-{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    FLOORS.write_text(floors_text(measured, ops, time.strftime("%Y-%m-%d"), commit(), load))
    print(f"wrote {FLOORS.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(NAMES), help=f"comma-separated, of {', '.join(NAMES)}")
    ap.add_argument("--set-floors", action="store_true", help=f"measure --runs times and rewrite {FLOORS.name}")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--slow-closed-form", type=int, default=1, metavar="N", help="evaluate every chunk N times")
    ap.add_argument("--child", choices=["bands"], help=argparse.SUPPRESS)
    ap.add_argument("--ops", type=float, help=argparse.SUPPRESS)         # --set-floors' runs: the count
    ap.add_argument("--ratios-to", type=Path, help=argparse.SUPPRESS)    # ... and where they write
    args = ap.parse_args(argv)
    if args.child:
        bands_child()
        return 0
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    bad = [n for n in names if n not in NAMES]
    if bad:
        print(f"smoke.py: error: --only {','.join(bad)}: not one of {', '.join(NAMES)}", file=sys.stderr)
        return 2
    os.environ.setdefault("MPLBACKEND", "Agg")
    if args.set_floors:
        set_floors(names, args.runs)
        return 0
    t0, c0 = time.perf_counter(), time.process_time()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="dse-smoke-cache-") as cache:
        os.environ["DSE_CACHE_DIR"] = cache        # this run's traces only (never the user's cache)
        if args.ratios_to:
            args.ratios_to.write_text(json.dumps(measure(names, args.ops, args.slow_closed_form)))
            return 0
        floors = read_floors()
        print(f"smoke: floors of {floors['date']} at {floors['commit']} ({FLOORS.relative_to(ROOT)}); "
              f"load {load0:.1f} on {os.cpu_count()} cores", flush=True)
        ratios = measure(names, floors["ops_per_point"], args.slow_closed_form)
    lines, ok = check(ratios, floors["floor"])
    print("\n".join(lines))
    print(f"smoke: {'passed' if ok else 'FAILED (a ratio below its floor)'} in {time.perf_counter() - t0:.1f} s "
          f"wall, {time.process_time() - c0:.1f} s CPU in this process; load {os.getloadavg()[0]:.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
