"""Die area (spec sections 2, 9; Table XII).

* ReRAM: capacity bits x bit-cell area / array efficiency (1.25 GiB x 0.0249 um2 = 267.4 mm2).
* PE + scheduler: per active unit; ``C.pe_fixed_area_fraction`` of it is width-independent
  (scheduler, FIFO, partial-sum buffer, MXFP8 repack), the rest scales with the tile width
  (82 mm2 per die at w = 4).
* Network and IO: see `dse.hardware.network` (core mesh, Die NoC, D2D + IO).
The die budget is die_width_mm x die_height_mm (400 mm2); over budget is infeasible.
"""
from __future__ import annotations

from dse.constants import C
from dse.units import BITS_PER_BYTE, MM2_PER_UM2


# Relative tolerance of "over the area budget" (rounding of an exactly-full die is not a violation).
BUDGET_TOLERANCE = 1e-9


def die_budget_mm2() -> float:
    return C.die_width_mm * C.die_height_mm


def over_budget(die_area_mm2: float, budget_mm2: float) -> bool:
    """Whether a die's area exceeds the budget (beyond rounding): such a design is infeasible."""
    return die_area_mm2 > budget_mm2 * (1 + BUDGET_TOLERANCE)


def reram_area_mm2(capacity_bytes: float) -> float:
    return capacity_bytes * BITS_PER_BYTE * C.bitcell_um2 * MM2_PER_UM2 / C.reram_array_efficiency


def pe_area_mm2(active_units: int, tile_width: int) -> float:
    per_unit = C.pe_area_mm2_per_unit_w4 * (C.pe_fixed_area_fraction + (1 - C.pe_fixed_area_fraction) * tile_width / 4)
    return active_units * per_unit
