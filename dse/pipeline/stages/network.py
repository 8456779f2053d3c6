"""Stage ``network``: per-level communication demand against provision, the round stretch and
the effective MFU.

Wiring only; the physics lives in the level modules:

* unit ports ........ `dse.hardware.unit`     (unit_io_gbps)
* core mesh ......... `dse.hardware.core`     (multicast streams, provision, round stretch)
* Die NoC ........... `dse.hardware.die`      (XY-routed busiest link over the core grid)
* package D2D ....... `dse.hardware.package`  (TP / EP merge across dies, reduction order)
* node links ........ `dse.hardware.node`     (inter-layer residual, cross-package merge)

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

Knobs and metrics share no name: the knob ``d2d_gbps_per_die`` is the D2D provision (echoed as
``d2d_provision_gbps_per_die``), the metric ``d2d_demand_gbps_per_die`` the demand.
"""
from __future__ import annotations

from typing import Any

from dse.constants import C
from dse.hardware import core, die, node, package, unit
from dse.hardware.network import link_load, over_provision
from dse.pipeline.context import Context

LEVELS = ("unit_io", "core_mesh", "die_noc", "d2d", "node")

GUARANTEED_KEYS = (
    "unit_io_gbps", "core_mesh_p99_gbps", "die_noc_busiest_link_gbps", "d2d_demand_gbps_per_die",
    "node_residual_gbps", "round_stretch", "effective_mfu", "comm_violation",
    *(f"{lvl}_headroom_gbps" for lvl in LEVELS), *(f"{lvl}_load" for lvl in LEVELS),
    *(f"{lvl}_over" for lvl in LEVELS),
)


def run(ctx: Context) -> dict[str, Any]:
    p = ctx.point
    core_link = core.link_gbps(p.core_mesh_link_bits, p.noc_ghz)
    m: dict[str, Any] = {}
    m.update(unit_ports(ctx, core_link))
    m.update(core_mesh(ctx, core_link))
    m.update(die_noc(ctx))
    m.update(package_and_node(ctx))
    m["comm_violation"] = max(m[f"{lvl}_load"] for lvl in LEVELS) - 1.0
    m["comm_ok"] = not any(m[f"{lvl}_over"] for lvl in LEVELS)
    return m


def level(lvl: str, demand: float, provision: float) -> dict[str, Any]:
    """Provision, headroom, load and the over-provision flag of one level."""
    return {f"{lvl}_provision_gbps": provision,
            f"{lvl}_headroom_gbps": provision - demand,
            f"{lvl}_load": link_load(demand, provision),
            f"{lvl}_over": over_provision(demand, provision)}


def unit_ports(ctx: Context, core_link_gbps: float) -> dict[str, Any]:
    """The unit's local port on its core-mesh router."""
    p, sh, t = ctx.point, ctx.sharding, ctx.metrics["t_layer_us"]
    job_bytes = unit.unit_io_bytes_per_job(sh.chunks_per_unit, ctx.model.hidden, p.tile_width,
                                           C.act_bytes_per_element, C.psum_bytes_per_element)
    u_io = unit.unit_io_gbps(job_bytes, t)
    return {"unit_io_gbps": u_io, **level("unit_io", u_io, core_link_gbps)}


def streams(ctx: Context, units_in_core: int) -> tuple[float, float, float, str]:
    """Mean, p99 and peak concurrent multicast streams per core, and where they come from."""
    got = [ctx.number(f"multicast_streams_{q}") for q in ("mean", "p99", "peak")]
    if all(v is not None for v in got):
        return got[0], got[1], got[2], "trace"
    return (core.streams_closed_form(units_in_core, C.core_mesh_mean_streams_per_unit, whole=False),
            core.streams_closed_form(units_in_core, C.core_mesh_p99_streams_per_unit),
            core.streams_closed_form(units_in_core, C.core_mesh_peak_streams_per_unit), "closed_form")


def core_mesh(ctx: Context, core_link_gbps: float) -> dict[str, Any]:
    """Multicast read-outs on the core mesh (sized at p99 of concurrent streams), the round
    stretch they cause and the effective MFU / occupancy."""
    p, h = ctx.point, ctx.hierarchy
    stream = h.unit_read_gbps
    s_mean, s_p99, s_peak, src = streams(ctx, h.units_per_core)
    prov = core.core_mesh_provision_gbps(p.core_side, core_link_gbps)
    peak = core.multicast_demand_gbps(s_peak, stream)
    m: dict[str, Any] = {
        "core_mesh_streams_source": src,
        "multicast_stream_gbps": stream,
        "core_mesh_streams_mean": s_mean, "core_mesh_streams_p99": s_p99, "core_mesh_streams_peak": s_peak,
        "core_mesh_mean_gbps": core.multicast_demand_gbps(s_mean, stream),
        "core_mesh_p99_gbps": core.multicast_demand_gbps(s_p99, stream),
        "core_mesh_peak_gbps": peak,
        "core_mesh_peak_over_provision": over_provision(peak, prov),
        "unicast_source_port_factor": core.unicast_source_port_factor(h.units_per_core),
        "unicast_traffic_factor": core.unicast_traffic_factor(p.core_side),
    }
    m.update(level("core_mesh", m["core_mesh_p99_gbps"], prov))
    hop = core.stretch_hop_factor(p.core_side, C.stretch_per_hop)
    cont = core.stretch_contention_factor(p.core_side, s_p99, stream, core_link_gbps)
    stretch = hop * cont
    actual, occ = ctx.number("actual_mfu"), ctx.number("occupancy")
    m.update({
        "multicast_tree_depth_hops": core.multicast_tree_depth_hops(p.core_side),
        "stretch_hop_factor": hop, "stretch_contention_factor": cont, "round_stretch": stretch,
        "effective_mfu": None if actual is None else actual / stretch,
        "effective_occupancy": None if occ is None else occ / stretch,
    })
    return m


def die_noc(ctx: Context) -> dict[str, Any]:
    """XY-routed activation multicast and partial reduction over the Die-NoC core grid."""
    p, model, h = ctx.point, ctx.model, ctx.hierarchy
    shapes = die.core_shapes(p.core_side, p.die_units_x, p.die_units_y, p.core_remainder)
    gx, gy = h.core_grid
    per_token, per_layer = model.experts_per_token, model.experts_per_layer
    touch = die.p_token_on_die(per_token, per_layer, h.die_active_units)
    tokens_die = die.tokens_on_die(p.run_batch, touch)
    k_die = die.experts_per_token_on_die_given_touch(per_token, per_layer, h.die_active_units)
    ports = die.io_port_cores(gx, gy, int(C.die_noc_io_ports))
    ctx.die_noc_loads = die.die_noc_link_loads(shapes, ports, tokens_die, k_die, model.hidden,
                                               C.act_bytes_per_element, C.psum_bytes_per_element,
                                               p.reduction_order)
    busiest = die.die_noc_busiest_link_gbps(ctx.die_noc_loads, ctx.metrics["t_layer_us"])
    noc_link = core.link_gbps(p.die_noc_link_bits, p.noc_ghz)
    return {"experts_per_token_on_die": k_die, "die_noc_tokens_per_layer": tokens_die,
            "die_noc_busiest_link_gbps": busiest, **level("die_noc", busiest, noc_link)}


def package_and_node(ctx: Context) -> dict[str, Any]:
    """Die-to-die traffic inside a package and the node links between packages."""
    p, model, h, sh, t = ctx.point, ctx.model, ctx.hierarchy, ctx.sharding, ctx.metrics["t_layer_us"]
    B, d = p.run_batch, model.hidden
    span = package.layer_die_span(sh.tp_degree, model.experts_per_layer, h.die_active_units)
    cross = package.merge_crossings(sh.tp_degree, span // max(1, sh.tp_degree), p.dies_per_package, model.top_k,
                                    p.reduction_order)
    d2d_bpt, node_bpt = cross.bytes_per_token(d, C.act_bytes_per_element, C.psum_bytes_per_element)
    d2d = package.crossing_gbps_per_die(B, d2d_bpt, span, t)
    resid = node.node_residual_gbps(B, d, C.act_bytes_per_element, t)
    merge = package.crossing_gbps_per_die(B, node_bpt, span, t)
    return {
        "layer_die_span": span,
        "cross_die_bytes_per_token": d2d_bpt + node_bpt,
        "d2d_demand_gbps_per_die": d2d,
        "d2d_provision_gbps_per_die": p.d2d_gbps_per_die,
        "cross_die_gbps_per_die": d2d + merge,
        "node_residual_gbps": resid,
        "node_merge_gbps_per_die": merge,
        "node_demand_gbps": resid + merge,
        **level("d2d", d2d, p.d2d_gbps_per_die),
        **level("node", resid + merge, p.node_gbps),
    }
