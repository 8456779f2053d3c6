"""Core tiling of a die: grid and remainder units."""
from __future__ import annotations

from dse.hardware import die


def test_core_tiling_remainder():
    assert die.core_grid(6, 16, 20, "partial") == (3, 4)
    assert die.core_grid(6, 16, 20, "idle") == (2, 3)
    assert die.remainder_units(6, 16, 20) == 320 - 6 * 36
    assert die.active_units(8, 16, 20, "idle") == 4 * 64
    assert die.active_units(8, 16, 20, "partial") == 320
