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
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.vector.table import Categorical

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
            seen = np.bincount(off, minlength=hi - lo + 1) > 0
            lut = np.cumsum(seen) - 1
            return np.flatnonzero(seen) + lo, np.take(lut, off)
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


def is_constant(col: Any) -> bool:
    """A column holding one value for every row by construction: a scalar, or a broadcast view
    (``Columns``' defaults, ``Table.put`` of one value); checked in O(1), not by reading it."""
    a = np.asarray(col)
    return a.ndim == 0 or (a.ndim == 1 and (len(a) <= 1 or a.strides[0] == 0))


def folded(col: np.ndarray) -> np.ndarray:
    """A constant column as one 0-d value (arithmetic on it then costs one operation, not one
    per row; broadcasting restores the rows), any other column as it is."""
    return np.asarray(col).reshape(-1)[0] if is_constant(col) and np.size(col) else col


FEW_VALUES = 64                # a float column with at most this many distinct values is read as codes
SAMPLE_ROWS = 512              # rows sampled to guess those values


def few_values(col: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(distinct values, each row's index in them) of a column holding at most ``FEW_VALUES``
    distinct values (a design grid's clock column), else None, decided without sorting the
    column: the values of a strided sample, then every row looked up among them and checked."""
    def make():
        arr = np.asarray(col)
        if arr.ndim != 1 or arr.dtype.kind != "f" or len(arr) <= SAMPLE_ROWS:
            return None
        guess = np.unique(arr[::max(1, len(arr) // SAMPLE_ROWS)])
        if len(guess) > FEW_VALUES or np.isnan(guess).any():
            return None
        idx = np.minimum(np.searchsorted(guess, arr), len(guess) - 1)
        if not np.array_equal(np.take(guess, idx), arr):
            return None
        return guess, idx
    return _cached((col,), "few_values", make)


def lookup(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``values[codes]`` (a per-model or per-GPU table read per row): one ``np.take``, or a
    broadcast view when every row holds the same code."""
    values = np.asarray(values)
    if is_constant(codes) and np.ndim(codes):
        return np.broadcast_to(values[np.asarray(codes).reshape(-1)[:1]], np.shape(codes))
    return np.take(values, codes)


def _first(col: Any) -> Any:
    """The value of a constant column, as ``.item()`` gives it."""
    return np.asarray(col).reshape(-1)[:1].tolist()[0]


def _values(col: np.ndarray, size: int) -> list:
    """The Python value of each code ``_digits`` gives ``col``'s rows."""
    def make():
        arr = np.asarray(col)
        if arr.dtype.kind in "iu" and size == int(arr.max()) - int(arr.min()) + 1 <= DIRECT_RANGE:
            return (np.arange(size) + int(arr.min())).astype(arr.dtype).tolist()
        return np.asarray(factorize(arr)[0]).astype(arr.dtype, copy=False).tolist()
    return _cached((col,), "values", make)


@dataclass
class Grouping:
    """Rows grouped by key tuples: ``tuples[g]`` (Python values) is group g's key; a row's group
    is found through its code: ``code`` (None: every row is in group 0) indexes ``slot``, a table
    of ``radix`` entries holding each present code's group (-1 for a code no row has)."""
    tuples: list[tuple]
    code: np.ndarray | None
    slots: np.ndarray                     # the code of each group, ascending
    radix: int
    n: int
    _inverse: np.ndarray | None = None

    def inverse(self) -> np.ndarray:
        """Each row's group (dense: 0 .. len(tuples) - 1)."""
        if self._inverse is None:
            if self.code is None:
                self._inverse = np.zeros(self.n, dtype=np.int64)
            elif len(self.slots) == self.radix:
                self._inverse = self.code
            else:
                lut = np.full(self.radix, -1, dtype=np.int64)
                lut[self.slots] = np.arange(len(self.slots))
                self._inverse = np.take(lut, self.code)
        return self._inverse

    def spread(self, values: np.ndarray) -> np.ndarray | Categorical:
        """``values[group of row]`` for every row (``values``: one per group); strings as a
        ``Categorical`` (codes into the groups' strings: no Python object per row)."""
        if self.code is None:
            return np.broadcast_to(values[:1], (self.n,))
        if values.dtype == object:
            if len(self.slots) == self.radix or self.radix > SPARSE_TABLE_MAX:
                return Categorical(self.inverse(), values)
            labels = np.empty(self.radix, dtype=object)
            labels[self.slots] = values
            return Categorical(self.code, labels)
        if len(self.slots) == self.radix:
            return np.take(values, self.code)
        if self.radix <= SPARSE_TABLE_MAX:      # a table over the codes: one gather, no dense index
            table = np.zeros(self.radix, dtype=values.dtype)
            table[self.slots] = values
            return np.take(table, self.code)
        return np.take(values, self.inverse())


SPARSE_TABLE_MAX = 1 << 13     # codes up to this many index a table of results directly


def grouping(keys: Sequence[np.ndarray]) -> Grouping:
    """Rows grouped by the tuple of ``keys``: a mixed-radix code of the varying keys' small
    integer codes (constant keys ignored), the groups present found by counting the codes (no
    sort); renumbered through a lookup table when the code outgrows the rows."""
    def make():
        n = max((len(k) for k in keys if np.ndim(k)), default=1)
        varying = [k for k in keys if not is_constant(k)]
        parts = []                                   # (key, number of codes) of the varying keys used
        code, radix, renumbered = None, 1, False
        limit = min(LUT_MAX, max(1 << 12, 2 * n))    # a table no longer than the rows
        for col in varying:
            d, size = _digits(col)
            if size == 1:
                continue
            if code is None:
                code, radix = d, size
            else:
                if radix * size > limit:             # keep the code small: renumber what is present
                    radix, code, _ = _dense(code, radix)
                    renumbered = True
                code = code * size + d
                radix *= size
            parts.append((col, size))
        if code is None:
            return Grouping([tuple(_first(k) for k in keys)], None, np.zeros(1, dtype=np.int64), 1, n)
        if renumbered:
            _, inv, rows = _dense(code, radix)
            tuples = list(zip(*[np.asarray(k)[rows].tolist() for k in keys]))   # Python values, as .item()
            return Grouping(tuples, inv, np.arange(len(rows)), len(rows), n)
        slots = np.flatnonzero(np.bincount(code, minlength=radix))
        digits, rest = {}, slots
        for col, size in reversed(parts):            # the mixed-radix code read back, key by key
            vals = _values(col, size)
            digits[id(col)] = [vals[i] for i in (rest % size).tolist()]
            rest = rest // size
        per_key = [digits[id(k)] if id(k) in digits else [_first(k)] * len(slots) for k in keys]
        return Grouping(list(zip(*per_key)), code, slots, radix, n)
    return _cached(tuple(keys), "grouping", make)


def distinct(keys: Sequence[np.ndarray]) -> tuple[list[tuple], np.ndarray]:
    """Distinct key tuples (Python values) of the rows and each row's index into them (no sort:
    ``grouping``)."""
    g = grouping(keys)
    return g.tuples, g.inverse()


def per_key(fn: Callable[..., Any], *keys: np.ndarray, cache: dict | None = None) -> list[np.ndarray] | np.ndarray:
    """``fn(*key)`` for every row, calling ``fn`` once per distinct key. A tuple result gives a
    list of arrays (one per element). ``cache`` (a dict) keeps results across calls. Keys that
    are all constant give read-only broadcast views (no copy per row)."""
    g = grouping(keys)
    out = []
    for t in g.tuples:
        if cache is not None and t in cache:
            out.append(cache[t])
            continue
        v = fn(*t)
        if cache is not None:
            cache[t] = v
        out.append(v)
    if out and isinstance(out[0], tuple):
        return [g.spread(_array([o[j] for o in out])) for j in range(len(out[0]))]
    return g.spread(_array(out))


def _array(values: list) -> np.ndarray:
    if values and isinstance(values[0], str):
        return np.array(values, dtype=object)
    return np.array(values)


KEPT_CACHES = 256               # per-key result caches kept (``kept``)
_KEPT: dict[tuple, dict] = {}


def kept(key: tuple) -> dict:
    """A dict of per-key results (``per_key``'s ``cache``) kept across tables while ``key`` holds:
    what the results depend on besides the key values (the models' shapes, the constants). A
    table's thousands of rows fall in a few hundred groups; their results, once computed, cost a
    dict lookup per group instead of a Python call."""
    d = _KEPT.get(key)
    if d is None:
        if len(_KEPT) >= KEPT_CACHES:
            _KEPT.clear()
        d = _KEPT[key] = {}
    return d


def memo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An unbounded cache for per-key scalar helpers (keys are few: floorplans, models, depths)."""
    return functools.lru_cache(maxsize=None)(fn)
