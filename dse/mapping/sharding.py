"""Expert sharding (spec section 3).

An expert is cut along d_ff into 128-wide chunks (``C.pe_lanes``); a chunk holds 128 rows of
gate and up and 128 columns of down = 3d columns. A unit holds as many whole chunks of one
expert as fit in ``array_depth``; the expert's chunks spread over TP shards, die j of a TP group
storing shard j. Reference (35B, d = 2048, d_ff = 512): 32K -> 4 chunks of 6144 columns, TP = 1,
D_used = 24576 (75 %); 16K -> TP = 2 (49 dies); 24K -> 100 % utilisation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dse.constants import C


def chunk_columns(hidden: int) -> int:
    """Columns of one chunk: 128 rows of gate + 128 rows of up + 128 columns of down = 3d."""
    return 3 * hidden


def chunks_per_expert(expert_intermediate: int) -> int:
    """128-wide slices of d_ff (the last may be partial)."""
    return math.ceil(expert_intermediate / C.pe_lanes)


def max_chunks_per_unit(array_depth: int, hidden: int) -> int:
    """Whole chunks of one expert that fit in a unit (0 = the model cannot map)."""
    return array_depth // chunk_columns(hidden)


def tp_degree(n_chunks: int, max_per_unit: int) -> int:
    """Tensor-parallel shards per expert: ceil(chunks / chunks that fit)."""
    return math.ceil(n_chunks / max_per_unit)


def chunks_per_unit(n_chunks: int, tp: int) -> int:
    """Chunks a unit actually holds once the expert is split evenly over tp shards."""
    return math.ceil(n_chunks / tp)


def d_used_columns(chunks_in_unit: int, hidden: int) -> int:
    """Columns a unit streams per layer: chunks per unit x 3d."""
    return chunks_in_unit * chunk_columns(hidden)


def array_utilization(d_used: int, array_depth: int) -> float:
    return d_used / array_depth


# Weights that fill whole dies up to rounding need no extra die.
WHOLE_DIE_TOLERANCE = 1e-12


def dies_by_capacity(weight_bytes: float, die_capacity_bytes: float) -> int:
    """The study's pool die count: ceil(FFN weights / die capacity) (35B: 30.1 GiB / 1.25 -> 25)."""
    return math.ceil(weight_bytes / die_capacity_bytes - WHOLE_DIE_TOLERANCE)


def dies_by_packing(expert_instances: int, tp: int, units_per_die: int) -> int:
    """Stricter count: every unit holds the chunks of exactly one expert shard, so a pool needs
    layers x (routed + shared) x TP units (35B at 32K: 10280 units -> 33 dies)."""
    return math.ceil(expert_instances * tp / units_per_die)


@dataclass(frozen=True)
class Sharding:
    feasible: bool
    reason: str
    chunk_columns: int
    chunks_per_expert: int
    max_chunks_per_unit: int
    tp_degree: int
    chunks_per_unit: int
    d_used_columns: int
    array_utilization: float


def shard(hidden: int, expert_intermediate: int, array_depth: int) -> Sharding:
    """Chunking, TP degree, D_used and utilisation; infeasible (with a reason) when a chunk
    is larger than the array."""
    cc = chunk_columns(hidden)
    nc = chunks_per_expert(expert_intermediate)
    mx = max_chunks_per_unit(array_depth, hidden)
    if mx == 0:
        return Sharding(False, f"chunk of {cc} columns (3 x d = 3 x {hidden}) exceeds array_depth {array_depth}",
                        cc, nc, 0, 0, 0, 0, 0.0)
    tp = tp_degree(nc, mx)
    cpu = chunks_per_unit(nc, tp)
    du = d_used_columns(cpu, hidden)
    return Sharding(True, "", cc, nc, mx, tp, cpu, du, array_utilization(du, array_depth))
