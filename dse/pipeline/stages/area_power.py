"""Stage ``area_power``: die area (ReRAM, PEs, core mesh, Die NoC, D2D / node IO) against the
area budget, and die / pool power at the design's activity.

Wiring only: the physics is in ``dse.hardware.{area,network,power}``.
"""
from __future__ import annotations

from typing import Any

from dse.constants import C
from dse.hardware import area, die, network, power
from dse.pipeline.context import Context

GUARANTEED_KEYS = ("die_area_mm2", "die_power_w", "pool_power_w", "network_area_mm2", "mm2_per_occupancy")


def silicon_mm2(ctx: Context) -> dict[str, float]:
    """Area of every part of one die."""
    p, h = ctx.point, ctx.hierarchy
    shapes = die.core_shapes(p.core_side, p.die_units_x, p.die_units_y, p.core_remainder)
    gx, gy = h.core_grid
    px, py = network.unit_pitch_mm(p.die_units_x, p.die_units_y)
    queue = p.fetch_queue_depth if p.fetch == "load_aware" else 0
    return {
        "reram_area_mm2": area.reram_area_mm2(h.die_capacity_bytes),
        "read_periphery_area_mm2": area.read_periphery_mm2(h.die_active_units, p.n_macros, p.macro_width_bits,
                                                           p.macro_mhz),
        "pe_area_mm2": area.pe_area_mm2(h.die_active_units, p.tile_width, p.pe_mhz),
        "fetch_buffer_area_mm2": area.fetch_buffer_mm2(len(shapes), queue, p.tile_width, ctx.model.hidden),
        "group_share_area_mm2": area.group_share_mm2(len(shapes), p.groups, h.units_per_core,
                                                     p.n_macros * p.macro_width_bits),
        "core_mesh_area_mm2": network.core_mesh_area_mm2(shapes, p.core_mesh_link_bits, px, py, p.noc_ghz),
        "die_noc_area_mm2": network.die_noc_area_mm2(gx, gy, p.die_noc_link_bits, p.core_side * px, p.core_side * py,
                                                     p.noc_ghz),
        "d2d_io_area_mm2": network.d2d_io_area_mm2(p.d2d_gbps_per_die, p.node_gbps),
    }


def power_w(ctx: Context, parts_mm2: dict[str, float], mfu: float, read_activity: float) -> dict[str, float]:
    """Power of every part of one die at PE activity ``mfu`` and array read activity."""
    p, h, m0 = ctx.point, ctx.hierarchy, ctx.metrics
    n_cores = len(die.core_shapes(p.core_side, p.die_units_x, p.die_units_y, p.core_remainder))
    stream_hops = network.multicast_bit_hops_per_s(n_cores, m0["core_mesh_streams_mean"], m0["multicast_stream_gbps"],
                                                   h.units_per_core - 1)
    unit_hops = network.unit_io_bit_hops_per_s(h.die_active_units, m0["unit_io_gbps"], p.core_side)
    noc_hops = network.link_loads_bit_hops_per_s(list(ctx.die_noc_loads.values()), m0["t_layer_us"])
    return {
        "reram_power_w": power.reram_power_w(h.die_read_gbps, read_activity, p.macro_mhz),
        "pe_power_w": power.pe_power_w(h.die_gflops, mfu, p.pe_mhz),
        "core_mesh_power_w": network.fabric_power_w(
            parts_mm2["core_mesh_area_mm2"], network.core_mesh_bit_hops_per_s(stream_hops, unit_hops), p.noc_ghz),
        "die_noc_power_w": network.fabric_power_w(parts_mm2["die_noc_area_mm2"], noc_hops, p.noc_ghz),
        "d2d_io_power_w": network.d2d_io_power_w(p.d2d_gbps_per_die, p.node_gbps),
    }


def run(ctx: Context) -> dict[str, Any]:
    parts_mm2 = silicon_mm2(ctx)
    # activity: delivered FLOP/s and reading units follow the effective (stretched) MFU /
    # occupancy when the scheduler ran; the study's operating point (MFU 0.38, all arrays
    # streaming) otherwise.
    eff_mfu, eff_occ = ctx.number("effective_mfu"), ctx.number("effective_occupancy")
    mfu = C.reference_pe_mfu if eff_mfu is None else eff_mfu
    read_activity = power.FULL_READ_ACTIVITY if eff_occ is None else eff_occ
    parts_w = power_w(ctx, parts_mm2, mfu, read_activity)
    die_area = sum(parts_mm2.values())
    die_power = sum(parts_w.values())
    budget = area.die_budget_mm2()
    net = parts_mm2["core_mesh_area_mm2"] + parts_mm2["die_noc_area_mm2"]
    if area.over_budget(die_area, budget):
        ctx.infeasible(f"die area {die_area:.1f} mm2 exceeds the {budget:.0f} mm2 budget (network {net:.1f} mm2)")
    return {**parts_mm2, **parts_w,
            "network_area_mm2": net,
            "mm2_per_occupancy": None if not eff_occ else net / eff_occ,
            "die_area_mm2": die_area, "die_area_budget_mm2": budget, "die_area_slack_mm2": budget - die_area,
            "die_power_w": die_power, "pool_power_w": power.pool_power_w(ctx.dies, die_power),
            "power_activity_mfu": mfu, "power_read_activity": read_activity}
