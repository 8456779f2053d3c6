"""The scheduled time's limits (docs/model/scheduled-time.md): compute-bound full groups give
peak x actual MFU, perfect read-bound spreading gives the published read-bound figure, and the
time is monotone where physics says it must be."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.mapping import placement as pl
from dse.mapping import rounds
from dse.mapping.scheduler import Scheduler
from dse.performance import delivered, latency, scheduled
from dse.pipeline.evaluate import evaluate
from dse.spec import DesignPoint
from dse.workload.trace import loads as loads_of
from tests.mapping.test_scheduler import _random_trace, cases

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def per_token(loads, dom, slot, w, pooling, fetch, depth, read_us, tok_us, pool_tiles, batch):
    """Scheduled time per token without communication (no multicast stretch, io or level terms)."""
    sch = Scheduler(dom, slot, w, pooling, fetch, depth)
    sched = sch.run([loads])
    leads, _ = rounds.round_profile(sch, sch.layout(loads))
    t = scheduled.step_layer_us(leads, sched.rounds, read_us, tok_us, 0.0, 0.0)
    return scheduled.ffn_us_per_token_scheduled(t, dom.units, pool_tiles, batch), sched


@SETTINGS
@given(cases(), st.integers(1, 4), st.floats(1e5, 1e7), st.floats(100.0, 1000.0))
def test_full_compute_bound_groups_equal_peak_times_actual_mfu(case, extra, expert_bytes, unit_gflops):
    """Every job full (loads a multiple of w) and compute-bound (w t_tok > t_read): the scheduled
    time is FLOPs per token / (pool peak x actual MFU), the delivered figure without stretch."""
    E, k, S, L, B, side, dx, dy, rem, groups, w, pooling, fetch, depth, seed, skew = case
    ids = _random_trace(E, k, S, L, B, seed, skew)
    ld = loads_of(ids, E) * w                              # every token w times: B w tokens a step
    dom = pl.domain(E, side, groups, dx, dy, rem)
    slot = pl.place("lpt", dom, ld.mean(axis=0))
    tok = scheduled.job_compute_us_per_token(expert_bytes, unit_gflops)
    pool = dom.units * extra
    got, sched = per_token(ld, dom, slot, w, pooling, fetch, depth, 0.5 * tok, tok, pool, B * w)
    flops = latency.flops_per_token(L, k, expert_bytes)
    want = delivered.compute_us_per_token_delivered(flops, delivered.delivered_gflops(pool * unit_gflops,
                                                                                      sched.actual_mfu, 1.0))
    assert got == pytest.approx(want, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(2, 5), st.integers(1, 4), st.integers(1, 6), st.integers(0, 99),
       st.floats(1e5, 1e7), st.floats(1.0, 100.0))
def test_perfect_spreading_read_bound_equals_published_read_bound(side, dies_x, extra, S, seed, expert_bytes, gbps):
    """Every tile of the layer's domain holds an expert with one token (U = P, one read-bound round a
    step): the scheduled time is the published read-bound figure L U P_e / B / pool read BW."""
    dom = pl.domain(side * side * dies_x, side, 1, side * dies_x, side)
    E = dom.units
    L = 2
    rng = np.random.default_rng(seed)
    ids = np.stack([np.stack([rng.permutation(E)[:, None] for _ in range(L)]) for _ in range(S)])   # B = E, k = 1
    ld = loads_of(ids, E)
    slot = pl.place("contiguous", dom, ld.mean(axis=0))
    read = expert_bytes / (gbps * 1e9) * 1e6
    pool = dom.units * extra
    got, _ = per_token(ld, dom, slot, 4, "direct", "fifo", 1, read, 0.1 * read, pool, E)
    step_bytes = latency.weight_bytes_per_step(L, float(E), expert_bytes, 0.0)
    want = latency.read_us_per_token(latency.weight_bytes_per_token(step_bytes, E), pool * gbps)
    assert got == pytest.approx(want, rel=1e-9)


knobs = st.fixed_dictionaries({
    "batch": st.integers(1, 256), "core_side": st.integers(1, 8), "tile_width": st.sampled_from([1, 2, 4, 8, 16]),
    "pooling": st.sampled_from(["direct", "broadcast"]), "fetch": st.sampled_from(["fifo", "load_aware"]),
    "placement": st.sampled_from(["contiguous", "lpt"]), "core_mesh_link_bits": st.sampled_from([128, 512]),
})


def _t(kn, **more):
    m = evaluate(DesignPoint.from_dict({**kn, **more, "trace_steps": 4, "profile_steps": 4})).metrics
    return m["ffn_us_per_token_scheduled"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(knobs, st.floats(0.25, 4.0), st.floats(1.0, 4.0))
def test_more_read_bandwidth_never_slower(kn, scale, factor):
    a, b = _t(kn, read_bw_scale=scale), _t(kn, read_bw_scale=scale * factor)
    if a is not None:
        assert b <= a * (1 + 1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(knobs, st.floats(100.0, 1600.0), st.floats(1.0, 4.0))
def test_more_peak_never_slower(kn, pe_mhz, factor):
    a, b = _t(kn, pe_mhz=pe_mhz), _t(kn, pe_mhz=min(1600.0, pe_mhz * factor))
    if a is not None:
        assert b <= a * (1 + 1e-12)


def test_never_below_published_or_peak_compute():
    """The published figure streams the union over the whole pool at peak: a floor of the rounds."""
    for b in (1, 8, 64, 128):
        m = evaluate(DesignPoint.from_dict({"batch": b, "trace_steps": 8})).metrics
        assert m["ffn_us_per_token_scheduled"] >= m["ffn_latency_us_per_token"]


def _step_layer_us_loop(leads, rounds, read_us, tok_us, io_us, level_us):
    """``scheduled.step_layer_us`` as the plain loop over n it replaced (the reference)."""
    rho = np.asarray(rounds, dtype=float)
    a = np.asarray(read_us, dtype=float) * np.ones_like(rho)
    total, prev = rho * a, a
    for n in range(1, leads.shape[0] + 1):
        f = np.maximum(a, n * tok_us) + n * io_us
        total = total + np.minimum(leads[n - 1], rho) * (f - prev)
        prev = f
    return total + np.where(rho > 0, level_us, 0.0)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 2, 3, 4, 8, 16]), st.integers(1, 9), st.integers(1, 5), st.booleans(),
       st.floats(0.0, 60.0), st.floats(0.0, 5.0), st.floats(0.0, 20.0), st.integers(0, 2**32 - 1))
def test_step_layer_us_equals_the_loop_bit_for_bit(w, s, L, per_step_read, tok_us, io_us, level_us, seed):
    """The vectorised sum over n adds its terms in the loop's order: equal bit for bit (the
    goldens hold the scheduled figures to the last bit), fetch-capped rounds and idle steps included."""
    rng = np.random.default_rng(seed)
    rho = rng.integers(0, 12, (s, L)) * (rng.random((s, L)) < 0.9)
    leads = -np.sort(-rng.integers(0, 15, (w, s, L)), axis=0)          # K_n non-increasing in n
    read = rng.uniform(0.1, 100.0, (s, L)) if per_step_read else float(rng.uniform(0.1, 100.0))
    args = (leads, rho, read, tok_us, io_us, level_us)
    assert np.array_equal(scheduled.step_layer_us(*args), _step_layer_us_loop(*args))
