"""Die area (spec sections 2, 9; Table XII).

* ReRAM: capacity bits x bit-cell area / array efficiency (1.25 GiB x 0.0249 um2 = 267.4 mm2).
* PE + scheduler: per active unit; ``C.pe_fixed_area_fraction`` of it is width-independent
  (scheduler, FIFO, partial-sum buffer, MXFP8 repack), the rest scales with the tile width
  (82 mm2 per die at w = 4).
* Clock: the PE area grows by the registers of the extra pipeline stages a clock above the one
  reached at the node's highest supply needs (``dse.hardware.clock.area_factor``; 1 at 400 MHz).
* Read periphery: each macro output bit beyond (or short of) the published unit's 2048 adds (or
  frees) a sense amplifier and column-mux slice (``C.sense_amp_um2_per_bit``), each macro beyond
  (or short of) its 16 a decoder / driver / control block (``C.macro_fixed_um2``); the study's
  ReRAM area counts bit cells only, so the published unit's periphery is in no separate term. A
  macro clock above the one its read path reaches at the highest supply (sensing-limited: an
  array access is not pipelined) is met by interleaving banks, each with a whole periphery.
* Fetch queue: load-aware fetch stages, per core, the activations of the jobs it may pull from
  ``fetch_queue_depth`` queued steps (Q x w x d FP8 bytes) in SRAM (``C.sram_mm2_per_mib``).
* PE groups: a group of u units shares its experts' read-outs among its u PE tiles locally, which
  takes a u-way distribution crossbar of the read frame's width (n_macros x macro width bits),
  priced as DSENT's matrix crossbar, (u x frame x ``C.noc_wire_pitch_um``)^2 per group (zero for
  one-unit groups, the published design).
* Network and IO: see `dse.hardware.network` (core mesh, Die NoC, D2D + IO).
The die budget is die_width_mm x die_height_mm (400 mm2); over budget is infeasible.
"""
from __future__ import annotations

import numpy as np

from dse.constants import C
from dse.hardware import clock
from dse.units import BITS_PER_BYTE, MIB, MM2_PER_UM2

# Relative tolerance of "over the area budget" (rounding of an exactly-full die is not a violation).
BUDGET_TOLERANCE = 1e-9


def die_budget_mm2() -> float:
    return C.die_width_mm * C.die_height_mm


def over_budget(die_area_mm2: float, budget_mm2: float) -> bool:
    """Whether a die's area exceeds the budget (beyond rounding): such a design is infeasible."""
    return die_area_mm2 > budget_mm2 * (1 + BUDGET_TOLERANCE)


def reram_area_mm2(capacity_bytes: float) -> float:
    return capacity_bytes * BITS_PER_BYTE * C.bitcell_um2 * MM2_PER_UM2 / C.reram_array_efficiency


def pe_area_mm2(active_units: int, tile_width: int, pe_mhz: float | None = None):
    """PE + scheduler area of a die (82 mm2 at w = 4, 400 MHz, 320 units)."""
    per_unit = C.pe_area_mm2_per_unit_w4 * (C.pe_fixed_area_fraction + (1 - C.pe_fixed_area_fraction) * tile_width / 4)
    f = C.ref_pe_mhz if pe_mhz is None else pe_mhz
    return active_units * per_unit * clock.area_factor(f, C.ref_pe_mhz)


def read_periphery_mm2(active_units: int, n_macros: int, macro_width_bits: int, macro_mhz: float | None = None):
    """Read periphery beyond the published unit's (negative for a narrower frame or fewer macros):
    a sense amplifier per output bit and a decoder / driver / control block per macro; above the
    clock the read path reaches at the highest supply, the array is read interleaved over
    ``clock.interleave_factor`` banks, each with its own periphery."""
    bits_um2 = (n_macros * macro_width_bits - C.ref_unit_output_bits) * C.sense_amp_um2_per_bit
    macros_um2 = (n_macros - C.ref_macros_per_unit) * C.macro_fixed_um2
    f = C.ref_macro_mhz if macro_mhz is None else macro_mhz
    banks = clock.interleave_factor(f, C.ref_macro_mhz)
    whole_um2 = n_macros * (macro_width_bits * C.sense_amp_um2_per_bit + C.macro_fixed_um2)
    return active_units * (bits_um2 + macros_um2 + (banks - 1.0) * whole_um2) * MM2_PER_UM2


def fetch_buffer_mm2(cores: int, queue_depth: int, tile_width: int, hidden: int):
    """SRAM of load-aware fetch's staging buffers: per core, Q jobs of w d-wide FP8 activations."""
    return cores * queue_depth * tile_width * hidden * C.act_bytes_per_element / MIB * C.sram_mm2_per_mib


def group_share_mm2(cores, groups_per_core, units_per_core, frame_bits):
    """Read-out sharing crossbars of a die's PE groups: per group of u = units per core / groups
    units, a u x u crossbar of the frame's width (0 for one-unit groups; 6.9 mm2 per group of 16
    units at the published 2048-bit frame)."""
    u = units_per_core / groups_per_core
    per_group_um2 = (u * frame_bits * C.noc_wire_pitch_um) ** 2
    out = cores * groups_per_core * per_group_um2 * MM2_PER_UM2
    if np.ndim(u):
        return np.where(u > 1, out, 0.0)
    return out if u > 1 else 0.0
