"""Trace statistics, defined on a hand-made trace."""
from __future__ import annotations

import numpy as np
import pytest

from dse.workload import stats
from dse.workload.trace import make_trace

L, E, K = 16, 64, 8


# -- stats -----------------------------------------------------------------------------------------
def test_stats_definitions_on_a_hand_trace():
    # 2 steps, 1 layer of a 4-expert top-1 model, B = 4
    ids = np.array([[[[0], [0], [1], [2]]], [[[0], [3], [3], [3]]]])
    tr = make_trace(ids, "x", 4, validate=True)
    acc = stats.accumulate(tr.meta, [tr.experts])
    s = acc.summary()
    assert s["hottest_over_mean"] == pytest.approx((2 / 1 + 3 / 1) / 2)     # mean load B k / E = 1
    assert s["global_peak_hottest_over_mean"] == 3 and s["hottest_tokens_per_step"] == 3
    assert s["hot_set_persistence"] == 0.5                                   # hottest: 0 then 3
    assert s["union"] == {1: 1.0, 2: (1 + 2 + 2 + 1) / 4, 4: 2.5}       # slices {0,0} {1,2} {0,3} {3,3}
    assert s["gini"] == pytest.approx(stats.gini(np.array([3, 1, 1, 3]))[()])
    assert stats.gini(np.array([1, 1, 1, 1]))[()] == 0
    assert stats.top_share(np.array([5, 3, 1, 1]), 1)[()] == 0.5
