"""Package level: dies_per_package dies on a 2.5D UCIe interposer (spec section 2, 6).

Published: 4 dies -> 5 GiB, 65.5 TB/s, 512 TFLOPS.
"""
from __future__ import annotations

import math

from dse.units import NS_PER_US


def package_capacity_bytes(dies_per_package: int, die_capacity_bytes: float) -> float:
    return dies_per_package * die_capacity_bytes


def package_read_gbps(dies_per_package: int, die_read_gbps: float) -> float:
    return dies_per_package * die_read_gbps


def package_peak_gflops(dies_per_package: int, die_peak_gflops: float) -> float:
    return dies_per_package * die_peak_gflops


# ---- communication: package D2D (UCIe) and the reduction order (spec section 6) --------------
# A layer's experts live on a group of dies: the TP shards of an expert on TP different dies
# (die j stores shard j), times the dies needed to hold all of the layer's experts of one shard
# index. Each token's activation enters one die of the group and must reach every die; the
# partial sums come back and are merged. Activations, partials and the inter-layer residual
# cross dies; weights never do.

def layer_die_span(tp: int, experts_per_layer: int, units_per_die: int) -> int:
    """Dies that hold one layer: TP x ceil(experts per layer / units per die) (1 for the default
    model at 32K, 2 at 16K (TP = 2), 16 for GLM-5.2 at 32K)."""
    if units_per_die <= 0:
        return max(1, tp)
    return max(1, tp) * max(1, math.ceil(experts_per_layer / units_per_die))


def cross_die_bytes_per_token(hidden: int, routed_experts: int, act_bytes: float, psum_bytes: float,
                              reduction_order: str) -> float:
    """Bytes one token moves across a die boundary of its layer group.

    ``ep_first``: same-index shards of the token's experts are merged on each die first, so one
    d-wide partial (BF16) crosses per token, beside its activation (d FP8): 3d.
    ``tp_first``: the TP merge comes first, per (token, expert), so one partial per routed
    expert crosses: d + 2 k d. The ratio (1 + 2k) / 3 = 5.67 at k = 8 is the study's 5.7x
    (GLM-5.2: 37.6 -> 213.1 GB/s); the shared expert is merged with the token at its home die."""
    partials = 1 if reduction_order == "ep_first" else routed_experts
    return hidden * (act_bytes + psum_bytes * partials)


def dies_in_package_share(span: int, dies_per_package: int) -> int:
    """Dies of a layer group that share a package (the group is packed package by package)."""
    return max(1, min(span, dies_per_package))


def d2d_demand_gbps_per_die(tokens: float, bytes_per_token: float, span: int, dies_per_package: int,
                            t_layer_us: float) -> float:
    """Package D2D (UCIe) demand per die: the merge inside a package of P = min(span, dies per
    package) dies moves (P - 1) / P of the per-token bytes per die (12.7 GB/s for the default
    model at 16K; 0 at 32K where the layer sits on one die)."""
    p = dies_in_package_share(span, dies_per_package)
    return tokens * bytes_per_token * (p - 1) / p / (t_layer_us * NS_PER_US)


def cross_die_demand_gbps_per_die(tokens: float, bytes_per_token: float, span: int, t_layer_us: float) -> float:
    """All off-die merge traffic per die, D2D and node links together: (span - 1) / span of the
    per-token bytes (GLM-5.2, TP = 16, B = 128: 47.6 GB/s; the study's 47.0)."""
    return tokens * bytes_per_token * (span - 1) / span / (t_layer_us * NS_PER_US)
