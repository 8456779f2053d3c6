"""Vectorised network (40), area / power (50) and cost (60) stages (closed-form streams).

Mirrors `dse.pipeline.stages.{network,area_power,cost}` with the same physics calls; see
`dse.vector.structure` for how scalar functions are reused. Restatements of a ``max`` are marked
``# = <scalar function or stage>`` and covered by the equality test (a function whose only
branch is a ``max(1, key)`` is restated with ``np.maximum`` rather than called once per group).
"""
from __future__ import annotations

import numpy as np

from dse.catalog import get_gpu, gpus
from dse.constants import C
from dse.hardware import area, clock, core, cost, die, network, node, package, power, unit
from dse.units import BITS_PER_GB, NS_PER_US
from dse.vector import structure
from dse.vector.columns import Columns, categories
from dse.vector.groups import few_values, folded, is_constant, lookup, memo, per_key
from dse.vector.structure import Models, geometry_keys, pool_keys, pool_of
from dse.vector.table import Table

LEVELS = ("unit_io", "core_mesh", "die_noc", "d2d", "node")


def _level(t: Table, rows: np.ndarray, lvl: str, demand: np.ndarray, provision: np.ndarray, x: dict) -> None:
    t.put(f"{lvl}_provision_gbps", np.asarray(provision, dtype=float), rows)
    t.put(f"{lvl}_headroom_gbps", provision - demand, rows)
    load = demand / np.maximum(provision, network.MIN_PROVISION_GBPS)   # = network.link_load
    over = network.over_provision(demand, provision)
    t.put(f"{lvl}_load", load, rows)
    t.put(f"{lvl}_over", over, rows)
    x.setdefault("loads", []).append(load)
    x.setdefault("overs", []).append(over)


@memo
def _streams(units_in_core: int) -> tuple[float, float, float]:
    return (core.streams_closed_form(units_in_core, C.core_mesh_mean_streams_per_unit, whole=False),
            core.streams_closed_form(units_in_core, C.core_mesh_p99_streams_per_unit),
            core.streams_closed_form(units_in_core, C.core_mesh_peak_streams_per_unit))


def _side(side: int) -> tuple:
    """A core side's closed-form stream counts (``_streams``) and mesh factors."""
    return (*_streams(int(core.units_per_core(side))), *_mesh_factors(side, C.stretch_per_hop))


@memo
def _mesh_factors(side: int, stretch_per_hop: float) -> tuple:
    return (core.unicast_source_port_factor(core.units_per_core(side)), core.unicast_traffic_factor(side),
            core.stretch_hop_factor(side, stretch_per_hop), core.multicast_tree_depth_hops(side))


@memo
def die_noc_per_layer(side: int, ux: int, uy: int, remainder: str, model: str, batch: int,
                      order: str) -> tuple[float, float, float, float]:
    """The network stage's Die-NoC set-up for one floorplan, model, batch and reduction order:
    (experts per token on the die, tokens per layer, busiest link bytes, all links' bytes)."""
    from dse.catalog import get_model
    m = get_model(model)
    shapes = die.core_shapes(side, ux, uy, remainder)
    gx, gy = die.core_grid(side, ux, uy, remainder)
    per_token, per_layer = m.experts_per_token, m.experts_per_layer
    units = die.active_units(side, ux, uy, remainder)
    touch = die.p_token_on_die(per_token, per_layer, units)
    tokens_die = die.tokens_on_die(batch, touch)
    k_die = die.experts_per_token_on_die_given_touch(per_token, per_layer, units)
    ports = die.io_port_cores(gx, gy, int(C.die_noc_io_ports))
    loads = die.die_noc_link_loads(shapes, ports, tokens_die, k_die, m.hidden, C.act_bytes_per_element,
                                   C.psum_bytes_per_element, order)
    return k_die, tokens_die, max(loads.values(), default=0.0), sum(loads.values())


def _core_mesh(c: Columns, M: Models, t: Table, x: dict, ran: np.ndarray, core_link: np.ndarray) -> None:
    """Core mesh: multicast read-outs at the closed-form stream counts; round stretch."""
    side = c["core_side"]
    put = lambda name, v, kind=None: t.put(name, v, ran, kind)          # noqa: E731
    stream = x["u_bw"]
    s_mean, s_p99, s_peak, uni_port, uni_traffic, hop, depth = per_key(_side, side, cache=M.kept("side"))
    prov = core.core_mesh_provision_gbps(side, core_link)
    peak = core.multicast_demand_gbps(s_peak, stream)
    put("core_mesh_streams_source", np.array("closed_form", dtype=object), "str")
    put("multicast_stream_gbps", stream)
    put("core_mesh_streams_mean", s_mean)
    put("core_mesh_streams_p99", s_p99)
    put("core_mesh_streams_peak", s_peak)
    put("core_mesh_mean_gbps", core.multicast_demand_gbps(s_mean, stream))
    put("core_mesh_p99_gbps", core.multicast_demand_gbps(s_p99, stream))
    put("core_mesh_peak_gbps", peak)
    put("core_mesh_peak_over_provision", network.over_provision(peak, prov))
    put("unicast_source_port_factor", uni_port)
    put("unicast_traffic_factor", uni_traffic)
    _level(t, ran, "core_mesh", core.multicast_demand_gbps(s_p99, stream), prov, x)

    # = core.stretch_contention_factor (a max of an array)
    cont = np.maximum(1.0, core.multicast_demand_gbps(s_p99, stream) / core.core_mesh_provision_gbps(side, core_link))
    put("multicast_tree_depth_hops", depth)
    put("stretch_hop_factor", hop)
    put("stretch_contention_factor", cont)
    put("round_stretch", hop * cont)
    t.put_none("effective_mfu", ran)
    t.put_none("effective_occupancy", ran)

    x["s_mean"] = s_mean


def network_stage(c: Columns, M: Models, t: Table, x: dict, ran: np.ndarray) -> None:
    """Stage 40: per-level demand against provision, round stretch."""
    B, tl, mi = c["batch"], x["t_layer"], x["mi"]
    d = lookup(M.hidden, mi)
    act_b, psum_b = C.act_bytes_per_element, C.psum_bytes_per_element
    core_link = core.link_gbps(c["core_mesh_link_bits"], c["noc_ghz"])
    noc_link = core.link_gbps(c["die_noc_link_bits"], c["noc_ghz"])
    put = lambda name, v, kind=None: t.put(name, v, ran, kind)          # noqa: E731
    u_io = unit.unit_io_gbps(unit.unit_io_bytes_per_job(x["cpu"], d, c["tile_width"], act_b, psum_b), tl)
    put("unit_io_gbps", u_io)
    _level(t, ran, "unit_io", u_io, core_link, x)

    _core_mesh(c, M, t, x, ran, core_link)
    rem, order = categories("core_remainder"), categories("reduction_order")
    k_die, tok_die, busiest_b, all_b = per_key(
        lambda s, ux, uy, r, m, b, o: die_noc_per_layer(s, ux, uy, rem[r], M.names[m], b, order[o]),
        *geometry_keys(c), mi, B, c["reduction_order"], cache=M.kept("die_noc"))
    busiest = die.die_noc_busiest_link_gbps({"busiest": busiest_b}, tl)
    put("experts_per_token_on_die", k_die)
    put("die_noc_tokens_per_layer", tok_die)
    put("die_noc_busiest_link_gbps", busiest)
    _level(t, ran, "die_noc", busiest, noc_link, x)
    x["die_noc_bytes"] = all_b

    span, dpp = x["span"], c["dies_per_package"]
    pool, shard = pool_of(M, rem), structure.shard_of(M)

    def crossings(m, dep, s, ux, uy, r, p, o):
        tp, sp = int(shard(m, dep)[3]), pool(m, dep, s, ux, uy, r)[2]
        return package.merge_crossings(tp, sp // max(1, tp), int(p), int(M.top_k[m]),
                                       order[o]).bytes_per_token(int(M.hidden[m]), act_b, psum_b)
    d2d_bpt, node_bpt = per_key(crossings, *pool_keys(c), dpp, c["reduction_order"], cache=M.kept("crossings"))
    per_die, per_layer_ns = np.maximum(1, span), tl * NS_PER_US       # = package.crossing_gbps_per_die
    d2d = B * d2d_bpt / per_die / per_layer_ns
    resid = node.node_residual_gbps(B, d, act_b, tl)
    merge = B * node_bpt / per_die / per_layer_ns                     # = package.crossing_gbps_per_die
    put("layer_die_span", span)
    put("cross_die_bytes_per_token", d2d_bpt + node_bpt)
    put("d2d_demand_gbps_per_die", d2d)
    put("d2d_provision_gbps_per_die", c["d2d_gbps_per_die"])
    put("cross_die_gbps_per_die", d2d + merge)
    put("node_residual_gbps", resid)
    put("node_merge_gbps_per_die", merge)
    put("node_demand_gbps", resid + merge)
    _level(t, ran, "d2d", d2d, c["d2d_gbps_per_die"], x)
    _level(t, ran, "node", resid + merge, c["node_gbps"], x)
    put("comm_violation", np.maximum.reduce(x["loads"]) - 1.0)         # = stages.network: max over levels
    put("comm_ok", ~np.logical_or.reduce(x["overs"]))
    x["u_io"] = u_io


@memo
def _core_mesh_mm2(side: int, ux: int, uy: int, remainder: str, bits: int, ghz: float) -> float:
    px, py = network.unit_pitch_mm(ux, uy)
    return network.core_mesh_area_mm2(die.core_shapes(side, ux, uy, remainder), bits, px, py, ghz)


@memo
def _die_noc_mm2(side: int, ux: int, uy: int, remainder: str, bits: int, ghz: float) -> float:
    gx, gy = die.core_grid(side, ux, uy, remainder)
    px, py = network.unit_pitch_mm(ux, uy)
    return network.die_noc_area_mm2(gx, gy, bits, side * px, side * py, ghz)


def delivered_stage(t: Table, ran: np.ndarray) -> None:
    """Stage ``delivered``: schedule-aware rates need the scheduler's actual MFU: None here."""
    for k in ("delivered_pflops", "ffn_us_per_token_delivered", "delivered_tokens_per_s"):
        t.put_none(k, ran)


def clocks(c: Columns) -> tuple:
    """The macro, PE and network clock domains: one ``Clock`` per clock column, its supply solved
    once for every factor that prices it: once in all for a column holding one value, once per
    distinct clock for a column of a few (``clock.Spread``)."""
    return (_clock(c["macro_mhz"], C.ref_macro_mhz), _clock(c["pe_mhz"], C.ref_pe_mhz),
            _clock(c["noc_ghz"], C.ref_noc_ghz))


def _clock(col: np.ndarray, ref: float):
    few = None if is_constant(col) else few_values(col)
    if few is not None:
        return clock.Spread(clock.Clock(few[0], ref), few[1])
    return clock.Clock(folded(col), ref)


def area_power(c: Columns, M: Models, t: Table, x: dict, ran: np.ndarray) -> np.ndarray:
    """Stage 50: die area and power; returns the rows still feasible (die within budget)."""
    side, w = c["core_side"], c["tile_width"]
    rem = categories("core_remainder")
    cm_bits, noc_bits = c["core_mesh_link_bits"], c["die_noc_link_bits"]
    ghz = c["noc_ghz"]
    mac, pe, noc = clocks(c)
    core_mesh = per_key(lambda s, a, b, r, bits, f: _core_mesh_mm2(s, a, b, rem[r], bits, f), *geometry_keys(c),
                        cm_bits, ghz, cache=M.kept("core_mesh_mm2"))
    die_noc = per_key(lambda s, a, b, r, bits, f: _die_noc_mm2(s, a, b, rem[r], bits, f), *geometry_keys(c),
                      noc_bits, ghz, cache=M.kept("die_noc_mm2"))
    queue = np.where(c.is_("fetch", "load_aware"), c["fetch_queue_depth"], 0)
    parts_mm2 = {
        "reram_area_mm2": area.reram_area_mm2(x["die_cap"]),
        "read_periphery_area_mm2": area.read_periphery_mm2(x["units"], c["n_macros"], c["macro_width_bits"],
                                                           mac),
        "pe_area_mm2": area.pe_area_mm2(x["units"], w, pe),
        "fetch_buffer_area_mm2": area.fetch_buffer_mm2(x["n_cores"], queue, w, lookup(M.hidden, c["model"])),
        "group_share_area_mm2": area.group_share_mm2(x["n_cores"], c["pe_groups_per_core"], x["upc"],
                                                     c["n_macros"] * c["macro_width_bits"]),
        "core_mesh_area_mm2": core_mesh,
        "die_noc_area_mm2": die_noc,
        "d2d_io_area_mm2": network.d2d_io_area_mm2(c["d2d_gbps_per_die"], c["node_gbps"]),
    }
    mfu, read_activity = C.reference_pe_mfu, power.FULL_READ_ACTIVITY
    tl = x["t_layer"]
    stream_hops = network.multicast_bit_hops_per_s(x["n_cores"], x["s_mean"], x["u_bw"], x["upc"] - 1)
    unit_hops = x["units"] * x["u_io"] * BITS_PER_GB * np.maximum(0, side - 1)   # = network.unit_io_bit_hops_per_s
    noc_hops = network.link_loads_bit_hops_per_s([x["die_noc_bytes"]], tl)
    parts_w = {
        "reram_power_w": power.reram_power_w(x["die_bw"], read_activity, mac),
        "pe_power_w": power.pe_power_w(x["die_fl"], mfu, pe),
        "core_mesh_power_w": network.fabric_power_w(core_mesh, network.core_mesh_bit_hops_per_s(stream_hops, unit_hops),
                                                    noc),
        "die_noc_power_w": network.fabric_power_w(die_noc, noc_hops, noc),
        "d2d_io_power_w": network.d2d_io_power_w(c["d2d_gbps_per_die"], c["node_gbps"]),
    }
    die_area = sum(parts_mm2.values())
    die_power = sum(parts_w.values())
    budget = area.die_budget_mm2()
    net = core_mesh + die_noc
    over = ran & area.over_budget(die_area, budget)
    if over.any():
        t.infeasible(over, lambda i: f"die area {die_area[i]:.1f} mm2 exceeds the {budget:.0f} mm2 budget "
                                     f"(network {core_mesh[i] + die_noc[i]:.1f} mm2)")
    for k, v in {**parts_mm2, **parts_w}.items():
        t.put(k, np.asarray(v, dtype=float), ran)
    t.put("network_area_mm2", net, ran)
    t.put_none("mm2_per_occupancy", ran)
    t.put("die_area_mm2", die_area, ran)
    t.put("die_area_budget_mm2", float(budget), ran)
    t.put("die_area_slack_mm2", budget - die_area, ran)
    t.put("die_power_w", die_power, ran)
    pool_w = power.pool_power_w(x["dies"], die_power)
    t.put("pool_power_w", pool_w, ran)
    t.put("power_activity_mfu", float(mfu), ran)
    t.put("power_read_activity", float(read_activity), ran)
    x["pool_w"] = pool_w
    return ran & ~over


def cost_stage(c: Columns, M: Models, t: Table, x: dict, rows: np.ndarray) -> None:
    """Stage 60: die / pool cost, dollars per million tokens (ours and the GPU baselines')."""
    die_usd = cost.die_cost_usd(C.die_width_mm, C.die_height_mm)
    pool_usd = per_key(lambda n, p, q: cost.pool_cost_usd(n, die_usd, p, q, C.die_width_mm, C.die_height_mm),
                       x["dies"], c["dies_per_package"], c["packages_per_node"], cache=M.kept("pool_cost"))
    t_tok, pool_w = x["t_ffn"], x["pool_w"]
    t.put("dies_per_wafer", cost.gross_dies_per_wafer(C.die_width_mm, C.die_height_mm), rows)
    t.put("die_yield", cost.murphy_yield(C.die_width_mm * C.die_height_mm, C.defect_density_per_cm2), rows)
    t.put("die_cost_usd", float(die_usd), rows)
    t.put("pool_cost_usd", np.asarray(pool_usd, dtype=float), rows)
    t.put("pool_energy_uj_per_token", cost.pool_energy_uj_per_token(pool_w, t_tok), rows)
    t.put("usd_per_mtok", cost.usd_per_mtok(pool_usd, pool_w, t_tok), rows)
    t.put_none("usd_per_mtok_delivered", rows)          # schedule-aware: needs a scheduled trace
    for key in gpus():
        n, t_g = x["gpu"][key]
        price = getattr(C, f"gpu_price_usd_{key}", None)
        if price is None:
            t.put_none(f"{key}_usd_per_mtok", rows)
            continue
        g = get_gpu(key)
        g_usd = cost.gpu_pool_cost_usd(n, price)
        t.put(f"{key}_pool_cost_usd", g_usd, rows)
        t.put(f"{key}_usd_per_mtok", cost.usd_per_mtok(g_usd, n * g.board_power_w, t_g), rows)
