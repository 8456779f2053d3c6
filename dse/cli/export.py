"""`dse export STUDY.toml (--knee | --trial N | --all) -o FILE [--workload MODEL]`."""
from __future__ import annotations

import argparse
import sys

from dse.cli.run import _int_arg, add_study_args, study_from_args


def register(sub) -> None:
    p = sub.add_parser("export", help="export a study's knee or a trial as a design TOML, or all trials as a table",
                       description="--knee / --trial N: a design TOML ([hardware] [workload] [mapping] "
                                   "[metrics] [provenance]) that `dse evaluate FILE` re-evaluates to the same "
                                   "metrics. --all: every trial as .parquet, .csv or .json.")
    add_study_args(p)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--knee", action="store_true", help="the knee of the feasible front")
    g.add_argument("--trial", type=_int_arg, metavar="N", help="trial number N")
    g.add_argument("--all", action="store_true", help="every trial as a table (format from the -o extension)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output file")
    p.add_argument("--workload", metavar="MODEL", help="which of the study's workload models the design file "
                                                       "carries (default: the first)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dse.search.review.export import pick, write_design, write_table
    from dse.search.study.results import load_results
    cfg = study_from_args(args)
    res = load_results(cfg)
    if args.all:
        path = write_table(res, args.output)
        print(f"wrote {path} ({len(res.records)} trials)")
        return 0
    r = pick(res, knee=args.knee, trial=args.trial)
    path = write_design(res, r, args.output, args.workload)
    what = "knee, trial" if args.knee else "trial"
    print(f"wrote {path} ({what} {r.number}); re-evaluate with `dse evaluate {path}`")
    if not r.feasible:
        print(f"dse: warning: trial {r.number} is infeasible in study {res.cfg.name!r}"
              f"{': ' + r.reason if r.reason else ''} (the file's [provenance] feasible = false)", file=sys.stderr)
    return 0
