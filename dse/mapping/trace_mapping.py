"""Trace-driven mapping of a routing workload: place the experts from the profiling window
(``placement``), then schedule the measured window (:mod:`dse.mapping.scheduler`).

Placements are cached per machine (``warm_cache``), the per-unit layouts of in-memory windows per
process: the DSE asks for the same (workload, domain, policy) over and over while it varies other
knobs.
"""
from __future__ import annotations

import numpy as np

from dse.mapping import placement as pl
from dse.mapping import warm_cache
from dse.mapping.scheduler import Schedule, Scheduler
from dse.workload.window import BoundedCache, Workload

MAX_PLACEMENTS = 32   # unit layouts, ~2 MB each: ~70 MB at most

PLACEMENTS: BoundedCache[tuple, object] = BoundedCache(MAX_PLACEMENTS)


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
    layout, memo = PLACEMENTS.get_or_make(("layout", wl.key, dom, p.placement), lambda: (sch.layout(wl.load), {}))
    return dom, sch.run_layout([layout], memo)
