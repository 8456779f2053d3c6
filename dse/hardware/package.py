"""Package level: dies_per_package dies on a 2.5D UCIe interposer (spec section 2, 6).

Published: 4 dies -> 5 GiB, 65.5 TB/s, 512 TFLOPS.
"""
from __future__ import annotations


def package_capacity_bytes(dies_per_package: int, die_capacity_bytes: float) -> float:
    return dies_per_package * die_capacity_bytes


def package_read_gbps(dies_per_package: int, die_read_gbps: float) -> float:
    return dies_per_package * die_read_gbps


def package_peak_gflops(dies_per_package: int, die_peak_gflops: float) -> float:
    return dies_per_package * die_peak_gflops
