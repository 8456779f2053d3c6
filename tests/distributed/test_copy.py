"""`dse study copy` / `dse study list` (SQLite <-> PostgreSQL), and optuna-dashboard on the copy."""
from __future__ import annotations

import json

import pytest

from dse.cli import main
from tests.dashboard_api import dashboard_get
from tests.fixtures import write_distributed_study as write_study


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def snapshot(url: str) -> dict:
    """Everything a study holds, keyed by study name and trial number (ids excluded)."""
    import optuna
    out = {}
    storage = optuna.storages.get_storage(url)
    for s in storage.get_all_studies():
        trials = storage.get_all_trials(s._study_id)
        out[s.study_name] = {
            "directions": [d.name for d in s.directions],
            "user_attrs": s.user_attrs,
            "trials": {t.number: (t.state.name, t.values, t.params, t.user_attrs,
                                  {k: v for k, v in t.system_attrs.items()}) for t in trials},
        }
    return out


@pytest.fixture(scope="module")
def sqlite_study(tmp_path_factory):
    """A finished 24-trial study in SQLite (built once for this module)."""
    tmp = tmp_path_factory.mktemp("copy")
    study = write_study(tmp, sampler="random", trials=24, batch=8, name="copyme")
    url = f"sqlite:///{tmp / 'src.db'}"
    assert main(["run", str(study), "--storage", url, "--no-progress"]) == 0
    return study, url, tmp


@pytest.mark.postgres
def test_copy_sqlite_to_postgres_and_back(capsys, sqlite_study, postgres_url):
    study, src, tmp = sqlite_study
    pg = postgres_url
    capsys.readouterr()
    rc, out, err = cli(capsys, "study", "copy", src, pg)
    assert rc == 0, err
    assert "copied study 'copyme': 24 trials" in out
    password = pg.split("://", 1)[1].split("@")[0].split(":", 1)[1]
    assert password and password not in out + err and "***" in out

    rc, out, err = cli(capsys, "study", "list", pg)
    assert rc == 0 and "copyme" in out and password not in out + err
    rc, out, _ = cli(capsys, "study", "list", pg, "--json")
    assert rc == 0 and json.loads(out)[0]["complete"] == 24

    back = tmp / "back.db"
    rc, out, err = cli(capsys, "study", "copy", pg, str(back))  # a plain .db path is a SQLite file
    assert rc == 0, err
    a, b, c = snapshot(src), snapshot(pg), snapshot(f"sqlite:///{back}")
    assert a == b == c and len(a["copyme"]["trials"]) == 24

    # The copy is a study like the original: `dse front` reads the same front from it.
    rc1, f1, _ = cli(capsys, "front", str(study), "--storage", src, "--json")
    rc2, f2, err2 = cli(capsys, "front", str(study), "--storage", pg, "--json")
    assert rc1 == rc2 == 0 and json.loads(f1)["front"] == json.loads(f2)["front"]
    assert password not in f2 + err2

    # Copying again, or a study that is not there: one-line errors naming what is wrong.
    rc, out, err = cli(capsys, "study", "copy", src, pg)
    assert rc == 2 and "already exists" in err and password not in err and len(err.strip().splitlines()) == 1
    rc, out, err = cli(capsys, "study", "copy", src, pg, "--study", "nope")
    assert rc == 2 and "'nope'" in err and "copyme" in err
    rc, out, err = cli(capsys, "study", "copy", src, pg, "--to", "renamed")
    assert rc == 0 and "as 'renamed'" in out


@pytest.mark.postgres
def test_optuna_dashboard_opens_the_postgres_copy(capsys, sqlite_study, postgres_url):
    _, src, _ = sqlite_study
    assert main(["study", "copy", src, postgres_url]) == 0
    get = dashboard_get(postgres_url)

    studies = get("/api/studies")["study_summaries"]
    mine = [s for s in studies if s["study_name"] == "copyme"]
    assert len(mine) == 1
    detail = get(f"/api/studies/{mine[0]['study_id']}")
    assert len(detail["trials"]) == 24 and detail["best_trials"]


def test_copy_errors_are_one_line(capsys, sqlite_study, tmp_path):
    _, src, _ = sqlite_study
    for argv, needle in [
        (["study", "copy", f"sqlite:///{tmp_path / 'missing.db'}", str(tmp_path / "x.db")], "no such file"),
        (["study", "copy", src, "redis://h/0"], "unknown URL scheme"),
        (["study", "copy", src, str(tmp_path / "y.db"), "--study", "copyme", "--study", "copyme2",
          "--to", "z"], "'copyme2'"),
        (["study", "list", str(tmp_path / "missing.db")], "no such file"),
    ]:
        rc, out, err = cli(capsys, *argv)
        assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1, (argv, err)
