"""Stage ``scheduled``: the per-token time from the rounds of the schedule (spec section 8).

Runs after ``network`` (it needs the hop factor and the level loads) and before ``cost`` (which
prices the scheduled rate). Wiring only: the rounds' contents come from ``dse.mapping.rounds``, the
physics from ``dse.performance.scheduled``. Without a scheduled trace (``trace = catalog``) every
metric is None.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from dse.constants import C
from dse.hardware import core, unit
from dse.mapping.rounds import workload_profile
from dse.performance import latency, scheduled
from dse.pipeline.context import Context
from dse.units import FLOPS_PER_GFLOP, US_PER_S

GUARANTEED_KEYS = ("ffn_us_per_token_scheduled", "scheduled_tokens_per_s", "ffn_step_us_scheduled",
                   "scheduled_round_stretch", "scheduled_mfu")
LEVELS = ("die_noc", "d2d", "node")          # crossed once per (step, layer): dispatch and reduction


def run(ctx: Context) -> dict[str, Any]:
    sched, dom = ctx.schedule, ctx.domain
    if sched is None or dom is None or ctx.workload is None:
        return {k: None for k in GUARANTEED_KEYS}
    p, h, sh, m, model = ctx.point, ctx.hierarchy, ctx.sharding, ctx.metrics, ctx.model
    leads, smax = workload_profile(ctx.workload, p, dom)
    link = core.link_gbps(p.core_mesh_link_bits, p.noc_ghz)
    unit_bytes = sh.d_used_columns * C.column_bytes                        # the unit's weights streamed per pass
    stream_us = scheduled.multicast_us_per_stream(unit_bytes, core.core_mesh_provision_gbps(p.core_side, link))
    read = scheduled.round_read_us(m["t_layer_us"], smax, m["stretch_hop_factor"], stream_us)
    io_tok = unit.unit_io_bytes_per_job(sh.chunks_per_unit, model.hidden, 1, C.act_bytes_per_element,
                                        C.psum_bytes_per_element)
    t = scheduled.step_layer_us(leads, sched.rounds, read,
                                scheduled.job_compute_us_per_token(unit_bytes, h.unit_gflops),
                                scheduled.job_io_us_per_token(io_tok, link),
                                scheduled.level_comm_us([m[f"{lvl}_load"] for lvl in LEVELS], m["t_layer_us"]))
    if not float(t.sum()) > 0:
        return {k: None for k in GUARANTEED_KEYS}
    t_tok = scheduled.ffn_us_per_token_scheduled(t, dom.units * sh.tp_degree, ctx.dies * h.die_active_units,
                                                 p.run_batch)
    flops = latency.flops_per_token(model.moe_layers, model.top_k, model.expert_bytes)
    rho = np.asarray(sched.rounds, dtype=float)
    return {"ffn_us_per_token_scheduled": t_tok, "scheduled_tokens_per_s": scheduled.tokens_per_s(t_tok),
            "ffn_step_us_scheduled": scheduled.ffn_step_us_scheduled(t),
            "scheduled_round_stretch": float((read * rho).sum() / rho.sum()) / m["t_layer_us"],
            "scheduled_mfu": flops / (ctx.dies * h.die_gflops * FLOPS_PER_GFLOP) * US_PER_S / t_tok}
