"""`dse study copy SRC DST [--study NAME ...] [--to NAME]` and `dse study list URL`.

Move studies between SQLite files, PostgreSQL and journal files (see ``dse.distributed.copy``);
storage URLs are always printed without their password.
"""
from __future__ import annotations

import argparse

from dse.report import dumps, table


def register(sub) -> None:
    p = sub.add_parser("study", help="copy studies between storages (SQLite <-> PostgreSQL), list them",
                       description="Manage studies in optuna storages.")
    ssub = p.add_subparsers(dest="study_command", metavar="ACTION", parser_class=type(p))
    ssub.required = True
    c = ssub.add_parser("copy", help="copy studies from one storage to another",
                        description="Copy every study (or the --study ones) of SRC into DST, with all trials "
                                    "and attributes. SRC/DST: sqlite:///FILE or FILE.db, "
                                    "postgresql://user:password@host:port/db, journal:FILE.")
    c.add_argument("src", metavar="SRC_URL")
    c.add_argument("dst", metavar="DST_URL")
    c.add_argument("--study", action="append", metavar="NAME", help="study to copy (repeatable; default: all)")
    c.add_argument("--to", metavar="NAME", help="name of the copy (with one --study)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_copy)
    ls = ssub.add_parser("list", help="list the studies of a storage with their trial counts")
    ls.add_argument("url", metavar="URL", nargs="?", help="the storage (default: $DSE_STORAGE)")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_list)


def _copy(args: argparse.Namespace) -> int:
    from dse.distributed.copy import copy_studies
    done = copy_studies(args.src, args.dst, args.study, args.to)
    if args.json:
        print(dumps(done))
        return 0
    for d in done:
        to = f" as {d['to']!r}" if d["to"] != d["study"] else ""
        print(f"copied study {d['study']!r}{to}: {d['trials']} trials, {d['from']} -> {d['dest']}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from dse.cli.credentials import STORAGE_ENV, storage_url
    from dse.distributed.copy import list_studies
    from dse.errors import ConfigError
    from dse.search.storage.storage import mask_url
    args.url = storage_url(args.url)
    if args.url is None:
        raise ConfigError(f"study list: give the storage URL, or set {STORAGE_ENV}")
    rows = list_studies(args.url)
    if args.json:
        print(dumps([r.__dict__ for r in rows]))
        return 0
    print(f"storage: {mask_url(args.url)}")
    print(table([(r.name, r.trials, r.complete, r.running, r.waiting, r.failed, ", ".join(r.directions))
                 for r in rows], ["study", "trials", "complete", "running", "waiting", "failed", "directions"],
                align="lrrrrrl"))
    return 0
