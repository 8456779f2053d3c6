"""``rounds.lead_rounds`` against the plain bincount form, kept here as the reference, on random
layouts of every pooling, group count and tile width the space allows: layouts with load in
padding positions (the row-by-row form, rows leaving the loop once their K_n reaches K_w) and
layouts as the scheduler builds them (empty padding: the fast form from K_1, the resources that
reach it and their j-th largest remainders, with and without the scheduler's chunk)."""
from __future__ import annotations

import numpy as np
import pytest

from dse.mapping.intops import ceil_div
from dse.mapping.placement import domain
from dse.mapping.rounds import layout_facts, lead_rounds
from dse.mapping.scheduler import Scheduler

BINCOUNT_MAX = 1 << 23          # histogram bins above this: count level by level instead


def _resource_index(sch) -> tuple[np.ndarray, np.ndarray]:
    """(resource of each in-core position [N, F], PE tiles of each resource [X])."""
    N, F = sch.N, sch.F
    starts = np.asarray(sch.group_starts)
    gid = np.searchsorted(starts, np.arange(F), side="right") - 1       # group of each position
    if sch.pooling == "broadcast":
        return np.repeat(np.arange(N)[:, None], F, axis=1), sch.core_units.astype(np.int64)
    Gc = len(starts)
    return np.arange(N)[:, None] * Gc + gid[None, :], sch.group_pes.astype(np.int64).ravel()


def reference_lead_rounds(sch, ul: np.ndarray) -> np.ndarray:
    """K_n of every (step, layer) of the unit layout ``ul`` [s, L, N, F]: int64 [w, s, L] (row
    n - 1 holds K_n)."""
    w = sch.w
    s, L, N, F = ul.shape
    x_of, pes = _resource_index(sch)
    X = len(pes)
    rows = s * L
    flat = ul.reshape(rows, N * F)
    q, r = np.divmod(flat.astype(np.int64), w)
    xi = x_of.ravel()
    base = (np.arange(rows)[:, None] * X + xi[None, :])
    full = np.bincount(base.ravel(), weights=q.ravel(), minlength=rows * X).reshape(rows, X)
    if rows * X * w <= BINCOUNT_MAX:
        hist = np.bincount((base * w + r).ravel(), minlength=rows * X * w).reshape(rows, X, w)
        ge = np.cumsum(hist[:, :, ::-1], axis=2)[:, :, ::-1]           # ge[..., n] = #remainders >= n
        part = [ge[:, :, n] for n in range(1, w)]
    else:
        part = [np.bincount(base.ravel(), weights=(r >= n).ravel(), minlength=rows * X).reshape(rows, X)
                for n in range(1, w)]
    p = np.maximum(pes, 1)[None, :]
    alive = (pes > 0)[None, :]
    out = np.empty((w, rows), dtype=np.int64)
    for n in range(1, w + 1):
        c = full + part[n - 1] if n < w else full
        k = np.where(alive, ceil_div(np.rint(c).astype(np.int64), p), 0)
        out[n - 1] = k.max(axis=1)
    return out.reshape(w, s, L)



@pytest.mark.parametrize("side, groups", [(2, 1), (4, 1), (4, 3), (4, 16), (5, 2), (6, 36)])
@pytest.mark.parametrize("w", [1, 2, 3, 4, 8, 16, 64])
@pytest.mark.parametrize("pooling", ["broadcast", "direct"])
def test_lead_rounds_equal_the_reference(side, groups, w, pooling):
    dom = domain(64, side, groups)
    sch = Scheduler(dom, np.tile(np.arange(64), (3, 1)), w, pooling)
    rng = np.random.default_rng(side * 1000 + groups * 10 + w)
    shape = (5, 3, sch.N, sch.F)
    skewed = np.minimum(rng.geometric(0.15, size=shape) - 1, 255) * (rng.random(shape) < 0.7)
    for ul in (skewed.astype(np.uint8), skewed.astype(np.int64), np.zeros(shape, np.uint8)):
        got = lead_rounds(sch, ul)
        assert got.shape == (w, 5, 3) and got.dtype == np.int64
        assert np.array_equal(got, reference_lead_rounds(sch, ul))


SIDES_GROUPS = [(2, 1), (2, 3), (3, 4), (4, 1), (4, 3), (4, 5), (4, 16), (5, 2), (5, 7), (6, 5), (6, 36), (8, 24)]


@pytest.mark.parametrize("side, groups", SIDES_GROUPS)
@pytest.mark.parametrize("w", [1, 2, 3, 4, 5, 8, 16, 64])
@pytest.mark.parametrize("pooling", ["broadcast", "direct"])
def test_fast_form_equals_the_reference_on_empty_padding(side, groups, w, pooling):
    """Random loads on the live units only (padding empty, as ``Scheduler.layout`` leaves it), light
    and heavy: rows at K_1 <= 1 and rows whose resources need their 1st, j-th or no remainder."""
    dom = domain(64, side, groups)
    sch = Scheduler(dom, np.tile(np.arange(64), (3, 1)), w, pooling)
    rng = np.random.default_rng(side * 1000 + groups * 10 + w + (pooling == "direct"))
    shape = (6, 3, sch.N, sch.F)
    live = np.arange(sch.F)[None, :] < np.asarray(dom.core_units)[:, None]
    for p, dtype in ((0.5, np.uint8), (0.15, np.uint8), (0.03, np.uint8), (0.1, np.int64)):
        ul = (np.minimum(rng.geometric(p, size=shape) - 1, 255) * (rng.random(shape) < 0.7) * live).astype(dtype)
        facts = layout_facts(sch, ul)
        assert facts[1]                                      # the fast form, not the row-by-row one
        ref = reference_lead_rounds(sch, ul)
        assert np.array_equal(lead_rounds(sch, ul), ref)
        assert np.array_equal(lead_rounds(sch, ul, sch._chunk(ul, {}), facts), ref)


@pytest.mark.parametrize("side, groups", SIDES_GROUPS)
@pytest.mark.parametrize("w", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("pooling", ["broadcast", "direct"])
def test_fast_form_equals_the_reference_on_scheduler_layouts(side, groups, w, pooling):
    """Layouts the scheduler builds from per-expert loads (a random placement, hot experts)."""
    E = 96
    dom = domain(E, side, groups, 8, 8)
    rng = np.random.default_rng(side * 100 + groups + w)
    slot = np.stack([rng.permutation(dom.units)[:E] for _ in range(2)])
    sch = Scheduler(dom, slot, w, pooling)
    loads = rng.poisson(rng.gamma(0.5, 6.0, size=(1, 2, E)), size=(7, 2, E))
    ul = sch.layout(loads)
    ref = reference_lead_rounds(sch, ul)
    assert np.array_equal(lead_rounds(sch, ul, sch._chunk(ul, {}), layout_facts(sch, ul)), ref)
    assert np.array_equal(lead_rounds(sch, ul), ref)
