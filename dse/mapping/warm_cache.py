"""Warm state of trace-driven evaluations: expert placements, computed once and shared.

A new scheduling domain (core side, PE groups, die shape, core remainder, layout) with an LPT or
co-activation placement costs tens of milliseconds of placement alone, and every worker process
of a study would recompute the same placements. They are therefore kept

* in-process, in an LRU of ``MAX_IN_PROCESS`` entries (a placement is one int64 [layers, E]
  array, ~80 KB for 40 layers x 256 experts, so the LRU holds ~40 MB at most), and
* on disk beside the synthetic traces (``$DSE_CACHE_DIR/placements``, ``DSE_CACHE_DIR=off``
  disables it), as ``.npy`` files written atomically and read with ``allow_pickle=False``.

The key is content-addressed, like the traces': a digest of the profiling window's loads (and
its expert ids for co-activation), the domain, the policy, the co-activation weight, the
package version and the source of :mod:`dse.mapping.placement` itself. A hit is therefore the
array a fresh computation returns, bit for bit; a change to the placement code is a miss.

The unit layouts of the scheduling domains (``trace_mapping.shared_layout``, the bulk of a
domain's warm state: up to 17-28 MiB each at 512 steps) go through ``shared_array``: built once
per study by whichever process meets the domain first (an ``O_EXCL`` lock file; a process that
meets it meanwhile waits for the entry), written atomically (temporary file in the same folder,
``os.replace``), then memory-mapped read-only (``np.load(mmap_mode="r", allow_pickle=False)``) by
every process of every host that sees the folder (``DSE_WARM_CACHE_DIR``; default ``layouts``
beside the traces). The folder is bounded (``DSE_WARM_CACHE_MB``, least recently used first); a
full disk (ENOSPC, EFBIG) or read-only folder leaves the layout in memory, with one warning line.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np

FORMAT = 1
MAX_IN_PROCESS = 512

_LOCK = threading.Lock()
_MEMO: OrderedDict[str, np.ndarray] = OrderedDict()
_DIGESTS: dict[int, tuple[object, str]] = {}     # id(workload) -> (workload, digest of its profile)
_FOLDER_EST: dict[str, list[int]] = {}          # shared folder -> [bytes estimated, writes since its scan]
EVICT_RESCAN_PUBLISHES = 32                     # writes between two scans of a shared folder at most
EVICT_LOW_WATER = 0.9                           # an eviction goes down to this share of the bound


def cache_dir() -> Path | None:
    """Where placements are kept on disk (None: disabled); a sibling of the trace cache."""
    from dse.workload.synth_cache import cache_dir as trace_dir
    d = trace_dir()
    return None if d is None else d.parent / "placements"


def _code_digest() -> str:
    from dse.constants import C
    from dse.mapping import placement
    from dse.version import __version__
    h = hashlib.sha256()
    h.update(repr((FORMAT, __version__, np.__version__, float(C.coactivation_weight))).encode())
    h.update(Path(placement.__file__).read_bytes())
    return h.hexdigest()


_CODE: list[str] = []


def profile_digest(profile_load: np.ndarray, profile_ids: np.ndarray | None) -> str:
    """Digest of what a placement reads from a workload (loads; ids for co-activation)."""
    if not _CODE:
        _CODE.append(_code_digest())
    h = hashlib.sha256(_CODE[0].encode())
    for a in (profile_load, profile_ids):
        if a is None:
            h.update(b"none")
            continue
        a = np.ascontiguousarray(a)
        h.update(repr((a.dtype.str, a.shape)).encode())
        h.update(a.data)
    return h.hexdigest()


def workload_digest(wl) -> str:
    """``profile_digest`` of a routing workload, computed once per workload object."""
    with _LOCK:
        hit = _DIGESTS.get(id(wl))
    if hit is not None and hit[0] is wl:
        return hit[1]
    d = profile_digest(wl.profile_load, wl.profile_ids)
    with _LOCK:
        if len(_DIGESTS) > 64:
            _DIGESTS.clear()
        _DIGESTS[id(wl)] = (wl, d)
    return d


def placement(digest: str, dom, policy: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """The placement of ``policy`` on ``dom`` for the workload of ``digest``: from this process,
    from disk, or ``compute()`` (then remembered in both)."""
    key = hashlib.sha256(repr((digest, dom, policy)).encode()).hexdigest()[:40]
    with _LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
            return hit
    d = cache_dir()
    slot = _load(d / f"{key}.npy") if d is not None else None
    if slot is None:
        slot = compute()
        if d is not None:
            _store(d / f"{key}.npy", slot)
    slot.setflags(write=False)
    with _LOCK:
        _MEMO[key] = slot
        while len(_MEMO) > MAX_IN_PROCESS:
            _MEMO.popitem(last=False)
    return slot


def clear() -> None:
    """Forget this process's placements (the disk cache stays): as a fresh process sees it."""
    with _LOCK:
        _MEMO.clear()
        _DIGESTS.clear()


def _load(file: Path) -> np.ndarray | None:
    try:
        a = np.load(file, allow_pickle=False)
    except (OSError, ValueError):
        return None
    return a if a.dtype == np.int64 and a.ndim == 2 else None


def _store(file: Path, slot: np.ndarray) -> None:
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(slot, dtype=np.int64), allow_pickle=False)
        os.replace(tmp, file)
    except OSError:
        pass                      # a read-only or full cache is only slower, never wrong


# -- shared per-domain arrays (unit layouts): built once per study, memory-mapped by every worker --

ARRAYS_DIR_ENV = "DSE_WARM_CACHE_DIR"      # a path every worker sees (several hosts: a shared one)
ARRAYS_MB_ENV = "DSE_WARM_CACHE_MB"        # the bound of that folder, MiB (least recently used evicted)
DEFAULT_ARRAYS_MB = 4096
BUILD_LOG_ENV = "DSE_WARM_BUILD_LOG"       # a file each build appends a line to (tests, benchmarks)
LOCK_WAIT_S = 120.0                        # longest wait for another process building the same entry
LOCK_STALE_S = 600.0                       # a lock this old (or of a dead process here) is abandoned
LOCK_POLL_S = 0.004
BUILDS = [0]                               # builds in this process (``publish`` calls)
_WARNED: list[str] = []
_HELD: set[str] = set()                    # keys whose build lock this process holds


def arrays_dir() -> Path | None:
    """The folder of shared per-domain arrays (None: disabled): ``DSE_WARM_CACHE_DIR``, else
    ``layouts`` beside the trace cache (``DSE_CACHE_DIR=off`` disables both)."""
    from dse.workload.synth_cache import CACHE_OFF
    env = os.environ.get(ARRAYS_DIR_ENV, "").strip()
    if env:
        return None if env.lower() in CACHE_OFF else Path(env)
    d = cache_dir()
    return None if d is None else d.parent / "layouts"


def arrays_bound_bytes() -> int:
    v = os.environ.get(ARRAYS_MB_ENV, "").strip()
    return (int(v) if v.isdigit() and int(v) > 0 else DEFAULT_ARRAYS_MB) << 20


def content_key(*parts) -> str:
    """A content address: arrays by dtype, shape and bytes, anything else by ``repr``."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            a = np.ascontiguousarray(p)
            h.update(repr((a.dtype.str, a.shape)).encode())
            h.update(a.data)
        else:
            h.update(repr(p).encode())
    return h.hexdigest()[:40]


def shared_array(key: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """The array of ``key`` (a ``content_key``): memory-mapped read-only from the shared folder,
    else built by ``compute()`` in exactly one process at a time (``claim``, ``publish``)."""
    hit = claim(key)
    return hit[0] if hit is not None else publish(key, (compute(),))[0]


def claim(key: str, parts: int = 1) -> tuple[np.ndarray, ...] | None:
    """The ``parts`` arrays of ``key`` mapped read-only from the shared folder, waiting for the
    process that builds them if there is one; None: this process builds them (it then holds the
    entry's ``O_EXCL`` lock file when it could take one) and hands them to ``publish`` (or
    ``release``s the entry)."""
    d = arrays_dir()
    if d is None:
        return None
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        hit = _map_all(d, key, parts)
        if hit is not None:
            return hit
        got = _lock(d, key)
        if got is True:
            hit = _map_all(d, key, parts)           # written between the miss and the lock
            if hit is not None:
                _unlock(d, key)
                return hit
            _HELD.add(key)
            return None
        if got is None or time.monotonic() > deadline:
            return None                             # no lock to be had: this process builds its own
        if _stale(d / f".{key}.lock"):
            _unlock(d, key)
            continue
        time.sleep(LOCK_POLL_S)


def publish(key: str, arrays: tuple, kind: str = "layout") -> tuple:
    """Count the build of ``key`` (``BUILDS``, ``DSE_WARM_BUILD_LOG``: a line ``key pid kind``),
    write its arrays atomically (each to a temporary file in the same folder, then ``os.replace``;
    the first part last) and return them mapped; a folder that cannot be written (full disk,
    read-only) leaves them in memory, with one warning line per process."""
    _count(key, kind)
    d = arrays_dir()
    try:
        if d is None:
            return arrays
        files = _files(d, key, len(arrays))
        for f, a in reversed(list(zip(files, arrays))):
            if not _store_shared(f, a):
                return arrays
        _evict(d, arrays_bound_bytes(), keep={str(f) for f in files}, added=sum(int(a.nbytes) for a in arrays))
        hit = _map_all(d, key, len(arrays), touch=False)
        return hit if hit is not None else arrays
    finally:
        release(key)


def release(key: str) -> None:
    """Give up the build lock of ``key`` if this process holds it (``claim``)."""
    if key in _HELD:
        _HELD.discard(key)
        d = arrays_dir()
        if d is not None:
            _unlock(d, key)


def _files(d: Path, key: str, parts: int) -> list[Path]:
    return [d / f"{key}.npy"] if parts == 1 else [d / f"{key}.{i}.npy" for i in range(parts)]


def _map_all(d: Path, key: str, parts: int, touch: bool = True) -> tuple | None:
    out = []
    for f in _files(d, key, parts):
        a = _map(f, touch)
        if a is None:
            return None
        out.append(a)
    return tuple(out)


def _count(key: str, kind: str) -> None:
    BUILDS[0] += 1
    log = os.environ.get(BUILD_LOG_ENV)
    if log:
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, f"{key} {os.getpid()} {kind}\n".encode())
            finally:
                os.close(fd)
        except OSError:
            pass


def _map(file: Path, touch: bool = True) -> np.ndarray | None:
    try:
        a = np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    if touch:
        try:
            os.utime(file)                         # least recently used: by modification time
        except OSError:
            pass
    return a


def _lock(d: Path, key: str) -> bool | None:
    """True: this process holds the entry's build lock; False: another one does; None: no lock
    can be made here (the folder cannot be written)."""
    import socket
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(d / f".{key}.lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    except OSError as exc:
        _warn(d, exc)
        return None
    try:
        os.write(fd, f"{socket.gethostname()} {os.getpid()}".encode())
    except OSError:
        pass                          # an empty lock: abandoned by age only (``_stale``)
    finally:
        os.close(fd)
    return True


def _unlock(d: Path, key: str) -> None:
    try:
        os.unlink(d / f".{key}.lock")
    except OSError:
        pass


def _stale(lock: Path) -> bool:
    """A lock of a process of this host that is gone, or older than ``LOCK_STALE_S``."""
    import socket
    try:
        parts = lock.read_text().split()
        if len(parts) == 2 and parts[0] == socket.gethostname() and parts[1].isdigit() \
                and int(parts[1]) != os.getpid():
            os.kill(int(parts[1]), 0)
        return time.time() - lock.stat().st_mtime > LOCK_STALE_S
    except ProcessLookupError:
        return True
    except OSError:
        return False


def _store_shared(file: Path, a: np.ndarray) -> bool:
    tmp = file.with_name(f".{file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(a), allow_pickle=False)
        os.replace(tmp, file)
        return True
    except OSError as exc:            # ENOSPC, EFBIG, EDQUOT, read-only: computed in memory instead
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _warn(file.parent, exc)
        return False


def _warn(d: Path, exc: OSError) -> None:
    if not _WARNED:
        _WARNED.append(str(d))
        import sys
        print(f"dse: warning: shared warm cache {d}: {exc.strerror or exc}; "
              f"building warm state in memory instead", file=sys.stderr, flush=True)


def _evict(d: Path, bound: int, keep: set[str], added: int = 0) -> None:
    """Delete the least recently used entries until the folder holds at most ``bound`` bytes
    (a mapped entry stays readable by the processes that mapped it).

    The folder is scanned (a ``stat`` per entry) only when this process's running estimate of its
    size (the last scan plus what it wrote since) passes ``bound``, or every
    ``EVICT_RESCAN_PUBLISHES`` writes (entries other processes wrote). Scanning at every write
    was quadratic: 64 model-uncertainty draws of a study's front wrote ~4,000 entries, each
    write scanning all before it (issue 44). An eviction deletes down to ``EVICT_LOW_WATER`` of
    the bound: a folder kept at its bound exactly was scanned again at every write once full (the
    catalog study spent 9 % of its driver in these scans with a full 4 GiB folder of 8,881
    entries, issue 48)."""
    est = _FOLDER_EST.get(str(d))
    if est is not None and est[1] < EVICT_RESCAN_PUBLISHES and est[0] + added <= bound:
        est[0] += added
        est[1] += 1
        return
    try:
        entries = [(e.stat().st_mtime, e.stat().st_size, e.path) for e in os.scandir(d)
                   if e.name.endswith(".npy") and not e.name.startswith(".")]
    except OSError:
        return
    total = sum(s for _, s, _ in entries)
    low = bound * EVICT_LOW_WATER if total > bound else bound
    for _, size, path in sorted(entries):
        if total <= low:
            break
        if path in keep:
            continue
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass
    _FOLDER_EST[str(d)] = [total, 0]
