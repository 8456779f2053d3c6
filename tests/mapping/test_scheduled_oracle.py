"""The scheduled time (dse.mapping.rounds + dse.performance.scheduled) against the plain per-token,
per-round oracle ``tests/mapping/oracle_schedule.py``, to relative 1e-9.

Two hypothesis tests: random small domains, traces, batches and knobs (500 cases, the time
parameters drawn too), and random designs of the real pipeline (infeasible ones included: their
scheduled metrics are None, as the oracle has no schedule to time)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.catalog import get_model
from dse.mapping import placement as pl
from dse.mapping import rounds
from dse.mapping.scheduler import Scheduler
from dse.mapping.trace_mapping import placement_for
from dse.performance import scheduled
from dse.pipeline.evaluate import evaluate
from dse.spec import DesignPoint
from dse.workload.trace import loads as loads_of
from dse.workload.window import workload
from tests.mapping import oracle_schedule as oracle
from tests.mapping.test_scheduler import _oracle_domain, _random_trace, cases

REL = 1e-9

params = st.fixed_dictionaries({
    "read_us": st.floats(0.1, 100.0), "hop": st.floats(1.0, 2.0), "stream_us": st.floats(0.0, 60.0),
    "tok_us": st.floats(0.0, 60.0), "io_us": st.floats(0.0, 5.0),
    "level_us": st.floats(0.0, 20.0)})


def vectorised(loads, dom, slot, w, pooling, fetch, depth, par, layer_tiles, pool_tiles, batch):
    sch = Scheduler(dom, slot, w, pooling, fetch, depth)
    sched = sch.run([loads])
    leads, smax = rounds.round_profile(sch, sch.layout(loads))
    read = scheduled.round_read_us(par["read_us"], smax, par["hop"], par["stream_us"])
    t = scheduled.step_layer_us(leads, sched.rounds, read, par["tok_us"], par["io_us"],
                                par["level_us"])
    return scheduled.ffn_us_per_token_scheduled(t, layer_tiles, pool_tiles, batch)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), params, st.integers(1, 4))
def test_vectorised_equals_oracle(case, par, extra_dies):
    E, k, S, L, B, side, dx, dy, rem, groups, w, pooling, fetch, depth, seed, skew = case
    ids = _random_trace(E, k, S, L, B, seed, skew)
    dom = pl.domain(E, side, groups, dx, dy, rem)
    rng = np.random.default_rng(seed + 1)
    slot = np.stack([rng.permutation(dom.units)[:E] for _ in range(L)])
    ld = loads_of(ids, E)
    tiles, pool = dom.units, dom.units * extra_dies
    got = vectorised(ld, dom, slot, w, pooling, fetch, depth, par, tiles, pool, B)
    core_units, goc = _oracle_domain(dom)
    ref = oracle.us_per_token(ld.tolist(), slot.tolist(), core_units, goc, w, pooling, fetch, depth, par,
                              tiles, pool, B)
    assert got == pytest.approx(ref, rel=REL, abs=1e-300)


designs = st.fixed_dictionaries({
    "model": st.sampled_from(["qwen3.5-35b-a3b", "olmoe-1b-7b", "mixtral-8x7b"]),
    "batch": st.integers(1, 256),
    "core_side": st.integers(1, 8),
    "tile_width": st.sampled_from([1, 2, 4, 8, 16]),
    "pooling": st.sampled_from(["direct", "broadcast"]),
    "fetch": st.sampled_from(["fifo", "load_aware"]),
    "fetch_queue_depth": st.integers(1, 8),
    "placement": st.sampled_from(["contiguous", "lpt", "coactivation"]),
    "array_depth": st.sampled_from([8192, 16384, 32768, 65536]),
    "core_mesh_link_bits": st.sampled_from([128, 256, 512, 1024]),
    "layer_layout": st.sampled_from(["interleaved", "packed"]),
    "trace_seed": st.integers(0, 3),
})


def oracle_of(p: DesignPoint, m: dict) -> float:
    """The oracle on the pipeline's own inputs: its window's loads, placement and time parameters."""
    model = get_model(p.model)
    wl = workload(p, model)
    dom = pl.domain(model.experts, p.core_side, p.groups, p.die_units_x, p.die_units_y, p.core_remainder,
                    p.layer_layout)
    slot = placement_for(wl, dom, p.placement)
    link = m["core_mesh_provision_gbps"] / p.core_side
    par = {"read_us": m["t_layer_us"], "hop": m["stretch_hop_factor"],
           "stream_us": m["d_used_columns"] * 128 / (m["core_mesh_provision_gbps"] * 1e3),
           "tok_us": 2 * m["d_used_columns"] * 128 / (m["unit_gflops"] * 1e3),
           "io_us": m["chunks_per_unit"] * model.hidden * 3 / (link * 1e3),
           "level_us": (m["die_noc_load"] + m["d2d_load"] + m["node_load"]) * m["t_layer_us"]}
    core_units, goc = _oracle_domain(dom)
    return oracle.us_per_token(wl.load.tolist(), slot.tolist(), core_units, goc, p.tile_width, p.pooling,
                               p.fetch, p.fetch_queue_depth, par, dom.units * m["tp_degree"],
                               m["dies"] * m["die_active_units"], p.run_batch)


@pytest.mark.long                # 300 designs against the plain-Python oracle: about a minute
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(designs)
def test_pipeline_equals_oracle(knobs):
    p = DesignPoint.from_dict({**knobs, "trace_steps": 2, "profile_steps": 2})
    m = evaluate(p).metrics
    if m["actual_mfu"] is None:                 # infeasible before scheduling: nothing to time
        assert not m["feasible"]
        assert m["ffn_us_per_token_scheduled"] is None and m["usd_per_mtok_scheduled"] is None
        return
    # infeasible later (die over its area budget): timed as the delivered figure is, not priced
    assert (m["usd_per_mtok_scheduled"] is None) == (m["pool_cost_usd"] is None)
    got = m["ffn_us_per_token_scheduled"]
    assert math.isfinite(got) and got > 0
    assert got == pytest.approx(oracle_of(p, m), rel=REL)
    assert m["scheduled_tokens_per_s"] == pytest.approx(1e6 / got, rel=1e-12)
