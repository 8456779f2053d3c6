"""Stage ``cost``: dies per wafer, yield, die and pool cost, energy per token and $ per million
tokens, beside the iso-compute GPU pools.

Wiring only: the physics is in ``dse.hardware.cost``.
"""
from __future__ import annotations

from typing import Any

from dse.catalog import get_gpu, gpus
from dse.constants import C
from dse.hardware import cost
from dse.pipeline.context import Context

GUARANTEED_KEYS = ("die_cost_usd", "pool_cost_usd", "usd_per_mtok", "usd_per_mtok_delivered",
                   "usd_per_mtok_scheduled")


def run(ctx: Context) -> dict[str, Any]:
    p, m0 = ctx.point, ctx.metrics
    die_usd = cost.die_cost_usd(C.die_width_mm, C.die_height_mm)
    pool_usd = cost.pool_cost_usd(ctx.dies, die_usd, p.dies_per_package, p.packages_per_node,
                                  C.die_width_mm, C.die_height_mm)
    t_tok = m0["ffn_latency_us_per_token"]
    out: dict[str, Any] = {
        "dies_per_wafer": cost.gross_dies_per_wafer(C.die_width_mm, C.die_height_mm),
        "die_yield": cost.murphy_yield(C.die_width_mm * C.die_height_mm, C.defect_density_per_cm2),
        "die_cost_usd": die_usd,
        "pool_cost_usd": pool_usd,
        "pool_energy_uj_per_token": cost.pool_energy_uj_per_token(m0["pool_power_w"], t_tok),
        "usd_per_mtok": cost.usd_per_mtok(pool_usd, m0["pool_power_w"], t_tok),
    }
    t_del = ctx.number("ffn_us_per_token_delivered")       # the schedule-aware rate (stage delivered)
    out["usd_per_mtok_delivered"] = None if t_del is None else cost.usd_per_mtok(pool_usd, m0["pool_power_w"], t_del)
    t_sch = ctx.number("ffn_us_per_token_scheduled")       # the rate of the rounds (stage scheduled)
    out["usd_per_mtok_scheduled"] = None if t_sch is None else cost.usd_per_mtok(pool_usd, m0["pool_power_w"], t_sch)
    for key in gpus():
        n, t_g = ctx.number(f"{key}_dies_iso_compute"), ctx.number(f"{key}_us_per_token")
        price = getattr(C, f"gpu_price_usd_{key}", None)
        if n is None or t_g is None or price is None:
            out[f"{key}_usd_per_mtok"] = None
            continue
        out[f"{key}_pool_cost_usd"] = cost.gpu_pool_cost_usd(n, price)
        out[f"{key}_usd_per_mtok"] = cost.usd_per_mtok(out[f"{key}_pool_cost_usd"], n * get_gpu(key).board_power_w, t_g)
    return out
