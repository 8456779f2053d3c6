"""`dse study list STUDY.toml`: the storage `dse run STUDY.toml` uses (DSE_STORAGE, else the file's
study.storage, else results/<name>.db beside it), or one line saying what to pass; without an
argument, one line naming a study's default storage. `dse run --trials N` below what a study has."""
from __future__ import annotations

from pathlib import Path

import pytest

from dse.cli import main
from tests.fixtures import LATENCY_POWER_OBJECTIVES, SILICON36_SPACE, one_error_line, write_study
from tests.fixtures import cli as run_cli


def _study(folder: Path, **kw) -> Path:
    return write_study(folder, space=SILICON36_SPACE, objectives=LATENCY_POWER_OBJECTIVES, trials=2, batch=2, **kw)


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    """A 2-trial study run in its default storage (results/study.db beside it)."""
    p = _study(tmp_path_factory.mktemp("ran"))
    assert main(["run", str(p), "--no-progress"]) == 0
    assert (p.parent / "results" / "study.db").is_file()
    return p


def test_a_study_file_lists_its_default_storage(capsys, ran, monkeypatch):
    monkeypatch.delenv("DSE_STORAGE", raising=False)
    rc, out, err = run_cli(capsys, "study", "list", str(ran))
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == f"storage: sqlite:///{ran.parent / 'results' / 'study.db'}"
    assert lines[3].split()[:3] == ["study", "2", "2"]
    rc, out, _ = run_cli(capsys, "study", "list", str(ran), "--json")
    assert rc == 0 and '"name": "study"' in out


def test_a_study_file_lists_the_storage_dse_run_would_use(capsys, ran, tmp_path, monkeypatch):
    """DSE_STORAGE first, then study.storage (relative to the study file), as for `dse run`."""
    db = tmp_path / "elsewhere.db"
    other = _study(tmp_path / "s", name="other", study_extra='storage = "../elsewhere.db"')
    monkeypatch.delenv("DSE_STORAGE", raising=False)
    assert run_cli(capsys, "run", str(other), "--no-progress")[0] == 0 and db.is_file()
    rc, out, _ = run_cli(capsys, "study", "list", str(other))
    first = out.splitlines()[0]
    assert rc == 0 and first.startswith("storage: sqlite:///") and Path(first.split("///")[1]).resolve() == db
    assert out.splitlines()[3].split()[:3] == ["other", "2", "2"]
    monkeypatch.setenv("DSE_STORAGE", f"sqlite:///{ran.parent / 'results' / 'study.db'}")
    rc, out, _ = run_cli(capsys, "study", "list", str(other))
    assert rc == 0 and out.splitlines()[3].split()[0] == "study"


def test_a_study_never_run_says_so_and_creates_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("DSE_STORAGE", raising=False)
    p = _study(tmp_path)
    err = one_error_line(*run_cli(capsys, "study", "list", str(p))[::2])
    assert err == (f"dse: error: study list: {p}: no storage yet ({tmp_path / 'results' / 'study.db'} does not "
                   f"exist: the study has not run there); `dse run {p}` creates it, or give the storage URL it was "
                   f"run with\n")
    assert "move the file away" not in err and "--storage" not in err
    assert not (tmp_path / "results").exists()


def test_other_toml_files_are_not_storages(capsys, tmp_path):
    p = _study(tmp_path)
    (tmp_path / "notes.toml").write_text('title = "not a study"\n')
    for f, what in ((tmp_path / "space.toml", "a space file"), (tmp_path / "objectives.toml", "an objectives file"),
                    (tmp_path / "notes.toml", "a TOML file")):
        err = one_error_line(*run_cli(capsys, "study", "list", str(f))[::2])
        assert err == (f"dse: error: study list: {f} is {what}, not a storage or a study file: give a storage URL "
                       f"(sqlite:///FILE or FILE.db, postgresql://..., journal:FILE) or a study file\n")
    p.write_text(p.read_text().replace("trials = 2", "trials = 0"))      # a broken study: its own error
    err = one_error_line(*run_cli(capsys, "study", "list", str(p))[::2])
    assert "study.trials = 0: must be an integer" in err


def test_without_a_storage_the_error_names_the_default(capsys, monkeypatch):
    monkeypatch.delenv("DSE_STORAGE", raising=False)
    err = one_error_line(*run_cli(capsys, "study", "list")[::2])
    assert "or a study file (its storage is results/<study name>.db beside the study file unless it sets " \
           "study.storage), or set DSE_STORAGE" in err


def test_the_finished_count_beyond_the_target():
    from dse.cli.run import finished
    assert finished(86, 160, "trials finished") == "86/160 trials finished"        # the normal case, unchanged
    assert finished(24, 24, "trials finished", 24) == "24/24 trials finished"
    assert finished(30, 10, "trials finished") == "30 trials finished, target 10 already met"
    assert finished(34, 32, "complete", 5) == "34 complete, beyond the target of 32"


def test_run_with_a_target_below_the_finished_trials(capsys, ran):
    rc, out, _ = run_cli(capsys, "run", str(ran), "--trials", "1", "--no-progress")
    assert rc == 0
    first = out.splitlines()[0]
    assert first.startswith("study study: 2 trials finished, target 1 already met (0 this run: 0 evaluated,")
    assert "2/1" not in out
    rc, out, _ = run_cli(capsys, "run", str(ran), "--no-progress")                  # at its target: as before
    assert rc == 0 and out.startswith("study study: 2/2 trials finished (0 this run: ")
