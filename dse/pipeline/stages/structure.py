"""Stage ``structure``: the hierarchy of the design (capacity, bandwidth, FLOPS per level), the
sharding of an expert over array columns (TP degree, D_used) and the pool's die count.

Wiring only: the physics is in ``dse.hardware`` (levels) and ``dse.mapping.sharding``.
"""
from __future__ import annotations

from typing import Any

from dse.catalog import get_model
from dse.hardware import unit
from dse.hardware.hierarchy import LEVELS, hierarchy
from dse.mapping import sharding
from dse.pipeline.context import Context
from dse.units import GB_PER_PB, GB_PER_TB, GIB, MIB

GUARANTEED_KEYS = ("dies", "tp_degree", "d_used_columns", "array_utilization")


def run(ctx: Context) -> dict[str, Any]:
    p = ctx.point
    model = get_model(p.model)
    h = hierarchy(p)
    sh = sharding.shard(model.hidden, model.expert_intermediate, p.array_depth)
    ctx.model, ctx.hierarchy, ctx.sharding = model, h, sh
    m: dict[str, Any] = {
        "run_batch": p.run_batch,
        "t_col_ns": h.t_col_ns,
        "cores_per_die": h.cores_per_die,
        "core_grid": f"{h.core_grid[0]}x{h.core_grid[1]}",
        "remainder_units": h.remainder_units,
        "die_active_units": h.die_active_units,
        "balance_flop_per_byte": h.balance_flop_per_byte,
        "roofline_cap": unit.roofline_cap(p.tile_width, h.balance_flop_per_byte),
        "chunk_columns": sh.chunk_columns,
        "chunks_per_expert": sh.chunks_per_expert,
        "ffn_weight_gib": model.ffn_weight_bytes / GIB,
    }
    for lvl in LEVELS:
        m[f"{lvl}_capacity_mib"] = getattr(h, f"{lvl}_capacity_bytes") / MIB
        m[f"{lvl}_read_gbps"] = getattr(h, f"{lvl}_read_gbps")
        m[f"{lvl}_gflops"] = getattr(h, f"{lvl}_gflops")
    m["bytes_per_flop"] = h.bytes_per_flop("unit")
    if p.groups > h.units_per_core:  # guarded by spec validation; kept for user-built points
        ctx.infeasible(f"pe_groups_per_core {p.groups} exceeds units per core {h.units_per_core}")
    if not sh.feasible:
        ctx.infeasible(sh.reason)
        m.update(tp_degree=0, d_used_columns=0, array_utilization=0.0, dies=0)
        return m
    dies_cap = sharding.dies_by_capacity(model.ffn_weight_bytes, h.die_capacity_bytes)
    dies_pack = sharding.dies_by_packing(model.expert_instances, sh.tp_degree, h.die_active_units)
    dies = dies_cap if p.die_count_rule == "capacity" else dies_pack
    m.update(
        tp_degree=sh.tp_degree,
        chunks_per_unit=sh.chunks_per_unit,
        d_used_columns=sh.d_used_columns,
        array_utilization=sh.array_utilization,
        dies=dies,
        dies_capacity_rule=dies_cap,
        dies_packing_rule=dies_pack,
        pool_pflops=dies * h.die_gflops / GB_PER_PB,
        pool_read_tbps=dies * h.die_read_gbps / GB_PER_TB,
    )
    ctx.dies = dies
    return m
