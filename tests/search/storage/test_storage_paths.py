"""``--storage`` takes a plain file path wherever it takes a URL (run, front, export, study list,
study.storage in a study file); messages keep the user's spelling of the URL."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dse.cli import main
from dse.search.storage.storage import normalise_url

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "studies/quickstart.toml"


def test_normalise_url_forms(tmp_path):
    assert normalise_url("postgresql://u:p@h/db") == "postgresql://u:p@h/db"
    assert normalise_url("journal:x.log") == "journal:x.log"
    assert normalise_url("run.jsonl") == "run.jsonl"
    assert normalise_url(str(tmp_path / "a.db")) == f"sqlite:///{tmp_path / 'a.db'}"
    assert normalise_url(str(tmp_path / "noext")) == f"sqlite:///{tmp_path / 'noext'}"


@pytest.fixture(scope="module")
def finished_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("paths") / "q.db"
    assert main(["run", str(QUICK), "--trials", "8", "--no-progress", "--storage", str(db)]) == 0
    return db


def test_plain_paths_everywhere(finished_db, tmp_path, capsys):
    for f in finished_db.parent.glob(finished_db.name + "*"):
        shutil.copy2(f, tmp_path / f.name)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["front", str(QUICK), "--storage", "q.db", "--json"]) == 0
        assert main(["export", str(QUICK), "--storage", "q.db", "--knee", "-o", "knee.toml"]) == 0
        assert main(["study", "list", "q.db"]) == 0
        assert main(["run", str(QUICK), "--trials", "10", "--no-progress", "--storage", "q.db"]) == 0
    finally:
        os.chdir(cwd)
    assert main(["front", str(QUICK), "--storage", str(tmp_path / "q.db")]) == 0
    assert "quickstart" in capsys.readouterr().out


def test_study_storage_plain_path_is_relative_to_the_study_file(tmp_path):
    from dse.search.study.study import load_study
    study = tmp_path / "studies" / "s.toml"
    study.parent.mkdir()
    text = QUICK.read_text().replace("[study]", "[study]\nstorage = \"../store/s.db\"", 1)
    study.write_text(text)
    for sub in ("spaces", "objectives"):
        shutil.copytree(ROOT / sub, tmp_path / sub)
    cfg = load_study(study)
    assert cfg.storage == f"sqlite:///{(tmp_path / 'store' / 's.db').resolve()}"


def test_unknown_scheme_keeps_the_users_spelling(capsys):
    assert main(["front", str(QUICK), "--storage", "ReDiS://Host/0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "ReDiS://Host/0" in err and "unknown URL scheme 'ReDiS'" in err
