"""``Table.rows`` (columns converted at once) equals ``Table.row`` for every row: same keys in the
same order, same Python types and values, infeasible rows included."""
from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.search.space.space_file import load_space
from dse.vector import Columns, evaluate_columns
from tests.vector.test_evaluate import FULL, _design


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_rows_equal_row_by_row(data):
    space = load_space(FULL)
    points = [_design(data, space, {}) for _ in range(data.draw(st.integers(1, 20), label="n"))]
    table = evaluate_columns(Columns.from_points(points))
    rows = table.rows()
    assert len(rows) == table.n
    for i, fast in enumerate(rows):
        slow = table.row(i)
        assert list(fast) == list(slow), f"row {i}: keys differ"
        for k, v in slow.items():
            assert type(fast[k]) is type(v) and (fast[k] == v or (isinstance(v, float) and math.isnan(v)
                                                                  and math.isnan(fast[k]))), f"row {i}: {k}"
