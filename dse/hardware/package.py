"""Package level: dies_per_package dies on a 2.5D UCIe interposer (spec section 2, 6).

Published: 4 dies -> 5 GiB, 65.5 TB/s, 512 TFLOPS.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

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


@dataclass(frozen=True)
class MergeCrossings:
    """Die-boundary crossings per token of one layer group (summed over its dies): d-wide FP8
    activations and d-wide BF16 partials, inside packages (UCIe D2D) and between packages (node)."""
    d2d_act: float
    d2d_psum: float
    node_act: float
    node_psum: float

    def bytes_per_token(self, hidden: int, act_bytes: float, psum_bytes: float) -> tuple[float, float]:
        """(D2D, node) bytes per token moved across die boundaries by the whole layer group."""
        return (hidden * (self.d2d_act * act_bytes + self.d2d_psum * psum_bytes),
                hidden * (self.node_act * act_bytes + self.node_psum * psum_bytes))


def merge_crossings(tp: int, expert_groups: int, dies_per_package: int, routed_experts: int,
                    reduction_order: str) -> MergeCrossings:
    """Crossings per token of a layer group of ``expert_groups`` x ``tp`` dies (die j of a TP group
    holds shard j of the group's experts), packed package by package, P = min(span, dies per
    package) dies per package. A token's k routed experts fall, on average, k / expert_groups in
    each expert group (the crossing counts are linear in it, so the mean is exact in expectation),
    and every expert group is assumed to hold at least one of them (probability
    1 - (1 - 1 / G_e)^k: 0.999 for the 397B's k = 10 over 2 groups; with k < G_e the counts are upper
    bounds).

    Inside a package, the activation reaches its P dies (P - 1 crossings) and:

    * ``ep_first``: each die first sums its shards of the token's experts, so one partial per die
      crosses to the package's merge die: P - 1;
    * ``tp_first``: each (token, expert) first merges its TP shards: t - 1 crossings per expert
      held in the package (t = min(TP, P) shards of it there), then the g = P / t expert groups
      of the package send one merged sum each to the merge die: m (t - 1) g + (g - 1).

    The penalty is therefore (1 + 2 k / G_e) / 3 per crossing, not (1 + 2k) / 3: GLM-5.2 (TP = 16,
    one expert group) keeps 17 / 3 = 5.67 (published 5.7); Qwen3.5-397B (TP = 4 = one package,
    two expert groups, k = 10) gets 11 / 3 = 3.67, where charging all k experts to every TP
    merge (the former rule) gave 7.0 although only the 5 experts held by a package merge there.
    Between packages (node links) every package but the home one receives the activation and
    returns its merged sum, except that a TP group spread over q = TP / P packages merges each of
    its experts across them under ``tp_first``: k (q - 1) + (G_e - 1) partials."""
    tp, groups, k = max(1, tp), max(1, expert_groups), routed_experts
    span = tp * groups
    p = max(1, min(span, dies_per_package))
    n_pkg = span / p
    m = k / groups                                     # the token's experts in one expert group
    if reduction_order == "ep_first":
        return MergeCrossings(n_pkg * (p - 1), n_pkg * (p - 1), n_pkg - 1, n_pkg - 1)
    t = min(tp, p)                                     # shards of one expert inside a package
    g = p / t                                          # expert groups inside a package
    d2d_psum = n_pkg * (m * (t - 1) * g + (g - 1))
    q = tp / t                                         # packages one TP group spans
    node_psum = k * (q - 1) + (groups - 1) if q > 1 else n_pkg - 1
    return MergeCrossings(n_pkg * (p - 1), d2d_psum, n_pkg - 1, node_psum)


def crossing_gbps_per_die(tokens: float, bytes_per_token: float, span: int, t_layer_us: float) -> float:
    """A layer group's cross-die bytes per token spread over its ``span`` dies, per layer time."""
    return tokens * bytes_per_token / max(1, span) / (t_layer_us * NS_PER_US)
