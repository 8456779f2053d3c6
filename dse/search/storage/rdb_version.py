"""optuna's RDB schema versioning without importing alembic, where nothing needs migrating.

Every ``RDBStorage`` runs optuna's ``_VersionManager``: it reads the ``alembic_version`` table
through alembic (stamping a new database with the head revision) and compares that revision
with the head of optuna's migration scripts, which alembic finds by loading its script
directory. Importing alembic (its runtime environment, Mako, Pygments) and loading the scripts
cost every `dse` command that opens a study 0.27 s of one core on an existing SQLite file and
0.37-0.44 s on a new one (2-core machine, optuna 4.x): a fixed cost that `dse run --jobs 2`
cannot halve (``benchmarks/bench_search.py``, "outside the run loop").

``install`` replaces optuna's ``_VersionManager`` with ``LightVersionManager``, which does the same
with plain SQL where the outcome is the common one, and calls optuna's own code otherwise:

* the stored revision is read with a ``SELECT`` from ``alembic_version`` (as alembic reads it; a
  table of several rows or none goes to alembic);
* the head revision is that of optuna's migration scripts, read from their ``revision = ...``
  and ``down_revision = ...`` lines (``head_revision``: the one revision no script names as its
  ``down_revision``; anything else, e.g. a merge or a branch, falls back to alembic);
* a new SQLite database (no ``alembic_version`` table) is stamped with the head as alembic
  stamps it: the ``alembic_version`` table (``version_num VARCHAR(32)``, primary key
  ``alembic_version_pkc``) and one row; other databases, and a database that was created
  before optuna used alembic, are stamped by optuna itself;
* a database at another revision than the head goes through optuna's own check, which raises
  its "no longer compatible" error (alembic is imported then).

``tests/search/storage/test_rdb_version.py`` checks it against optuna's manager: the same head, the same
schema and rows in a new database, the same error on an old one, and no alembic import.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

VERSION_TABLE = "alembic_version"
_LINE = re.compile(r"^(revision|down_revision)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.M)
_QUOTED = re.compile(r"""^(['"])([^'"]+)\1$""")


def install() -> None:
    """Use ``LightVersionManager`` for every ``RDBStorage`` built from now on in this process."""
    from optuna.storages._rdb import storage as rdb
    if not getattr(rdb._VersionManager, "dse_light", False):
        rdb._VersionManager = light_manager_class(rdb._VersionManager)


@functools.cache
def head_revision(versions_dir: str) -> str | None:
    """The head revision of the alembic scripts in ``versions_dir`` (``*.py``), read from their
    ``revision`` / ``down_revision`` lines; None when that is not one plain chain of quoted
    revisions (then alembic decides)."""
    revs: set[str] = set()
    downs: set[str] = set()
    for path in sorted(Path(versions_dir).glob("*.py")):
        found = dict(_LINE.findall(path.read_text(encoding="utf-8")))
        rev, down = found.get("revision"), found.get("down_revision")
        if rev is None or down is None:
            return None
        m = _QUOTED.match(rev)
        if m is None:
            return None
        revs.add(m.group(2))
        if down != "None":
            m = _QUOTED.match(down)
            if m is None:                # a tuple: a merge point
                return None
            downs.add(m.group(2))
    heads = revs - downs
    return heads.pop() if len(heads) == 1 and downs <= revs else None


def optuna_versions_dir() -> str:
    """The directory of optuna's alembic migration scripts."""
    from optuna.storages._rdb import storage as rdb
    return str(Path(rdb.__file__).with_name("alembic") / "versions")


def version_rows(engine) -> list[str] | None:
    """The revisions in the database's ``alembic_version`` table (None: there is no such table)."""
    import sqlalchemy
    with engine.connect() as conn:
        if not sqlalchemy.inspect(conn).has_table(VERSION_TABLE):
            return None
        return [r[0] for r in conn.execute(sqlalchemy.text(f"SELECT version_num FROM {VERSION_TABLE}"))]


def stamp(engine, revision: str) -> None:
    """Stamp a new database with ``revision`` as alembic's ``stamp`` does: its version table (one
    VARCHAR(32) column, primary key ``alembic_version_pkc``) and one row."""
    import sqlalchemy
    table = sqlalchemy.Table(VERSION_TABLE, sqlalchemy.MetaData(),
                             sqlalchemy.Column("version_num", sqlalchemy.String(32), nullable=False),
                             sqlalchemy.PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"))
    with engine.begin() as conn:
        table.create(conn, checkfirst=True)
        conn.execute(table.insert().values(version_num=revision))


def light_manager_class(base: type) -> type:
    """optuna's ``_VersionManager`` (``base``) with the plain-SQL paths of the module docstring."""

    class LightVersionManager(base):
        dse_light = True

        def _init_alembic(self) -> None:
            rows = version_rows(self.engine)
            if rows is not None and len(rows) == 1:
                return                                  # initialised: optuna returns here too
            head = head_revision(optuna_versions_dir())
            if rows is not None or head is None or self.engine.dialect.name != "sqlite" \
                    or not self._is_alembic_supported():
                super()._init_alembic()
                return
            stamp(self.engine, head)

        def get_current_version(self) -> str:
            rows = version_rows(self.engine)
            return rows[0] if rows is not None and len(rows) == 1 else super().get_current_version()

        def get_head_version(self) -> str:
            return head_revision(optuna_versions_dir()) or super().get_head_version()

    LightVersionManager.__name__ = LightVersionManager.__qualname__ = "LightVersionManager"
    return LightVersionManager
