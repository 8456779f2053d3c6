"""Stage ``routing``: U(B), the experts a decode step touches, and the MFU cascade.

``trace = 'catalog'``: the catalog's closed-form U(B) (no scheduling; the fast path of the DSE).
Otherwise the design's workload window (``dse.workload.window``) is placed and scheduled
(``dse.mapping.trace_mapping``): the stage publishes the cascade metrics, the trace-measured U(B)
in ``ctx.union`` (latency and weight energy of the performance stage) and the schedule in
``ctx.schedule`` (per-core multicast streams for the network stage).
"""
from __future__ import annotations

from typing import Any

from dse.constants import C
from dse.mapping.trace_mapping import schedule_workload
from dse.performance import energy, latency
from dse.pipeline.context import Context
from dse.units import BYTES_PER_MB
from dse.workload.union import union_closed_form
from dse.workload.window import workload

SCHEDULE_KEYS = ("ideal_mfu", "occupancy", "actual_mfu", "rounds", "jobs_per_layer",
                 "multicast_streams_mean", "multicast_streams_p99", "multicast_streams_peak",
                 "readouts_per_layer_pooled", "readouts_per_layer_unpooled")
GUARANTEED_KEYS = ("union_experts", "union_source", *SCHEDULE_KEYS,
                   "no_pooling_weight_mb_per_token", "no_pooling_weight_energy_uj_per_token",
                   "schedule_cores", "schedule_pe_tiles", "trace_steps_measured", "profile_steps_used",
                   "profile_window", "profile_load_correlation")


def run(ctx: Context) -> dict[str, Any]:
    p, model = ctx.point, ctx.model
    if p.trace == "catalog":
        ctx.union, src = union_closed_form(model, p.run_batch)
        return {"union_experts": ctx.union, "union_source": src}
    wl = ctx.workload or workload(p, model)
    dom, sched = schedule_workload(wl, p, model.experts)
    ctx.schedule, ctx.workload, ctx.union, ctx.domain = sched, wl, sched.union_mean, dom
    s = sched.summary()
    nopool_bytes = latency.no_pooling_weight_bytes_per_token(model.moe_layers, s["jobs_per_layer"],
                                                             model.expert_bytes, model.router_bytes, wl.meta.batch)
    out = {k: s[k] for k in SCHEDULE_KEYS}
    out.update(union_experts=ctx.union, union_source=wl.source,
               no_pooling_weight_mb_per_token=nopool_bytes / BYTES_PER_MB,
               no_pooling_weight_energy_uj_per_token=energy.energy_uj(nopool_bytes, C.reram_pj_per_byte),
               schedule_cores=dom.n_cores, schedule_pe_tiles=dom.units,
               trace_steps_measured=int(sched.samples // max(1, wl.meta.layers)),
               profile_steps_used=wl.profile_steps_used, profile_window=wl.profile_window,
               profile_load_correlation=wl.profile_correlation())
    return out
