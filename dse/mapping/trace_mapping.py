"""Trace-driven mapping of a routing workload: place the experts from the profiling window
(``placement``), then schedule the measured window (:mod:`dse.mapping.scheduler`).

Placements are cached per machine (``warm_cache``), the per-unit layouts of in-memory windows per
process: the DSE asks for the same (workload, domain, policy) over and over while it varies other
knobs. A layout keeps the scheduler's job counts per tile width beside it (``Scheduler.run_layout``'s
memo), which grow with the trace: the 644 designs of ``benchmarks/bench_search.py``'s 128-step
study leave 39 entries of 336 MiB in all (uint8 layouts and job counts, per-unit jobs not kept
once a tile width's chunks are: ``scheduler.layout_dtype``), against 1,099 MiB with the int16
layout and every per-unit job table kept (stop 19; at 512 steps one entry with both poolings and
all five tile widths then held 87 MiB). The process keeps at most ``MAX_PLACEMENT_BYTES`` of them (an entry is
counted again after each use, as its memo grows; ``entry_bytes`` counts each buffer once).
``MAX_PLACEMENTS`` is only a backstop: a count limit of 32 (stops 14-18) rebuilt layouts that the
bytes allowed, ``bench_search.py``'s 128-step study (48 domains) with ``--jobs 1``: 7.93-9.29 s
against 7.38-7.54 s without it (peak RSS 1.06 -> 1.22 GB; ``--jobs 2`` 5.11-5.59 -> 5.07-5.14 s).
"""
from __future__ import annotations

import os

import numpy as np

from dse.errors import ConfigError
from dse.mapping import placement as pl
from dse.mapping import warm_cache
from dse.mapping.scheduler import Schedule, Scheduler
from dse.workload.window import BoundedCache, Workload

MAX_PLACEMENT_BYTES = 1 << 30      # unit layouts with their job counts per tile width, per process
MAX_PLACEMENTS = 4096              # a backstop only: the bytes bind first (module docstring)
LAYOUT_CACHE_ENV = "DSE_LAYOUT_CACHE_MB"   # a user's bound instead, MiB per process


def layout_cache_bytes(environ=os.environ) -> int | None:
    """The user's bound of the layouts per process (``DSE_LAYOUT_CACHE_MB``, in MiB), None when
    unset. The worker processes inherit the variable. With long traces and many scheduling domains
    the default bound rebuilds layouts over and over: before stop 20's smaller layouts (now 17
    MiB each there, 672 MiB in all), ``bench_search.py``'s study with 256-step
    traces (39 layouts of ~56 MiB), ``--jobs 1``, rebuilt 169 layouts in 13.4-16.4 s at the
    default and 39 in 11.5-11.9 s with 8192 (peak RSS 1.4 -> 2.4 GB; the fresh pages cost 1 s
    more system time). ``--jobs 2`` splits the domains between two processes, each with its own
    bound: 7.5-8.4 s at the default, 8.9-9.4 s with 8192 (system time 1.7 -> 4.5 s)."""
    v = environ.get(LAYOUT_CACHE_ENV, "").strip()
    if not v:
        return None
    mb = int(v) if v.isdigit() else 0
    if mb <= 0:
        raise ConfigError(f"{LAYOUT_CACHE_ENV} = {v!r}: must be a positive whole number of MiB per process "
                          f"(default {MAX_PLACEMENT_BYTES >> 20})")
    return mb << 20


def _layout_cache() -> BoundedCache:
    try:
        bound = layout_cache_bytes()
    except ConfigError:                # refused with one line by the CLI (dse.cli.main)
        bound = None
    return BoundedCache(MAX_PLACEMENTS, MAX_PLACEMENT_BYTES if bound is None else bound, entry_bytes)


def entry_bytes(entry: tuple) -> int:
    """Bytes of the arrays of a cached (layout, memo) entry, each buffer once: the memo shares
    arrays with the layout and with its chunk results (the jobs of tile width 1 are the layout
    itself, a broadcast chunk's per-resource jobs are the per-core counts, a direct one's a view
    of the jobs), and a view holds its base's memory (tracemalloc's count of the entries' growth
    agrees within 0.2 %). Counted array by array, the full 512-step entry above looked 175 MiB
    (2.0x), so the bound held fewer entries than it names: ``bench_search.py``'s study at 512
    steps, ``--jobs 1``, rebuilt 387 layouts with a peak RSS of 1.40 GB, against 312 and 1.75 GB
    counted once (36.8 -> 35.7 s); at 128 steps 137 -> 106 rebuilds, RSS 0.89 -> 1.05 GB, no
    difference in time beyond the host's noise."""
    seen: dict[int, int] = {}

    def add(v) -> None:
        if isinstance(v, np.ndarray):
            while isinstance(v.base, np.ndarray):
                v = v.base
            if not isinstance(v, np.memmap):      # a shared layout's pages: the kernel's to drop
                seen[id(v)] = int(v.nbytes)
        elif isinstance(v, tuple):
            for x in v:
                add(x)
    layout, memo = entry
    add(layout)
    for v in memo.values():
        add(v)
    return sum(seen.values())


PLACEMENTS: BoundedCache[tuple, tuple] = _layout_cache()


def placement_for(wl: Workload, dom: pl.Domain, policy: str) -> np.ndarray:
    """Slot of every expert of every layer under ``policy``, from the workload's profiling window;
    LPT and co-activation placements are computed once per machine (:mod:`dse.mapping.warm_cache`)."""
    if policy == "contiguous":
        return pl.place(policy, dom, wl.profile_load)

    def make() -> np.ndarray:
        coact = wl.coact() if policy == "coactivation" else None
        return pl.place(policy, dom, wl.profile_load, coact)
    return warm_cache.placement(warm_cache.workload_digest(wl), dom, policy, make)


_LOAD_DIGESTS: dict[int, tuple[object, str]] = {}    # id(workload) -> (workload, digest of its load)
_LAYOUT_CODE: list[str] = []


def shared_layout(wl: Workload, dom: pl.Domain, policy: str, slot: np.ndarray, sch: Scheduler
                  ) -> tuple[np.ndarray, str]:
    """The unit layout of ``wl``'s measured window on ``dom`` under ``slot``, built once per
    study by one process and memory-mapped read-only by every other (``warm_cache.shared_array``),
    and its key: a digest of the loads, the domain, the policy, the placement and the scheduler's code."""
    if not _LAYOUT_CODE:
        from pathlib import Path

        from dse.mapping import scheduler
        from dse.version import __version__
        _LAYOUT_CODE.append(warm_cache.content_key(__version__, np.__version__,
                                                   Path(scheduler.__file__).read_bytes()))
    hit = _LOAD_DIGESTS.get(id(wl))
    if hit is None or hit[0] is not wl:
        if len(_LOAD_DIGESTS) > 64:
            _LOAD_DIGESTS.clear()
        hit = _LOAD_DIGESTS[id(wl)] = (wl, warm_cache.content_key(wl.load))
    key = warm_cache.content_key("layout", _LAYOUT_CODE[0], hit[1], dom, policy, np.asarray(slot))
    return warm_cache.shared_array(key, lambda: sch.layout(wl.load)), key


# memo entries (key family -> arrays in the value) built once per study and shared like the layout:
# the rounds' lead-job table of ``dse.mapping.rounds`` ((K_n, most streams) per tile width, pooling
# and groups), design-independent given the layout: ~7 ms of CPU per entry at 512 steps (8b64129; ~1 s before)
SHARED_MEMO = {"leads": 2}


class SharedMemo(dict):
    """A cached layout's memo: a ``SHARED_MEMO`` entry missing here is claimed in the shared folder
    (``warm_cache.claim``: mapped if another process built it, else this process builds it, under
    the entry's lock) when its key is tested (``key in memo``), and published when it is set."""

    def __init__(self, layout_key: str):
        super().__init__()
        self.layout_key = layout_key
        self.claimed: set = set()

    def _shared(self, key) -> str:
        if not _MEMO_CODE:
            import importlib.util  # its source, not the module: rounds imports this one
            from pathlib import Path
            src = importlib.util.find_spec("dse.mapping.rounds")
            _MEMO_CODE.append(warm_cache.content_key(Path(src.origin).read_bytes() if src and src.origin else b""))
        return warm_cache.content_key("memo", self.layout_key, _MEMO_CODE[0], key)

    def __contains__(self, key) -> bool:
        if dict.__contains__(self, key):
            return True
        parts = SHARED_MEMO.get(key[0]) if isinstance(key, tuple) and key else None
        if parts is None or key in self.claimed:
            return False
        hit = warm_cache.claim(self._shared(key), parts)
        if hit is None:
            self.claimed.add(key)
            return False
        dict.__setitem__(self, key, hit)
        return True

    def __setitem__(self, key, value) -> None:
        if key in self.claimed:
            self.claimed.discard(key)
            if isinstance(value, tuple) and len(value) == SHARED_MEMO[key[0]] and \
                    all(isinstance(v, np.ndarray) for v in value):
                value = warm_cache.publish(self._shared(key), value, kind="table")
            else:
                warm_cache.release(self._shared(key))
        dict.__setitem__(self, key, value)


_MEMO_CODE: list[str] = []


def _new_entry(wl: Workload, dom: pl.Domain, policy: str, slot: np.ndarray, sch: Scheduler) -> tuple:
    layout, key = shared_layout(wl, dom, policy, slot, sch)
    return layout, SharedMemo(key)


def schedule_workload(wl: Workload, point, n_experts: int) -> tuple[pl.Domain, Schedule]:
    """The scheduling domain of the design and the schedule of the workload's measured window."""
    p = point
    dom = pl.domain(n_experts, p.core_side, p.groups, p.die_units_x, p.die_units_y, p.core_remainder,
                    p.layer_layout)
    slot = placement_for(wl, dom, p.placement)
    sch = Scheduler(dom, slot, p.tile_width, p.pooling, p.fetch, p.fetch_queue_depth)
    if wl.load is None:
        return dom, sch.run(wl.chunks())
    key = ("layout", wl.key, dom, p.placement)
    entry = PLACEMENTS.get_or_make(key, lambda: _new_entry(wl, dom, p.placement, slot, sch))
    kept = tuple(entry[1])
    sched = sch.run_layout([entry[0]], entry[1])
    if tuple(entry[1]) != kept:        # its memo grew (or dropped tables): counted again against the bound
        PLACEMENTS.put(key, entry)
    else:                              # most designs: counting the entry again cost 0.15 ms of a ~5 ms design
        PLACEMENTS.touch(key)
    return dom, sched
