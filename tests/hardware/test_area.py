"""Network silicon (DSENT-style), die area closure, die / pool power and cost (issue 4)."""
from __future__ import annotations

import pytest

from dse.constants import C
from dse.data import load_toml
from dse.hardware import cost, die, network
from dse.model.evaluate import evaluate
from dse.reproduce.registry import judge
from dse.spec import DesignPoint

REF = load_toml("reference", "rexpert-35b.toml")


def check(section: str, key: str, ours: float) -> None:
    e = REF[section][key]
    _, status = judge(float(e["value"]), float(ours), e["cls"])
    assert status in ("pass", "rounding"), f"{section}.{key}: published {e['value']}, ours {ours} ({status})"


def metrics(**knobs):
    return evaluate(DesignPoint.from_dict({"trace": "catalog", **knobs})).metrics


# ---- routers and links ------------------------------------------------------------------------
def test_router_scaling_dsent_style():
    r = network.router_area_mm2
    # buffers linear, crossbar quadratic in width and radix: doubling either more than doubles
    assert 2 * r(5, 512) < r(5, 1024) < 4 * r(5, 512)
    assert 2 * r(5, 512) < r(10, 512) < 4 * r(10, 512)
    hand = C.noc_router_overhead * (5 * C.noc_buffer_flits * 512 * C.noc_ff_um2 + (5 * 512 * C.noc_wire_pitch_um) ** 2) * 1e-6
    assert r(5, 512) == pytest.approx(hand)
    assert network.link_area_mm2(512, 2.0) == pytest.approx(2 * network.link_area_mm2(512, 1.0))


def test_mesh_counts_and_floorplan():
    assert network.mesh_links(4, 4) == (12, 12)
    assert network.mesh_links(1, 1) == (0, 0)
    assert len(die.core_shapes(4, 16, 20, "partial")) == 20
    shapes6 = die.core_shapes(6, 16, 20, "partial")
    assert len(shapes6) == 12 and sum(w * h for *_, w, h in shapes6) == 320
    assert len(die.core_shapes(6, 16, 20, "idle")) == 6
    # one core on a 1 x 1 grid: one router, no links
    assert network.die_noc_area_mm2(1, 1, 512, 5.0, 4.0) == pytest.approx(network.router_area_mm2(5, 512))


def test_table_xii_network_silicon():
    m = metrics()
    check("area_power", "core_mesh_area_mm2", m["core_mesh_area_mm2"])      # calibrated
    check("area_power", "core_mesh_power_w", m["core_mesh_power_w"])        # calibrated
    check("area_power", "die_noc_area_mm2", m["die_noc_area_mm2"])          # prediction
    check("area_power", "die_power_w", m["die_power_w"])
    assert m["network_area_mm2"] == pytest.approx(m["core_mesh_area_mm2"] + m["die_noc_area_mm2"])
    assert m["d2d_io_area_mm2"] == pytest.approx((96 + 34) / C.ucie_gbps_per_mm2)


def test_network_area_scales_with_side_and_width():
    by_side = {s: metrics(core_side=s) for s in (2, 4, 6, 8)}
    # Die-NoC routers fall as cores merge (80 / 20 / 12 / 6 cores)
    noc = [by_side[s]["die_noc_area_mm2"] for s in (2, 4, 6, 8)]
    assert noc == sorted(noc, reverse=True)
    # core-mesh links rise with side (1 - 1/side of the unit pitches are inside cores)
    mesh = [by_side[s]["core_mesh_area_mm2"] for s in (2, 4, 6, 8)]
    assert mesh == sorted(mesh)
    assert metrics(core_mesh_link_bits=256)["core_mesh_area_mm2"] < by_side[4]["core_mesh_area_mm2"]


def test_over_budget_is_infeasible_with_reason():
    r = evaluate(DesignPoint.from_dict({"trace": "catalog", "core_mesh_link_bits": 1024}))
    assert not r.feasible
    assert "exceeds the 400 mm2 budget" in r.reason and r.metrics["die_area_mm2"] > 400
    assert r.metrics["usd_per_mtok"] is None       # the cost stage needs a feasible design
    r64 = evaluate(DesignPoint.from_dict({"trace": "catalog", "array_depth": "64K"}))
    assert not r64.feasible and "die area" in r64.reason     # twice the ReRAM does not fit 20 x 20 mm


def test_power_follows_activity():
    m = metrics()
    check("area_power", "reram_power_w", m["reram_power_w"])
    check("area_power", "pe_power_w", m["pe_power_w"])
    assert m["power_activity_mfu"] == C.reference_pe_mfu and m["power_read_activity"] == 1.0
    # more multicast traffic (narrower cores -> none; wider -> more streams) costs core-mesh power
    assert metrics(core_side=8)["core_mesh_power_w"] > m["core_mesh_power_w"]
    # D2D / IO power follows the provisioned UCIe bandwidth
    assert metrics(d2d_gbps_per_die=192)["d2d_io_power_w"] == pytest.approx(
        m["d2d_io_power_w"] * (192 + 34) / (96 + 34))
    assert m["pool_power_w"] == pytest.approx(m["dies"] * m["die_power_w"])


# ---- cost -------------------------------------------------------------------------------------
def test_dies_per_wafer_and_yield_hand_values():
    # d = 300 - 2 x 3 mm, A = 20.1^2 mm2: pi d^2 / 4A - pi d / sqrt(2A) = 135.5
    assert cost.gross_dies_per_wafer(20, 20) == 135
    assert cost.murphy_yield(400, 0.1) == pytest.approx(0.679305, rel=1e-5)
    assert cost.murphy_yield(400, 0.0) == 1.0
    assert cost.die_cost_usd(20, 20) == pytest.approx(C.wafer_price_usd / (135 * 0.6793054502871436))
    assert cost.gross_dies_per_wafer(10, 10) > 4 * cost.gross_dies_per_wafer(20, 20) - 1


def test_cost_per_million_tokens():
    # 1 W forever, 1 us/token: energy = 1e-6 J/token; capex 0
    assert cost.usd_per_mtok(0, 1.0, 1.0) == pytest.approx(1e6 * 1e-6 / 3.6e6 * C.electricity_usd_per_kwh)
    years = C.amortisation_years * cost.SECONDS_PER_YEAR
    assert cost.usd_per_mtok(1e6, 0, 1.0) == pytest.approx(1e6 * 1e6 / (years * 1e6))
    m = metrics()
    assert m["pool_cost_usd"] == pytest.approx(25 * m["die_cost_usd"] + 7 * C.package_cost_usd)
    assert m["usd_per_mtok"] == pytest.approx(cost.usd_per_mtok(m["pool_cost_usd"], m["pool_power_w"],
                                                                m["ffn_latency_us_per_token"]))
    assert m["h20_usd_per_mtok"] == pytest.approx(cost.usd_per_mtok(
        m["h20_dies_iso_compute"] * C.gpu_price_usd_h20, m["h20_pool_power_w_iso_compute"], m["h20_us_per_token"]))
