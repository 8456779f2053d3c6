"""Full-disk fault injection for studies (issue 35.2), shared by ``test_faults.py`` and
``benchmarks/bench_faults.py``.

Two faults, each at a chosen point of a real ``python -m dse run`` process:

* ``ENOSPC``: a tiny ``LD_PRELOAD`` library (``SHIM_C``, compiled once with the system C
  compiler) lets the process write ``DSE_FAULT_BUDGET`` more bytes into files under
  ``DSE_FAULT_PREFIX``; the write that crosses it is cut short and every later one fails with
  ENOSPC, as on a disk that has filled up (SQLite's ``pwrite`` and Python's ``write`` alike);
* ``EFBIG``: ``RLIMIT_FSIZE`` in the child (Python ignores SIGXFSZ): any write past that many
  bytes of one file fails with EFBIG.

``fault_case`` runs an uninterrupted reference study, the faulted run, an integrity check of the
storage (SQLite ``PRAGMA integrity_check``; journal: every line a JSON record), and the resumed run
without the fault; it compares the trials (number, state, params, values) with the reference.
"""
from __future__ import annotations

import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long long budget = -1;
static const char *prefix = 0;
static int fault = ENOSPC, ready = 0;

static void init(void) {
    if (ready) return;
    const char *b = getenv("DSE_FAULT_BUDGET"), *e = getenv("DSE_FAULT_ERRNO");
    prefix = getenv("DSE_FAULT_PREFIX");
    if (b) budget = atoll(b);
    if (e) fault = atoi(e);
    ready = 1;
}

/* bytes of a write of `count` to `fd` let through: count (not watched), less, or -1 (fail) */
static long long allowed(int fd, size_t count) {
    char link[64], path[4096];
    init();
    if (budget < 0 || !prefix || count == 0) return (long long)count;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return (long long)count;
    path[n] = 0;
    if (strncmp(path, prefix, strlen(prefix)) != 0) return (long long)count;
    if (budget == 0) { errno = fault; return -1; }
    long long ok = (long long)count < budget ? (long long)count : budget;
    budget -= ok;
    return ok;
}

ssize_t write(int fd, const void *buf, size_t count) {
    static ssize_t (*real)(int, const void *, size_t) = 0;
    if (!real) real = dlsym(RTLD_NEXT, "write");
    long long ok = allowed(fd, count);
    return ok < 0 ? -1 : real(fd, buf, (size_t)ok);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t off) {
    static ssize_t (*real)(int, const void *, size_t, off_t) = 0;
    if (!real) real = dlsym(RTLD_NEXT, "pwrite");
    long long ok = allowed(fd, count);
    return ok < 0 ? -1 : real(fd, buf, (size_t)ok, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t off) {
    static ssize_t (*real)(int, const void *, size_t, off_t) = 0;
    if (!real) real = dlsym(RTLD_NEXT, "pwrite64");
    long long ok = allowed(fd, count);
    return ok < 0 ? -1 : real(fd, buf, (size_t)ok, off);
}

/* numpy's tofile writes through stdio, whose own writes do not pass through write() above */
size_t fwrite(const void *ptr, size_t size, size_t n, FILE *stream) {
    static size_t (*real)(const void *, size_t, size_t, FILE *) = 0;
    if (!real) real = dlsym(RTLD_NEXT, "fwrite");
    if (size == 0) return real(ptr, size, n, stream);
    long long ok = allowed(fileno(stream), size * n);
    if (ok < 0) return 0;
    size_t items = (size_t)ok / size;
    size_t done = items ? real(ptr, size, items, stream) : 0;
    if (done < n) errno = fault;
    return done;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    static ssize_t (*real)(int, const struct iovec *, int) = 0;
    if (!real) real = dlsym(RTLD_NEXT, "writev");
    size_t total = 0;
    for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
    long long ok = allowed(fd, total);
    if (ok < 0) return -1;
    if ((size_t)ok == total) return real(fd, iov, cnt);
    return write(fd, iov[0].iov_base, (size_t)ok < iov[0].iov_len ? (size_t)ok : iov[0].iov_len);
}
"""


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def build_shim(folder: Path) -> Path:
    """The ENOSPC library, compiled into ``folder`` (once)."""
    lib = folder / "dse_enospc_v2.so"
    if not lib.exists():
        src = folder / "dse_enospc.c"
        src.write_text(SHIM_C)
        subprocess.run([compiler(), "-shared", "-fPIC", "-O1", "-o", str(lib), str(src), "-ldl"], check=True,
                       capture_output=True)
    return lib


STUDY = """[study]
name = "faults"
space = "space.toml"
objectives = "objectives.toml"
trials = {trials}
seed = 7
batch = 8
[sampler]
name = "random"
[workload]
models = ["qwen3.5-35b-a3b"]
"""


def write_fault_study(folder: Path, trials: int = 48) -> Path:
    from tests.fixtures import GRID300_SPACE, LATENCY_POWER_OBJECTIVES
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "space.toml").write_text(GRID300_SPACE)
    (folder / "objectives.toml").write_text(LATENCY_POWER_OBJECTIVES)
    (folder / "faults.toml").write_text(STUDY.format(trials=trials))
    return folder / "faults.toml"


def dse_run(study: Path, storage: str, *, env: dict | None = None, fsize: int | None = None,
            ) -> subprocess.CompletedProcess:
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    full_env = {k: v for k, v in os.environ.items() if k != "DSE_CATALOG"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "dse", "run", str(study), "--no-progress", "--storage", storage],
                          capture_output=True, text=True, env=full_env, timeout=600,
                          preexec_fn=limit if fsize is not None else None, cwd=study.parent)


def trials_of(storage: str) -> list[tuple]:
    """(number, state, params, values) of every trial of the study ``faults``, by number."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    from dse.search.storage.storage import open_storage
    # SQLite: a read-write connection (a run stopped by a full disk may leave a write-ahead log
    # that a read-only connection cannot replay)
    st = open_storage(storage, "faults", Path("."), read_only=storage.startswith("journal:"))
    try:
        study = optuna.load_study(study_name="faults", storage=st)
    except KeyError:          # stopped before the study was created
        return []
    out = [(t.number, t.state.name, json.dumps(t.params, sort_keys=True),
            json.dumps(t.values if t.values is not None else t.user_attrs.get("dse_values")))
           for t in study.get_trials(deepcopy=False)]
    from dse.search.storage.storage import close_storage
    close_storage(st)
    return sorted(out)


def integrity(storage: str) -> str:
    """'ok', or what is wrong with the storage file."""
    from dse.search.storage.target import is_journal, journal_path, sqlite_path
    if is_journal(storage):
        data = journal_path(storage).read_bytes()
        lines = data.split(b"\n")
        if lines[-1]:
            return f"a half-written last line of {len(lines[-1])} bytes"
        for i, line in enumerate(lines[:-1]):
            try:
                json.loads(line)
            except ValueError:
                return f"line {i + 1} is not JSON"
        return "ok"
    conn = sqlite3.connect(f"file:{sqlite_path(storage)}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


@dataclass
class Outcome:
    fault: str
    backend: str
    point: int             # the byte budget (ENOSPC) or file-size limit (EFBIG)
    rc: int
    stderr_lines: list[str]
    before: int            # trials finished when the fault stopped the run
    integrity: str
    lost: int              # trials finished before the fault, missing or changed after the resume
    resume_rc: int
    exact: bool            # the resumed study's trials == the uninterrupted run's

    @property
    def one_line(self) -> bool:
        return (len(self.stderr_lines) == 1 and self.stderr_lines[0].startswith("dse: error: ")
                and "Traceback" not in "\n".join(self.stderr_lines))


def storage_url(folder: Path, backend: str) -> str:
    return f"sqlite:///{folder / 'study.db'}" if backend == "sqlite" else f"journal:{folder / 'study.log'}"


def reference(work: Path, backend: str) -> tuple[list[tuple], int]:
    """The uninterrupted run's trials and the storage's size in bytes (its files together)."""
    folder = work / f"ref-{backend}"
    study = write_fault_study(folder)
    url = storage_url(folder / "", backend)
    (folder / "store").mkdir(exist_ok=True)
    url = storage_url(folder / "store", backend)
    proc = dse_run(study, url)
    assert proc.returncode == 0, proc.stderr
    size = sum(p.stat().st_size for p in (folder / "store").iterdir())
    return trials_of(url), size


def fault_case(work: Path, backend: str, fault: str, point: int, ref: list[tuple], shim: Path | None) -> Outcome:
    folder = work / f"{backend}-{fault}-{point}"
    study = write_fault_study(folder)
    store = folder / "store"
    store.mkdir()
    url = storage_url(store, backend)
    if fault == "ENOSPC":
        proc = dse_run(study, url, env={"LD_PRELOAD": str(shim), "DSE_FAULT_BUDGET": str(point),
                                        "DSE_FAULT_PREFIX": str(store) + "/"})
    else:
        proc = dse_run(study, url, fsize=point)
    lines = proc.stderr.strip().splitlines()
    ok = integrity(url)
    before = trials_of(url) if ok == "ok" or backend == "journal" else []
    done = [t for t in before if t[1] != "RUNNING"]
    resumed = dse_run(study, url)
    after = trials_of(url) if resumed.returncode == 0 else []
    lost = len(set(done) - set(after))
    return Outcome(fault, backend, point, proc.returncode, lines, len(done), ok, lost, resumed.returncode,
                   after == ref)


def fault_points(size: int, n: int, seed: int, backend: str = "journal") -> list[int]:
    """``n`` random fault points, seeded: in (2 kB, 90 % of the journal's final size), or for
    SQLite (whose write-ahead log takes about twice the final database: every batch rewrites
    pages) in (2 kB, 180 %)."""
    rng = random.Random(seed)
    top = size * (1.8 if backend == "sqlite" else 0.9)
    return sorted(rng.randrange(2048, max(4096, int(top))) for _ in range(n))
