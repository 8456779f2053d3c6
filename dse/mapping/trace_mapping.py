"""Trace-driven mapping of a routing workload: place the experts from the profiling window
(``placement``), then schedule the measured window (:mod:`dse.mapping.scheduler`).

Placements are cached per machine (``warm_cache``), the per-unit layouts of in-memory windows per
process: the DSE asks for the same (workload, domain, policy) over and over while it varies other
knobs. A layout keeps the scheduler's job counts per tile width beside it (``Scheduler.run_layout``'s
memo), which grow with the trace: on the 128-step study of ``benchmarks/bench_search.py``, 21 MB an
entry on average (31 MB while the memo kept a float copy of the jobs per tile width). The
process keeps ``MAX_PLACEMENTS`` entries and at most ``MAX_PLACEMENT_BYTES`` of them (an entry is
counted again after each use, as its memo grows).
"""
from __future__ import annotations

import numpy as np

from dse.mapping import placement as pl
from dse.mapping import warm_cache
from dse.mapping.scheduler import Schedule, Scheduler
from dse.workload.window import BoundedCache, Workload

MAX_PLACEMENTS = 32                # unit layouts with their job counts per tile width ...
MAX_PLACEMENT_BYTES = 1 << 30      # ... and at most this many bytes of them per process


def entry_bytes(entry: tuple) -> int:
    """Bytes of the arrays of a cached (layout, memo) entry."""
    def size(v) -> int:
        if isinstance(v, np.ndarray):
            return int(v.nbytes)
        return sum(size(x) for x in v) if isinstance(v, tuple) else 0
    layout, memo = entry
    return size(layout) + sum(size(v) for v in memo.values())


PLACEMENTS: BoundedCache[tuple, tuple] = BoundedCache(MAX_PLACEMENTS, MAX_PLACEMENT_BYTES, entry_bytes)


def placement_for(wl: Workload, dom: pl.Domain, policy: str) -> np.ndarray:
    """Slot of every expert of every layer under ``policy``, from the workload's profiling window;
    LPT and co-activation placements are computed once per machine (:mod:`dse.mapping.warm_cache`)."""
    if policy == "contiguous":
        return pl.place(policy, dom, wl.profile_load)

    def make() -> np.ndarray:
        coact = wl.coact() if policy == "coactivation" else None
        return pl.place(policy, dom, wl.profile_load, coact)
    return warm_cache.placement(warm_cache.workload_digest(wl), dom, policy, make)


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
    entry = PLACEMENTS.get_or_make(key, lambda: (sch.layout(wl.load), {}))
    sched = sch.run_layout([entry[0]], entry[1])
    PLACEMENTS.put(key, entry)         # its memo may have grown: counted again against the bound
    return dom, sched
