"""Die and pool power follow the activity of the design."""
from __future__ import annotations

import pytest

from dse.constants import C
from tests.reference import check, metrics


def test_power_follows_activity():
    m = metrics()
    check("area_power", "reram_power_w", m["reram_power_w"])
    check("area_power", "pe_power_w", m["pe_power_w"])
    assert m["power_activity_mfu"] == C.reference_pe_mfu and m["power_read_activity"] == 1.0
    # more multicast traffic (narrower cores -> none; wider -> more streams) costs core-mesh power
    assert metrics(core_side=8)["core_mesh_power_w"] > m["core_mesh_power_w"]
    # D2D / IO power follows the provisioned UCIe bandwidth
    assert metrics(d2d_gbps_per_die=192)["d2d_io_power_w"] - m["d2d_io_power_w"] == pytest.approx(
        96 * 8e9 * C.ucie_pj_per_bit * 1e-12)             # 96 GB/s more of UCIe lanes
    assert metrics(node_gbps=68)["d2d_io_power_w"] - m["d2d_io_power_w"] == pytest.approx(
        34 * 8e9 * C.serdes_pj_per_bit * 1e-12)           # 34 GB/s more of SerDes
    assert m["pool_power_w"] == pytest.approx(m["dies"] * m["die_power_w"])
