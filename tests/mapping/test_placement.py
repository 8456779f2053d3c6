"""Scheduling domains (geometry, partial / idle core remainders, packed vs interleaved layer
layout) and the placement policies (contiguous, LPT, co-activation)."""
from __future__ import annotations

import numpy as np
import pytest

from dse.constants import C
from dse.mapping import placement as pl
from dse.spec import DesignPoint


def test_packed_domain_holds_exactly_the_layer():
    # spec s3: a side-4 core holds 16 experts -> 256 experts fill 16 whole cores
    d = pl.domain(256, 4, 16, layout="packed")
    assert (d.n_cores, d.units, d.dies) == (16, 256, 1)
    # side 6 on 16 x 20: six whole 36-unit cores (216) then the largest partial cores (24 each)
    d6 = pl.domain(256, 6, 36, layout="packed")
    assert d6.core_units == (36,) * 6 + (24, 24) and d6.units == 264
    # 512 experts at side 4: one full die (20 cores, 320 units) + 12 cores of a second die
    d2 = pl.domain(512, 4, 16, layout="packed")
    assert (d2.dies, d2.n_cores, d2.units) == (2, 32, 512)


def test_interleaved_domain_is_every_tile_of_the_dies():
    d = pl.domain(256, 4, 16, layout="interleaved")
    assert (d.n_cores, d.units) == (20, 320)
    assert pl.domain(256, 4, 16) == d          # the function's default


def test_layout_knob_changes_the_schedule_domain():
    from dse.pipeline.evaluate import evaluate
    a = evaluate(DesignPoint.from_dict({"layer_layout": "packed", "trace_steps": 8})).metrics
    b = evaluate(DesignPoint.from_dict({"layer_layout": "interleaved", "trace_steps": 8})).metrics
    assert a["schedule_pe_tiles"] == 256 and b["schedule_pe_tiles"] == 320
    assert a["jobs_per_layer"] == b["jobs_per_layer"]          # same trace, same jobs



# -- domain geometry ------------------------------------------------------------------------------
def test_domain_side4_is_20_cores_of_16():
    d = pl.domain(256, 4, 16)
    assert (d.dies, d.n_cores, d.units, d.n_groups) == (1, 20, 320, 320)
    assert set(d.core_units) == {16}


def test_domain_partial_and_idle_remainders():
    part = pl.domain(256, 6, 36, core_remainder="partial")
    assert part.units == 320 and part.n_cores == 12
    assert sorted(part.core_units) == sorted([36, 36, 24] * 3 + [12, 12, 8])
    idle = pl.domain(256, 8, 64, core_remainder="idle")
    assert idle.core_units == (64, 64, 64, 64)
    big = pl.domain(512, 4, 16)            # 512 experts need two dies of 320 units
    assert big.dies == 2 and big.units == 640


def test_domain_groups_split_units_evenly():
    d = pl.domain(256, 4, 2)
    assert d.n_groups == 40 and set(d.group_units) == {8}
    d3 = pl.domain(256, 4, 3)
    assert sorted(set(d3.group_units)) == [5, 6]


# -- placement ------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", pl.POLICIES)
def test_placement_is_injective(policy):
    rng = np.random.default_rng(1)
    dom = pl.domain(64, 2, 4, die_units_x=6, die_units_y=12)
    load = rng.gamma(0.5, 4.0, size=(3, 64))
    co = rng.random((3, 64, 64))
    slot = pl.place(policy, dom, load, co + co.transpose(0, 2, 1))
    for layer in range(3):
        assert len(set(slot[layer])) == 64 and slot[layer].max() < dom.units


def test_lpt_spreads_hot_experts_over_cores():
    dom = pl.domain(16, 2, 4, die_units_x=4, die_units_y=4)        # 4 cores of 4 units
    load = np.array([[10, 10, 10, 10] + [1] * 12], dtype=float)
    slot = pl.place("lpt", dom, load)
    cores = dom.arrays.unit_core[slot[0, :4]]
    assert sorted(cores) == [0, 1, 2, 3]
    contiguous = dom.arrays.unit_core[pl.place("contiguous", dom, load)[0, :4]]
    assert set(contiguous) == {0}


def test_coactivation_separates_cofiring_pair():
    dom = pl.domain(8, 2, 4, die_units_x=2, die_units_y=4)         # 2 cores of 4 units
    load = np.array([[4, 4, 3, 3, 1, 1, 1, 1]], dtype=float)
    co = np.zeros((1, 8, 8))
    co[0, 0, 2] = co[0, 2, 0] = 50.0                                # 0 and 2 always fire together
    lpt = pl.place("lpt", dom, load)
    coa = pl.place("coactivation", dom, load, co)
    core = dom.arrays.unit_core
    assert core[lpt[0, 0]] == core[lpt[0, 2]]                       # plain LPT pairs them
    assert core[coa[0, 0]] != core[coa[0, 2]]                       # coactivation-aware does not


# -- LPT against a slow oracle: every group of the domain scored, co-activation summed over the
# core's members at each rank (the straightforward implementation)
def oracle_lpt(dom, load, coact):
    a = dom.arrays
    L, E = load.shape
    N, G = dom.n_cores, dom.n_groups
    rows = np.arange(L)
    order = np.argsort(-load, axis=1, kind="stable")
    core_pes = a.core_units.astype(np.float64)
    core_load = np.zeros((L, N))
    core_free = np.broadcast_to(a.core_units, (L, N)).copy()
    group_load = np.zeros((L, G))
    group_free = np.broadcast_to(a.group_units, (L, G)).copy()
    group_next = np.broadcast_to(a.group_start, (L, G)).copy()
    member = np.zeros((L, N, E)) if coact is not None else None
    group_pes = a.group_units.astype(np.float64)
    slot = np.empty((L, E), dtype=np.int64)
    w = float(C.coactivation_weight)
    for r in range(E):
        e = order[:, r]
        le = load[rows, e]
        cost = (core_load + le[:, None]) / core_pes
        if member is not None:
            co = np.einsum("lne,le->ln", member, coact[rows, e])
            cost = cost + w * co / core_pes
        cost += 1e-9 * (1.0 - core_free / core_pes)
        cost[core_free == 0] = np.inf
        c = np.argmin(cost, axis=1)
        gcost = group_load / group_pes + 1e-9 * np.arange(G)
        gcost[(a.group_core[None, :] != c[:, None]) | (group_free == 0)] = np.inf
        g = np.argmin(gcost, axis=1)
        slot[rows, e] = group_next[rows, g]
        group_next[rows, g] += 1
        group_free[rows, g] -= 1
        group_load[rows, g] += le
        core_free[rows, c] -= 1
        core_load[rows, c] += le
        if member is not None:
            member[rows, c, e] = 1.0
    return slot


def _profile(rng, L, E, k=4, B=16, steps=8):
    ids = np.stack([np.stack([rng.choice(E, size=k, replace=False, p=_heat(rng, E)) for _ in range(B)])
                    for _ in range(steps * L)]).reshape(steps, L, B, k)
    load = np.zeros((L, E))
    for layer in range(L):
        load[layer] = np.bincount(ids[:, layer].ravel(), minlength=E) / steps
    i, j = np.triu_indices(k, 1)
    a, b = ids[..., i], ids[..., j]
    c = np.zeros((L, E, E), dtype=np.float32)
    for layer in range(L):
        np.add.at(c[layer], (a[:, layer].ravel(), b[:, layer].ravel()), 1.0)
    return load, (c + c.transpose(0, 2, 1)) / steps


def _heat(rng, E):
    p = rng.pareto(1.2, E) + 0.05
    return p / p.sum()


DOMAINS = [(1, 1, 4, 8, "partial"), (2, 1, 8, 8, "partial"), (3, 2, 8, 12, "partial"), (3, 9, 10, 8, "idle"),
           (4, 3, 16, 20, "partial"), (5, 7, 12, 8, "partial"), (8, 64, 16, 20, "partial"), (6, 5, 16, 8, "idle")]


@pytest.mark.parametrize("side,groups,dx,dy,rem", DOMAINS)
@pytest.mark.parametrize("policy", ["lpt", "coactivation"])
def test_lpt_equals_oracle(side, groups, dx, dy, rem, policy):
    rng = np.random.default_rng(side * 100 + groups)
    L, E = 3, 48
    load, coact = _profile(rng, L, E)
    load[0, :6] = load[0, 6]              # ties in the load order
    dom = pl.domain(E, side, groups, dx, dy, rem)
    co = coact if policy == "coactivation" else None
    got = pl.place(policy, dom, load, co)
    want = oracle_lpt(dom, load, None if co is None else np.asarray(co, dtype=np.float64))
    assert np.array_equal(got, want)
    assert all(len(set(row)) == E for row in got)         # one expert per unit and layer


def running_total_lpt(dom, load, coact):
    """Co-activation LPT keeping a running total of every core's co-firing with every expert,
    added expert by expert as they are placed (the bookkeeping the vectorised placement replaced):
    on data whose sums round, the placement must still be identical, bit for bit."""
    a = dom.arrays
    L, E = load.shape
    rows = np.arange(L)
    order = np.argsort(-load, axis=1, kind="stable")
    pes = a.core_units.astype(np.float64)
    core_load, core_free = np.zeros((L, dom.n_cores)), np.broadcast_to(a.core_units, (L, dom.n_cores)).copy()
    core_co = np.zeros((L, dom.n_cores, E))
    chosen = np.empty((L, E), dtype=np.int64)
    for r in range(E):
        e = order[:, r]
        le = load[rows, e]
        cost = (core_load + le[:, None]) / pes + float(C.coactivation_weight) * core_co[rows, :, e] / pes
        cost += pl._tie(core_free, pes)
        c = cost.argmin(axis=1)
        chosen[rows, e] = c
        core_free[rows, c] -= 1
        core_load[rows, c] += le
        core_co[rows, c, :] += coact[rows, e, :]
    return chosen


@pytest.mark.parametrize("side,groups,dx,dy", [(1, 1, 16, 20), (2, 3, 8, 12), (4, 1, 16, 20)])
def test_coactivation_sums_equal_a_running_total(side, groups, dx, dy):
    rng = np.random.default_rng(side)
    L, E = 4, 64
    load = rng.random((L, E)) * 3.0
    co = rng.random((L, E, E)).astype(np.float32) / 7.0       # sums of these round (not dyadic)
    co = (co + co.transpose(0, 2, 1)) / np.float32(3.0)
    dom = pl.domain(E, side, groups, dx, dy)
    got = pl.place("coactivation", dom, load, co)
    want = running_total_lpt(dom, load, co)
    assert np.array_equal(dom.arrays.unit_core[got], want)
