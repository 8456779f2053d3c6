"""`dse worker STUDY.toml [--storage URL] [--jobs J] [--worker-id ID] [--max-trials N]`.

Start the same command on as many hosts / processes as you like: they share the study in the
storage until it has its target number of COMPLETE trials (see ``dse.distributed.worker``). The
storage may come from ``DSE_STORAGE`` (a password on the command line is warned about once and
hidden from the process title: ``dse.cli.credentials``).
"""
from __future__ import annotations

import argparse
import sys

from dse.errors import ConfigError
from dse.report import dumps


def register(sub) -> None:
    from dse.cli.run import _int_arg, add_study_args
    p = sub.add_parser("worker", help="one of many processes / hosts cooperating on one study",
                       description="Work on a shared study (PostgreSQL, or SQLite / journal on one host) "
                                   "until it has its target number of complete trials. Start as many as "
                                   "you like, anywhere; a killed worker's trials are re-queued. "
                                   "SIGINT/SIGTERM: finish the batch in flight, then stop.")
    add_study_args(p)
    p.add_argument("--trials", type=_int_arg, help="target number of COMPLETE trials, all workers together")
    p.add_argument("--jobs", "-j", type=_int_arg, default=1,
                   help="evaluation processes inside this worker (default 1)")
    p.add_argument("--worker-id", metavar="ID",
                   help="name of this worker (default host:pid); seeds its sampler with the study seed")
    p.add_argument("--max-trials", type=_int_arg, metavar="N", help="stop after evaluating N trials")
    p.add_argument("--poll", type=float, default=1.0, metavar="S",
                   help="seconds between checks while other workers hold the last trials (default 1)")
    p.add_argument("--heartbeat", type=_int_arg, metavar="S",
                   help="heartbeat interval in seconds (default: the study's heartbeat, 10); a worker silent for "
                        "3 intervals is taken as dead and its trials are re-queued; give every worker the same value")
    p.add_argument("--db-retry", type=float, default=120.0, metavar="S",
                   help="seconds to keep reconnecting when the database connection is lost (default 120; "
                        "then exit 3)")
    p.add_argument("--json", action="store_true", help="print the worker summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from dse.cli.credentials import warn_password_on_command_line
    from dse.cli.jobs import bounded_jobs
    from dse.cli.run import finished, study_from_args
    from dse.distributed.opening import check_heartbeat
    from dse.distributed.worker import run_worker
    warn_password_on_command_line(args.storage, "worker")
    args.jobs = bounded_jobs(args.jobs)
    if args.max_trials is not None and args.max_trials < 1:
        raise ConfigError(f"--max-trials {args.max_trials}: must be a positive integer")
    if not 0.01 <= args.poll <= 3600:
        raise ConfigError(f"--poll {args.poll:g}: must be a number of seconds in [0.01, 3600]")
    if args.worker_id is not None and not (0 < len(args.worker_id) <= 200 and args.worker_id.isprintable()):
        raise ConfigError("--worker-id: must be 1-200 printable characters")
    if not 0 <= args.db_retry <= 86400:   # also refuses nan
        raise ConfigError(f"--db-retry {args.db_retry:g}: must be a number of seconds in [0, 86400]")
    cfg = study_from_args(args, trials=args.trials)
    if args.heartbeat is not None:
        cfg = replace(cfg, heartbeat_s=check_heartbeat(args.heartbeat))
    try:
        s = run_worker(cfg, jobs=args.jobs, worker_id=args.worker_id, max_trials=args.max_trials,
                       poll_s=args.poll, db_retry_s=args.db_retry)
    except KeyboardInterrupt:
        print(f"dse: interrupted; this worker's unfinished trials were re-queued for study {cfg.name!r}",
              file=sys.stderr)
        return 130
    if args.json:
        print(dumps({**s.__dict__, "trials_per_s": s.rate}))
    else:
        demoted = (f", {s.repeats_demoted} also evaluated by another worker, stored as repeats"
                   if s.repeats_demoted else "")
        print(f"worker {s.worker}: {s.evaluated} trials evaluated ({s.duplicates} from the cache, "
              f"{s.surplus} beyond the target, {s.requeued} re-queued from dead workers"
              f"{demoted}"
              f") in {s.elapsed_s:.1f} s; "
              f"study {s.study}: {finished(s.complete, s.target, 'complete', s.evaluated)}")
        print(f"storage: {s.storage}")
    if s.signum is not None:
        print(f"dse worker: stopped by signal {s.signum}; the in-flight batch was recorded", file=sys.stderr)
        return 128 + s.signum
    if s.stopped_by == "exhausted" and s.complete < s.target:
        print(f"dse worker: {s.target - s.complete} grid point(s) failed beyond their retries; the study ends with "
              f"{s.complete}/{s.target} complete", file=sys.stderr)
    if s.stopped_by == "running-elsewhere":
        print("dse worker: the remaining trials are running in other workers (this storage has no heartbeat, "
              "so a dead worker's trials cannot be detected)", file=sys.stderr)
    return 0
