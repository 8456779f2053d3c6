"""Closed-form pipeline stages: structure (10), performance (30).
(Routing, closed-form or trace-driven: `dse.mapping.routing_stage`; communication, area / power
and cost: `dse.model.network_stage`.)

Each stage only wires design-point knobs into the pure functions of the level modules; the
physics is in `dse.hardware.*`, `dse.mapping.sharding` and `dse.model.{latency,energy,...}`.
"""
from __future__ import annotations

from typing import Any

from dse.constants import C
from dse.hardware.hierarchy import LEVELS, hierarchy
from dse.mapping import sharding
from dse.model import balance, baselines, energy, latency, serving
from dse.model.evaluate import Context, stage
from dse.workload.catalog import get_gpu, get_model, gpus

GIB = 1 << 30


@stage("structure", 10, needs_feasible=False)
def structure(ctx: Context) -> dict[str, Any]:
    p = ctx.point
    model = get_model(p.model)
    h = hierarchy(p)
    sh = sharding.shard(model.hidden, model.expert_intermediate, p.array_depth)
    ctx.extra.update(model=model, hierarchy=h, sharding=sh)
    m: dict[str, Any] = {
        "model": model.name,
        "batch": p.run_batch,
        "t_col_ns": h.t_col_ns,
        "cores_per_die": h.cores_per_die,
        "core_grid": f"{h.core_grid[0]}x{h.core_grid[1]}",
        "remainder_units": h.remainder_units,
        "die_active_units": h.die_active_units,
        "balance_flop_per_byte": h.balance_flop_per_byte,
        "roofline_cap": min(1.0, 2.0 * p.tile_width / h.balance_flop_per_byte),
        "chunk_columns": sh.chunk_columns,
        "chunks_per_expert": sh.chunks_per_expert,
        "ffn_weight_gib": model.ffn_weight_bytes / GIB,
    }
    for lvl in LEVELS:
        m[f"{lvl}_capacity_mib"] = getattr(h, f"{lvl}_capacity_bytes") / (1 << 20)
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
    instances = model.moe_layers * (model.experts + model.shared_experts)
    dies_pack = sharding.dies_by_packing(instances, sh.tp_degree, h.die_active_units)
    dies = dies_cap if p.die_count_rule == "capacity" else dies_pack
    m.update(
        tp_degree=sh.tp_degree,
        chunks_per_unit=sh.chunks_per_unit,
        d_used_columns=sh.d_used_columns,
        array_utilization=sh.array_utilization,
        dies=dies,
        dies_capacity_rule=dies_cap,
        dies_packing_rule=dies_pack,
        pool_pflops=dies * h.die_gflops / 1e6,
        pool_read_tbps=dies * h.die_read_gbps / 1e3,
    )
    ctx.extra["dies"] = dies
    return m


@stage("performance", 30)
def performance(ctx: Context) -> dict[str, Any]:
    p, model, h = ctx.point, ctx.extra["model"], ctx.extra["hierarchy"]
    sh, dies, u = ctx.extra["sharding"], ctx.extra["dies"], ctx.extra["union"]
    B = p.run_batch
    t_layer = latency.t_layer_us(sh.d_used_columns, h.t_col_ns)
    step_bytes = latency.weight_bytes_per_step(model.moe_layers, u, model.expert_bytes, model.router_bytes)
    tok_bytes = latency.weight_bytes_per_token(step_bytes, B)
    pool_bw = dies * h.die_read_gbps
    pool_gflops = dies * h.die_gflops
    t_read = latency.read_us_per_token(tok_bytes, pool_bw)
    t_comp = latency.compute_us_per_token(latency.flops_per_token(model.moe_layers, model.top_k, model.expert_bytes),
                                          pool_gflops)
    t_ffn = max(t_read, t_comp)
    m: dict[str, Any] = {
        "t_layer_us": t_layer,
        "weight_mb_per_token": tok_bytes / 1e6,
        "ffn_read_us_per_token": t_read,
        "ffn_compute_us_per_token": t_comp,
        "ffn_latency_us_per_token": t_ffn,
        "read_bound": latency.is_read_bound(B, model.top_k, u, h.balance_flop_per_byte),
        "weight_energy_uj_per_token": energy.energy_uj(tok_bytes, C.reram_pj_per_byte),
    }
    # GPU baselines: equal peak compute (headline), equal read bandwidth, equal capacity.
    for key, g in gpus().items():
        n_c = baselines.gpus_iso_compute(pool_gflops * 1e9, g.flops)
        n_b = baselines.gpus_iso_bandwidth(pool_bw * 1e9, g.read_bps)
        n_cap = baselines.gpus_iso_capacity(model.ffn_weight_bytes, g.capacity_gib * GIB)
        t_g = baselines.gpu_us_per_token(tok_bytes, n_c, g.read_bps)
        m.update({
            f"{key}_dies_iso_compute": n_c,
            f"{key}_dies_iso_bandwidth": n_b,
            f"{key}_dies_iso_capacity": n_cap,
            f"{key}_us_per_token": t_g,
            f"speedup_vs_{key}": t_g / t_ffn,
            f"{key}_weight_energy_uj_per_token": energy.energy_uj(tok_bytes, g.hbm_pj_per_byte),
            f"{key}_flop_per_byte": balance.flop_per_byte(g.flops, g.read_bps),
            f"{key}_knee_batch": balance.knee_batch(balance.flop_per_byte(g.flops, g.read_bps),
                                                    model.experts, model.top_k),
            f"{key}_pool_power_w_iso_compute": n_c * g.board_power_w,
        })
    # AF serving with the attention pool on iso-compute GPUs of `attn_gpu`.
    att = model.attention
    if att:
        g = get_gpu(p.attn_gpu)
        n_att = baselines.gpus_iso_compute(pool_gflops * 1e9, g.flops)
        t_att = serving.t_attn_us(p.context, B, att["kv_bytes_per_ctx_token"], att["non_expert_bytes"],
                                  n_att * g.read_bps)
        t_ffn_gpu = m[f"{p.attn_gpu}_us_per_token"]
        m.update({
            "t_attn_us": t_att,
            "tpot_af_us": serving.tpot_af_us(t_att, t_ffn),
            "tpot_gpu_only_us": serving.tpot_homogeneous_us(t_att, t_ffn_gpu),
            "af_gain": serving.tpot_homogeneous_us(t_att, t_ffn_gpu) / serving.tpot_af_us(t_att, t_ffn),
            "attention_over_ffn_dies": serving.attention_over_ffn_dies(n_att, t_att, t_ffn, dies),
        })
    return m
