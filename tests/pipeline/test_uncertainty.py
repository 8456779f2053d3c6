"""Model-uncertainty draws: the table, the Latin hypercube, constants restored after a draw."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dse.constants import C
from dse.pipeline import uncertainty as un
from dse.spec import DesignPoint


def test_every_unknown_has_a_range_around_its_nominal_and_a_source():
    rows = un.unknowns()
    assert {"trace_seed", "t_layer_fixed_us", "stretch_per_hop", "profile_load_correlation"} <= {u.name for u in rows}
    for u in rows:
        assert u.low <= u.nominal <= u.high and u.low < u.high, u.name
        assert len(u.source) > 40 and u.kind in ("constant", "knob", "input")
        if u.kind == "constant":
            assert C.describe(u.name).value == u.nominal          # the nominal is the model's constant


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 64), st.integers(1, 5), st.integers(0, 2 ** 31))
def test_latin_hypercube_has_one_point_per_stratum(n, dims, seed):
    u = un.latin_hypercube(n, dims, seed)
    assert u.shape == (n, dims) and (u >= 0).all() and (u < 1).all()
    for j in range(dims):
        assert sorted(np.floor(u[:, j] * n).astype(int).tolist()) == list(range(n))
    assert np.array_equal(u, un.latin_hypercube(n, dims, seed))


def test_draws_stay_in_range_and_constants_are_restored():
    before = (C.t_layer_fixed_us, C.stretch_per_hop)
    rows = {u.name: u for u in un.unknowns() if u.sampled}
    for d in un.draws(20, seed=3):
        assert set(d) == set(rows)
        for k, v in d.items():
            assert rows[k].low <= v <= rows[k].high
        with un.applied(d) as knobs:
            assert C.t_layer_fixed_us == d["t_layer_fixed_us"] and knobs == {"trace_seed": d["trace_seed"]}
    assert (C.t_layer_fixed_us, C.stretch_per_hop) == before
    with pytest.raises(AttributeError):
        with C.overridden({"no_such_constant": 1.0}):
            pass


def test_point_bands_bracket_the_draws():
    b = un.point_bands(DesignPoint.from_dict({"batch": 16, "trace_steps": 4}), 4)
    t = b["t_layer_us"]
    assert 61.44 + 0.31 - 1e-9 <= t["p5"] < t["p95"] <= 61.44 + 0.41 + 1e-9
    assert b["ffn_us_per_token_scheduled"]["p5"] <= b["ffn_us_per_token_scheduled"]["p95"]
