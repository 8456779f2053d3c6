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
    assert m["pool_cost_usd"] == pytest.approx(25 * m["die_cost_usd"] + 7 * C.package_cost_usd)
    assert m["usd_per_mtok"] == pytest.approx(cost.usd_per_mtok(m["pool_cost_usd"], m["pool_power_w"],
                                                                m["ffn_latency_us_per_token"]))
    assert m["h20_usd_per_mtok"] == pytest.approx(cost.usd_per_mtok(
        m["h20_dies_iso_compute"] * C.gpu_price_usd_h20, m["h20_pool_power_w_iso_compute"], m["h20_us_per_token"]))
