"""Core level: core_side x core_side units sharing a multicast core mesh (spec section 2, 5).

Published: side 4 -> 16 units, 64 MiB, 819.2 GB/s, 6.4 TFLOPS.
"""
from __future__ import annotations


def units_per_core(core_side: int) -> int:
    return core_side * core_side


def core_capacity_bytes(core_side: int, unit_capacity_bytes: float) -> float:
    return units_per_core(core_side) * unit_capacity_bytes


def core_read_gbps(core_side: int, unit_read_gbps: float) -> float:
    return units_per_core(core_side) * unit_read_gbps


def core_peak_gflops(core_side: int, unit_peak_gflops: float) -> float:
    return units_per_core(core_side) * unit_peak_gflops


def link_gbps(width_bits: int, ghz: float) -> float:
    """A link's bandwidth: width x clock / 8 (512 b at 1 GHz = 64 GB/s)."""
    return width_bits * ghz / 8
