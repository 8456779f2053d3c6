"""Node level: packages_per_node packages on node links (spec section 2, 6).

Published: 8 packages -> 40 GiB, 524 TB/s, 4.1 PFLOPS.
"""
from __future__ import annotations


def node_capacity_bytes(packages_per_node: int, package_capacity_bytes: float) -> float:
    return packages_per_node * package_capacity_bytes


def node_read_gbps(packages_per_node: int, package_read_gbps: float) -> float:
    return packages_per_node * package_read_gbps


def node_peak_gflops(packages_per_node: int, package_peak_gflops: float) -> float:
    return packages_per_node * package_peak_gflops
