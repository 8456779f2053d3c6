"""Attention/FFN-disaggregated serving TPOT (spec section 8, Table XI).

Attention runs on a GPU pool (by default the iso-compute H20 count, 10.8 dies); per token
t_attn = (ctx x KV bytes per context token + non-expert bytes / B) / attention-pool read BW.
The attention shape (KV bytes per context token, non-expert bytes) is a workload input; the
catalog's values for the default model are the least-squares fit of the four published points.
Pipelined AF: TPOT = max(t_attn, t_FFN); homogeneous GPU: TPOT = t_attn + t_FFN,GPU.
"""
from __future__ import annotations

from dse.units import US_PER_S


def t_attn_us(context: int, batch: int, kv_bytes_per_ctx_token: float, non_expert_bytes: float,
              attn_read_bps: float) -> float:
    return (context * kv_bytes_per_ctx_token + non_expert_bytes / batch) / attn_read_bps * US_PER_S


def tpot_af_us(t_attn: float, t_ffn: float) -> float:
    """Attention and FFN pools pipelined: the slower stage sets the time per output token."""
    return max(t_attn, t_ffn)


def tpot_homogeneous_us(t_attn: float, t_ffn_gpu: float) -> float:
    """Attention and FFN on the same GPUs, one after the other."""
    return t_attn + t_ffn_gpu


def attention_over_ffn_dies(attn_gpus: float, t_attn: float, t_ffn: float, ffn_dies: float) -> float:
    """GPU dies the attention pool needs to match the FFN pool's time, per FFN-pool die."""
    return attn_gpus * (t_attn / t_ffn) / ffn_dies
