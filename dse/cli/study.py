"""`dse study copy SRC DST [--study NAME ...] [--to NAME]` and `dse study list URL`.

Move studies between SQLite files, PostgreSQL and journal files (see ``dse.distributed.copy``);
storage URLs are always printed without their password.
"""
from __future__ import annotations

import argparse

from dse.report import dumps, table

# Where `dse run STUDY.toml` keeps a study without --storage, DSE_STORAGE or study.storage
# (dse.search.storage.storage.default_url; study.results moves the folder).
DEFAULT_STORAGE = "results/<study name>.db beside the study file"


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
    c.add_argument("--json", action="store_true", help="print what was copied as a JSON list")
    c.set_defaults(func=_copy)
    ls = ssub.add_parser("list", help="list the studies of a storage with their trial counts",
                         description="List the studies of a storage (every --model / --seed variant of a study "
                                     "is a study of its own there) with their trial counts.")
    ls.add_argument("url", metavar="URL|STUDY.toml", nargs="?",
                    help="the storage: sqlite:///FILE or FILE.db, postgresql://..., journal:FILE; or a study file, "
                         "for the storage `dse run STUDY.toml` uses ($DSE_STORAGE, else its study.storage, else "
                         f"{DEFAULT_STORAGE}); default: $DSE_STORAGE")
    ls.add_argument("--json", action="store_true", help="print the studies as a JSON list")
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
    if args.url and args.url.lower().endswith(".toml"):
        args.url = _study_file_storage(args.url)
    args.url = storage_url(args.url)
    if args.url is None:
        raise ConfigError(f"study list: give a storage URL (sqlite:///FILE or FILE.db, postgresql://..., "
                          f"journal:FILE) or a study file (its storage is {DEFAULT_STORAGE} unless it sets "
                          f"study.storage), or set {STORAGE_ENV}")
    rows = list_studies(args.url)
    if args.json:
        print(dumps([r.__dict__ for r in rows]))
        return 0
    print(f"storage: {mask_url(args.url)}")
    print(table([(r.name, r.trials, r.complete, r.running, r.waiting, r.failed, ", ".join(r.directions))
                 for r in rows], ["study", "trials", "complete", "running", "waiting", "failed", "directions"],
                align="lrrrrrl"))
    return 0


def _study_file_storage(path: str) -> str:
    """The storage `dse run PATH` uses, for `dse study list PATH` given a study file (a TOML file that
    is no study, or a study never run in its default storage: one line saying so)."""
    from dse.cli.credentials import storage_url
    from dse.cli.filekind import kind_of, noun, peek
    from dse.errors import ConfigError
    from dse.search.storage.storage import default_url
    data = peek(path)
    if data is None:
        return path                      # not readable as TOML: the storage checks report it
    kind = kind_of(data)
    if kind != "study":
        what = f"is {noun(kind) if kind else 'a TOML file'}, not a storage or a study file"
        raise ConfigError(f"study list: {path} {what}: give a storage URL (sqlite:///FILE or FILE.db, "
                          f"postgresql://..., journal:FILE) or a study file")
    from dse.search.study.study import load_study
    cfg = load_study(path, check_metrics=False)
    url = storage_url(None) or cfg.storage
    if url:
        return url
    db = cfg.results_dir / f"{cfg.base_name}.db"
    if not db.exists():
        raise ConfigError(f"study list: {path}: no storage yet ({db} does not exist: the study has not run "
                          f"there); `dse run {path}` creates it, or give the storage URL it was run with")
    return default_url(cfg.results_dir, cfg.base_name, create=False)
