"""Generated storage targets (issue 35.1): every refused ``--storage`` is ONE line, non-zero exit,
no traceback, no password, and nothing created on disk.

``test_generated_storage_targets_are_refused_in_one_line`` runs >= 500 generated arguments through
``dse.cli.main`` in this process (``dse run``, ``dse worker``, the read-only ``dse front`` and ``dse
study list``): the filesystem root
and other directories, devices, a FIFO, symlinks to them, folders that are missing, are files or
cannot be written, garbage files (random bytes) given as a SQLite file or a journal, a SQLite
database of another program or of a newer optuna schema, random URL schemes, unknown and
uninstalled drivers, malformed ports, in-memory SQLite, random passwords. Before and after each
command the test folder (also the command's working directory and the study's results folder) is
listed: a refused command leaves it as it was. ``test_named_storage_targets_through_python_m_dse``
runs a few named cases through the real ``python -m dse``.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sqlite3
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile.hostile_corpus import HERE

EXAMPLES = 500
ROOT_USER = os.geteuid() == 0
PW_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.~"


def build_world(w: Path) -> Path:
    """The test folder: a copy of the valid study and every kind of unusable target; the study file."""
    shutil.copytree(HERE / "study" / "parts", w / "study")
    (w / "adir").mkdir()
    (w / "adir.db").mkdir()
    (w / "adir.log").mkdir()
    os.mkfifo(w / "fifo")
    os.mkfifo(w / "fifo.log")
    (w / "afile").write_text("a file, not a folder\n")
    (w / "notes.db").write_text("my notes, not a database\n")
    (w / "notes.log").write_text("my notes, not a journal\n")
    os.symlink("/dev/null", w / "null-link.db")
    os.symlink(w / "adir", w / "dir-link.db")
    ro = w / "readonly"
    ro.mkdir()
    ro.chmod(0o555)
    conn = sqlite3.connect(w / "foreign.db")
    conn.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
    conn.commit()
    conn.close()
    conn = sqlite3.connect(w / "newer.db")
    conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
    conn.execute("CREATE TABLE studies (study_id INTEGER PRIMARY KEY, study_name VARCHAR(512))")
    conn.execute("INSERT INTO alembic_version VALUES ('v9.0.0.z')")
    conn.commit()
    conn.close()
    return w / "study" / "valid.toml"


def listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``root`` (lstat: mode, size), FIFOs and links not followed."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st_ = os.lstat(p)
            out[p] = (st_.st_mode, st_.st_size if not os.path.isdir(p) else 0)
    return out


def in_process(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    from dse.cli import main
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                rc = 1
    finally:
        os.chdir(old)
    return rc, out.getvalue(), err.getvalue()


# -- the generated arguments: (target text, password it carries or "") --------------------------
_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
_password = st.text(alphabet=PW_ALPHABET, min_size=6, max_size=20).map(lambda s: "Pw" + s)
_wrap = st.sampled_from(["{p}", "sqlite:///{p}", "journal:{p}", "file:{p}"])
_sqlite_wrap = st.sampled_from(["{p}", "sqlite:///{p}"])
_journal_wrap = st.sampled_from(["journal:{p}", "file:{p}", "{p}"])


def _fs(p: str, wrap: str) -> tuple[str, str]:
    return wrap.format(p=p), ""


unusable_anywhere = st.builds(_fs, st.sampled_from(
    ["/", "/dev/null", "/dev/zero", "/dev/full", "/dev/urandom", "{w}/adir", "{w}/fifo", "{w}/dir-link.db",
     "{w}/null-link.db", "{w}", "{w}/", "{w}/study"]), _wrap)
unusable_sqlite = st.builds(_fs, st.sampled_from(
    ["{w}/adir.db", "{w}/notes.db", "{w}/foreign.db", "{w}/newer.db", "{w}/notes.log/x.db", "{w}/afile/x.db"]),
    _sqlite_wrap)
unusable_journal = st.builds(_fs, st.sampled_from(["{w}/adir.log", "{w}/fifo.log", "{w}/notes.log",
                                                    "{w}/afile/x.log", "{w}/notes.db/x.log"]), _journal_wrap)
missing_parent = st.builds(lambda a, b, ext, wrap: _fs(f"{{w}}/missing-{a}/{b}{ext}", wrap),
                           _name, _name, st.sampled_from([".db", ".log", ".jsonl", "", ".sqlite"]), _wrap)
# root may write a chmod 555 folder: there, only folders no one can create files in
_ro_dirs = ["/proc", "/sys", "/proc/self"] + ([] if ROOT_USER else ["{w}/readonly"])
read_only_parent = st.builds(lambda d, b, ext, wrap: _fs(f"{d}/{b}{ext}", wrap), st.sampled_from(_ro_dirs), _name,
                             st.sampled_from([".db", ".log", ".jsonl"]), _wrap)
garbage_file = st.builds(lambda data, ext, wrap: (("garbage", data, ext), wrap),
                         st.binary(min_size=1, max_size=300).filter(lambda b: not b.startswith(b'{"op_code":')),
                         st.sampled_from([".db", ".log", ".jsonl", ".sqlite"]), st.sampled_from(["{p}", "sqlite:///{p}",
                                                                                               "journal:{p}"]))


def _url(scheme: str, user: str, pw: str, host: str, rest: str) -> tuple[str, str]:
    return f"{scheme}://{user}:{pw}@{host}/{rest}", pw


_known = {"sqlite", "postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql", "journal", "file"}
random_scheme = st.builds(_url, st.from_regex(r"[a-zA-Z][a-zA-Z0-9+.\-]{0,10}", fullmatch=True).filter(
    lambda s: s.split("+")[0].lower() not in _known), _name, _password, _name, _name)
unknown_driver = st.builds(lambda base, drv, pw, host: _url(f"{base}+{drv}", "u", pw, host, "db"),
                           st.sampled_from(["postgresql", "postgres", "mysql", "sqlite", "mariadb"]),
                           st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
                               lambda d: d not in {"psycopg", "psycopg2", "pg8000", "psycopg2cffi", "pysqlite",
                                                   "mysqldb", "pymysql", "mysqlconnector", "mariadbconnector",
                                                   "cymysql", "aiosqlite", "pysqlcipher", "asyncpg"}),
                           _password, _name)
uninstalled = st.builds(lambda base, pw: _url(base, "u", pw, "db.example", "x"),
                        st.sampled_from(["mysql", "mariadb", "oracle", "mssql"]), _password)
bad_port = st.builds(lambda port, pw: _url("postgresql", "u", pw, f"127.0.0.1:{port}", "db"),
                     st.from_regex(r"[a-z][a-z0-9]{0,6}|[0-9]{6,9}", fullmatch=True), _password)
in_memory = st.builds(_fs, st.sampled_from(["sqlite://", "sqlite:///:memory:"]), st.just("{p}"))

TARGETS = st.one_of(unusable_anywhere, unusable_sqlite, unusable_journal, missing_parent, read_only_parent,
                    garbage_file, random_scheme, unknown_driver, uninstalled, bad_port, in_memory)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = tmp_path_factory.mktemp("storage-world")
    return w, build_world(w)


@pytest.mark.long                # the generated targets through four commands: about a minute
def test_generated_storage_targets_are_refused_in_one_line(world):
    w, study = world
    seen: list[str] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(target=TARGETS, command=st.sampled_from(["run", "front", "worker", "study list"]))
    def check(target, command):
        (text, pw) = target
        garbage = None
        if isinstance(text, tuple):          # ("garbage", bytes, ext), wrap
            (_, data, ext), wrap = target
            garbage = w / f"garbage-{len(seen)}{ext}"
            garbage.write_bytes(data)
            text, pw = wrap.format(p=garbage), ""
        text = text.replace("{w}", str(w))
        before = listing(w)
        argv = (["study", "list", text] if command == "study list" else
                [command, str(study), f"--storage={text}"] + (["--no-progress"] if command == "run" else []))
        rc, out, err = in_process(argv, w)
        seen.append(text)
        lines = err.strip().splitlines()
        warned = [line for line in lines if line.startswith("dse worker: warning: the --storage URL carries")]
        assert len(warned) <= (command == "worker"), (text, err)      # a password on its command line: once
        lines = [line for line in lines if line not in warned]
        assert rc != 0, (text, rc, err)
        assert "Traceback" not in err, (text, err)
        assert len(lines) == 1 and lines[0].startswith("dse: error: "), (text, err)
        assert not pw or pw not in err, (text, err)
        assert listing(w) == before, (text, set(listing(w)) ^ set(before))
        if garbage is not None:
            garbage.unlink()

    check()
    assert len(seen) >= EXAMPLES, len(seen)


NAMED = [   # (case, --storage, what the line must say)
    ("root as a URL", "sqlite:////", "is a directory (the filesystem root)"),
    ("root as a path", "/", "is a directory (the filesystem root)"),
    ("a directory", "{w}/adir", "is a directory"),
    ("a device", "/dev/null", "is a character device"),
    ("a journal on a device", "journal:/dev/null", "is a character device"),
    ("a FIFO", "{w}/fifo", "is a FIFO"),
    ("missing folder", "journal:{w}/missing/s.log", "does not exist"),
    ("a folder no one may write", "/proc/s.db", "is not writable"),
    ("not a journal", "{w}/notes.log", "not an optuna journal file"),
    ("another program's database", "{w}/foreign.db", "a SQLite database of another program"),
    ("a newer schema", "{w}/newer.db", "newer than optuna"),
    ("unknown driver", "postgresql+nodriver://u:Pwsecret9@h/db", "unknown driver 'nodriver'"),
    ("unknown scheme", "redis://u:Pwsecret9@h/0", "unknown URL scheme 'redis'"),
    ("in memory", "sqlite://", "in-memory"),
]


@pytest.mark.parametrize("case,target,needle", NAMED, ids=[n[0] for n in NAMED])
def test_named_storage_targets_through_python_m_dse(case, target, needle, tmp_path):
    study = build_world(tmp_path)
    text = target.replace("{w}", str(tmp_path))
    before = listing(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "dse", "run", str(study), "--no-progress", "--storage", text],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("dse: error: ") and "Traceback" not in proc.stderr, proc.stderr
    assert needle in lines[0] and "Pwsecret9" not in lines[0], lines[0]
    assert listing(tmp_path) == before
