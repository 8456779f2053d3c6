"""Credentials off the command line (issue 50; dse.cli.credentials): a password given through
``DSE_STORAGE`` shows in no output, file, study attribute or process title; a URL without a
password lets libpq find it; ``dse worker`` warns once about a password on its command line."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dse.cli import main
from dse.cli.credentials import STORAGE_ENV, hide_from_process_title, storage_url
from tests.fixtures import write_distributed_study

WARNING = "dse worker: warning: the --storage URL carries a password"


def _password(url: str) -> str:
    return url.split("://", 1)[1].split("@")[0].split(":", 1)[1]


def _cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _without_password(url: str) -> str:
    return url.replace(":" + _password(url) + "@", "@", 1)


def test_storage_url_precedence(monkeypatch):
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    assert storage_url(None) is None and storage_url("a.db") == "a.db"
    monkeypatch.setenv(STORAGE_ENV, "  ")
    assert storage_url(None) is None
    monkeypatch.setenv(STORAGE_ENV, "postgresql://u:pw@h/db")
    assert storage_url(None) == "postgresql://u:pw@h/db" and storage_url("b.db") == "b.db"   # the flag wins


def test_a_study_file_storage_gives_way_to_the_environment(tmp_path, monkeypatch, capsys):
    study = write_distributed_study(tmp_path, sampler="random", trials=4, batch=4, name="envwins")
    monkeypatch.setenv(STORAGE_ENV, str(tmp_path / "from-env.db"))
    rc, out, _ = _cli(capsys, "run", str(study), "--no-progress")
    assert rc == 0 and (tmp_path / "from-env.db").is_file() and not (tmp_path / "results").exists()
    assert "dse front envwins.toml" in out.replace(str(tmp_path) + os.sep, "") and "--storage" not in out


@pytest.mark.postgres
def test_no_output_file_attribute_or_title_shows_a_password_given_in_the_environment(
        capsys, tmp_path, postgres_url, monkeypatch):
    """Every command that shows a storage, with the password in DSE_STORAGE only: its output, the
    files it writes (export, report, plots, copies), the study's and trials' attributes, the
    process title of a running worker."""
    import sqlalchemy as sa
    password = _password(postgres_url)
    study = write_distributed_study(tmp_path, sampler="random", trials=8, batch=4, name="envpw")
    monkeypatch.setenv(STORAGE_ENV, postgres_url)
    monkeypatch.chdir(tmp_path)
    runs = [
        ["run", str(study), "--no-progress"],
        ["run", str(study), "--no-progress", "--json", "--trials", "10"],
        ["worker", str(study), "--trials", "12"],
        ["worker", str(study), "--trials", "14", "--json"],
        ["front", str(study)], ["front", str(study), "--json"], ["front", str(study), "--csv"],
        ["export", str(study), "--knee", "-o", str(tmp_path / "knee.toml")],
        ["export", str(study), "--all", "-o", str(tmp_path / "all.csv")],
        ["report", str(study), "-o", str(tmp_path / "report.html"), "--no-reproduce"],
        ["report", str(study), "-o", str(tmp_path / "report.md"), "--no-reproduce"],
        ["plot", str(study), "-o", str(tmp_path / "plots")],
        ["explain", str(study), "--from", "published", "--to", "knee"],
        ["study", "list"], ["study", "list", "--json"],
        ["study", "copy", _without_password(postgres_url), str(tmp_path / "copy.db")],   # PGPASSWORD
    ]
    monkeypatch.setenv("PGPASSWORD", password)
    for argv in runs:
        rc, out, err = _cli(capsys, *argv)
        assert rc == 0, (argv, err)
        assert password not in out + err and WARNING not in err, (argv, out, err)
        assert "--storage" not in out, (argv, out)        # next-step hints: the environment gives it again
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".db"]
    assert {"knee.toml", "all.csv", "report.html", "report.md"} <= {p.name for p in files}
    assert [p for p in files if password.encode() in p.read_bytes()] == []
    assert password.encode() not in (tmp_path / "copy.db").read_bytes()
    engine = sa.create_engine(postgres_url)
    with engine.connect() as c:
        for table in ("study_user_attributes", "study_system_attributes", "trial_user_attributes",
                      "trial_system_attributes"):
            rows = c.execute(sa.text(f"SELECT count(*) FROM {table} WHERE strpos(value_json, :p) > 0"),
                             {"p": password}).scalar_one()
            assert rows == 0, table
        assert c.execute(sa.text("SELECT count(*) FROM trials")).scalar_one() >= 14
    engine.dispose()
    # errors name the storage masked: a wrong password, a closed port
    monkeypatch.delenv("PGPASSWORD")
    for url in (postgres_url.replace(password, password[::-1] + "x"),
                f"postgresql://dse:{password}@127.0.0.1:1/x"):
        monkeypatch.setenv(STORAGE_ENV, url)
        for argv in (["run", str(study), "--no-progress"], ["worker", str(study)], ["front", str(study)],
                     ["study", "list"]):
            rc, out, err = _cli(capsys, *argv)
            assert rc == 2 and len(err.strip().splitlines()) == 1 and err.startswith("dse: error:"), (argv, err)
            assert password not in out + err and password[::-1] not in err, (argv, err)


def _worker(study: Path, env: dict, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dse", "worker", str(study), "--trials", "100000", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


def _title_while_working(p: subprocess.Popen, url: str, name: str) -> bytes:
    """The worker's command line once it works on study ``name`` (its first trials are written)."""
    import sqlalchemy as sa
    engine = sa.create_engine(url)
    done = sa.text("SELECT count(*) FROM trials t JOIN studies s ON s.study_id = t.study_id "
                   "WHERE s.study_name = :n AND t.state = 'COMPLETE'")
    try:
        for _ in range(600):
            time.sleep(0.1)
            try:
                with engine.connect() as c:
                    if c.execute(done, {"n": name}).scalar_one():
                        break
            except sa.exc.DBAPIError:
                pass
        return Path(f"/proc/{p.pid}/cmdline").read_bytes()
    finally:
        engine.dispose()
        p.kill()
        p.wait()


@pytest.mark.postgres
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/cmdline")
def test_process_titles(tmp_path, postgres_url):
    """Through DSE_STORAGE the password never reaches the title; on the command line it is warned
    about once and overwritten in the title while the worker runs."""
    password = _password(postgres_url)
    env = {k: v for k, v in os.environ.items() if k != STORAGE_ENV}
    study = write_distributed_study(tmp_path / "a", sampler="random", trials=8, batch=4, name="title1")
    p = _worker(study, {**env, STORAGE_ENV: postgres_url})
    title = _title_while_working(p, postgres_url, "title1")
    assert b"worker" in title and password.encode() not in title
    assert WARNING not in p.stderr.read()
    study = write_distributed_study(tmp_path / "b", sampler="random", trials=8, batch=4, name="title2")
    p = _worker(study, env, "--storage", postgres_url)
    title = _title_while_working(p, postgres_url, "title2")
    assert b"--storage" in title and b"postgresql://dse:" in title and password.encode() not in title
    assert p.stderr.read().count(WARNING) == 1


def test_hide_from_process_title():
    # on stdin: the words it looks for are not on its own command line
    code = textwrap.dedent("""
        import sys
        from dse.cli.credentials import hide_from_process_title
        assert hide_from_process_title(["s3cret-xyz"])
        assert not hide_from_process_title(["absent-word"])
        sys.stdout.write(open("/proc/self/cmdline", "rb").read().decode() + "|" + " ".join(sys.argv[1:]))
    """)
    if not sys.platform.startswith("linux"):
        assert not hide_from_process_title(["x"])
        return
    r = subprocess.run([sys.executable, "-", "--storage", "postgresql://u:s3cret-xyz@h/db"], input=code,
                       capture_output=True, text=True)
    title, argv = r.stdout.split("|")
    assert r.returncode == 0, r.stderr
    assert "s3cret-xyz" not in title and "postgresql://u:**********@h/db" in title
    assert argv == "--storage postgresql://u:s3cret-xyz@h/db"          # Python's own copy is unchanged


@pytest.mark.postgres
def test_libpq_finds_the_password(tmp_path, postgres_url, monkeypatch, capsys):
    """A URL without a password: PGPASSWORD, a password file (~/.pgpass, PGPASSFILE), a service
    file (PGSERVICEFILE); none of them: one line that says where to put it."""
    from sqlalchemy.engine import make_url
    u = make_url(postgres_url)
    bare = _without_password(postgres_url)
    for k in ("PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE", STORAGE_ENV):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))                  # no ~/.pgpass of the machine's user
    rc, _, err = _cli(capsys, "study", "list", bare)
    assert rc == 2 and "no password supplied" in err and "PGPASSWORD, ~/.pgpass" in err, err
    monkeypatch.setenv("PGPASSWORD", u.password)
    study = write_distributed_study(tmp_path, sampler="random", trials=4, batch=4, name="libpq")
    rc, out, err = _cli(capsys, "run", str(study), "--storage", bare, "--no-progress")
    assert rc == 0 and u.password not in out + err, err
    assert _cli(capsys, "study", "list", bare)[0] == 0
    monkeypatch.delenv("PGPASSWORD")
    pgpass = tmp_path / ".pgpass"
    pgpass.write_text(f"{u.host}:{u.port}:*:{u.username}:{u.password}\n")
    pgpass.chmod(0o600)
    assert _cli(capsys, "study", "list", bare)[0] == 0                # ~/.pgpass
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    assert _cli(capsys, "study", "list", bare)[0] == 0                # PGPASSFILE
    monkeypatch.delenv("PGPASSFILE")
    services = tmp_path / "services.conf"
    services.write_text(f"[soak]\nhost={u.host}\nport={u.port}\nuser={u.username}\npassword={u.password}\n"
                        f"dbname={u.database}\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    study = write_distributed_study(tmp_path, sampler="random", trials=4, batch=4, name="service")
    monkeypatch.setenv(STORAGE_ENV, "postgresql:///?service=soak")
    rc, out, err = _cli(capsys, "run", str(study), "--no-progress")
    assert rc == 0, err
    assert u.password not in out + err
    rc, out, err = _cli(capsys, "study", "list")
    assert rc == 0 and "service" in out and "storage: postgresql:///?service=soak" in out
