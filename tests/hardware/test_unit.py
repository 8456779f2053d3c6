"""Unit-level functions (frame, column time, read bandwidth, capacity) and the tile roofline."""
from __future__ import annotations

import pytest

from dse.hardware import unit
from tests.reference import check


# ---- Table III --------------------------------------------------------------------------------
def test_unit_level_functions():
    assert unit.frame_bytes(16, 128) == 256
    assert unit.cols_per_macro_cycle(16, 128) == 2
    assert unit.t_col_ns(16, 128, 200) == pytest.approx(2.5)
    check("hierarchy", "unit_read_gbps", unit.unit_read_gbps(16, 128, 200))
    check("hierarchy", "unit_gflops", unit.unit_peak_gflops(4, 400))
    assert unit.unit_capacity_bytes(32768) == 4 << 20
    assert unit.macro_rows(32768, 16, 128) == 16384


# ---- Section IV-D -----------------------------------------------------------------------------
@pytest.mark.parametrize("w", [1, 2, 4])
def test_roofline_cap(w):
    check("tile", f"roofline_cap_w{w}", unit.roofline_cap(w, 400 / 51.2))


def test_narrowest_balanced_width():
    assert unit.narrowest_balanced_width(400 / 51.2) == 4
