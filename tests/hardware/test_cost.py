"""Dies per wafer, yield and cost per million tokens."""
from __future__ import annotations

import pytest

from dse.constants import C
from dse.hardware import cost
from tests.reference import metrics


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
    # 25 dies in 7 published 4-die packages on one 8-slot node
    assert m["pool_cost_usd"] == pytest.approx(25 * m["die_cost_usd"] + 7 * C.package_cost_usd
                                               + C.node_fixed_usd + 8 * C.node_slot_usd)
    assert m["usd_per_mtok"] == pytest.approx(cost.usd_per_mtok(m["pool_cost_usd"], m["pool_power_w"],
                                                                m["ffn_latency_us_per_token"]))
    n_h20 = m["h20_dies_iso_compute"]        # 10.81 GPUs: two 8-GPU servers
    assert m["h20_usd_per_mtok"] == pytest.approx(cost.usd_per_mtok(
        n_h20 * C.gpu_price_usd_h20 + 2 * C.node_fixed_usd, m["h20_pool_power_w_iso_compute"], m["h20_us_per_token"]))


def test_package_cost_is_published_at_four_dies_and_has_an_interior_optimum():
    die = cost.die_cost_usd(20, 20)
    per_die = {n: cost.package_cost_usd(n, die, 20, 20) / n for n in (1, 2, 4, 8)}
    assert per_die[4] * 4 == pytest.approx(C.package_cost_usd)
    # fixed parts amortise over more dies; the interposer's yield falls with its area
    assert per_die[1] > per_die[2] > per_die[4] < per_die[8]
    assert cost.interposer_cost_usd(8, 20, 20) > 4 * cost.interposer_cost_usd(4, 20, 20)
    # without an interposer loss or a bonding loss, the package is the fixed part plus nothing
    with C.overridden({"interposer_wafer_price_usd": 0.0, "bond_yield_per_die": 1.0}):
        assert cost.package_cost_usd(8, die, 20, 20) == pytest.approx(C.package_cost_usd)


def test_node_cost_follows_slots_and_rounding():
    die = cost.die_cost_usd(20, 20)
    pk = cost.package_cost_usd(4, die, 20, 20)
    # 36 dies = 9 packages: two nodes of 8 slots, or one of 16
    assert cost.pool_cost_usd(36, die, 4, 8, 20, 20) == pytest.approx(36 * die + 9 * pk + 2 * cost.node_cost_usd(8))
    assert cost.pool_cost_usd(36, die, 4, 16, 20, 20) == pytest.approx(36 * die + 9 * pk + cost.node_cost_usd(16))
    assert cost.gpu_pool_cost_usd(10.81, 1000.0) == pytest.approx(10810 + 2 * C.node_fixed_usd)
