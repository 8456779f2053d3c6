"""`dse study copy` / `dse study list` (SQLite <-> PostgreSQL), optuna-dashboard on the copy,
passwords never printed by any command that shows a storage, and the worker's building blocks
(slot quota, re-queue of trials that never got a heartbeat)."""
from __future__ import annotations

import io
import json
import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.cli import main
from dse.search.storage import mask_text, mask_url
from test_distributed import write_study

SECRET = "Zq9-unlikely-secret"


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
    optuna_dashboard = pytest.importorskip("optuna_dashboard")
    from wsgiref.util import setup_testing_defaults
    _, src, _ = sqlite_study
    assert main(["study", "copy", src, postgres_url]) == 0
    app = optuna_dashboard.wsgi(postgres_url)

    def get(path: str) -> dict:
        env: dict = {}
        setup_testing_defaults(env)
        env["PATH_INFO"], env["REQUEST_METHOD"], env["wsgi.input"] = path, "GET", io.BytesIO()
        status = []
        body = b"".join(app(env, lambda s, h, *a: status.append(s)))
        assert status[0].startswith("200"), (path, status, body[:300])
        return json.loads(body)

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


@pytest.mark.postgres
def test_no_command_prints_the_password(capsys, tmp_path, postgres_url):
    """run, worker, front, export, plot, study list/copy on a password-protected PostgreSQL."""
    password = postgres_url.split("://", 1)[1].split("@")[0].split(":", 1)[1]
    study = write_study(tmp_path, sampler="random", trials=8, batch=4, name="masked")
    runs = [
        ["run", str(study), "--storage", postgres_url, "--no-progress"],
        ["run", str(study), "--storage", postgres_url, "--no-progress", "--json"],
        ["worker", str(study), "--storage", postgres_url, "--trials", "12"],
        ["worker", str(study), "--storage", postgres_url, "--trials", "12", "--json"],
        ["front", str(study), "--storage", postgres_url],
        ["front", str(study), "--storage", postgres_url, "--json"],
        ["export", str(study), "--storage", postgres_url, "--knee", "-o", str(tmp_path / "knee.toml")],
        ["plot", str(study), "--storage", postgres_url, "-o", str(tmp_path / "plots")],
        ["study", "list", postgres_url],
        ["study", "copy", postgres_url, str(tmp_path / "c.db")],
        # errors: a wrong password and a closed port
        ["run", str(study), "--storage", postgres_url.replace(password, SECRET), "--no-progress"],
        ["study", "list", postgres_url.replace(password, SECRET)],
        ["run", str(study), "--storage", f"postgresql://dse:{SECRET}@127.0.0.1:1/x", "--no-progress"],
        ["worker", str(study), "--storage", f"postgresql://dse:{SECRET}@127.0.0.1:1/x"],
    ]
    for argv in runs:
        rc, out, err = cli(capsys, *argv)
        files = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()
                        and p.suffix in (".toml", ".csv", ".json", ".svg", ".txt"))
        for secret in (password, SECRET):
            assert secret not in out + err, (argv, out, err)
        assert password not in files and SECRET not in files
        if SECRET in " ".join(argv):
            assert rc == 2 and len(err.strip().splitlines()) == 1, (argv, err)
        else:
            assert rc == 0, (argv, err)


@settings(max_examples=int(os.environ.get("DSE_FUZZ_EXAMPLES", 300)), deadline=None)
@given(user=st.text("abcdefgh_.-", max_size=8),
       password=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), min_size=6,
                        max_size=24).filter(lambda p: p.strip() == p),
       host=st.sampled_from(["127.0.0.1", "db.example.org", "[::1]"]),
       port=st.sampled_from(["", ":5432"]),
       query=st.sampled_from(["", "?sslmode=require", "?connect_timeout=3&application_name=dse"]),
       scheme=st.sampled_from(["postgresql", "postgresql+psycopg", "mysql+pymysql"]))
def test_mask_url_never_shows_the_password(user, password, host, port, query, scheme):
    url = f"{scheme}://{user}:{password}@{host}{port}/studies{query}"
    assert mask_url(url) == f"{scheme}://{user}:***@{host}{port}/studies{query}"
    assert password not in mask_text(f"could not connect to {url}: password {password} rejected", url)
    pw = password.replace("&", "").replace(";", "")
    if len(pw) >= 6 and pw not in f"{scheme}://{host}/studies?password=***":  # libpq also takes ?password=...
        assert pw not in mask_url(f"{scheme}://{host}/studies?password={pw}")
        assert mask_url(f"{scheme}://{host}/studies?password=abcdef&x=1") == \
            f"{scheme}://{host}/studies?password=***&x=1"


def test_quota_slots(tmp_path):
    """Slot accounting on a real RDB storage: WAITING, RUNNING and COMPLETE hold slots, numbers decide."""
    import optuna
    from optuna.trial import TrialState

    from dse.distributed import quota
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'q.db'}")
    ts = [study.ask() for _ in range(5)]
    study.tell(ts[0], 1.0)
    study.tell(ts[1], state=TrialState.FAIL)
    study.tell(ts[2], state=TrialState.PRUNED)
    study.enqueue_trial({"x": 1})
    assert quota.counts(study) == quota.Counts(complete=1, running=2, waiting=1)
    # holding with smaller numbers: 0 (complete); 3 and 4 running; 5 waiting
    assert quota.slot(study, 3) == 1 and quota.slot(study, 4) == 2 and quota.slot(study, 6) == 4
    assert quota.holds_slot(study, 4, target=3) and not quota.holds_slot(study, 4, target=2)


def test_trial_without_heartbeat_is_failed_and_requeued(tmp_path):
    """A worker killed between ask() and its first heartbeat: optuna ignores such a trial; fail_stale
    fails it after the grace period and the retry callback queues its parameters again."""
    import optuna
    from optuna.storages import RDBStorage
    from optuna.trial import TrialState

    from dse.distributed.heartbeat import fail_stale
    from dse.search.storage import _retry_callback
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = RDBStorage(f"sqlite:///{tmp_path / 'h.db'}", heartbeat_interval=1, grace_period=1,
                         **_retry_callback())
    study = optuna.create_study(storage=storage)
    study.enqueue_trial({"x": 0.5})
    with pytest.warns(UserWarning):
        t = study.ask()
    t.suggest_float("x", 0, 1)
    assert fail_stale(study, storage) == 0  # too young
    time.sleep(1.5)
    assert fail_stale(study, storage) == 1
    states = [(s.state, s.params) for s in study.get_trials(deepcopy=False)]
    assert states == [(TrialState.FAIL, {"x": 0.5}), (TrialState.WAITING, {"x": 0.5})]
