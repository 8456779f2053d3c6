"""Read-only commands (front, plot, export, report, compare, study list) never create or change a
storage: on a missing study they fail with one line and create nothing; on an existing database
the bytes of the database and its write-ahead log are unchanged afterwards. A `dse run` that fails
before its first trial (a sampler whose extra is missing) creates nothing either."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from dse.cli import main
from tests.search.sqlite_study import QUICK, ROOT, copy_db

# (name, argv); add any new read-only command here.
READ_ONLY = [
    ("front", ["front", "{study}", "--storage", "{db}"]),
    ("front --json --all", ["front", "{study}", "--storage", "{db}", "--json", "--all"]),
    ("plot", ["plot", "{study}", "--storage", "{db}", "-o", "{out}/plots"]),
    ("export --knee", ["export", "{study}", "--storage", "{db}", "--knee", "-o", "{out}/knee.toml"]),
    ("export --all", ["export", "{study}", "--storage", "{db}", "--all", "-o", "{out}/all.csv"]),
    ("study list", ["study", "list", "{db}"]),
    ("report", ["report", "{study}", "--storage", "{db}", "-o", "{out}/report.md", "--no-reproduce"]),
    ("compare", ["compare", "{study}", "{study}@seed=0", "--storage", "{db}", "--json"]),
]


def _argv(template: list[str], **kw) -> list[str]:
    return [a.format(**kw) for a in template]


def _digest(folder: Path) -> dict[str, str]:
    """sha256 of every storage file in ``folder``: the database and its write-ahead log (the
    ``-shm`` index is SQLite's shared memory for readers, and an empty write-ahead log holds
    nothing: neither is study content)."""
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(folder.iterdir())
            if f.is_file() and not f.name.endswith("-shm")
            and not (f.name.endswith("-wal") and not f.stat().st_size)}


@pytest.mark.parametrize("name,template", READ_ONLY, ids=[n for n, _ in READ_ONLY])
def test_read_only_command_leaves_the_database_bytes_unchanged(name, template, finished_db, tmp_path, capsys):
    store = tmp_path / "store"
    store.mkdir()
    db = copy_db(finished_db, store)
    before = _digest(store)
    rc = main(_argv(template, study=QUICK, db=db, out=tmp_path))
    err = capsys.readouterr().err
    assert rc == 0, err
    assert _digest(store) == before


def _study_copy(tmp_path: Path) -> Path:
    study = tmp_path / "studies" / "quickstart.toml"
    study.parent.mkdir()
    shutil.copy(QUICK, study)
    for sub in ("spaces", "objectives"):
        shutil.copytree(ROOT / sub, tmp_path / sub)
    return study


def _tree(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*"))


@pytest.mark.parametrize("name,template", READ_ONLY, ids=[n for n, _ in READ_ONLY])
def test_read_only_command_on_a_missing_study_creates_nothing(name, template, tmp_path, capsys):
    study = _study_copy(tmp_path)
    runs = [_argv(template, study=study, db=tmp_path / "nope.db", out=tmp_path)]     # an explicit missing file
    if template[0] != "study":                                                       # the default storage
        runs.append(_argv([a for a in template if a not in ("--storage", "{db}")], study=study, db="", out=tmp_path))
    for argv in runs:
        before = _tree(tmp_path)
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc == 2, err
        assert err.count("\n") == 1 and err.startswith("dse: error:"), err
        assert _tree(tmp_path) == before


def test_read_only_command_on_an_empty_sqlite_file_creates_no_table(tmp_path, capsys):
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    assert main(["front", str(QUICK), "--storage", str(db)]) == 2
    assert "no study" in capsys.readouterr().err
    assert db.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


def test_failed_run_with_a_missing_extra_creates_nothing(tmp_path, capsys, monkeypatch):
    from dse.search.propose import samplers
    study = _study_copy(tmp_path)

    def missing(*_a, **_k):
        raise samplers.ConfigError("sampler 'x': needs the optional package 'xyz' (pip install xyz)")
    monkeypatch.setattr(samplers, "make_sampler", missing)
    import dse.search.execute.runner as runner
    monkeypatch.setattr(runner, "make_sampler", missing)
    before = _tree(tmp_path)
    assert main(["run", str(study), "--trials", "4", "--no-progress"]) == 2
    assert "xyz" in capsys.readouterr().err
    assert _tree(tmp_path) == before
