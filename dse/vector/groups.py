"""Grouping rows of a column table by the values of a few key columns.

The vectorised evaluator reuses the scalar physics functions. Most of them are plain arithmetic
and take numpy arrays as they are; the rest branch, round (``math.ceil``) or loop over a
floorplan on arguments that take few distinct values in any design table (core side, die shape,
model, array depth, die count, ...). Those are called once per distinct key (``per_key``), so
the scalar function stays the one definition of the physics.

Grouping sorts nothing: every key column becomes a small integer code (its value minus its
minimum for a narrow integer column, else its index among the distinct values), the codes of a
key tuple a mixed-radix number, made dense through a lookup table no longer than the rows; a
group's rows come from a counting sort. Within ``cached_factorization`` (one chunk) the codes of
a column and the grouping of a key tuple are computed once, however many stages group on them.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

SMALL_RANGE = 1 << 20          # integer keys spanning fewer values are factorised in O(n)
LUT_MAX = 1 << 20              # mixed-radix codes below this index a table directly
DIRECT_RANGE = 64              # narrower integer keys are coded by value, wider ones renumbered


_CACHE: dict[tuple, tuple[tuple, Any]] = {}
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


def _cached(cols: tuple, tag: str, make: Callable[[], Any]) -> Any:
    """``make()``, kept while the context is active for these very array objects (the cache holds
    them, so their ids are not reused)."""
    key = (tag, *map(id, cols))
    hit = _CACHE.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], cols)):
        return hit[1]
    out = make()
    if _ACTIVE[0] and all(isinstance(c, np.ndarray) for c in cols):
        _CACHE[key] = (cols, out)
    return out


def factorize(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, index of every row's value in them)."""
    return _cached((col,), "factorize", lambda: _factorize(np.asarray(col)))


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


def _digits(col: np.ndarray) -> tuple[np.ndarray, int]:
    """(each row's small non-negative integer code, the number of codes): the value minus the
    column's minimum for a narrow integer column, its index among the distinct values otherwise
    (so that a key tuple's code stays small)."""
    def make():
        arr = np.asarray(col)
        if arr.dtype.kind in "iu" and arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if hi - lo < DIRECT_RANGE:
                if arr.dtype != np.int64:
                    arr = arr.astype(np.int64)
                return (arr - lo if lo else arr), hi - lo + 1
        uniq, inv = factorize(arr)                     # sparse values (array depths, batches): renumbered
        return inv, max(1, len(uniq))
    return _cached((col,), "digits", make)


def _dense(code: np.ndarray, radix: int) -> tuple[int, np.ndarray, np.ndarray]:
    """(number of distinct codes, each row's index among them, a row holding each) for codes < radix."""
    seen = np.zeros(radix, dtype=np.int64)
    seen[code] = np.arange(1, len(code) + 1)             # a row (plus one) of every code present
    present = np.flatnonzero(seen)
    lut = np.empty(radix, dtype=np.int64)
    lut[present] = np.arange(len(present))
    return len(present), lut[code], seen[present] - 1


def distinct(keys: Sequence[np.ndarray]) -> tuple[list[tuple], np.ndarray]:
    """Distinct key tuples (Python values) of the rows and each row's index into them: a
    mixed-radix code of the keys' small integer codes, made dense through a lookup table (no sort)."""
    def make():
        code, radix = _digits(keys[0])
        limit = min(LUT_MAX, max(1 << 12, 2 * len(code)))    # a table no longer than the rows
        for col in keys[1:]:
            d, size = _digits(col)
            if size == 1:                              # a constant column leaves the code as it is
                continue
            if radix * size > limit:                   # keep the code small: renumber what is present
                radix, code, _ = _dense(code, radix)
            code = code * size + d
            radix *= size
        _, inv, rows = _dense(code, radix)
        tuples = list(zip(*[np.asarray(k)[rows].tolist() for k in keys]))   # Python values, as .item()
        return tuples, inv
    return _cached(tuple(keys), "distinct", make)


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
        return [np.take(_array([o[j] for o in out]), inv) for j in range(len(out[0]))]
    return np.take(_array(out), inv)


def _array(values: list) -> np.ndarray:
    if values and isinstance(values[0], str):
        return np.array(values, dtype=object)
    return np.array(values)


def memo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An unbounded cache for per-key scalar helpers (keys are few: floorplans, models, depths)."""
    return functools.lru_cache(maxsize=None)(fn)
