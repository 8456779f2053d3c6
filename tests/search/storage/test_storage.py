"""Storage URLs: passwords never printed by any command that shows a storage."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.cli import main
from dse.search.storage.storage import mask_text, mask_url, quiet_optuna
from tests.fixtures import write_distributed_study as write_study

SECRET = "Zq9-unlikely-secret"


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


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
        warned = [line for line in err.splitlines() if line.startswith("dse worker: warning: the --storage URL")]
        assert len(warned) == (argv[0] == "worker"), (argv, err)        # once, by dse worker only
        if SECRET in " ".join(argv):
            assert rc == 2 and len(err.strip().splitlines()) == 1 + len(warned), (argv, err)
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


def test_close_storages_leaves_a_sqlite_study_whole_in_its_file(tmp_path):
    """A writing and a read-only storage on one SQLite file, both holding pooled connections:
    closed as at exit (``close_storages``: the read-only one first), the writer's connection
    closes last, so the write-ahead log is checkpointed into the file and removed. Closed the
    other way round, the log stays, and the file alone lacks the study."""
    import optuna

    from dse.search.storage.storage import close_storages, open_storage
    db, wal = tmp_path / "w.db", tmp_path / "w.db-wal"
    writer = open_storage(f"sqlite:///{db}", "w", tmp_path)
    with quiet_optuna():
        study = optuna.create_study(study_name="w", storage=writer)
        study.tell(study.ask({"x": optuna.distributions.FloatDistribution(0, 1)}), 1.0)
        reader = open_storage(f"sqlite:///{db}", "w", tmp_path, read_only=True)
        assert reader.get_study_id_from_name("w") == study._study_id
    assert wal.exists() and wal.stat().st_size > 0
    assert close_storages() >= 2
    assert not wal.exists()


def test_a_cleanup_error_caused_by_an_interrupt_is_not_printed(tmp_path, caplog):
    """Ctrl-C or SIGTERM landing while SQLAlchemy fetches rows: its "Error closing cursor"
    (the cursor of a connection already closed) is not logged, other pool errors still are."""
    import logging

    from dse.search.storage.storage import close_storage, open_storage
    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}", "s", tmp_path)
    logger = storage.engine.pool.logger
    caplog.set_level(logging.ERROR)
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            try:
                raise RuntimeError("Cannot operate on a closed database.")
            except RuntimeError:
                logger.error("Error closing cursor", exc_info=True)      # as SQLAlchemy does
        try:
            raise RuntimeError("disk I/O error")
        except RuntimeError:
            logger.error("Error closing cursor", exc_info=True)
    finally:
        close_storage(storage)
    assert [r.exc_info[1].args[0] for r in caplog.records if r.msg == "Error closing cursor"] == ["disk I/O error"]
