"""Schedule-aware (delivered) throughput of the FFN pool: the spec's Eq. 2.

The published per-token latency (Tables V, VIII) is max(read time, FLOPs per token / *peak*
FLOPS): the scheduler never reaches it. A pool only delivers

    delivered FLOPS = peak FLOPS x actual MFU / round stretch               (Eq. 2)

where actual MFU = ideal MFU x occupancy comes from scheduling a routing trace and the round
stretch from the multicast trees of the sharing domain. The delivered per-token time is the
slower of the weight stream and the delivered compute:

    t_delivered = max(read time per token, FLOPs per token / delivered FLOPS)

Pure functions, units in the names; the ``delivered`` and ``cost`` stages wire them.
"""
from __future__ import annotations

from dse.units import FLOPS_PER_GFLOP, US_PER_S


def delivered_gflops(peak_gflops: float, actual_mfu: float, round_stretch: float) -> float:
    """Eq. 2: the FLOP rate the pool sustains on a scheduled trace (GFLOP/s)."""
    return peak_gflops * actual_mfu / round_stretch


def compute_us_per_token_delivered(flops_per_token: float, delivered_gflops_: float) -> float:
    """Time the delivered FLOP rate needs for one token's FFN FLOPs (us)."""
    return flops_per_token / (delivered_gflops_ * FLOPS_PER_GFLOP) * US_PER_S


def ffn_us_per_token_delivered(read_us_per_token: float, compute_us_per_token_delivered_: float) -> float:
    """Per-token FFN-pool time on the schedule: the weight stream or the delivered compute."""
    return max(read_us_per_token, compute_us_per_token_delivered_)


def tokens_per_s(us_per_token: float) -> float:
    """Tokens per second of a pool that finishes one token every ``us_per_token`` (pipelined)."""
    return US_PER_S / us_per_token
