"""Node level: packages_per_node packages on node links (spec section 2, 6).

Published: 8 packages -> 40 GiB, 524 TB/s, 4.1 PFLOPS.
"""
from __future__ import annotations

from dse.units import NS_PER_US


def node_capacity_bytes(packages_per_node: int, package_capacity_bytes: float) -> float:
    return packages_per_node * package_capacity_bytes


def node_read_gbps(packages_per_node: int, package_read_gbps: float) -> float:
    return packages_per_node * package_read_gbps


def node_peak_gflops(packages_per_node: int, package_peak_gflops: float) -> float:
    return packages_per_node * package_peak_gflops


# ---- communication: node links (spec section 6) ----------------------------------------------
def node_residual_gbps(tokens: float, hidden: int, act_bytes: float, t_layer_us: float) -> float:
    """Inter-layer residual through the node links of a layer's home die: every token's d-wide
    FP8 activation per layer time, one direction (the layer output leaves at the same rate the
    other way on full-duplex links). GLM-5.2 at B = 128: 16.9 GB/s (published 16.7). The merge
    traffic of a layer group spanning packages is :func:`dse.hardware.package.merge_crossings`."""
    return tokens * hidden * act_bytes / (t_layer_us * NS_PER_US)
