"""Pipeline stages for communication (40), area / power (50) and cost (60) (issue 4).

The physics lives in the level modules; these stages only wire knobs and earlier metrics in:

* unit ports ........ `dse.hardware.unit`     (unit_io_gbps)
* core mesh ......... `dse.hardware.core`     (multicast streams, provision, round stretch)
* Die NoC ........... `dse.hardware.die`      (XY-routed busiest link over the core grid)
* package D2D ....... `dse.hardware.package`  (TP / EP merge across dies, reduction order)
* node links ........ `dse.hardware.node`     (inter-layer residual, cross-package merge)
* silicon ........... `dse.hardware.{area,network,power}`
* cost .............. `dse.hardware.cost`

Demand vs provision. Every level reports ``<level>_..._gbps`` (demand), ``<level>_provision_gbps``,
``<level>_headroom_gbps`` = provision - demand (negative = over provision) and ``<level>_load`` =
demand / provision. The core mesh is judged at the p99 of concurrent multicast streams (the
study's sizing rule), the others at their mean demand. ``comm_violation`` = max over levels of
load - 1 (> 0: some level is over provision; a DSE constraint) with ``<level>_over`` flags.

Core-mesh streams come from the trace-driven scheduler when it ran (metrics
``multicast_streams_mean / _p99 / _peak`` of the routing stage); otherwise from the closed-form
shares ``C.core_mesh_*_streams_per_unit`` (``core_mesh_streams_source`` says which).
``effective_mfu`` = ``actual_mfu`` / ``round_stretch`` needs the scheduler's ``actual_mfu``
(None for ``trace = catalog``), as do ``effective_occupancy`` and ``mm2_per_occupancy``.

JSON note: ``d2d_gbps_per_die`` is both a knob (the provision) and, as the issue asks, a metric
(the demand); metrics follow knobs in the JSON, so there it is the demand. The provision is also
``d2d_provision_gbps_per_die``.
"""
from __future__ import annotations

from typing import Any

from dse.constants import C
from dse.hardware import area, core, cost, die, network, node, package, power, unit
from dse.model.evaluate import Context, guarantee, stage
from dse.workload.catalog import get_gpu, gpus

LEVELS = ("unit_io", "core_mesh", "die_noc", "d2d", "node")

guarantee(
    "unit_io_gbps", "core_mesh_p99_gbps", "die_noc_busiest_link_gbps", "d2d_demand_gbps_per_die",
    "d2d_gbps_per_die", "node_residual_gbps", "round_stretch", "effective_mfu", "comm_violation",
    *(f"{lvl}_headroom_gbps" for lvl in LEVELS), *(f"{lvl}_load" for lvl in LEVELS),
    *(f"{lvl}_over" for lvl in LEVELS),
    "network_area_mm2", "mm2_per_occupancy", "die_cost_usd", "pool_cost_usd", "usd_per_mtok",
)


def _num(m: dict[str, Any], key: str) -> float | None:
    v = m.get(key)
    return None if v is None or isinstance(v, bool) else float(v)


def _level(m: dict[str, Any], lvl: str, demand: float, provision: float) -> None:
    m[f"{lvl}_provision_gbps"] = provision
    m[f"{lvl}_headroom_gbps"] = provision - demand
    m[f"{lvl}_load"] = demand / max(provision, 1e-9)
    m[f"{lvl}_over"] = demand > provision * (1 + 1e-9)


def _streams(ctx: Context, units_in_core: int) -> tuple[float, float, float, str]:
    m = ctx.metrics
    got = [_num(m, f"multicast_streams_{q}") for q in ("mean", "p99", "peak")]
    if all(v is not None for v in got):
        return got[0], got[1], got[2], "trace"
    return (core.streams_closed_form(units_in_core, C.core_mesh_mean_streams_per_unit, whole=False),
            core.streams_closed_form(units_in_core, C.core_mesh_p99_streams_per_unit),
            core.streams_closed_form(units_in_core, C.core_mesh_peak_streams_per_unit), "closed_form")


@stage("network", 40)
def network_stage(ctx: Context) -> dict[str, Any]:
    p, model, h, sh = ctx.point, ctx.extra["model"], ctx.extra["hierarchy"], ctx.extra["sharding"]
    t = ctx.metrics["t_layer_us"]
    B = p.run_batch
    d = model.hidden
    act_b, psum_b = C.act_bytes_per_element, C.psum_bytes_per_element
    core_link = core.link_gbps(p.core_mesh_link_bits, p.noc_ghz)
    noc_link = core.link_gbps(p.die_noc_link_bits, p.noc_ghz)
    m: dict[str, Any] = {}

    # unit ports: the unit's local port on its core-mesh router
    u_io = unit.unit_io_gbps(unit.unit_io_bytes_per_job(sh.chunks_per_unit, d, p.tile_width, act_b, psum_b), t)
    m["unit_io_gbps"] = u_io
    _level(m, "unit_io", u_io, core_link)

    # core mesh: multicast read-outs, sized at p99 of concurrent streams
    stream = h.unit_read_gbps
    s_mean, s_p99, s_peak, src = _streams(ctx, h.units_per_core)
    prov = core.core_mesh_provision_gbps(p.core_side, core_link)
    m.update({
        "core_mesh_streams_source": src,
        "multicast_stream_gbps": stream,
        "core_mesh_streams_mean": s_mean, "core_mesh_streams_p99": s_p99, "core_mesh_streams_peak": s_peak,
        "core_mesh_mean_gbps": core.multicast_demand_gbps(s_mean, stream),
        "core_mesh_p99_gbps": core.multicast_demand_gbps(s_p99, stream),
        "core_mesh_peak_gbps": core.multicast_demand_gbps(s_peak, stream),
        "core_mesh_peak_over_provision": core.multicast_demand_gbps(s_peak, stream) > prov * (1 + 1e-9),
        "unicast_source_port_factor": core.unicast_source_port_factor(h.units_per_core),
        "unicast_traffic_factor": core.unicast_traffic_factor(p.core_side),
    })
    _level(m, "core_mesh", m["core_mesh_p99_gbps"], prov)

    # round stretch and effective MFU
    hop = core.stretch_hop_factor(p.core_side, C.stretch_per_hop)
    cont = core.stretch_contention_factor(p.core_side, s_p99, stream, core_link)
    stretch = hop * cont
    actual, occ = _num(ctx.metrics, "actual_mfu"), _num(ctx.metrics, "occupancy")
    m.update({
        "multicast_tree_depth_hops": core.multicast_tree_depth_hops(p.core_side),
        "stretch_hop_factor": hop, "stretch_contention_factor": cont, "round_stretch": stretch,
        "effective_mfu": None if actual is None else actual / stretch,
        "effective_occupancy": None if occ is None else occ / stretch,
    })

    # Die NoC: XY-routed activation multicast + partial reduction over the core grid
    shapes = die.core_shapes(p.core_side, p.die_units_x, p.die_units_y, p.core_remainder)
    gx, gy = h.core_grid
    per_token = model.top_k + model.shared_experts
    per_layer = model.experts + model.shared_experts
    share = min(1.0, h.die_active_units / per_layer)
    touch = 1.0 - (1.0 - share) ** per_token       # P(a token has an expert on this die)
    tokens_die = B * touch
    k_die = per_token * share / touch if touch > 0 else 0.0
    ports = die.io_port_cores(gx, gy, int(C.die_noc_io_ports))
    loads = die.die_noc_link_loads(shapes, ports, tokens_die, k_die, d, act_b, psum_b, p.reduction_order)
    ctx.extra["die_noc_loads"] = loads
    busiest = die.die_noc_busiest_link_gbps(loads, t)
    m.update({"experts_per_token_on_die": k_die, "die_noc_tokens_per_layer": tokens_die,
              "die_noc_busiest_link_gbps": busiest})
    _level(m, "die_noc", busiest, noc_link)

    # package D2D and node links
    span = package.layer_die_span(sh.tp_degree, per_layer, h.die_active_units)
    bpt = package.cross_die_bytes_per_token(d, model.top_k, act_b, psum_b, p.reduction_order)
    d2d = package.d2d_demand_gbps_per_die(B, bpt, span, p.dies_per_package, t)
    resid = node.node_residual_gbps(B, d, act_b, t)
    merge = node.node_merge_gbps_per_die(B, bpt, span, p.dies_per_package, t)
    m.update({
        "layer_die_span": span,
        "cross_die_bytes_per_token": bpt,
        "d2d_demand_gbps_per_die": d2d,
        "d2d_provision_gbps_per_die": p.d2d_gbps_per_die,
        "d2d_gbps_per_die": d2d,               # the key: the demand (see module doc)
        "cross_die_gbps_per_die": package.cross_die_demand_gbps_per_die(B, bpt, span, t),
        "node_residual_gbps": resid,
        "node_merge_gbps_per_die": merge,
        "node_demand_gbps": resid + merge,
    })
    _level(m, "d2d", d2d, p.d2d_gbps_per_die)
    _level(m, "node", resid + merge, p.node_gbps)

    m["comm_violation"] = max(m[f"{lvl}_load"] for lvl in LEVELS) - 1.0
    m["comm_ok"] = not any(m[f"{lvl}_over"] for lvl in LEVELS)
    return m


@stage("area_power", 50)
def area_power(ctx: Context) -> dict[str, Any]:
    p, h, dies, m0 = ctx.point, ctx.extra["hierarchy"], ctx.extra["dies"], ctx.metrics
    shapes = die.core_shapes(p.core_side, p.die_units_x, p.die_units_y, p.core_remainder)
    gx, gy = h.core_grid
    px, py = network.unit_pitch_mm(p.die_units_x, p.die_units_y)
    parts_mm2 = {
        "reram_area_mm2": area.reram_area_mm2(h.die_capacity_bytes),
        "pe_area_mm2": area.pe_area_mm2(h.die_active_units, p.tile_width),
        "core_mesh_area_mm2": network.core_mesh_area_mm2(shapes, p.core_mesh_link_bits, px, py),
        "die_noc_area_mm2": network.die_noc_area_mm2(gx, gy, p.die_noc_link_bits, p.core_side * px, p.core_side * py),
        "d2d_io_area_mm2": network.d2d_io_area_mm2(p.d2d_gbps_per_die, p.node_gbps),
    }
    # activity: delivered FLOP/s and reading units follow the effective (stretched) MFU /
    # occupancy when the scheduler ran; the study's operating point (MFU 0.38, all arrays
    # streaming) otherwise.
    eff_mfu, eff_occ = _num(m0, "effective_mfu"), _num(m0, "effective_occupancy")
    mfu = C.reference_pe_mfu if eff_mfu is None else eff_mfu
    read_activity = 1.0 if eff_occ is None else eff_occ
    t = m0["t_layer_us"]
    n_cores = len(shapes)
    stream_hops = network.multicast_bit_hops_per_s(n_cores, m0["core_mesh_streams_mean"], m0["multicast_stream_gbps"],
                                                   h.units_per_core - 1)
    unit_hops = h.die_active_units * m0["unit_io_gbps"] * 8e9 * max(0, p.core_side - 1)
    noc_hops = network.link_loads_bit_hops_per_s(list(ctx.extra.get("die_noc_loads", {}).values()), t)
    parts_w = {
        "reram_power_w": power.reram_power_w(h.die_read_gbps, read_activity),
        "pe_power_w": power.pe_power_w(h.die_gflops, mfu),
        "core_mesh_power_w": network.fabric_power_w(parts_mm2["core_mesh_area_mm2"],
                                                    network.core_mesh_bit_hops_per_s(stream_hops, unit_hops)),
        "die_noc_power_w": network.fabric_power_w(parts_mm2["die_noc_area_mm2"], noc_hops),
        "d2d_io_power_w": network.d2d_io_power_w(p.d2d_gbps_per_die, p.node_gbps),
    }
    die_area = sum(parts_mm2.values())
    die_power = sum(parts_w.values())
    budget = area.die_budget_mm2()
    if die_area > budget * (1 + 1e-9):
        ctx.infeasible(f"die area {die_area:.1f} mm2 exceeds the {budget:.0f} mm2 budget "
                       f"(network {parts_mm2['core_mesh_area_mm2'] + parts_mm2['die_noc_area_mm2']:.1f} mm2)")
    net = parts_mm2["core_mesh_area_mm2"] + parts_mm2["die_noc_area_mm2"]
    return {**parts_mm2, **parts_w,
            "network_area_mm2": net,
            "mm2_per_occupancy": None if not eff_occ else net / eff_occ,
            "die_area_mm2": die_area, "die_area_budget_mm2": budget, "die_area_slack_mm2": budget - die_area,
            "die_power_w": die_power, "pool_power_w": power.pool_power_w(dies, die_power),
            "power_activity_mfu": mfu, "power_read_activity": read_activity}


@stage("cost", 60)
def cost_stage(ctx: Context) -> dict[str, Any]:
    p, dies, m0 = ctx.point, ctx.extra["dies"], ctx.metrics
    die_usd = cost.die_cost_usd(C.die_width_mm, C.die_height_mm)
    pool_usd = cost.pool_cost_usd(dies, die_usd, p.dies_per_package)
    t_tok = m0["ffn_latency_us_per_token"]
    out: dict[str, Any] = {
        "dies_per_wafer": cost.gross_dies_per_wafer(C.die_width_mm, C.die_height_mm),
        "die_yield": cost.murphy_yield(C.die_width_mm * C.die_height_mm, C.defect_density_per_cm2),
        "die_cost_usd": die_usd,
        "pool_cost_usd": pool_usd,
        "pool_energy_uj_per_token": m0["pool_power_w"] * t_tok,
        "usd_per_mtok": cost.usd_per_mtok(pool_usd, m0["pool_power_w"], t_tok),
    }
    for key in gpus():
        n, t_g = _num(m0, f"{key}_dies_iso_compute"), _num(m0, f"{key}_us_per_token")
        price = getattr(C, f"gpu_price_usd_{key}", None)
        if n is None or t_g is None or price is None:
            out[f"{key}_usd_per_mtok"] = None
            continue
        g = get_gpu(key)
        out[f"{key}_pool_cost_usd"] = n * price
        out[f"{key}_usd_per_mtok"] = cost.usd_per_mtok(n * price, n * g.board_power_w, t_g)
    return out
