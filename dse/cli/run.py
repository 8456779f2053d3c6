"""`dse run STUDY.toml [--trials N] [--jobs J] [--storage URL] [--model NAME] [--seed S]`.

Also the study arguments shared by `dse front`, `dse plot` and `dse export` (same file, storage
and overrides address the same study).
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import textwrap
import time
from collections.abc import Callable

from dse.errors import ConfigError
from dse.report import dumps, fmt, terminal_width

# --model / --seed derive a study of their own (``StudyConfig.with_overrides``): same space, objectives
# and storage, a name that carries the override, so every command given the same flags meets it.
MODEL_HELP = ("the study on this catalog model only: a separate study named STUDY[model=NAME], with the same "
              "space and objectives, kept in the same storage beside the original")
SEED_HELP = "seed override: likewise a separate study, named STUDY[seed=S], in the same storage"


def add_study_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("study", help="study TOML (studies/*.toml)")
    p.add_argument("--storage", metavar="URL",
                   help="optuna storage URL (default: $DSE_STORAGE, else the study file's, else SQLite under "
                        "results/ beside the study file); keep passwords off the command line: DSE_STORAGE, "
                        "PGPASSWORD, ~/.pgpass")
    p.add_argument("--model", metavar="NAME", help=MODEL_HELP)
    p.add_argument("--seed", type=_int_arg, metavar="S", help=SEED_HELP)


def study_from_args(args: argparse.Namespace, *, trials: int | None = None):
    """The study the arguments address; a file that clearly is no study (a design, space, objectives
    or catalog file) is refused in one line naming what it is and the command that takes it."""
    from dse.cli.credentials import storage_url
    from dse.cli.filekind import refuse
    from dse.search.study.study import load_study
    refuse(args.study, "study", getattr(args, "command", None) or "run")
    return load_study(args.study, model=args.model, seed=args.seed, trials=trials, storage=storage_url(args.storage))


def _int_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from None


def register(sub) -> None:
    p = sub.add_parser("run", help="run or resume a design-space study (optuna, multi-objective)",
                       description="Run a study until it has its target number of finished trials; "
                                   "re-running the same command resumes it.",
                       epilog="The study file format ([study], [sampler], [search], [workload], [base]): "
                              "docs/guide/studies.md; its space and objectives files: docs/guide/spaces.md, "
                              "docs/guide/objectives.md.")
    add_study_args(p)
    p.add_argument("--trials", type=_int_arg, help="target number of finished trials (default: the study's)")
    p.add_argument("--jobs", "-j", type=_int_arg, default=1,
                   help="processes evaluating designs: this one and J - 1 workers (default 1; -1 = every core)")
    p.add_argument("--backend", choices=("loky", "dask"), default="loky",
                   help="where evaluations run: local worker processes (loky, default) or a "
                        "dask.distributed cluster (dask)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="with --backend dask: the scheduler to join (tcp://host:8786); default: a local "
                        "cluster of --jobs worker processes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the run summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dse.cli.jobs import bounded_jobs
    from dse.search.execute.runner import run_study
    from dse.search.execute.workers import release_workers
    args.jobs = bounded_jobs(args.jobs)
    if args.scheduler is not None and args.backend != "dask":
        raise ConfigError(f"--scheduler {args.scheduler!r}: only with --backend dask")
    cfg = study_from_args(args, trials=args.trials)
    if args.backend == "loky" and args.jobs != 1:
        from dse.search.execute.workers import prestart
        prestart(args.jobs)           # the workers start while this process imports and opens the storage
    progress = not args.no_progress and sys.stderr.isatty()
    lines = None if progress or args.no_progress else BatchLines(cfg.name)
    terminated: list[int] = []
    try:
        with _sigterm_as_interrupt(terminated):
            s = run_study(cfg, jobs=args.jobs, progress=progress, on_batch=lines, backend=args.backend,
                          scheduler=args.scheduler,
                          notify=lambda note: print(f"dse: note: {note}", file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        print(f"dse: {'terminated (SIGTERM)' if terminated else 'interrupted'}; finished trials are kept. "
              f"Re-run the same command to resume study {cfg.name!r}.", file=sys.stderr)
        return 143 if terminated else 130
    release_workers()                 # they exit while the summary is printed
    knee = _knee_summary(cfg, s.results)
    from dse.search.front.walls import Wall
    if args.json:
        out = {**s.fields(), **knee}
        print(dumps(out))
        return 0
    count = finished(s.complete, s.target, "trials finished", s.new_trials)
    print(f"study {s.study}: {count} ({s.new_trials} this run: {s.evaluations} evaluated, {s.duplicates} "
          f"repeated designs answered from the cache"
          f"{f', {s.screened} screened by the closed-form bound' if s.screened else ''}), "
          f"{s.feasible} feasible, {s.elapsed_s:.1f} s")
    if s.exhausted:
        print("grid: every point of the space has been evaluated")
    if s.errors:
        print(f"warning: {s.errors} evaluations failed (first: {s.first_error})", file=sys.stderr)
    if knee.get("knee_trial") is not None:
        params = ", ".join(f"{k}={fmt(v)}" for k, v in knee["knee_params"].items())
        objs = ", ".join(f"{k}={fmt(v)}" for k, v in knee["knee_objectives"].items())
        print(f"front: {knee['front_size']} designs; knee: trial {knee['knee_trial']} ({params}) -> {objs}")
    else:
        print("front: no feasible design yet")
    for line in wall_lines([Wall(**w) for w in knee.get("at_bounds", [])], knee.get("front_size", 0)):
        print(textwrap.fill(line, width=terminal_width(), subsequent_indent="  "))
    if knee.get("knee_verdict"):             # issue 48: one verdict, clear only with refined contenders
        print(textwrap.fill(f"knee {knee['knee_verdict']}: {knee['knee_settled_reason']}", width=terminal_width(),
                            subsequent_indent="  "))
        if knee["knee_verdict"] == "not settled":
            print("to settle it: run more trials (--trials N) or pool seeds (dse front --storage S1 --storage S2)",
                  file=sys.stderr)
    print(f"storage: {s.storage}")
    ref = cfg.command_args()
    print("next steps (one command per line):")
    for cmd in next_commands(ref):
        print(f"  {cmd}")
    return 0


@contextlib.contextmanager
def _sigterm_as_interrupt(terminated: list[int]):
    """Within the block, SIGTERM (a batch system's time limit, `kill`) stops the run as Ctrl-C
    does: the told trials are written, the workers stopped, the storage closed. Before, it
    ended the process at once: resumable, but loky's resource tracker then reported the dead
    driver's semaphores as leaked. A second SIGTERM ends the process at once. Main thread only."""
    import signal
    import threading

    def stop(signum, frame):
        terminated.append(signum)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        if not terminated:
            signal.signal(signal.SIGTERM, before)


class BatchLines:
    """Without a terminal (a log file, a batch system, a pipe): progress lines on stderr (trials
    done, rate, ETA, feasible count, front size), not one per batch. A line is printed when the run
    has crossed another tenth of its target since the last line and at least ``min_gap_s`` have
    passed, when ``heartbeat_s`` have passed without one (a long run still shows it is alive), and
    after the batch that reaches the target. The quickstart's 64 trials in batches of 2 printed 32
    lines; now at most 11 (issue 45)."""

    def __init__(self, name: str, *, min_gap_s: float = 5.0, heartbeat_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        self.name, self.min_gap_s, self.heartbeat_s, self.clock = name, min_gap_s, heartbeat_s, clock
        self.last_t = clock()
        self.last_tenth = 0

    def due(self, st: dict) -> bool:
        """Whether this batch's line is printed (and, if so, it counts as the last one printed)."""
        now, target = self.clock(), max(1, st["target"])
        tenth = min(10, 10 * st["complete"] // target)
        waited = now - self.last_t
        show = (st["complete"] >= target or waited >= self.heartbeat_s
                or (tenth > self.last_tenth and waited >= self.min_gap_s))
        if show:
            self.last_t, self.last_tenth = now, tenth
        return show

    def __call__(self, st: dict) -> None:
        if not self.due(st):
            return
        rate = st["new_trials"] / st["elapsed_s"] if st["elapsed_s"] > 0 else 0.0
        left = st["target"] - st["complete"]
        eta = f"{left / rate:.0f} s" if rate > 0 else "-"
        print(f"{self.name}: {st['complete']}/{st['target']} trials, {rate:.2f} trials/s, ETA {eta}, "
              f"{st['feasible']} feasible, front {st['front']}", file=sys.stderr, flush=True)


def _knee_summary(cfg, res=None) -> dict:
    """The front and knee of the study (``res``: its results as the run holds them; None: read
    back from the storage)."""
    from dse.search.front.walls import study_walls
    from dse.search.review.quality import knee_moved, knee_settledness
    from dse.search.study.results import load_results
    res = res if res is not None else load_results(cfg)
    k = res.knee()
    if k is None:
        return {"front_size": 0, "knee_trial": None}
    moved, settled = knee_moved(res), knee_settledness(res)
    return {"front_size": len(res.front()), "knee_trial": k.number, "knee_params": k.params,
            "knee_objectives": res.objective_values(k),
            "knee_moved": None if moved is None else [moved[0].number, moved[1].number],
            "knee_settled": settled["settled"], "knee_verdict": settled["verdict"],
            "knee_settled_reason": settled["reason"],
            "at_bounds": [w.to_json() for w in study_walls(res)]}


WALLS_MIN_FRONT = 8     # fewer front designs: too few to tell a user to widen a range


def wall_lines(walls: list, front_size: int) -> list[str]:
    """The "at a bound" lines of a front (``dse.search.front.walls.Wall``s); on a front of fewer
    than ``WALLS_MIN_FRONT`` designs one line that says they are not judged yet (a first run of 6
    trials was told to widen three ranges)."""
    if not walls:
        return []
    if front_size < WALLS_MIN_FRONT:
        return [f"at a bound: not judged on a front of {front_size} design{'s' * (front_size != 1)} "
                f"(`dse front --json` lists at_bounds; run more trials)"]
    return [f"at a bound: {w.sentence()}" for w in walls]


def finished(complete: int, target: int, what: str, new: int = 0) -> str:
    """``86/160 trials finished``; beyond the target (``--trials 10`` on a study of 30), not ``30/10``
    but ``30 trials finished, target 10 already met`` (``new``: trials this process added; with some,
    ``beyond the target of 10``)."""
    if complete <= target:
        return f"{complete}/{target} {what}"
    return f"{complete} {what}, " + (f"beyond the target of {target}" if new else f"target {target} already met")


def next_commands(ref: str) -> list[str]:
    """What a user runs after ``dse run``: each a command of its own, not a shell pipeline."""
    return [f"dse front {ref}", f"dse report {ref} -o report.html", f"dse export {ref} --knee -o design.toml"]
