"""Evaluation processes never outlive their driver: SIGKILL a `dse run --jobs 2` driver and no
process of its tree is left after a short wait (dse.lifetime.exit_with_parent in each worker)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dse.cli.jobs import usable_cores
from dse.lifetime import exit_with_parent

ROOT = Path(__file__).resolve().parents[1]


def _children() -> dict[int, int]:
    """pid -> parent pid of every live (non-zombie) process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] != "Z":
            out[int(d)] = int(fields[1])
    return out


def _tree(root: int) -> set[int]:
    procs = _children()
    tree, frontier = set(), {root}
    while frontier:
        tree |= frontier
        frontier = {p for p, pp in procs.items() if pp in frontier} - tree
    return tree - {root}


def _workers(pids: set[int]) -> set[int]:
    out = set()
    for p in pids:
        try:
            if b"loky" in Path(f"/proc/{p}/cmdline").read_bytes() and b"resource_tracker" not in \
                    Path(f"/proc/{p}/cmdline").read_bytes():
                out.add(p)
        except OSError:
            pass
    return out


def _alive(pids: set[int]) -> set[int]:
    return pids & set(_children())


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.skipif(usable_cores() < 2, reason="--jobs 2 needs two usable cores")
def test_sigkilled_driver_leaves_no_process_behind(tmp_path):
    driver = subprocess.Popen(
        [sys.executable, "-m", "dse", "run", str(ROOT / "studies/quickstart.toml"), "--jobs", "2", "--trials",
         "100000", "--no-progress", "--storage", f"sqlite:///{tmp_path}/s.db"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    tree: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and driver.poll() is None:
            tree = _tree(driver.pid)
            if _workers(tree):           # --jobs 2: one worker, and the driver evaluates too
                time.sleep(1)            # the worker is evaluating
                tree = _tree(driver.pid)
                break
            time.sleep(0.2)
        assert driver.poll() is None, driver.stderr.read().decode()
        assert _workers(tree), "no worker process started"
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
        deadline = time.monotonic() + 15
        while _alive(tree) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _alive(tree)
        assert not left, f"processes of the killed driver's tree still running: {sorted(left)}"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        for pid in _alive(tree):
            os.kill(pid, signal.SIGKILL)


def test_exit_with_parent_ends_an_orphaned_child(tmp_path):
    """The watch itself: a grandchild whose parent dies exits; one whose parent lives keeps running."""
    ready = tmp_path / "watching"
    code = ("import os, sys, time, subprocess\n"
            "p = subprocess.Popen([sys.executable, '-c', 'from dse.lifetime import exit_with_parent; "
            "import sys, time, pathlib; exit_with_parent(poll_s=0.1); pathlib.Path(sys.argv[1]).touch(); "
            "time.sleep(60)', sys.argv[2]])\n"
            "print(p.pid, flush=True)\n"
            "time.sleep(float(sys.argv[1]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", code, "60", str(ready)], stdout=subprocess.PIPE, env=env,
                              text=True)
    child = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 60      # the watch is installed (a loaded machine starts slowly)
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists()
        assert _alive({child}) == {child}          # parent alive: the child keeps running
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive({child}) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive({child})
    finally:
        if _alive({child}):
            os.kill(child, signal.SIGKILL)
    assert callable(exit_with_parent)


def _python(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python ARGS`` with this checkout's package, its output captured."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_exit_now_flushes_runs_the_handlers_in_order_and_keeps_the_status(tmp_path):
    """exit_now: buffered output reaches the pipe, the stop-first callbacks run before the atexit
    handlers, the status is the one given, and nothing after the call runs."""
    log = tmp_path / "log"
    code = ("import atexit, sys, pathlib\n"
            "from dse import lifetime\n"
            "log = pathlib.Path(sys.argv[1])\n"
            "atexit.register(lambda: log.write_text(log.read_text() + 'atexit\\n'))\n"
            "lifetime.stop_first_at_exit(lambda: log.write_text('first\\n'))\n"
            "sys.stdout.write('buffered, no newline')\n"
            "try:\n"
            "    lifetime.exit_now(3)\n"
            "finally:\n"
            "    print('not reached')\n")
    done = _python("-c", code, str(log))
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered, no newline"
    assert log.read_text() == "first\natexit\n"
    assert done.stderr == ""


def test_exit_now_waits_for_a_live_non_daemon_thread(tmp_path):
    """A non-daemon thread still running at exit_now: the normal exit runs, which waits for it."""
    mark = tmp_path / "thread-finished"
    code = ("import sys, threading, time, pathlib\n"
            "from dse import lifetime\n"
            "def late():\n"
            "    time.sleep(0.5)\n"
            "    pathlib.Path(sys.argv[1]).touch()\n"
            "threading.Thread(target=late).start()\n"
            "lifetime.exit_now(0)\n")
    done = _python("-c", code, str(mark))
    assert done.returncode == 0, done.stderr
    assert mark.exists()


def test_exit_now_under_a_profiler_exits_normally(tmp_path):
    """`python -m cProfile -o F script` writes F after the script returns: exit_now must let it."""
    script, prof = tmp_path / "script.py", tmp_path / "out.prof"
    script.write_text("from dse import lifetime\nlifetime.exit_now(0)\n")
    done = _python("-m", "cProfile", "-o", str(prof), str(script))
    assert done.returncode == 0, done.stderr
    assert prof.is_file() and prof.stat().st_size > 0


@pytest.mark.skipif(usable_cores() < 2, reason="--jobs 2 needs two usable cores")
def test_dse_run_jobs_2_ends_cleanly_with_the_study_whole_in_its_file(tmp_path):
    """`dse run --jobs 2` as a process (it ends through exit_now): status 0, nothing printed at
    exit (no leaked semaphores, no ignored exceptions), and the SQLite file alone, copied without
    its write-ahead log, holds every trial."""
    import shutil
    import sqlite3
    db = tmp_path / "s.db"
    done = _python("-m", "dse", "run", str(ROOT / "studies/quickstart.toml"), "--jobs", "2", "--trials", "16",
                   "--no-progress", "--storage", str(db), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    noise = [ln for ln in done.stderr.splitlines()
             if any(w in ln for w in ("leaked", "Exception ignored", "Traceback", "Warning", "resource_tracker"))]
    assert noise == [], done.stderr
    assert "knee:" in done.stdout
    alone = tmp_path / "alone" / "s.db"
    alone.parent.mkdir()
    shutil.copy2(db, alone)
    conn = sqlite3.connect(alone)
    try:
        n = conn.execute("SELECT COUNT(*) FROM trials WHERE state IN ('COMPLETE', 'PRUNED')").fetchone()[0]
    finally:
        conn.close()
    assert n == 16


@pytest.mark.skipif(usable_cores() < 2, reason="--jobs 2 needs two usable cores")
def test_sigterm_stops_dse_run_as_ctrl_c_does(tmp_path):
    """SIGTERM (a batch system's time limit) mid-run: the told trials are kept, status 143, one
    line saying so, nothing else at exit (no leaked semaphores), the driver's lock file gone."""
    db = tmp_path / "s.db"
    # 5,000 trials: the first progress line comes after a tenth of them (and >= 5 s), while the run
    # goes on for tens of seconds; with 100,000 it came only at the 60 s heartbeat
    driver = subprocess.Popen([sys.executable, "-m", "dse", "run", str(ROOT / "studies/quickstart.toml"), "--jobs", "2",
                               "--trials", "5000", "--storage", str(db)],
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        first = driver.stderr.readline()          # a batch has been told and written
        assert "trials" in first, first
        driver.send_signal(signal.SIGTERM)
        rc = driver.wait(timeout=60)
        err = first + driver.stderr.read()
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert rc == 143, err
    assert "dse: terminated (SIGTERM); finished trials are kept" in err
    noise = [ln for ln in err.splitlines()
             if any(w in ln for w in ("leaked", "Exception ignored", "Traceback", "Warning", "resource_tracker"))]
    assert noise == [], err
    assert not list(tmp_path.glob("s.db.*.lock"))
