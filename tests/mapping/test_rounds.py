"""``rounds.lead_rounds`` (rows leave the loop once their K_n reaches K_w) against the plain
bincount form it replaced, kept here as the reference, on random layouts of every pooling, group
count and tile width the space allows."""
from __future__ import annotations

import numpy as np
import pytest

from dse.mapping.intops import ceil_div
from dse.mapping.placement import domain
from dse.mapping.rounds import lead_rounds
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
