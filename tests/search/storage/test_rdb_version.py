"""optuna's schema-version check without alembic (dse/search/storage/rdb_version.py), against optuna's own."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from optuna.storages import RDBStorage
from optuna.storages._rdb import storage as rdb

from dse.errors import ConfigError
from dse.search.storage import rdb_version
from dse.search.storage.storage import close_storage, open_storage

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture()
def stock(monkeypatch):
    """optuna's own version manager for the storages built in the test."""
    rdb_version.install()
    monkeypatch.setattr(rdb, "_VersionManager", rdb._VersionManager.__bases__[0])
    return rdb._VersionManager


def _storage(path: Path, light: bool, monkeypatch=None) -> RDBStorage:
    rdb_version.install()
    if not light:
        monkeypatch.setattr(rdb, "_VersionManager", rdb._VersionManager.__bases__[0])
    s = RDBStorage(f"sqlite:///{path}")
    if not light:
        monkeypatch.undo()
    return s


def _dump(path: Path) -> tuple:
    con = sqlite3.connect(path)
    try:
        schema = sorted(con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
        return (schema, list(con.execute("SELECT * FROM alembic_version")),
                list(con.execute("SELECT * FROM version_info")))
    finally:
        con.close()


def test_the_head_is_alembics(tmp_path, stock):
    s = RDBStorage(f"sqlite:///{tmp_path / 'a.db'}")
    assert type(s._version_manager) is stock
    assert rdb_version.head_revision(rdb_version.optuna_versions_dir()) == s._version_manager.get_head_version()


def test_a_new_database_is_stamped_as_optuna_stamps_it(tmp_path, monkeypatch):
    light = _storage(tmp_path / "light.db", True)
    plain = _storage(tmp_path / "plain.db", False, monkeypatch)
    assert getattr(type(light._version_manager), "dse_light", False)
    assert not getattr(type(plain._version_manager), "dse_light", False)
    for s in (light, plain):
        s.engine.dispose()
    assert _dump(tmp_path / "light.db") == _dump(tmp_path / "plain.db")
    stock = rdb._VersionManager.__bases__[0]
    again = RDBStorage(f"sqlite:///{tmp_path / 'light.db'}")      # light, reopened: optuna agrees
    assert stock.get_current_version(again._version_manager) == stock.get_head_version(again._version_manager)
    stock.check_table_schema_compatibility(again._version_manager)


def test_an_older_schema_gets_optunas_error(tmp_path, monkeypatch):
    errors = []
    for light in (True, False):
        db = tmp_path / f"{light}.db"
        _storage(db, light, monkeypatch).engine.dispose()
        con = sqlite3.connect(db)
        con.execute("UPDATE alembic_version SET version_num = 'v3.0.0.d'")
        con.commit()
        con.close()
        if not light:
            monkeypatch.setattr(rdb, "_VersionManager", rdb._VersionManager.__bases__[0])
        with pytest.raises(ConfigError, match="no longer compatible") as err:
            open_storage(f"sqlite:///{db}", "s", tmp_path)
        monkeypatch.undo()
        errors.append(str(err.value).replace(str(db), "DB"))
    assert errors[0] == errors[1]


def test_an_empty_version_table_is_stamped_by_optuna(tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    _storage(db, True).engine.dispose()
    con = sqlite3.connect(db)
    con.execute("DELETE FROM alembic_version")
    con.commit()
    con.close()
    calls = []
    base = rdb._VersionManager.__bases__[0]
    original = base._set_alembic_revision
    monkeypatch.setattr(base, "_set_alembic_revision", lambda self, rev: (calls.append(rev), original(self, rev)))
    RDBStorage(f"sqlite:///{db}").engine.dispose()
    head = rdb_version.head_revision(rdb_version.optuna_versions_dir())
    assert calls == [head]
    assert _dump(db)[1] == [(head,)]


@pytest.mark.parametrize("files,head", [
    ({"a.py": 'revision = "a"\ndown_revision = None\n', "b.py": "revision: str = 'b'\ndown_revision = 'a'\n"}, "b"),
    ({"a.py": 'revision = "a"\ndown_revision = None\n', "b.py": 'revision = "b"\ndown_revision = "a"\n',
      "c.py": 'revision = "c"\ndown_revision = "a"\n'}, None),                         # two heads
    ({"a.py": 'revision = "a"\ndown_revision = None\n', "b.py": 'revision = "b"\ndown_revision = ("a", "x")\n'}, None),
    ({"a.py": 'revision = "a"\n'}, None),                                                 # no down_revision
    ({"a.py": 'revision = "a"\ndown_revision = None\n', "b.py": 'revision = "b"\ndown_revision = "z"\n'}, None),
])
def test_head_revision_reads_one_plain_chain_only(tmp_path, files, head):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert rdb_version.head_revision(str(tmp_path)) == head


@pytest.mark.parametrize("fresh", [True, False])
def test_opening_a_study_does_not_import_alembic(tmp_path, fresh):
    db = tmp_path / "s.db"
    if not fresh:
        _storage(db, True).engine.dispose()
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from dse.search.storage.storage import close_storage, open_storage
        s = open_storage({f"sqlite:///{db}"!r}, "s", Path({str(tmp_path)!r}))
        close_storage(s)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("alembic", "mako", "pygments")))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    con = sqlite3.connect(db)
    assert [r[0] for r in con.execute("SELECT version_num FROM alembic_version")] == \
        [rdb_version.head_revision(rdb_version.optuna_versions_dir())]
    con.close()


def test_open_storage_uses_the_light_manager(tmp_path):
    s = open_storage(f"sqlite:///{tmp_path / 's.db'}", "s", tmp_path)
    try:
        assert getattr(type(s._version_manager), "dse_light", False)
    finally:
        close_storage(s)
