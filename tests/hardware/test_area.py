"""Network silicon (DSENT-style router and link area), mesh floorplan and the die area closure."""
from __future__ import annotations

import pytest

from dse.constants import C
from dse.hardware import die, network
from dse.pipeline.evaluate import evaluate
from dse.spec import DesignPoint
from tests.reference import check, metrics


# ---- routers and links ------------------------------------------------------------------------
def test_router_scaling_dsent_style():
    r = network.router_area_mm2
    # buffers linear, crossbar quadratic in width and radix: doubling either more than doubles
    assert 2 * r(5, 512) < r(5, 1024) < 4 * r(5, 512)
    assert 2 * r(5, 512) < r(10, 512) < 4 * r(10, 512)
    hand = (C.noc_router_overhead * (5 * C.noc_buffer_flits * 512 * C.noc_ff_um2 + (5 * 512 * C.noc_wire_pitch_um) ** 2)
            * 1e-6)
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
    assert m["d2d_io_area_mm2"] == pytest.approx(96 / C.ucie_gbps_per_mm2 + 34 / C.serdes_gbps_per_mm2)


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


def test_pe_groups_pay_for_their_read_out_sharing_crossbars():
    """One-unit groups (the published design) share nothing; a group of u units needs a u x u
    crossbar of the frame's width, (u x frame x pitch)^2 (DSENT's matrix crossbar)."""
    import numpy as np

    from dse.hardware import area
    assert area.group_share_mm2(20, 16, 16, 2048) == 0.0
    one_group = (16 * 2048 * C.noc_wire_pitch_um) ** 2 * 1e-6
    assert area.group_share_mm2(20, 1, 16, 2048) == pytest.approx(20 * one_group)
    assert area.group_share_mm2(20, 8, 16, 2048) == pytest.approx(20 * 8 * (2 * 2048 * C.noc_wire_pitch_um) ** 2 * 1e-6)
    arr = area.group_share_mm2(np.array([20, 20]), np.array([16, 1]), np.array([16, 16]), np.array([2048, 2048]))
    assert arr.tolist() == pytest.approx([0.0, 20 * one_group])
    assert metrics(pe_groups_per_core=1)["group_share_area_mm2"] == pytest.approx(20 * one_group)
    assert metrics()["group_share_area_mm2"] == 0.0
