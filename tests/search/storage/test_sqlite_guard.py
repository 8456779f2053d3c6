"""SQLite study files: a file that is not SQLite, a truncated or corrupted database, and a folder
SQLite cannot write in each give one line naming the file; two ``dse run`` drivers on one SQLite
study: the second refuses with one line, the lock dies with its holder, and the study then ends
with exactly its target, no trial lost or repeated."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dse.cli import main
from dse.search.storage.stored import is_scored
from tests.search.sqlite_study import QUICK, copy_db


def _one_line(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dse: error:") and "Traceback" not in err, err
    for n in needles:
        assert n in err, err
    return err


def test_not_a_sqlite_file(tmp_path, capsys):
    f = tmp_path / "notes.db"
    f.write_text("these are my notes, not a database\n")
    for cmd in (["run", str(QUICK), "--no-progress", "--storage", str(f)], ["front", str(QUICK), "--storage", str(f)],
                ["study", "list", str(f)]):
        assert main(cmd) == 2
        _one_line(capsys, str(f), "not a SQLite database")
    assert f.read_text() == "these are my notes, not a database\n"


def _checkpointed(src: Path, dst: Path) -> Path:
    """A self-contained copy of a study database (write-ahead log folded in)."""
    out = dst / "c.db"
    conn = sqlite3.connect(src)
    try:
        conn.execute("VACUUM INTO ?", (str(out),))
    finally:
        conn.close()
    return out


@pytest.mark.parametrize("damage", ["truncated", "corrupted"])
def test_damaged_database_is_one_line_naming_the_file(damage, finished_db, tmp_path, capsys):
    work = tmp_path / "w"
    work.mkdir()
    db = _checkpointed(copy_db(finished_db, work), tmp_path)
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    if damage == "truncated":
        data = data[:len(data) // 2 // page * page + page // 3]
    else:
        for i in range(2 * page, len(data), page):          # every page after the first two
            data[i:i + 64] = b"\xa5" * 64
    db.write_bytes(bytes(data))
    for cmd in (["front", str(QUICK), "--storage", str(db)],
                ["run", str(QUICK), "--no-progress", "--storage", str(db)]):
        assert main(cmd) == 2
        _one_line(capsys, str(db), "damaged or truncated SQLite database")


def test_unwritable_folder_is_one_line_naming_the_file(tmp_path, capsys, monkeypatch):
    """A storage in a folder this user cannot write (chmod 555; as root, which writes anywhere,
    the permission check itself is made to answer no for that folder)."""
    import dse.search.storage.sqlite_guard as guard
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o555)
    if os.geteuid() == 0:
        real = os.access
        monkeypatch.setattr(guard.os, "access", lambda p, mode: real(p, mode) and not (
            Path(p) == locked and mode & os.W_OK))
    db = locked / "study.db"
    try:
        assert main(["run", str(QUICK), "--no-progress", "--storage", str(db)]) == 2
        _one_line(capsys, str(db), "is not writable")
        assert not db.exists()
    finally:
        os.chmod(locked, 0o755)


def _dse(*argv: str, cwd: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DSE_CATALOG"}
    return subprocess.Popen([sys.executable, "-m", "dse", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_second_driver_on_one_sqlite_study_refuses_then_resume_is_exact(tmp_path):
    import optuna
    db = tmp_path / "two.db"
    # the first driver asks for more trials than it can finish before it is killed, so the second
    # always meets it running (a loaded machine starts the second slowly)
    first = _dse("run", str(QUICK), "--trials", "100000", "--no-progress", "--storage", str(db), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("two.db.*.lock")) and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.1)
        assert first.poll() is None, first.communicate()[1]
        second = subprocess.run([sys.executable, "-m", "dse", "run", str(QUICK), "--trials", "48",
                                 "--no-progress", "--storage", str(db)], cwd=tmp_path, capture_output=True,
                                text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "already being run by another `dse run`" in lines[0] and str(db) in lines[0]
        first.send_signal(signal.SIGKILL)        # the lock dies with its holder
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    done = len([t for t in optuna.load_study(study_name="quickstart", storage=f"sqlite:///{db}")
                .get_trials(deepcopy=False) if is_scored(t)])
    target = done + 32
    again = subprocess.run([sys.executable, "-m", "dse", "run", str(QUICK), "--trials", str(target), "--no-progress",
                            "--storage", str(db)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    ts = optuna.load_study(study_name="quickstart", storage=f"sqlite:///{db}").get_trials(deepcopy=False)
    complete = [t for t in ts if is_scored(t)]        # infeasible / repeated trials are stored PRUNED
    assert len(complete) == target
    assert len({t.number for t in complete}) == target
    # Trials the SIGKILLed driver held stay RUNNING until their heartbeat expires (a later run
    # fails and re-queues them): at most one batch of the quickstart study (16).
    assert len([t for t in ts if t.state.name == "RUNNING"]) <= 16
    assert not list(tmp_path.glob("two.db.*.lock"))
