"""Stage ``delivered``: the schedule-aware per-token time and rate (spec Eq. 2).

Runs after ``network`` (it needs the round stretch) and before ``cost`` (which prices the
delivered rate). Wiring only: the physics is in ``dse.performance.delivered``. Without a
scheduled trace (``trace = catalog``) there is no actual MFU and every metric is None.
"""
from __future__ import annotations

from typing import Any

from dse.performance import delivered, latency
from dse.pipeline.context import Context
from dse.units import GB_PER_PB

GUARANTEED_KEYS = ("delivered_pflops", "ffn_us_per_token_delivered", "delivered_tokens_per_s")


def run(ctx: Context) -> dict[str, Any]:
    actual, stretch = ctx.number("actual_mfu"), ctx.number("round_stretch")
    if actual is None or stretch is None or actual <= 0:
        return {k: None for k in GUARANTEED_KEYS}
    model = ctx.model
    rate_gflops = delivered.delivered_gflops(ctx.metrics["pool_pflops"] * GB_PER_PB, actual, stretch)
    flops = latency.flops_per_token(model.moe_layers, model.top_k, model.expert_bytes)
    t = delivered.ffn_us_per_token_delivered(ctx.metrics["ffn_read_us_per_token"],
                                             delivered.compute_us_per_token_delivered(flops, rate_gflops))
    return {"delivered_pflops": rate_gflops / GB_PER_PB, "ffn_us_per_token_delivered": t,
            "delivered_tokens_per_s": delivered.tokens_per_s(t)}
