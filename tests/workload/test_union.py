"""The union U(B) of experts a batch touches: interpolation, tail and the uniform model."""
from __future__ import annotations

import pytest

from dse.catalog import get_model
from dse.workload.union import union_closed_form, union_from_table, union_uniform


def test_union_interpolation_hits_measured_points():
    m = get_model("qwen3.5-35b-a3b")
    for b, u in m.union_table.items():
        assert union_closed_form(m, b)[0] == pytest.approx(u)
    assert union_closed_form(m, 1)[0] == 8
    assert 50.1 < union_closed_form(m, 16)[0] < 168.6
    assert 205 < union_closed_form(m, 512)[0] < 256


def test_union_tail_and_uniform():
    assert union_uniform(256, 8, 1) == pytest.approx(8)
    t = {1: 8.0, 128: 205.0}
    assert union_from_table(t, 256, 128) == pytest.approx(205.0)
    assert union_from_table(t, 256, 2) <= 2 * 8  # power-law interpolation keeps U(B) <= B k
    assert union_from_table(t, 256, 10**6) == pytest.approx(256)
