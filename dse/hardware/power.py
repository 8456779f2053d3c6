"""Die and pool power from activity (spec section 9; Table XII).

* ReRAM read: pJ/B x bytes read per second (3.3 W at the full 16.4 TB/s), the read path's energy
  per byte following the supply the macro clock needs, its leakage share over the read rate
  (``dse.hardware.clock.energy_per_op_factor``; 1 at 200 MHz).
* PE + scheduler: pJ/FLOP x delivered FLOP/s = peak x MFU (19.5 W at MFU 0.38), the energy per
  FLOP following the supply (and pipeline depth) the PE clock needs, its leakage share over the
  FLOP rate (1 at 400 MHz).
* Network and IO: see `dse.hardware.network`.
"""
from __future__ import annotations

from dse.constants import C
from dse.hardware import clock
from dse.units import BYTES_PER_GB, FLOPS_PER_GFLOP, J_PER_PJ

# Every array streaming: the read activity when no schedule says otherwise.
FULL_READ_ACTIVITY = 1.0


def reram_power_w(die_read_gbps: float, read_activity: float = FULL_READ_ACTIVITY, macro_mhz: float | None = None):
    f = C.ref_macro_mhz if macro_mhz is None else macro_mhz
    pj = C.reram_pj_per_byte * clock.energy_per_op_factor(f, C.ref_macro_mhz)
    return pj * J_PER_PJ * die_read_gbps * BYTES_PER_GB * read_activity


def pe_power_w(die_gflops: float, mfu: float, pe_mhz: float | None = None):
    f = C.ref_pe_mhz if pe_mhz is None else pe_mhz
    pj = C.pe_pj_per_flop * clock.energy_per_op_factor(f, C.ref_pe_mhz)
    return pj * J_PER_PJ * die_gflops * FLOPS_PER_GFLOP * mfu


def pool_power_w(dies: float, die_power_w: float) -> float:
    return dies * die_power_w
