"""Core level: core_side x core_side units sharing a multicast core mesh (spec section 2, 5).

Published: side 4 -> 16 units, 64 MiB, 819.2 GB/s, 6.4 TFLOPS.
"""
from __future__ import annotations

import math


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


# ---- communication: the core mesh (spec sections 5, 6) --------------------------------------
# The core mesh is a core_side x core_side 2-D mesh, one router per unit. It is the only fabric
# that ever carries weights: a hot expert's read-out is multicast (one stream of the unit's read
# bandwidth, 51.2 GB/s) to the idle groups of the same core.

def core_mesh_provision_gbps(core_side: int, link_gbps_: float) -> float:
    """Multicast provision of one core: the bisection of its side x side mesh, ``core_side`` links
    (published: 4 links x 64 GB/s = 256 GB/s per core at side 4, 512 b, 1 GHz)."""
    return core_side * link_gbps_


def multicast_demand_gbps(streams: float, stream_gbps: float) -> float:
    """Core-mesh demand of ``streams`` concurrent multicast read-outs (p99 4 x 51.2 = 204.8 GB/s)."""
    return streams * stream_gbps


# A share that lands on a whole count up to rounding (4.0000000001 streams) is that count.
WHOLE_STREAM_TOLERANCE = 1e-9


def streams_closed_form(units_in_core: int, streams_per_unit: float, whole: bool = True) -> float:
    """Concurrent multicast streams per core without a trace: a fixed share of the core's units
    (``C.core_mesh_*_streams_per_unit``, from the published p99 = 4 / peak = 6 at 16 units).
    ``whole`` rounds up to whole streams (a quantile of a count)."""
    x = streams_per_unit * units_in_core
    return float(math.ceil(x - WHOLE_STREAM_TOLERANCE)) if whole else x


def multicast_tree_depth_hops(core_side: int) -> int:
    """Hops from a source to the farthest unit of its core: the mesh diameter 2 (side - 1)
    (the spec's ~2 sqrt(K) for K = side^2 units)."""
    return 2 * (core_side - 1)


def stretch_hop_factor(core_side: int, per_hop: float) -> float:
    """Round lengthening from deeper multicast trees: 1 + per_hop x (depth - depth at side 2).

    A multicast stream advances at the pace of its slowest branch; every extra level of the tree
    adds flow-control bubbles (credits return over one more hop). Normalised to side 2 (the
    study's stretch 1.00); ``per_hop`` = ``C.stretch_per_hop``."""
    return 1.0 + per_hop * max(0, multicast_tree_depth_hops(core_side) - multicast_tree_depth_hops(2))


def stretch_contention_factor(core_side: int, p99_streams: float, stream_gbps: float, link_gbps_: float) -> float:
    """Round lengthening from link contention: when the p99 concurrent streams need more than the
    core's bisection, every stream (and with it the round) slows by demand / provision."""
    prov = core_mesh_provision_gbps(core_side, link_gbps_)
    return max(1.0, multicast_demand_gbps(p99_streams, stream_gbps) / prov)


def round_stretch(core_side: int, p99_streams: float, stream_gbps: float, link_gbps_: float, per_hop: float) -> float:
    """Round stretch = hop factor x contention factor (published 1.00 / 1.23 / 1.69 / 2.50 for
    side 2 / 4 / 6 / 8). Effective MFU = actual MFU / stretch."""
    return (stretch_hop_factor(core_side, per_hop)
            * stretch_contention_factor(core_side, p99_streams, stream_gbps, link_gbps_))


def unicast_source_port_factor(units_in_core: int) -> int:
    """Unicast replication sends one copy per destination out of the source port instead of one
    multicast stream: units - 1 copies (15 at side 4)."""
    return max(1, units_in_core - 1)


def unicast_traffic_factor(core_side: int) -> float:
    """Link traversals of unicast replication over those of an XY multicast tree, the read-out
    going to every other unit of the core, averaged over source positions.

    A multicast tree to all K - 1 others uses K - 1 links; unicast uses the sum of the Manhattan
    distances. Mean |i - j| over an s-point line is (s^2 - 1) / (3 s), so the sum from a random
    source is K x 2 (s^2 - 1) / (3 s) and the factor 2 (s^2 - 1) / (3 s) x K / (K - 1)
    (2.67 at side 4)."""
    k = core_side * core_side
    if k <= 1:
        return 1.0
    mean_line = (core_side ** 2 - 1) / (3 * core_side)
    return 2 * mean_line * k / (k - 1)
