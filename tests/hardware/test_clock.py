"""The price of a clock (dse/hardware/clock.py): every factor is 1 at the published clocks,
monotone in the clock, and the alpha-power law is met by the supply it returns."""
from __future__ import annotations

import numpy as np
import pytest

from dse.constants import C
from dse.hardware import clock
from tests.reference import metrics


@pytest.mark.parametrize("ref", [C.ref_pe_mhz, C.ref_macro_mhz, C.ref_noc_ghz])
def test_published_clock_costs_nothing_extra(ref):
    assert clock.supply_v(ref, ref) == C.vdd_nominal_v
    for fn in (clock.area_factor, clock.dynamic_energy_factor, clock.leakage_factor, clock.clocked_power_factor,
               clock.energy_per_op_factor):
        assert fn(ref, ref) == pytest.approx(1.0, abs=1e-12)


def test_supply_meets_the_alpha_power_law_inside_its_range():
    for ratio in (0.8, 0.9, 1.1, 1.2):
        v = clock.supply_v(400 * ratio, 400)
        assert C.vdd_min_v < v < C.vdd_max_v
        assert clock.clock_ratio_at(v) == pytest.approx(ratio, rel=1e-9)


def test_supply_clamps_and_deeper_pipelines_take_over():
    assert clock.supply_v(100, 400) == C.vdd_min_v          # far below: no saving under V_min
    top = clock.clock_ratio_at(C.vdd_max_v)
    assert clock.supply_v(400 * 2, 400) == pytest.approx(C.vdd_max_v)
    h = C.latch_overhead_fraction
    depth = (1 - h) / (top / 2 - h)                         # t = t_logic / n + t_o at twice the clock
    assert clock.pipeline_depth_factor(800, 400) == pytest.approx(depth)
    assert clock.area_factor(800, 400) == pytest.approx(1 + C.pipeline_register_area_fraction * (depth - 1))
    assert clock.pipeline_depth_factor(400 * top * 0.99, 400) == 1.0
    assert clock.pipeline_depth_factor(400 * top / h * 1.01, 400) == float("inf")     # no depth reaches it


def test_factors_rise_with_the_clock_and_match_on_arrays():
    f = np.array([200.0, 300, 400, 500, 600, 700, 800])
    for fn in (clock.dynamic_energy_factor, clock.leakage_factor, clock.area_factor, clock.clocked_power_factor):
        arr = fn(f, 400.0)
        assert np.all(np.diff(arr) >= 0), fn.__name__
        assert [fn(float(x), 400.0) for x in f] == pytest.approx(list(arr))
    assert clock.dynamic_energy_factor(800, 400) > 1.5          # doubling the PE clock is not free


def test_pe_clock_is_priced_in_area_and_energy():
    base, fast = metrics(), metrics(pe_mhz=800)
    assert fast["pe_area_mm2"] == pytest.approx(base["pe_area_mm2"] * clock.area_factor(800, 400))
    # same delivered-FLOP activity at the reference operating point: power = pJ/FLOP x FLOP/s
    assert fast["pe_power_w"] == pytest.approx(2 * base["pe_power_w"] * clock.energy_per_op_factor(800, 400))
    slow = metrics(macro_mhz=100)
    assert slow["reram_power_w"] == pytest.approx(base["reram_power_w"] / 2
                                                  * clock.energy_per_op_factor(100, 200))


def test_energy_per_operation_has_a_minimum_below_the_published_clock():
    """Leakage over the operation rate: below the clock reached at V_min an operation costs more."""
    f_min = 200 * clock.clock_ratio_at(C.vdd_min_v)
    e = {f: clock.energy_per_op_factor(f, 200.0) for f in (50.0, 100.0, f_min, 200.0)}
    assert e[f_min] < e[100.0] < e[50.0] and e[f_min] < e[200.0] == pytest.approx(1.0)
    s = C.leakage_energy_share
    assert e[100.0] == pytest.approx((1 - s) * clock.dynamic_energy_factor(100, 200)
                                     + s * clock.leakage_factor(100, 200) * 2)


def test_a_faster_macro_clock_interleaves_banks_of_whole_periphery():
    from dse.hardware import area
    top = clock.clock_ratio_at(C.vdd_max_v)
    assert clock.interleave_factor(200 * top * 0.99, 200) == 1.0
    assert clock.interleave_factor(400, 200) == pytest.approx(2 / top)
    assert area.read_periphery_mm2(320, 16, 128, 200.0) == 0.0            # the published unit
    whole = 16 * (128 * C.sense_amp_um2_per_bit + C.macro_fixed_um2) * 1e-6
    assert area.read_periphery_mm2(320, 16, 128, 400.0) == pytest.approx(320 * (2 / top - 1) * whole)
    assert metrics(macro_mhz=400)["read_periphery_area_mm2"] == pytest.approx(320 * (2 / top - 1) * whole)


def _bisect_v(ratio: float) -> float:
    """Plain-Python oracle: 200 halvings of [V_min, V_max] for the supply reaching ``ratio``."""
    lo, hi = C.vdd_min_v, C.vdd_max_v
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if clock.clock_ratio_at(mid) >= ratio else (mid, hi)
    return hi


def test_supply_table_matches_a_bisection_oracle_elementwise():
    r_lo, r_hi = clock.clock_ratio_at(C.vdd_min_v), clock.clock_ratio_at(C.vdd_max_v)
    ratios = np.concatenate([np.linspace(r_lo * 1.0001, r_hi * 0.9999, 997), [r_lo * 0.5, r_hi * 3.0]])
    got = clock.supply_v(ratios * 400.0, 400.0)
    want = [C.vdd_min_v if r <= r_lo else _bisect_v(min(r, r_hi)) for r in ratios]
    assert np.max(np.abs(got - np.array(want))) < 1e-12
    # no sort, no de-duplication: each element is solved on its own, shape kept
    grid = (ratios[:12] * 400.0).reshape(3, 4)
    assert clock.supply_v(grid, 400.0).shape == (3, 4)
    assert clock.supply_v(grid, 400.0)[1, 2] == clock.supply_v(float(grid[1, 2]), 400.0)


def test_table_lookup_is_np_interp_to_the_last_bit():
    """The bucketed lookup finds np.interp's interval without a binary search: the same result,
    bit for bit, inside, at and around every table point, outside the range, for inf and NaN."""
    t = clock._table()
    rng = np.random.default_rng(3)
    r = t.r
    x = np.concatenate([rng.uniform(r[0] - 0.2, r[-1] + 0.2, 200_000), r, np.nextafter(r, -np.inf),
                        np.nextafter(r, np.inf), [np.nan, np.inf, -np.inf, 0.0, -1.0, 1e300, -1e300]])
    np.testing.assert_array_equal(t.interp(x), np.interp(x, t.r, t.v))
    for xi in x[::5000].tolist() + [float(r[0]), float(r[-1]), float("inf")]:
        assert t.interp(xi) == np.interp(xi, t.r, t.v)


def test_one_clock_prices_a_domain_as_the_functions_do():
    """A vectorised caller passes one ``Clock`` to every function pricing its domain: the same
    values as the functions computing the factors from the clock each time."""
    f = np.array([50.0, 100.0, 150.0, 200.0, 260.0, 400.0, 900.0])
    c = clock.Clock(f, 200.0)
    for fn in (clock.supply_v, clock.pipeline_depth_factor, clock.area_factor, clock.dynamic_energy_factor,
               clock.leakage_factor, clock.clocked_power_factor, clock.energy_per_op_factor, clock.interleave_factor):
        np.testing.assert_array_equal(fn(c, 200.0), fn(f, 200.0))
    assert clock.at(c, 200.0) is c
    with pytest.raises(ValueError):
        clock.at(c, 400.0)


def test_a_spread_clock_equals_the_clock_of_every_row():
    """A column of a few clocks priced once per distinct clock and gathered per row (``Spread``):
    every factor equal to pricing each row."""
    distinct = np.array([100.0, 200.0, 250.0, 400.0])
    rows = np.array([3, 0, 0, 2, 1, 3, 2])
    s, full = clock.Spread(clock.Clock(distinct, 200.0), rows), clock.Clock(distinct[rows], 200.0)
    for name in ("supply_v", "area", "dynamic_energy", "leakage", "clocked_power", "energy_per_op", "interleave"):
        np.testing.assert_array_equal(getattr(s, name), getattr(full, name))
    np.testing.assert_array_equal(clock.energy_per_op_factor(s, 200.0),
                                  clock.energy_per_op_factor(distinct[rows], 200.0))
    with pytest.raises(AttributeError):
        _ = s.no_such_factor


def test_kept_scalar_clocks_follow_an_override_of_the_law():
    """The scalar path keeps its clocks (``at``): a model-uncertainty draw that moves the law's
    constants gets its own, and the nominal ones come back after it."""
    nominal = clock.energy_per_op_factor(300.0, 200.0)
    assert clock.at(300.0, 200.0) is clock.at(300.0, 200.0)
    with C.overridden({"vth_v": C.vth_v * 1.1, "leakage_energy_share": C.leakage_energy_share * 0.5}):
        drawn = clock.energy_per_op_factor(300.0, 200.0)
        assert drawn == clock.Clock(300.0, 200.0).energy_per_op
    assert drawn != nominal and clock.energy_per_op_factor(300.0, 200.0) == nominal
