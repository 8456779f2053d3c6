"""Model-uncertainty draws: the table, the Latin hypercube, constants restored after a draw."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _trace_file(tmp_path):
    from dse.catalog import get_model
    from dse.workload import synth
    from dse.workload.trace import save_trace
    m = get_model("olmoe-1b-7b")
    return str(save_trace(synth.generate(m, 16, 8, seed=2, profile=None), tmp_path / "t.npz"))


@pytest.mark.parametrize("trace", ["file", "catalog"])
def test_shared_schedule_bands_equal_the_per_draw_path(tmp_path, monkeypatch, trace):
    """A trace file's (or the catalog's) draws share placement and schedule: the same bands as
    evaluating every draw from scratch (the scalar path)."""
    from dse.pipeline.evaluate import evaluate
    path = _trace_file(tmp_path) if trace == "file" else "catalog"
    p = DesignPoint.from_dict({"model": "olmoe-1b-7b", "batch": 16, "trace": path, "profile_steps": 2})
    from dse.pipeline.stages import routing
    real, calls = routing.schedule_workload, []
    monkeypatch.setattr(routing, "schedule_workload", lambda *a: calls.append(1) or real(*a))
    shared = un.point_bands(p, 6, seed=3)
    assert len(calls) == (1 if trace == "file" else 0)                        # scheduled once
    scalar = un.bands(lambda knobs: evaluate(p).metrics, 6, seed=3)
    assert len(calls) == (7 if trace == "file" else 0)
    assert shared == scalar
    assert shared["t_layer_us"]["p5"] < shared["t_layer_us"]["p95"]            # the draws do move it


def test_synthetic_draws_handed_to_other_processes_give_the_same_bands():
    """``dse evaluate --uncertainty N --jobs J``: each draw a task (knobs and constants with the
    design, ``evaluate_drawn``) that a worker process evaluates; the same bands as drawing in this
    process. The tasks go through pickle, as to a worker."""
    import pickle
    p = DesignPoint.from_dict({"model": "olmoe-1b-7b", "batch": 16, "trace": "synthetic", "trace_steps": 4,
                               "profile_steps": 2})
    seen = []

    def run_many(fn, tasks):
        fn, tasks = pickle.loads(pickle.dumps((fn, tasks)))
        seen.append(len(tasks))
        return [fn(d, m) for d, m in tasks]
    before = (C.t_layer_fixed_us, C.stretch_per_hop)
    assert un.point_bands(p, 5, seed=2, run_many=run_many) == un.point_bands(p, 5, seed=2)
    assert seen == [5] and (C.t_layer_fixed_us, C.stretch_per_hop) == before
