"""Grouping by key columns (`dse.vector.groups`) against a plain Python reference: narrow and wide
integer keys, floats and strings, many keys (the mixed-radix code renumbered), and the cache."""
from __future__ import annotations

import numpy as np

from dse.vector.groups import cached_factorization, distinct, per_key


def _keys(rng, n):
    return [rng.integers(1, 9, n), rng.integers(-3, 3, n) * 1_000_003,            # narrow, wide ints
            rng.choice([0.5, 1.25, 7.0], n), np.array(rng.choice(["a", "bb"], n), dtype=object),
            rng.integers(0, 1024, n), rng.integers(0, 1024, n), rng.integers(0, 64, n)]   # > LUT_MAX jointly


def test_distinct_and_per_key_equal_a_python_reference():
    rng = np.random.default_rng(5)
    for n in (1, 7, 3000):
        keys = _keys(rng, n)
        with cached_factorization():
            tuples, inv = distinct(keys)
            again = distinct(keys)
        rows = list(zip(*[k.tolist() for k in keys]))
        assert len(set(tuples)) == len(tuples) == len(set(rows))
        assert [tuples[i] for i in inv.tolist()] == rows
        assert again[0] == tuples and again[1] is inv                 # cached within the context
        for a, b in zip(tuples[0], rows[inv.tolist().index(0)]):
            assert type(a) is type(b)                                # Python values, as .item() gives
        got = per_key(lambda *t: (hash(t) % 97, str(t)), *keys)
        assert got[0].tolist() == [hash(r) % 97 for r in rows] and got[1].tolist() == [str(r) for r in rows]


def test_few_values_reads_a_grid_column_as_codes_and_refuses_the_rest():
    """A float column of a few distinct values (a grid's clocks) comes back as (values, codes) that
    rebuild it exactly; a column with more values, or values the sample missed, comes back None."""
    from dse.vector.groups import FEW_VALUES, few_values
    rng = np.random.default_rng(2)
    col = rng.choice([100.0, 150.0, 250.0, 400.0], 5000)
    vals, idx = few_values(col)
    assert (vals[idx] == col).all() and len(vals) == 4
    assert few_values(rng.uniform(100, 400, 5000)) is None                      # all distinct
    rare = col.copy()
    rare[1] = 123.0                                                              # not in the strided sample
    assert few_values(rare) is None
    many = rng.choice(np.arange(FEW_VALUES + 1, dtype=float), 50_000)
    assert few_values(many) is None
    assert few_values(np.arange(10.0)) is None                                    # too short to sample
