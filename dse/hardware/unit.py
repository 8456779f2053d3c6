"""Unit level: ReRAM macros + one PE (spec section 2).

Each macro cycle the n macros deliver n x width bits; a column is one 128-element FP8 row
(``C.column_bytes``), so a unit streams ``cols_per_macro_cycle`` columns per macro cycle.
Published design: 16 x 128 b at 200 MHz -> 2 columns/cycle, t_col = 2.5 ns, 51.2 GB/s, and a
32K-column array holds 4 MiB. The PE is a w-token x 128-lane FP8 MAC array at ``pe_mhz``.
"""
from __future__ import annotations

from dse.constants import C
from dse.units import BYTES_PER_GB, GHZ_PER_MHZ, HZ_PER_MHZ, NS_PER_US


def frame_bytes(n_macros: int, macro_width_bits: int) -> float:
    """Bytes delivered by all macros of a unit in one macro cycle (16 x 128 b = 256 B)."""
    return n_macros * macro_width_bits / 8


def cols_per_macro_cycle(n_macros: int, macro_width_bits: int) -> float:
    """Columns (128 B rows) per macro cycle (2 for the published unit)."""
    return frame_bytes(n_macros, macro_width_bits) / C.column_bytes


def t_col_ns(n_macros: int, macro_width_bits: int, macro_mhz: float, read_bw_scale: float = 1.0) -> float:
    """Time to stream one column: 1 / (macro clock x columns per cycle) (2.5 ns published)."""
    return NS_PER_US / (macro_mhz * cols_per_macro_cycle(n_macros, macro_width_bits) * read_bw_scale)


def unit_read_gbps(n_macros: int, macro_width_bits: int, macro_mhz: float, read_bw_scale: float = 1.0) -> float:
    """Local ReRAM read bandwidth of one unit (51.2 GB/s published)."""
    return frame_bytes(n_macros, macro_width_bits) * macro_mhz * HZ_PER_MHZ * read_bw_scale / BYTES_PER_GB


def unit_capacity_bytes(array_depth: int) -> int:
    """Weight capacity of one unit: array_depth columns of 128 B (32K -> 4 MiB)."""
    return int(array_depth * C.column_bytes)


def macro_rows(array_depth: int, n_macros: int, macro_width_bits: int) -> float:
    """Rows per macro implied by the array depth (16K rows at 32K columns published)."""
    return array_depth / cols_per_macro_cycle(n_macros, macro_width_bits)


def unit_macs_per_cycle(tile_width: int) -> int:
    """MACs per PE cycle: w tokens x 128 lanes (512 at w = 4)."""
    return tile_width * int(C.pe_lanes)


def unit_peak_gflops(tile_width: int, pe_mhz: float) -> float:
    """Peak FP8 GFLOPS of one PE: 2 x w x 128 x f_pe, with the study's 409.6 -> 400 rounding
    (``C.pe_peak_derate``) so that the published 400 GFLOPS / 128 TFLOPS per die come out."""
    return 2 * unit_macs_per_cycle(tile_width) * pe_mhz * GHZ_PER_MHZ * C.pe_peak_derate


def balance_flop_per_byte(peak_gflops: float, read_gbps: float) -> float:
    """Machine balance F = peak FLOP/s / read B/s (7.8125 for the published unit)."""
    return peak_gflops / read_gbps


def roofline_cap(tile_width: int, balance: float) -> float:
    """Fraction of peak a width-w tile can reach: it offers 2w FLOP per weight byte,
    so the cap is min(1, 2w / F): 0.256 (w=1), 0.512 (w=2), 1.0 (w=4) published."""
    return min(1.0, 2.0 * tile_width / balance)


def narrowest_balanced_width(balance: float) -> int:
    """Smallest tile width whose roofline cap is 1 (4 for the published unit)."""
    w = 1
    while 2 * w < balance:
        w += 1
    return w


# ---- communication: the unit's private port (spec section 6) -------------------------------
def unit_io_bytes_per_job(chunks_in_unit: int, hidden: int, wave_tokens: int,
                          act_bytes: float, psum_bytes: float) -> float:
    """Bytes through a unit's port for one job (a wave of ``wave_tokens`` tokens): for every chunk
    it streams, w activations in (w x d FP8) and w d-wide partial sums out (w x d BF16).

    The study counts the activation once per chunk (4d in + 8d out per chunk and 4-token wave):
    4 chunks x 12 x 2048 B = 96 KiB per job for the default model."""
    return chunks_in_unit * wave_tokens * hidden * (act_bytes + psum_bytes)


def unit_io_gbps(bytes_per_job: float, t_layer_us: float) -> float:
    """Unit-port demand: one job per layer time (1.59 GB/s published as 1.57 for the default)."""
    return bytes_per_job / (t_layer_us * NS_PER_US)
