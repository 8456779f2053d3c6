"""Sharding of an expert over array columns: reference points and infeasible shapes."""
from __future__ import annotations

from dse.mapping import sharding
from tests.reference import check


# ---- Section 3 / V-D: sharding and depth ------------------------------------------------------
def test_sharding_reference_points():
    s32 = sharding.shard(2048, 512, 32768)
    assert (s32.chunk_columns, s32.chunks_per_expert, s32.tp_degree, s32.d_used_columns) == (6144, 4, 1, 24576)
    assert s32.array_utilization == 0.75
    s16 = sharding.shard(2048, 512, 16384)
    assert s16.tp_degree == 2 and s16.d_used_columns == 12288
    check("depth_35b", "array_utilization_24k", sharding.shard(2048, 512, 24576).array_utilization)
    glm16 = sharding.shard(6144, 2048, 16384)
    assert not glm16.feasible and "18432" in glm16.reason
