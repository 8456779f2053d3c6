"""Where one design sits against a front: arithmetic on objective values (minimisation arrays).

``F`` is the front (rows: designs, columns: objectives, every column to be minimised:
``pareto.to_min``), ``r`` the design placed against it (same columns).

* ``dominators``: the rows that dominate ``r`` (no worse in every objective, better in one).
* ``front_scale``: the normalisation of objective space used below: each objective divided by
  its range over the front (max - min); an objective constant on the front is divided by the
  magnitude of that constant (1 when it is 0), so it never divides by zero.
* ``additive_epsilon``: the additive epsilon indicator of the front over ``r`` in that normalised
  space, ``I(F, r) = min_f max_j (f_j - r_j) / s_j``: the smallest ``eps`` such that some front
  design ``f`` is at least as good as ``r`` shifted by ``eps`` in every objective
  (``f_j <= r_j + eps s_j`` for all j). A negative ``eps`` means some single front design is
  better than ``r`` by at least ``-eps`` front ranges in every objective at once; a positive one
  means no front design is as good as ``r`` everywhere (``r`` would extend the front by ``eps``).
* ``best_improvement``: per objective, the largest improvement any front design offers over ``r``
  (``r_j - min_f f_j``, in the objective's own units; negative: every front design is worse there).
* ``nearest``: the front design closest to ``r`` (Euclidean distance in the normalised space).
"""
from __future__ import annotations

import numpy as np


def dominators(F: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``F`` that dominate ``r`` (minimisation)."""
    F = np.asarray(F, dtype=float)
    r = np.asarray(r, dtype=float)
    if not len(F):
        return np.zeros(0, dtype=bool)
    return np.all(F <= r, axis=1) & np.any(F < r, axis=1)


def front_scale(F: np.ndarray) -> np.ndarray:
    """Per objective: its range over the front, or ``|value|`` (1 if 0) where it is constant."""
    F = np.asarray(F, dtype=float)
    lo, hi = F.min(axis=0), F.max(axis=0)
    const = np.where(np.abs(lo) > 0, np.abs(lo), 1.0)
    return np.where(hi > lo, hi - lo, const)


def additive_epsilon(F: np.ndarray, r: np.ndarray, scale: np.ndarray) -> tuple[float, int]:
    """``(eps, row)``: the additive epsilon indicator of ``F`` over ``r`` in the space scaled by
    ``scale`` (module docstring) and the front row attaining it."""
    D = (np.asarray(F, dtype=float) - np.asarray(r, dtype=float)) / scale
    worst = D.max(axis=1)
    i = int(np.argmin(worst))
    return float(worst[i]), i


def best_improvement(F: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(gain, rows)``: per objective ``r_j - min_f f_j`` (positive: some front design is better)
    and the row offering it."""
    F = np.asarray(F, dtype=float)
    rows = np.argmin(F, axis=0)
    return np.asarray(r, dtype=float) - F[rows, np.arange(F.shape[1])], rows


def nearest(F: np.ndarray, r: np.ndarray, scale: np.ndarray) -> tuple[int, float]:
    """``(row, distance)`` of the front design nearest to ``r`` in the scaled space."""
    d = np.sqrt((((np.asarray(F, dtype=float) - np.asarray(r, dtype=float)) / scale) ** 2).sum(axis=1))
    i = int(np.argmin(d))
    return i, float(d[i])
