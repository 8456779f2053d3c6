"""The fast exact top-k (``dse.workload.topk``) against ``np.argpartition`` (the oracle)."""
import numpy as np
import pytest

from dse.workload.topk import argpartition_topk, topk


@pytest.mark.parametrize("shape,k", [((7, 33, 512), 10), ((300, 256), 8), ((50, 128), 1), ((40, 13), 12),
                                     ((3, 5, 64), 63), ((11, 77), 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_argpartition_on_random_rows(shape, k, dtype):
    rng = np.random.default_rng(sum(shape) + k)
    g = (rng.standard_normal(shape) * 3).astype(dtype)
    got = topk(g, k)
    assert got.shape == (*shape[:-1], k)
    np.testing.assert_array_equal(got, argpartition_topk(g, k))
    assert (np.diff(got, axis=-1) > 0).all()                    # ascending, distinct


def test_ties_at_the_threshold_take_argpartitions_choice():
    rng = np.random.default_rng(1)
    g = rng.integers(0, 6, size=(400, 64)).astype(np.float32)   # many ties at the k-th value
    scratch = np.empty_like(g)
    np.testing.assert_array_equal(topk(g, 7, scratch), argpartition_topk(g, 7))
    g[::7, 3] = np.nan                                          # NaN rows fall back as well
    np.testing.assert_array_equal(topk(g, 7), argpartition_topk(g, 7))


def test_values_are_the_k_largest():
    rng = np.random.default_rng(2)
    g = rng.random((64, 200), dtype=np.float32)
    ids = topk(g, 9)
    picked = np.take_along_axis(g, ids, axis=1)
    rest = g.copy()
    np.put_along_axis(rest, ids, -np.inf, axis=1)
    assert (picked.min(axis=1) > rest.max(axis=1)).all()
