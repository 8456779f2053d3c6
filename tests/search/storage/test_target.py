"""dse.search.storage.target: storage targets refused before use, in one line, creating nothing
(the generated cases are tests/hostile/test_storage_property.py)."""
from __future__ import annotations

import sqlite3

import pytest

from dse.errors import ConfigError
from dse.search.storage.storage import normalise_url, open_storage
from dse.search.storage.target import check_target, known_revisions


def _refused(url: str, write: bool = True) -> str:
    with pytest.raises(ConfigError) as exc:
        check_target(url, url, write=write)
    return str(exc.value)


def test_a_file_shorter_than_sqlite_header_is_refused_not_overwritten(tmp_path):
    f = tmp_path / "tiny.db"
    f.write_bytes(b"\x00")            # SQLite would take it for an empty database and write a study into it
    assert "not a SQLite database (1 bytes" in _refused(normalise_url(str(f)))
    assert f.read_bytes() == b"\x00"


def test_a_database_of_another_program_and_of_a_newer_schema(tmp_path):
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE invoices (x)")
    conn.commit()
    conn.close()
    assert "a SQLite database of another program (tables: invoices)" in _refused(normalise_url(str(other)), False)
    newer = tmp_path / "new.db"
    conn = sqlite3.connect(newer)
    conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32))")
    conn.execute("INSERT INTO alembic_version VALUES ('v99.0.0.a')")
    conn.commit()
    conn.close()
    line = _refused(normalise_url(str(newer)), False)
    assert "schema revision 'v99.0.0.a', newer than optuna" in line and "pip install -U optuna" in line
    assert "v3.2.0.a" in known_revisions()


def test_journal_first_line_must_be_a_record(tmp_path):
    ok = tmp_path / "ok.log"
    ok.write_bytes(b'{"op_code":0,"worker_id":"w"}\n')
    check_target(f"journal:{ok}", "x", write=True)
    cut = tmp_path / "cut.log"
    cut.write_bytes(b'{"op_code":0,"wor')            # a first record a full disk cut short: ours
    check_target(f"journal:{cut}", "x", write=True)
    notes = tmp_path / "notes.log"
    notes.write_text("hello\n")
    assert "not an optuna journal file" in _refused(f"journal:{notes}")


def test_driver_and_url_errors_never_show_the_password():
    for url, needle in [("postgresql+nodriver://u:Sekret99@h/db", "unknown driver 'nodriver'"),
                        ("mysql://u:Sekret99@h/db", "driver is not installed"),
                        ("postgresql://u:Sekret99@h:notaport/db", "not a valid database URL"),
                        ("postgresql+a_b://u:Sekret99@h/db", "unknown driver 'a_b'"),
                        ("sqlite://", "in-memory")]:
        from dse.search.storage.storage import mask_url
        with pytest.raises(ConfigError) as exc:
            check_target(normalise_url(url), mask_url(url), write=True)
        assert needle in str(exc.value) and "Sekret99" not in str(exc.value), str(exc.value)


@pytest.mark.postgres
def test_a_server_database_of_another_schema_is_one_line(postgres_url, tmp_path):
    import optuna
    import sqlalchemy as sa
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(study_name="s", storage=postgres_url)
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = 'v99.0.0.a'"))
    engine.dispose()
    with pytest.raises(ConfigError) as exc:
        open_storage(postgres_url, "s", tmp_path, read_only=True)
    line = str(exc.value)
    assert "its schema is not this optuna's" in line and "\n" not in line
    assert postgres_url.split(":")[2].split("@")[0] not in line          # the password
