"""Grouping rows of a column table by the values of a few key columns.

The vectorised evaluator reuses the scalar physics functions. Most of them are plain arithmetic
and take numpy arrays as they are; the rest branch, round (``math.ceil``) or loop over a
floorplan on arguments that take few distinct values in any design table (core side, die shape,
model, array depth, die count, ...). Those are called once per distinct key (``per_key``) or once
per group with the arithmetic arguments passed as arrays (``apply_grouped``), so the scalar
function stays the one definition of the physics.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

SMALL_RANGE = 1 << 20          # integer keys spanning fewer values are factorised in O(n)


_CACHE: dict[int, tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]] = {}
_ACTIVE = [0]


class cached_factorization:
    """Within this context, factorising the same array object twice reuses the first result
    (key columns such as the model code or the core side are grouped on by many stages)."""
    def __enter__(self):
        _ACTIVE[0] += 1
        return self

    def __exit__(self, *exc):
        _ACTIVE[0] -= 1
        if not _ACTIVE[0]:
            _CACHE.clear()


def factorize(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, index of every row's value in them)."""
    hit = _CACHE.get(id(col))
    if hit is not None and hit[0] is col:
        return hit[1]
    out = _factorize(np.asarray(col))
    if _ACTIVE[0] and isinstance(col, np.ndarray):
        _CACHE[id(col)] = (col, out)
    return out


def _factorize(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if col.dtype.kind in "iub" and col.size:
        lo, hi = int(col.min()), int(col.max())
        if hi - lo < SMALL_RANGE:
            off = col.astype(np.int64) - lo
            seen = np.zeros(hi - lo + 1, dtype=bool)
            seen[off] = True
            lut = np.cumsum(seen) - 1
            return np.flatnonzero(seen) + lo, lut[off]
    uniq, inv = np.unique(col, return_inverse=True)
    return uniq, inv.reshape(-1)


def _py(v: Any) -> Any:
    """A numpy scalar as the Python value the scalar path would see."""
    return v.item() if hasattr(v, "item") else v


def distinct(keys: Sequence[np.ndarray]) -> tuple[list[tuple], np.ndarray]:
    """Distinct key tuples (Python values) of the rows and each row's index into them."""
    n = len(keys[0])
    code = np.zeros(n, dtype=np.int64)
    radix = 1
    for col in keys:
        uniq, inv = factorize(col)
        if radix * len(uniq) >= 1 << 62:           # keep the mixed-radix code in int64
            code = factorize(code)[1]
            radix = int(code.max()) + 1 if n else 1
        code = code * len(uniq) + inv
        radix *= len(uniq)
    ucode, inv = factorize(code)
    first = np.empty(len(ucode), dtype=np.int64)
    first[inv[::-1]] = np.arange(n - 1, -1, -1)
    tuples = [tuple(_py(k[i]) for k in keys) for i in first.tolist()]
    return tuples, inv


def per_key(fn: Callable[..., Any], *keys: np.ndarray, cache: dict | None = None) -> list[np.ndarray] | np.ndarray:
    """``fn(*key)`` for every row, calling ``fn`` once per distinct key. A tuple result gives a
    list of arrays (one per element). ``cache`` (a dict) keeps results across calls."""
    tuples, inv = distinct(keys)
    out = []
    for t in tuples:
        if cache is not None and t in cache:
            out.append(cache[t])
            continue
        v = fn(*t)
        if cache is not None:
            cache[t] = v
        out.append(v)
    if out and isinstance(out[0], tuple):
        return [_array([o[j] for o in out])[inv] for j in range(len(out[0]))]
    return _array(out)[inv]


def _array(values: list) -> np.ndarray:
    if values and isinstance(values[0], str):
        return np.array(values, dtype=object)
    return np.array(values)


def apply_grouped(fn: Callable[..., Any], keys: Sequence[np.ndarray], args: Sequence[np.ndarray]) -> np.ndarray:
    """``fn(*key, *args)`` per group of rows sharing a key, the ``args`` passed as arrays of the
    group's rows; returns the per-row float results in row order."""
    tuples, inv = distinct(keys)
    out = np.empty(len(inv), dtype=float)
    if len(tuples) == 1:
        out[:] = fn(*tuples[0], *args)
        return out
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(len(tuples) + 1))
    for g, t in enumerate(tuples):
        idx = order[bounds[g]:bounds[g + 1]]
        out[idx] = fn(*t, *(a[idx] for a in args))
    return out


def memo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An unbounded cache for per-key scalar helpers (keys are few: floorplans, models, depths)."""
    return functools.lru_cache(maxsize=None)(fn)
