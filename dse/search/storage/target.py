"""Storage targets checked before anything opens them: one line naming the target, the problem and
what is allowed.

``check_target(url, write=...)`` is called by ``open_storage`` (and by ``study_sqlite_path``, so
``dse run`` checks before it takes its run lock) on the normalised URL. It refuses, without
creating anything:

* a URL that does not parse, an unknown scheme, an unknown or uninstalled SQLAlchemy driver
  (``postgresql+nodriver://``), an in-memory SQLite database (nothing would be kept);
* for a SQLite or journal file: the filesystem root or another directory, a device, a FIFO or a
  socket, a path whose folder is missing, is not a folder or cannot be written (``write``: a probe
  file is created and removed at once, so read-only file systems and pseudo-file systems such as
  ``/proc`` are found even by root), a file this process cannot read or write;
* a file that is not ours: a SQLite target that is not a SQLite database, or a SQLite database of
  another program (tables, none of them optuna's); a journal target whose first line is not an
  optuna journal record;
* a SQLite study database whose schema is newer than this optuna's (its ``alembic_version``
  revision is none of optuna's migration scripts): upgrade optuna, not the database.

The same newer-schema check on a database server is made by optuna itself when it connects;
``storage.py`` turns its error into one line (``schema_error``).
"""
from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

from dse.errors import ConfigError

ALLOWED = ("sqlite:///FILE or a file path, postgresql://..., mysql://..., journal:FILE "
           "(or a file ending in .log / .jsonl)")
DRIVERS = {   # scheme -> synchronous SQLAlchemy drivers (the first: the default when none is given)
    "sqlite": ("pysqlite",),
    "postgresql": ("psycopg2", "psycopg", "pg8000", "psycopg2cffi"),
    "mysql": ("mysqldb", "pymysql", "mysqlconnector", "mariadbconnector", "cymysql"),
    "mariadb": ("mysqldb", "pymysql", "mysqlconnector", "mariadbconnector"),
    "oracle": ("cx_oracle", "oracledb"),
    "mssql": ("pyodbc", "pymssql"),
}
JOURNAL_HEAD_BYTES = 1 << 16      # the first journal line must be a record within this many bytes
SQLITE_HEADER_BYTES = 100        # a SQLite database file starts with a header this long
OPTUNA_TABLES = {"studies", "alembic_version", "version_info"}


RDB_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql")


def is_journal(url: str) -> bool:
    return url.startswith(("journal:", "file:")) or url.endswith((".log", ".jsonl"))


def journal_path(url: str) -> Path:
    for pre in ("journal:", "file:"):
        if url.startswith(pre):
            url = url[len(pre):]
            if url.startswith("//"):
                url = url[2:]
            break
    return Path(url)


def sqlite_path(url: str) -> Path | None:
    """The database file of a ``sqlite:///`` URL (None for other URLs and in-memory SQLite)."""
    if not url.lower().startswith("sqlite:"):
        return None
    from sqlalchemy.engine import make_url
    try:
        db = make_url(url).database
    except Exception:
        return None
    return Path(db) if db and db != ":memory:" else None


def check_target(url: str, shown: str, *, write: bool) -> None:
    """Refuse a storage target that cannot be used (module docstring); ``url`` normalised
    (``storage.normalise_url``), ``shown`` the same with its password masked. ``write``: the
    command will create or change the storage."""
    if is_journal(url):
        path = journal_path(url)
        return check_file(path, "journal", write=write)
    given = url.split(":", 1)[0].split("+", 1)[0]
    scheme = given.lower()
    if "://" not in url or scheme not in RDB_SCHEMES:
        raise ConfigError(f"storage {shown}: unknown URL scheme {given!r} (allowed: {ALLOWED})")
    check_url(url, scheme, shown)
    db = sqlite_path(url)
    if db is not None:
        check_file(db, "sqlite", write=write)


def check_url(url: str, scheme: str, shown: str) -> None:
    """Refuse a database URL that does not parse, names an unknown driver, a driver that is not
    installed, or an in-memory SQLite database (``shown``: the URL with its password masked)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError
    try:
        u = make_url(url)
        _ = u.port
    except (ArgumentError, ValueError, TypeError):
        raise ConfigError(f"storage {shown}: not a valid database URL (expected scheme://user:password@host:port/"
                          f"database, or sqlite:///FILE); allowed: {ALLOWED}") from None
    base = "postgresql" if scheme == "postgres" else scheme
    driver = u.drivername.split("+", 1)[1] if "+" in u.drivername else ""
    known = DRIVERS.get(base, ())
    if driver and driver.lower() not in known:
        raise ConfigError(f"storage {shown}: unknown driver {driver!r} for {base} (allowed: "
                          f"{', '.join(f'{base}+{d}://' for d in known)}, or {base}:// without a driver)")
    try:
        u.set(drivername=f"{base}+{driver}" if driver else base).get_dialect().import_dbapi()
    except NoSuchModuleError:
        raise ConfigError(f"storage {shown}: unknown driver {driver or base!r} (allowed: {ALLOWED})") from None
    except ImportError as exc:
        raise ConfigError(f"storage {shown}: the database driver is not installed ({_first_line(exc)}); "
                          f"pip install it, or use another storage") from None
    if base == "sqlite" and (not u.database or u.database == ":memory:" or "mode=memory" in url):
        raise ConfigError(f"storage {shown}: an in-memory SQLite database keeps nothing after the command; "
                          f"give a file: sqlite:///FILE or a file path")


def check_file(path: Path, kind: str, *, write: bool) -> None:
    """Refuse a SQLite (``kind="sqlite"``) or journal (``kind="journal"``) file target that
    cannot be used (module docstring). A missing file is fine when ``write`` (it will be created)
    and left to the caller otherwise."""
    what = "a SQLite database" if kind == "sqlite" else "an optuna journal file"
    if "\0" in str(path):
        raise ConfigError(f"storage {str(path)!r}: the path contains a NUL character; allowed: {ALLOWED}")
    if not str(path).strip() or str(path) in (".", ".."):
        raise ConfigError(f"storage {str(path)!r}: no file name; allowed: {ALLOWED}")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot use it as {what} ({exc.strerror}); allowed: {ALLOWED}") from None
    if st is not None:
        _check_existing(path, st, kind, what, write)
    elif write:
        _check_folder(path, what)


def _check_existing(path: Path, st: os.stat_result, kind: str, what: str, write: bool) -> None:
    if stat.S_ISDIR(st.st_mode):
        root = " (the filesystem root)" if path == Path(path.anchor) else ""
        raise ConfigError(f"{path}: is a directory{root}, not {what}; give a file path inside it "
                          f"(e.g. {path / ('study.db' if kind == 'sqlite' else 'study.log')})")
    if not stat.S_ISREG(st.st_mode):
        kind_name = ("a character device" if stat.S_ISCHR(st.st_mode)
                     else "a block device" if stat.S_ISBLK(st.st_mode)
                     else "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode)
                     else "a socket" if stat.S_ISSOCK(st.st_mode)
                     else "not a regular file")
        raise ConfigError(f"{path}: is {kind_name}, not {what}; give a regular file")
    if not os.access(path, os.R_OK):
        raise ConfigError(f"{path}: the file is not readable")
    if write and not os.access(path, os.W_OK):
        raise ConfigError(f"{path}: the file is not writable; pass a --storage this user may write")
    if write:
        _check_folder(path, what)           # SQLite writes its -wal / -journal files beside it
    if st.st_size:
        (_check_sqlite_content if kind == "sqlite" else _check_journal_content)(path)


def _check_folder(path: Path, what: str) -> None:
    folder = path.parent
    try:
        fst = os.stat(folder)
    except FileNotFoundError:
        raise ConfigError(f"{path}: the folder {folder} does not exist; create it first or give a path in an "
                          f"existing folder") from None
    except OSError as exc:
        raise ConfigError(f"{path}: the folder {folder} cannot be used ({exc.strerror})") from None
    if not stat.S_ISDIR(fst.st_mode):
        raise ConfigError(f"{path}: {folder} is not a folder; give a path in an existing folder")
    if not os.access(folder, os.W_OK | os.X_OK) or not _can_create_in(folder):
        raise ConfigError(f"{path}: the folder {folder} is not writable ({what} and its lock / journal files "
                          f"are written there); pass --storage in a writable place")


def _can_create_in(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (a probe, removed at once): catches read-only
    file systems and pseudo-file systems, where ``os.access`` answers yes for root."""
    probe = folder / f".dse-probe-{os.getpid()}-{id(folder):x}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return True
    except OSError:
        return False
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return True


def _check_sqlite_content(path: Path) -> None:
    # Only through SQLite (never open()): closing any descriptor of a SQLite file drops the POSIX
    # locks this process's connections hold on it. SQLite takes a file of a few bytes for an
    # empty database (and overwrites it); no SQLite database is shorter than its 100-byte header.
    if os.stat(path).st_size < SQLITE_HEADER_BYTES:
        raise ConfigError(f"{path}: not a SQLite database ({os.stat(path).st_size} bytes, shorter than SQLite's "
                          f"header); pass another --storage or move the file away")
    import sqlite3
    from urllib.parse import quote

    from dse.search.storage.sqlite_guard import check_sqlite_integrity
    check_sqlite_integrity(path)         # damaged or truncated: one line naming it
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=60)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            revs = ([r[0] for r in conn.execute("SELECT version_num FROM alembic_version")]
                    if "alembic_version" in tables else [])
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return
    if tables and not tables & OPTUNA_TABLES:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise ConfigError(f"{path}: a SQLite database of another program (tables: {shown}), not an optuna "
                          f"study database; pass another --storage (a new file or a study database)")
    newer = [r for r in revs if r not in known_revisions()]
    if newer:
        import optuna

        from dse.search.storage.rdb_version import head_revision, optuna_versions_dir
        raise ConfigError(f"{path}: the study database has schema revision {newer[0]!r}, newer than optuna "
                          f"{optuna.__version__} knows (its newest: {head_revision(optuna_versions_dir())}); "
                          f"upgrade optuna (pip install -U optuna) to open it")


@functools.lru_cache(maxsize=1)
def known_revisions() -> frozenset[str]:
    """The schema revisions of this optuna's migration scripts (read once per process)."""
    import re

    from dse.search.storage.rdb_version import optuna_versions_dir
    out = set()
    for p in Path(optuna_versions_dir()).glob("*.py"):
        m = re.search(r"""^revision\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]""", p.read_text(encoding="utf-8"), re.MULTILINE)
        if m:
            out.add(m.group(1))
    return frozenset(out)


def _check_journal_content(path: Path) -> None:
    import json
    with open(path, "rb") as fh:
        head = fh.read(JOURNAL_HEAD_BYTES)
    line = head.split(b"\n", 1)[0]
    ok = False
    if b"\n" in head:
        try:
            rec = json.loads(line)
            ok = isinstance(rec, dict) and "op_code" in rec
        except (ValueError, UnicodeDecodeError):
            ok = False
    else:          # one record being written (or cut by a full disk): its start must be ours
        ok = line.startswith(b'{"op_code":')
    if not ok:
        raise ConfigError(f"{path}: not an optuna journal file (its first line is not a journal record); pass "
                          f"another --storage or move the file away")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
