"""A finished quickstart study in a SQLite file, for the storage tests (read-only commands, damaged
files): build it once per module, then copy it per test so each test damages its own."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dse.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "studies/quickstart.toml"


@pytest.fixture(scope="module")
def finished_db(tmp_path_factory) -> Path:
    """A quickstart study of 8 trials in a SQLite file (copied per test before use)."""
    db = tmp_path_factory.mktemp("sqlite-study") / "q.db"
    assert main(["run", str(QUICK), "--trials", "8", "--no-progress", "--storage", str(db)]) == 0
    return db


def copy_db(src: Path, dst_dir: Path) -> Path:
    """Copy the database and its journal files into dst_dir; return the copy's path."""
    for f in src.parent.glob(src.name + "*"):
        shutil.copy2(f, dst_dir / f.name)
    return dst_dir / src.name
