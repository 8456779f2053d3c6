"""The MFU-cascade scheduler: worked example, oracle agreement, placement, invariants."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.mapping import fetch as fetch_mod
from dse.mapping import placement as pl
from dse.mapping.scheduler import Scheduler, schedule
from dse.reproduce.registry import judge, reproduce
from dse.workload.trace import loads as loads_of
from tests.mapping import oracle_scheduler as oracle


# -- the worked example of spec section 5 (exact) -------------------------------------------------
def _worked(pooling):
    dom = pl.domain(4, core_side=2, groups_per_core=4, die_units_x=2, die_units_y=2)
    loads = np.array([[[40, 1, 1, 1]]])
    return schedule(loads, dom, pl.place("contiguous", dom, loads[0].astype(float)), 4, pooling)


def test_worked_example_direct():
    s = _worked("direct")
    assert s.rounds_mean == 10
    assert s.occupancy == pytest.approx(13 / 40)
    assert s.ideal_mfu == pytest.approx(43 / 52)


def test_worked_example_broadcast():
    s = _worked("broadcast")
    assert s.rounds_mean == 4
    assert s.occupancy == pytest.approx(13 / 16)
    assert s.actual_mfu == pytest.approx(43 / 64)
    assert s.streams_peak == 1            # only the hot expert is multicast
    assert float(s.readouts_pooled.sum()) == 4 + 3   # hot read in each of 4 rounds, cold once each


def test_worked_example_reproduce_rows_pass():
    rows = [r for r in reproduce("worked_example")]
    assert len(rows) == 4
    assert all(r.status == "pass" for r in rows), [(r.key, r.ours) for r in rows]


# -- oracle agreement (hypothesis) --------------------------------------------------------------
@st.composite
def cases(draw):
    E = draw(st.integers(2, 20))
    k = draw(st.integers(1, min(4, E)))
    S = draw(st.integers(1, 5))
    L = draw(st.integers(1, 3))
    B = draw(st.integers(1, 10))
    side = draw(st.integers(1, 3))
    dx = draw(st.integers(side, 6))
    dy = draw(st.integers(side, 6))
    rem = draw(st.sampled_from(["partial", "idle"]))
    groups = draw(st.integers(1, side * side))
    w = draw(st.integers(1, 4))
    pooling = draw(st.sampled_from(["direct", "broadcast"]))
    fetch = draw(st.sampled_from(["fifo", "load_aware"]))
    depth = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2 ** 31))
    skew = draw(st.floats(0.0, 3.0))
    return E, k, S, L, B, side, dx, dy, rem, groups, w, pooling, fetch, depth, seed, skew


def _random_trace(E, k, S, L, B, seed, skew):
    rng = np.random.default_rng(seed)
    logit = skew * rng.standard_normal((L, E))
    g = logit[None, :, None, :] - np.log(-np.log(rng.random((S, L, B, E))))
    return np.argsort(-g, axis=-1)[..., :k]


def _oracle_domain(dom):
    a = dom.arrays
    groups_of_core = [[] for _ in range(dom.n_cores)]
    for g, (st_, n) in enumerate(zip(a.group_start, a.group_units)):
        groups_of_core[int(a.group_core[g])].append(list(range(int(st_), int(st_ + n))))
    return list(dom.core_units), groups_of_core


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_vectorised_matches_oracle(case):
    E, k, S, L, B, side, dx, dy, rem, groups, w, pooling, fetch, depth, seed, skew = case
    ids = _random_trace(E, k, S, L, B, seed, skew)
    dom = pl.domain(E, side, groups, dx, dy, rem)
    rng = np.random.default_rng(seed + 1)
    slot = np.stack([rng.permutation(dom.units)[:E] for _ in range(L)])      # any injective placement
    sched = Scheduler(dom, slot, w, pooling, fetch, depth).run([loads_of(ids, E)])
    core_units, goc = _oracle_domain(dom)
    ref = oracle.run(ids.tolist(), E, slot.tolist(), core_units, goc, w, pooling, fetch, depth)
    assert sched.tokens.tolist() == ref["tokens"]
    assert sched.jobs.tolist() == ref["jobs"]
    assert sched.union.tolist() == ref["union"]
    np.testing.assert_allclose(sched.rounds, ref["rounds"], rtol=1e-12)
    np.testing.assert_allclose(sched.readouts_pooled, ref["readouts_pooled"], rtol=1e-12)
    hist = {i: int(c) for i, c in enumerate(sched.streams_hist) if c}
    assert hist == ref["hist"]
    for key in ("ideal_mfu", "occupancy", "actual_mfu"):
        assert getattr(sched, key) == pytest.approx(ref[key], rel=1e-12)


# -- invariants ----------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(cases())
def test_cascade_identities(case):
    E, k, S, L, B, side, dx, dy, rem, groups, w, _, fetch, depth, seed, skew = case
    ids = _random_trace(E, k, S, L, B, seed, skew)
    dom = pl.domain(E, side, groups, dx, dy, rem)
    slot = pl.place("lpt", dom, loads_of(ids, E).mean(axis=0))
    d = schedule(loads_of(ids, E), dom, slot, w, "direct", fetch, depth)
    b = schedule(loads_of(ids, E), dom, slot, w, "broadcast", fetch, depth)
    for s in (d, b):
        assert s.actual_mfu == pytest.approx(s.ideal_mfu * s.occupancy)
        assert 0 < s.occupancy <= 1 + 1e-12
        assert 0 < s.ideal_mfu <= 1 + 1e-12
        assert s.readouts_pooled.sum() <= s.readouts_unpooled.sum() + 1e-9
    assert b.rounds.sum() <= d.rounds.sum() + 1e-9                  # pooling never lengthens a layer
    assert b.occupancy >= d.occupancy - 1e-12
    lower = math.ceil(b.jobs.max() / dom.units)
    assert b.rounds.max() >= lower - 1e-12 or fetch == "load_aware"


def test_streaming_chunks_equal_one_array(monkeypatch):
    monkeypatch.setattr(fetch_mod.Prefetch, "BATCH", 0)    # process the prefetch recurrence chunk by chunk
    rng = np.random.default_rng(3)
    ids = _random_trace(32, 4, 24, 2, 16, 3, 1.5)
    dom = pl.domain(32, 2, 4, die_units_x=4, die_units_y=8)
    slot = pl.place("lpt", dom, loads_of(ids, 32).mean(axis=0))
    ld = loads_of(ids, 32)
    for fetch in ("fifo", "load_aware"):
        one = Scheduler(dom, slot, 4, "broadcast", fetch, 4).run([ld])
        many = Scheduler(dom, slot, 4, "broadcast", fetch, 4).run([ld[i:i + 8] for i in range(0, 24, 8)])
        np.testing.assert_array_equal(one.rounds, many.rounds)
        np.testing.assert_array_equal(one.streams_hist, many.streams_hist)
        assert one.occupancy == many.occupancy
    del rng


def test_load_aware_fetch_raises_occupancy_on_skewed_trace():
    ids = _random_trace(64, 4, 32, 2, 32, 5, 1.5)
    dom = pl.domain(64, 2, 4, die_units_x=4, die_units_y=16)
    ld = loads_of(ids, 64)
    slot = pl.place("lpt", dom, ld.mean(axis=0))
    fifo = schedule(ld, dom, slot, 4, "broadcast", "fifo")
    la = schedule(ld, dom, slot, 4, "broadcast", "load_aware", 8)
    assert la.occupancy > fifo.occupancy
    assert la.ideal_mfu == fifo.ideal_mfu


def test_judge_uses_trace_tolerance():
    assert judge(0.5, 0.59, "trace")[1] == "pass"
    assert judge(0.5, 0.61, "trace")[1] == "miss"


def test_overflow_comes_from_the_hottest_experts_of_a_group():
    # one core of 4 units in 2 groups of 2; group 0 holds experts with 6 and 1 jobs (w = 1)
    dom = pl.domain(4, core_side=2, groups_per_core=2, die_units_x=2, die_units_y=2)
    loads = np.array([[[6, 1, 0, 0]]])
    s = schedule(loads, dom, pl.place("contiguous", dom, loads[0].astype(float)), 1, "broadcast")
    assert s.rounds_mean == 2                      # ceil(7 jobs / 4 tiles)
    assert s.streams_peak == 1                     # 3 overflow jobs all from the 6-job expert
    assert s.overflow_jobs == 3
    d = schedule(loads, dom, pl.place("contiguous", dom, loads[0].astype(float)), 1, "direct")
    assert d.rounds_mean == 4                      # 7 jobs on the group's 2 tiles


@pytest.mark.parametrize("jobs, depth, expected", [
    ([1, 3, 0], 1, [1, 1, 0]),      # step 0's idle tile pulls one job of step 1
    ([1, 0, 3], 1, [1, 0, 2]),      # step 2 is beyond a one-step look-ahead
    ([1, 0, 3], 2, [1, 0, 1]),      # ... but within a two-step one
])
def test_load_aware_prefetch_by_hand(jobs, depth, expected):
    dom = pl.domain(2, core_side=2, groups_per_core=4, die_units_x=2, die_units_y=1)   # one core, 2 tiles
    loads = np.array([[[j, 0]] for j in jobs])
    slot = pl.place("contiguous", dom, loads[0].astype(float))
    fifo = schedule(loads, dom, slot, 1, "broadcast", "fifo")
    assert fifo.rounds.ravel().tolist() == [math.ceil(j / 2) for j in jobs]
    la = schedule(loads, dom, slot, 1, "broadcast", "load_aware", depth)
    assert la.rounds.ravel().tolist() == expected


def test_overflow_beyond_the_hottest_expert_needs_more_streams():
    # one core of 8 units (a 2 x 4 die at side 4, partial) in 2 groups of 4; w = 1
    dom = pl.domain(8, core_side=4, groups_per_core=4, die_units_x=2, die_units_y=4)
    assert dom.core_units == (8,) and dom.group_units == (4, 4)
    loads = np.array([[[3, 1, 3, 1, 0, 0, 0, 0]]])
    s = schedule(loads, dom, pl.place("contiguous", dom, loads[0].astype(float)), 1, "broadcast")
    assert s.rounds_mean == 1 and s.overflow_jobs == 4   # X = 8 - 1 x 4 jobs leave group 0
    assert s.streams_peak == 2                           # the two 3-job experts cover them (not 1 + 1 + 3)
    loads = np.array([[[5, 1, 1, 1, 0, 0, 0, 0]]])
    s = schedule(loads, dom, pl.place("contiguous", dom, loads[0].astype(float)), 1, "broadcast")
    assert s.rounds_mean == 1 and s.streams_peak == 1    # X = 4 <= 5: the hottest alone


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 17, 64])
def test_short_axis_reductions_equal_numpys(n):
    from dse.mapping.intops import max_last as _max_last
    from dse.mapping.intops import sum_last as _sum_last
    a = np.random.default_rng(n).integers(0, 30000, size=(5, 4, 3, n)).astype(np.int16)
    assert np.array_equal(_sum_last(a), a.sum(axis=-1, dtype=np.int32)) and _sum_last(a).dtype == np.int32
    assert np.array_equal(_max_last(a), a.max(axis=-1))


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_ceil_divisions_equal_integer_division(dtype):
    from dse.mapping.intops import FLOAT_DIV_EXACT
    from dse.mapping.intops import ceil_div as _ceil_div
    from dse.mapping.intops import ceil_div_pos as _ceil_div_pos
    rng = np.random.default_rng(7)
    hi = min(np.iinfo(dtype).max - 64, FLOAT_DIV_EXACT - 1)
    b = rng.integers(1, 300, size=64).astype(np.int32)
    a = np.concatenate([rng.integers(0, hi, size=(200, 64)), b * rng.integers(0, hi // 300, size=(50, 64)),
                        b * rng.integers(1, hi // 300, size=(50, 64)) - 1]).astype(dtype)   # exact multiples, one below
    want = -(-a.astype(np.int64) // b)
    got = _ceil_div(a, b)
    assert got.dtype == np.result_type(a, b) and np.array_equal(got, want)
    big = np.array([FLOAT_DIV_EXACT + 5, 3 * FLOAT_DIV_EXACT], dtype=np.int64)        # integer division there
    assert np.array_equal(_ceil_div(big, np.int32(3)), -(-big // 3))
    small = a[:, 0].clip(0, 30000).astype(np.int16)
    for w in (1, 2, 3, 4, 5, 8, 16):
        assert np.array_equal(_ceil_div_pos(small, w), -(-small // w))


@pytest.mark.parametrize("ft", [np.float32, np.float64])
def test_float_ceil_division_is_exact_below_the_precision(ft):
    """``ceil_div_float`` against integer ceil division: random and edge numerators (multiples of
    b, one below, one above) up to just below 2^24, for every b up to 300."""
    from dse.mapping.intops import ceil_div_float
    rng = np.random.default_rng(5)
    b = np.arange(1, 301)
    k = np.concatenate([rng.integers(0, 2 ** 24 // 300, 200), [0, 1, 2 ** 24 // 300 - 1]])[:, None]
    a = np.concatenate([k * b, k * b + 1, np.maximum(k * b - 1, 0), rng.integers(0, 2 ** 24, (200, 300)),
                        np.full((1, 300), 2 ** 24 - 1)])
    bb = np.broadcast_to(b, a.shape)
    got = ceil_div_float(a.astype(ft), bb.astype(ft))
    assert got.dtype == ft and np.array_equal(got.astype(np.int64), -(-a // bb))


def test_uint8_ceil_division_is_exact_up_to_255():
    """Every uint8 value and tile width: no ``a + w - 1`` wrapping past 255."""
    from dse.mapping.intops import ceil_div_pos as _ceil_div_pos
    a = np.arange(256, dtype=np.uint8)
    for w in range(1, 70):
        got = _ceil_div_pos(a, w)
        assert got.dtype == np.uint8 and np.array_equal(got, -(-np.arange(256) // w)), w


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 31), groups=st.sampled_from([1, 2, 3, 4, 16]), w=st.integers(1, 20),
       pooling=st.sampled_from(["direct", "broadcast"]), fetch=st.sampled_from(["fifo", "load_aware"]),
       hi=st.sampled_from([3, 200, 256, 40_000]))
def test_uint8_int16_and_int32_layouts_give_the_same_schedule(seed, groups, w, pooling, fetch, hi):
    """The unit layout's type (``layout_dtype``: uint8 below 256 tokens, int16, int32) changes no
    schedule: loads up to 255 (the uint8 edge), and beyond it in the wider types."""
    import dse.mapping.scheduler as sm
    rng = np.random.default_rng(seed)
    dom = pl.domain(48, 4, groups, 8, 8)
    slot = np.stack([rng.permutation(dom.units)[:48] for _ in range(3)])
    loads = rng.integers(0, hi, size=(7, 3, 48)) * (rng.random((7, 3, 48)) < 0.6)
    loads[0, 0, :4] = hi - 1                     # the largest load, hot in one core
    sch = Scheduler(dom, slot, w, pooling, fetch, 3)
    got = {}
    for name, u8, i16 in (("uint8", 256, 32_000), ("int16", 0, 32_000), ("int32", 0, 0)):
        sm.UINT8_LOADS, sm.INT16_LOADS = u8, i16
        try:
            ul = sch.layout(loads)
            got[name] = (ul.dtype, sch.run_layout([ul], {}))
        finally:
            sm.UINT8_LOADS, sm.INT16_LOADS = 256, 32_000
    assert got["int32"][0] == np.int32 and got["int16"][0] == (np.int16 if hi < 32_000 else np.int32)
    assert got["uint8"][0] == (np.uint8 if hi <= 256 else got["int16"][0])
    want = got["int32"][1]
    for name in ("uint8", "int16"):
        s = got[name][1]
        assert s.summary() == want.summary(), name
        for key in ("tokens", "jobs", "union", "rounds", "readouts_pooled", "streams_hist", "streams"):
            assert np.array_equal(getattr(s, key), getattr(want, key)), (name, key)
        assert s.overflow_jobs == want.overflow_jobs


@pytest.mark.parametrize("hi", [40, 400])         # 400: buffered sums past int16, single entries not
def test_load_aware_fetch_same_in_int16_and_int32(monkeypatch, hi):
    rng = np.random.default_rng(3)
    jobs = rng.integers(0, hi, size=(300, 3, 7)) * (rng.random((300, 3, 7)) < 0.4)
    pes = np.array([1, 2, 3, 1, 4, 2, 1])

    def run():
        pf = fetch_mod.Prefetch(5, pes)
        for c in np.array_split(jobs, 4):          # several pushes: the credit crosses batches
            pf.push(c)
        return pf.finish()
    small = run()
    monkeypatch.setattr(fetch_mod, "SMALL_INT", 0)  # always int32
    assert np.array_equal(small, run())


def test_the_recurrences_type_is_decided_on_a_bound_of_the_buffered_jobs():
    """``fetch._buffered_max``: never below the most jobs buffered for one resource, and exact
    whenever it decides for int32 (at or above ``SMALL_INT``)."""
    rng = np.random.default_rng(11)
    for n, hi in ((10, 5), (128, 60), (128, 200), (300, 400), (5, 30_000)):
        buf = rng.integers(0, hi, size=(n, 4, 9)).astype(np.int32)
        exact = int(buf.sum(axis=0, dtype=np.int64).max())
        got = fetch_mod._buffered_max(buf)
        assert got >= exact and (got < fetch_mod.SMALL_INT or got == exact), (n, hi)


@pytest.mark.parametrize("groups", [3, 4, 16])      # unequal, equal and one-unit PE groups of 16 units
def test_a_shared_memo_gives_the_schedules_of_fresh_ones(groups):
    """Designs of one layout share its memo (direct pooling leaves the groups' hottest expert
    uncomputed; a broadcast design computes it later): each schedule equals a fresh one."""
    rng = np.random.default_rng(groups)
    dom = pl.domain(48, 4, groups, 8, 8)
    slot = np.stack([rng.permutation(dom.units)[:48] for _ in range(2)])
    loads = rng.integers(0, 9, size=(6, 2, 48)) * (rng.random((6, 2, 48)) < 0.5)
    memo: dict = {}
    for pooling, w, fetch in (("direct", 2, "fifo"), ("broadcast", 2, "fifo"), ("direct", 1, "fifo"),
                              ("broadcast", 1, "load_aware"), ("direct", 2, "load_aware"),
                              ("broadcast", 2, "load_aware"), ("direct", 1, "load_aware")):
        sch = Scheduler(dom, slot, w, pooling, fetch, 2)
        got, want = sch.run_layout([sch.layout(loads)], memo).summary(), sch.run([loads]).summary()
        assert got == want
    # both poolings' chunks of a tile width kept: its per-unit jobs and group sums are dropped
    assert not any(k[0] in ("jobs", "groups") for k in memo if isinstance(k, tuple))


@pytest.mark.parametrize("unit", [True, False])
@pytest.mark.parametrize("batch", [0, 256])
def test_load_aware_fetch_with_layout_padding_equals_the_oracle(monkeypatch, unit, batch):
    """Resources without PE tiles (layout padding, never any job) change nothing, whether the
    recurrence keeps them (one tile each) or drops them; streamed or in one batch."""
    monkeypatch.setattr(fetch_mod.Prefetch, "BATCH", batch)
    rng = np.random.default_rng(7 + unit)
    pes = np.array([1, 0, 1, 1, 0, 1] if unit else [1, 0, 3, 2, 0, 4])
    jobs = rng.integers(0, 9, size=(40, 3, pes.size)) * (rng.random((40, 3, pes.size)) < 0.6)
    jobs[:, :, pes == 0] = 0
    pf = fetch_mod.Prefetch(6, pes)
    for c in np.array_split(jobs, 3):
        pf.push(c)
    got = pf.finish()
    want = np.array([oracle._prefetch(jobs[:, layer].tolist(), pes.tolist(), 6) for layer in range(3)]).T
    assert np.array_equal(got, want)


def test_a_memoised_chunk_is_read_only_and_shared_by_the_fetch_knobs():
    """Designs differing only in fetch knobs reuse one chunk schedule; nothing can alter it."""
    rng = np.random.default_rng(5)
    dom = pl.domain(48, 4, 2, 8, 8)
    slot = np.stack([rng.permutation(dom.units)[:48] for _ in range(2)])
    loads = rng.integers(0, 9, size=(12, 2, 48))
    memo: dict = {}
    fifo = Scheduler(dom, slot, 2, "broadcast")
    la = Scheduler(dom, slot, 2, "broadcast", "load_aware", 4)
    ul = fifo.layout(loads)
    a, b = fifo.run_layout([ul], memo), la.run_layout([ul], memo)
    assert [k for k in memo if k[0] == "chunk"] == [("chunk", 2, "broadcast")]
    assert b.summary() == la.run([loads]).summary() and a.summary() == fifo.run([loads]).summary()
    with pytest.raises(ValueError):
        a.rounds[0, 0] = 0
