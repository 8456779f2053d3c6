"""The `dse` command line: a thin shell over the package.

Each sub-command lives in its own module with ``register(subparsers)``; the module sets
``func`` on its parser. User mistakes (DSEError) print one line and exit 2; so does a write that a
full disk or the file-size limit stops (``dse.errors.disk_full``); Ctrl-C exits 130.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from dse.errors import DSEError, disk_full

COMMAND_MODULES = (
    "dse.cli.model.init",
    "dse.cli.model.evaluate",
    "dse.cli.model.reproduce",
    "dse.cli.model.info",
    "dse.cli.model.trace",
    "dse.cli.run",
    "dse.cli.front",
    "dse.cli.explain",
    "dse.cli.plot",
    "dse.cli.export",
    "dse.cli.report",
    "dse.cli.model.compare",
    "dse.cli.worker",
    "dse.cli.study",
    "dse.cli.model.sweep",
    "dse.cli.grid",
)


EPILOG = """\
Run `dse COMMAND --help` for a command's arguments.
Documentation: the repository's docs/ folder (a mkdocs site, see README.md):
  docs/getting-started.md  a first study, step by step
  docs/guide/*.md          the user guide: studies.md, fronts.md, errors.md, ...
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every other user error
        sub = self.prog.removeprefix("dse").strip()
        self.exit(2, f"dse: error: {sub + ': ' if sub else ''}{message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from dse.version import __version__
    parser = _Parser(prog="dse", description="Design-space exploration for resident near-memory MoE FFN pools.",
                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rexpert-dse {__version__}")
    parser.add_argument("--catalog", metavar="FILE", action="append", default=[],
                        help="extra model catalog TOML (repeatable; also DSE_CATALOG)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    before = os.environ.get("DSE_CATALOG")
    if args.catalog:  # through the environment so worker processes see the same catalog
        os.environ["DSE_CATALOG"] = os.pathsep.join(
            [os.path.abspath(p) for p in args.catalog] + [p for p in (before or "").split(os.pathsep) if p])
    try:
        return _main(args)
    finally:                      # an in-process call (tests, notebooks) leaves the environment as it was
        if args.catalog and before is None:
            os.environ.pop("DSE_CATALOG", None)
        elif args.catalog:
            os.environ["DSE_CATALOG"] = before


def _main(args) -> int:
    try:
        from dse.mapping.trace_mapping import layout_cache_bytes
        layout_cache_bytes()                 # a bad DSE_LAYOUT_CACHE_MB: one line, before any work
        rc = args.func(args)
    except DSEError as exc:
        from dse.cli.credentials import hide_secrets
        print(f"dse: error: {hide_secrets(str(exc), _urls(args))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("dse: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `dse ... | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:     # a full disk or the file-size limit: one line; anything else is a bug
        why = disk_full(exc)
        if why is None:
            raise
        from dse.search.storage.storage import mask_url
        where = f"storage {mask_url(args.storage)}" if getattr(args, "storage", None) else "the study's storage"
        print(f"dse: error: {where}: a write failed ({why}); every trial written before it is kept: free "
              f"space (or raise the file-size limit) and run the same command again to resume", file=sys.stderr)
        return 2
    return int(rc or 0)


def _urls(args) -> list[str]:
    """The storage URLs a command was given (their secrets are masked in its error line)."""
    out = []
    for key in ("storage", "url", "src", "dst"):
        v = getattr(args, key, None)
        out += v if isinstance(v, list) else [v] if isinstance(v, str) else []
    return out


def run() -> None:
    from dse.lifetime import exit_now
    exit_now(main())   # the `dse` process: flushed and closed, without freeing its caches one by one
