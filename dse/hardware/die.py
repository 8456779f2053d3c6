"""Die level: a die_units_x x die_units_y unit array tiled into cores on a Die NoC (spec s2).

Published: 16 x 20 = 320 units; side 4 -> 20 cores on a 4 x 5 NoC; 1.25 GiB, 16.4 TB/s,
128 TFLOPS. A core side that does not tile the array (6, 8 on 16 x 20) leaves a remainder;
``core_remainder`` says what happens to it:

* ``partial``: the remainder forms smaller edge cores (every unit is used; the NoC grid is
  ceil(x/s) x ceil(y/s) and edge cores have fewer units / groups);
* ``idle``: only whole cores are built; remainder units hold no weights (capacity, bandwidth and
  FLOPS of the die shrink to the whole cores').
"""
from __future__ import annotations

import math


def die_units(die_units_x: int, die_units_y: int) -> int:
    return die_units_x * die_units_y


def core_grid(core_side: int, die_units_x: int, die_units_y: int, core_remainder: str) -> tuple[int, int]:
    """Cores along x and y of the Die NoC (4 x 5 at side 4 on 16 x 20)."""
    if core_remainder == "idle":
        return die_units_x // core_side, die_units_y // core_side
    return math.ceil(die_units_x / core_side), math.ceil(die_units_y / core_side)


def full_cores(core_side: int, die_units_x: int, die_units_y: int) -> int:
    return (die_units_x // core_side) * (die_units_y // core_side)


def cores_per_die(core_side: int, die_units_x: int, die_units_y: int, core_remainder: str) -> int:
    gx, gy = core_grid(core_side, die_units_x, die_units_y, core_remainder)
    return gx * gy


def active_units(core_side: int, die_units_x: int, die_units_y: int, core_remainder: str) -> int:
    """Units that hold weights and compute (all of them unless the remainder is idle)."""
    if core_remainder == "idle":
        return full_cores(core_side, die_units_x, die_units_y) * core_side * core_side
    return die_units(die_units_x, die_units_y)


def remainder_units(core_side: int, die_units_x: int, die_units_y: int) -> int:
    """Units outside whole cores (0 at side 4 on 16 x 20; 104 at side 6; 64 at side 8)."""
    return die_units(die_units_x, die_units_y) - full_cores(core_side, die_units_x, die_units_y) * core_side ** 2


def die_capacity_bytes(units: int, unit_capacity_bytes: float) -> float:
    return units * unit_capacity_bytes


def die_read_gbps(units: int, unit_read_gbps: float) -> float:
    return units * unit_read_gbps


def die_peak_gflops(units: int, unit_peak_gflops: float) -> float:
    return units * unit_peak_gflops
