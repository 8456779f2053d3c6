"""`dse init DIR`: the example spaces, objectives, studies and the quickstart notebook, copied
into DIR, ready to run there (`dse run DIR/studies/quickstart.toml`).

From a wheel the files come from the package data ``dse/data/examples/`` (setup.py copies them
from the repository at build time); from a checkout, from the repository itself. Never overwrites:
a file already in DIR is one error line and nothing is written.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from dse.errors import DSEError

# what is copied, folder -> pattern (the same as setup.py's EXAMPLES; tests/cli/model/test_init.py checks)
EXAMPLES = {"spaces": "*.toml", "objectives": "*.toml", "studies": "*.toml", "notebooks": "quickstart.ipynb"}


def register(sub) -> None:
    p = sub.add_parser("init", help="copy the example spaces, objectives, studies and notebook into a folder",
                       description="Copy the example spaces/, objectives/, studies/ and notebooks/quickstart.ipynb "
                                   "into DIR (created if missing), then run one: dse run DIR/studies/quickstart.toml. "
                                   "Refuses to overwrite a file.")
    p.add_argument("dir", metavar="DIR", help="folder to create or fill (its example files must not exist yet)")
    p.set_defaults(func=run)


def examples_root() -> Path:
    """The folder holding spaces/, objectives/, studies/ and notebooks/: the wheel's package data,
    else the checkout this package runs from."""
    package = Path(__file__).resolve().parents[2]
    for root in (package / "data" / "examples", package.parent):
        if (root / "studies" / "quickstart.toml").is_file():
            return root
    raise DSEError(f"no example studies in this installation ({package / 'data' / 'examples'} is missing): "
                   f"reinstall rexpert-dse from a wheel or a checkout")


def example_files(root: Path) -> list[Path]:
    """The example files under ``root``, relative to it."""
    return [f.relative_to(root) for folder, pattern in EXAMPLES.items() for f in sorted((root / folder).glob(pattern))]


def init(target: Path) -> list[Path]:
    """Copy the examples into ``target``; the files written (nothing if one already exists)."""
    root = examples_root()
    files = example_files(root)
    if target.exists() and not target.is_dir():
        raise DSEError(f"{target}: exists and is not a folder; give a new folder")
    there = [f for f in files if (target / f).exists()]
    if there:
        raise DSEError(f"{target / there[0]}: exists; dse init never overwrites ({len(there)} of its "
                       f"{len(files)} files are there): give a new folder")
    try:
        for f in files:
            (target / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / f, target / f)
    except OSError as exc:
        raise DSEError(f"{target}: cannot write the examples ({exc.strerror or exc})") from None
    return [target / f for f in files]


def run(args: argparse.Namespace) -> int:
    target = Path(args.dir)
    written = init(target)
    folders = ", ".join(sorted({f"{p.relative_to(target).parts[0]}/" for p in written}))
    print(f"wrote {len(written)} files to {target} ({folders})")
    print("next:")
    print(f"  dse run {target / 'studies' / 'quickstart.toml'}")
    return 0
