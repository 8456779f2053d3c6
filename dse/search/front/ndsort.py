"""Exact non-dominated filtering of large minimisation arrays (the same mask as
``dse.search.front.pareto.nondominated``: a row is dropped only if another row is <= in every objective
and < in one; equal rows are all kept).

* 1 objective: the rows at the minimum.
* 2 objectives: one lexicographic sort and a prefix-minimum sweep, O(n log n).
* 3+ objectives: rows sorted lexicographically (a dominating row always sorts first), cut down by
  an elite set (the exact front of the rows nearest the ideal point), then checked block by block
  against the front found so far.
"""
from __future__ import annotations

import numpy as np

BLOCK = 512
ELITE = 512


def nondominated_fast(F: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``F`` (n x m, minimisation, finite)."""
    F = np.asarray(F, dtype=float)
    n = len(F)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if F.ndim == 1 or F.shape[1] == 1:
        col = F.reshape(n, -1)[:, 0]
        return col == col.min()
    order = np.lexsort(F.T[::-1])
    S = F[order]
    keep = _sweep_2d(S) if F.shape[1] == 2 else _filter_sorted(S)
    mask = np.zeros(n, dtype=bool)
    mask[order[keep]] = True
    return mask


def _sweep_2d(S: np.ndarray) -> np.ndarray:
    """Rows of ``S`` (sorted by f0, then f1) that no other row dominates."""
    a, b = S[:, 0], S[:, 1]
    new = np.empty(len(a), dtype=bool)
    new[0] = True
    new[1:] = a[1:] != a[:-1]
    start = np.flatnonzero(new)
    gid = np.cumsum(new) - 1
    run_min = np.minimum.accumulate(b)
    before = np.empty(len(start))
    before[0] = np.inf
    before[1:] = run_min[start[1:] - 1]          # best f1 among rows with a smaller f0
    return (b == b[start][gid]) & (b < before[gid])


def dominated_by(P: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Rows of ``X`` dominated by some row of ``P`` (objective by objective on 2-D tiles)."""
    out = np.zeros(len(X), dtype=bool)
    if len(P) == 0 or len(X) == 0:
        return out
    step = max(1, (1 << 21) // len(P))
    for s in range(0, len(X), step):
        x = X[s:s + step]
        le = np.ones((len(x), len(P)), dtype=bool)
        lt = np.zeros((len(x), len(P)), dtype=bool)
        for j in range(X.shape[1]):
            a, b = x[:, j, None], P[None, :, j]
            le &= b <= a
            lt |= b < a
        out[s:s + step] = np.any(le & lt, axis=1)
    return out


def _filter_sorted(S: np.ndarray) -> np.ndarray:
    """Exact front of lexicographically sorted rows (3+ objectives)."""
    n = len(S)
    alive = np.ones(n, dtype=bool)
    if n > 4 * ELITE:
        lo, hi = S.min(axis=0), S.max(axis=0)
        span = np.where(hi > lo, hi - lo, 1.0)
        near = np.argsort(((S - lo) / span).sum(axis=1), kind="stable")[:ELITE]
        elite = np.sort(near)
        e_keep = _filter_sorted(S[elite])
        alive &= ~dominated_by(S[elite[e_keep]], S)
    keep = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(alive)
    front = np.zeros((0, S.shape[1]))
    for s in range(0, len(idx), BLOCK):
        rows = idx[s:s + BLOCK]
        X = S[rows]
        ok = ~dominated_by(front, X) & ~dominated_by(X, X)
        keep[rows[ok]] = True
        front = np.concatenate([front, X[ok]])
    return keep
