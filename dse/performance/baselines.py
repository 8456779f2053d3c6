"""GPU baselines at equal peak compute, read bandwidth or capacity (spec sections 1, 8).

The GPU pool gets the same read-bound roofline with full stream bandwidth and no overheads; die
counts may be fractional (3200 / 296 = 10.81 H20 at equal peak compute).
"""
from __future__ import annotations

from dse.units import US_PER_S


def gpus_iso_compute(pool_peak_flops: float, gpu_flops: float) -> float:
    return pool_peak_flops / gpu_flops


def gpus_iso_bandwidth(pool_read_bps: float, gpu_read_bps: float) -> float:
    return pool_read_bps / gpu_read_bps


def gpus_iso_capacity(weight_bytes: float, gpu_capacity_bytes: float) -> float:
    return weight_bytes / gpu_capacity_bytes


def gpu_us_per_token(bytes_per_token: float, n_gpus: float, gpu_read_bps: float) -> float:
    """Read-bound per-token time of the FFN on n GPUs."""
    return bytes_per_token / (n_gpus * gpu_read_bps) * US_PER_S
