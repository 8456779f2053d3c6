"""Stage ``performance``: layer time, per-token FFN latency (read vs compute bound), weight
energy, the GPU baselines (iso compute / bandwidth / capacity) and attention-FFN serving.

Wiring only: the physics is in ``dse.performance`` (latency, energy, balance, baselines, serving).
"""
from __future__ import annotations

from typing import Any

from dse.catalog import MoEModel, get_gpu, gpus
from dse.constants import C
from dse.performance import balance, baselines, energy, latency, serving
from dse.pipeline.context import Context
from dse.units import BYTES_PER_GB, BYTES_PER_MB, FLOPS_PER_GFLOP, GIB

GUARANTEED_KEYS = ("t_layer_us", "ffn_latency_us_per_token", "weight_mb_per_token", "weight_energy_uj_per_token")


def run(ctx: Context) -> dict[str, Any]:
    p, model, h, sh, dies, u = ctx.point, ctx.model, ctx.hierarchy, ctx.sharding, ctx.dies, ctx.union
    B = p.run_batch
    step_bytes = latency.weight_bytes_per_step(model.moe_layers, u, model.expert_bytes, model.router_bytes)
    tok_bytes = latency.weight_bytes_per_token(step_bytes, B)
    pool_bw = dies * h.die_read_gbps
    pool_gflops = dies * h.die_gflops
    t_read = latency.read_us_per_token(tok_bytes, pool_bw)
    t_comp = latency.compute_us_per_token(latency.flops_per_token(model.moe_layers, model.top_k, model.expert_bytes),
                                          pool_gflops)
    t_ffn = max(t_read, t_comp)
    m: dict[str, Any] = {
        "t_layer_us": latency.t_layer_us(sh.d_used_columns, h.t_col_ns),
        "weight_mb_per_token": tok_bytes / BYTES_PER_MB,
        "ffn_read_us_per_token": t_read,
        "ffn_compute_us_per_token": t_comp,
        "ffn_latency_us_per_token": t_ffn,
        "read_bound": latency.is_read_bound(B, model.top_k, u, h.balance_flop_per_byte, model.router_bytes,
                                           model.expert_bytes),
        "weight_energy_uj_per_token": energy.energy_uj(tok_bytes, C.reram_pj_per_byte),
    }
    m.update(gpu_baselines(model, tok_bytes, pool_gflops, pool_bw, t_ffn))
    if model.attention:
        m.update(af_serving(ctx, pool_gflops, t_ffn, m[f"{p.attn_gpu}_us_per_token"]))
    return m


def gpu_baselines(model: MoEModel, tok_bytes: float, pool_gflops: float, pool_gbps: float,
                  t_ffn_us: float) -> dict[str, Any]:
    """Every catalog GPU at equal peak compute (the headline), equal read bandwidth and equal capacity."""
    m: dict[str, Any] = {}
    for key, g in gpus().items():
        n_c = baselines.gpus_iso_compute(pool_gflops * FLOPS_PER_GFLOP, g.flops)
        n_b = baselines.gpus_iso_bandwidth(pool_gbps * BYTES_PER_GB, g.read_bps)
        n_cap = baselines.gpus_iso_capacity(model.ffn_weight_bytes, g.capacity_gib * GIB)
        t_g = baselines.gpu_us_per_token(tok_bytes, n_c, g.read_bps)
        f = balance.flop_per_byte(g.flops, g.read_bps)
        m.update({
            f"{key}_dies_iso_compute": n_c,
            f"{key}_dies_iso_bandwidth": n_b,
            f"{key}_dies_iso_capacity": n_cap,
            f"{key}_us_per_token": t_g,
            f"speedup_vs_{key}": t_g / t_ffn_us,
            f"{key}_weight_energy_uj_per_token": energy.energy_uj(tok_bytes, g.hbm_pj_per_byte),
            f"{key}_flop_per_byte": f,
            f"{key}_knee_batch": balance.knee_batch(f, model.experts, model.top_k),
            f"{key}_pool_power_w_iso_compute": n_c * g.board_power_w,
        })
    return m


def af_serving(ctx: Context, pool_gflops: float, t_ffn_us: float, t_ffn_gpu_us: float) -> dict[str, Any]:
    """Attention-FFN disaggregated serving, the attention pool on iso-compute GPUs of ``attn_gpu``."""
    p, att, dies = ctx.point, ctx.model.attention, ctx.dies
    g = get_gpu(p.attn_gpu)
    n_att = baselines.gpus_iso_compute(pool_gflops * FLOPS_PER_GFLOP, g.flops)
    t_att = serving.t_attn_us(p.context, p.run_batch, att["kv_bytes_per_ctx_token"], att["non_expert_bytes"],
                              n_att * g.read_bps)
    return {
        "t_attn_us": t_att,
        "tpot_af_us": serving.tpot_af_us(t_att, t_ffn_us),
        "tpot_gpu_only_us": serving.tpot_homogeneous_us(t_att, t_ffn_gpu_us),
        "af_gain": serving.tpot_homogeneous_us(t_att, t_ffn_gpu_us) / serving.tpot_af_us(t_att, t_ffn_us),
        "attention_over_ffn_dies": serving.attention_over_ffn_dies(n_att, t_att, t_ffn_us, dies),
    }
