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
"""
from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import numpy as np

FORMAT = 1
MAX_IN_PROCESS = 512

_LOCK = threading.Lock()
_MEMO: OrderedDict[str, np.ndarray] = OrderedDict()
_DIGESTS: dict[int, tuple[object, str]] = {}     # id(workload) -> (workload, digest of its profile)


def cache_dir() -> Path | None:
    """Where placements are kept on disk (None: disabled); a sibling of the trace cache."""
    from dse.workload.synth_cache import cache_dir as trace_dir
    d = trace_dir()
    return None if d is None else d.parent / "placements"


def _code_digest() -> str:
    from dse.version import __version__
    from dse.constants import C
    from dse.mapping import placement
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
