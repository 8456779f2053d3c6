"""The vectorised evaluator's output: one array per metric, with the rows where it exists.

A scalar evaluation leaves out the metrics of stages it skipped (an infeasible design) and sets
the guaranteed keys to None; ``Table.row(i)`` rebuilds exactly that dict for row ``i``.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Metric value kinds, for rebuilding Python values from arrays.
FLOAT, INT, BOOL, STR, NONE = "float", "int", "bool", "str", "none"


@dataclass(frozen=True)
class Categorical:
    """A string metric held as codes into a few labels: ``labels[codes[i]]`` is row i's value (no
    Python object per row; ``np.asarray`` builds the object array when asked)."""
    codes: np.ndarray
    labels: np.ndarray                     # object array of str

    @property
    def shape(self) -> tuple[int, ...]:
        return self.codes.shape

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i):
        return self.labels[self.codes[i]]

    def __array__(self, dtype=None, copy=None):
        return np.take(self.labels, self.codes).astype(dtype or object, copy=False)

    def tolist(self) -> list:
        return np.take(self.labels, self.codes).tolist()


@dataclass
class Table:
    n: int
    values: dict[str, np.ndarray] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    present: dict[str, np.ndarray | None] = field(default_factory=dict)   # None: every row
    guaranteed: tuple[str, ...] = ()
    reasons: list[tuple[np.ndarray, Any]] = field(default_factory=list)  # (rows, formatter)

    def put(self, name: str, value: Any, where: np.ndarray | None = None, kind: str | None = None) -> None:
        """Store metric ``name`` (an array, a ``Categorical`` or one value for every row) for the
        rows ``where``."""
        if isinstance(value, Categorical):
            self.values[name], self.kinds[name], self.present[name] = value, STR, where
            return
        arr = np.asarray(value)
        if arr.ndim == 0:       # one value for every row: a read-only view, no copy
            arr = np.broadcast_to(arr, (self.n,))
        self.values[name] = arr
        self.kinds[name] = kind or _kind(arr)
        self.present[name] = where

    def put_none(self, name: str, where: np.ndarray | None = None) -> None:
        """A metric the closed form leaves None (e.g. trace-driven MFU)."""
        self.values[name] = np.broadcast_to(np.array(np.nan), (self.n,))
        self.kinds[name] = NONE
        self.present[name] = where

    def has(self, name: str) -> np.ndarray:
        """Rows where metric ``name`` has a value (not absent, not None)."""
        if self.kinds.get(name, NONE) == NONE:
            return np.zeros(self.n, dtype=bool)
        w = self.present[name]
        return np.ones(self.n, dtype=bool) if w is None else w

    def column(self, name: str) -> np.ndarray:
        """Float values of a numeric metric, NaN where it has none."""
        v = self.values[name].astype(float)
        w = self.present.get(name)
        if self.kinds[name] == NONE:
            return v
        return v if w is None else np.where(w, v, np.nan)

    def infeasible(self, rows: np.ndarray, formatter) -> None:
        """Rows made infeasible by a check; ``formatter(i)`` gives the reason for row i."""
        self.reasons.append((rows, formatter))
        self._feasible = None

    @property
    def feasible(self) -> np.ndarray:
        """Rows no check made infeasible (read-only; recomputed after a new check)."""
        if getattr(self, "_feasible", None) is None:
            bad = np.zeros(self.n, dtype=bool)
            for rows, _ in self.reasons:
                bad |= rows
            self._feasible = ~bad
            self._feasible.flags.writeable = False
        return self._feasible

    def reason(self, i: int) -> str:
        return "; ".join(fmt(i) for rows, fmt in self.reasons if rows[i])

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as the scalar path's metrics dict."""
        out: dict[str, Any] = {}
        for name, arr in self.values.items():
            w = self.present[name]
            if w is not None and not w[i]:
                continue
            out[name] = _py(arr[i], self.kinds[name])
        out["feasible"] = bool(self.feasible[i])
        out["infeasible_reason"] = self.reason(i)
        for k in self.guaranteed:
            out.setdefault(k, None)
        return out

    def rows(self) -> list[dict[str, Any]]:
        """``[row(i) for i in range(n)]``, converted column by column (equal dicts, same key order)."""
        cols = [(name, _py_list(arr, self.kinds[name], self.n), None if self.present[name] is None
                 else self.present[name].tolist()) for name, arr in self.values.items()]
        feasible = self.feasible.tolist()
        reasons = [(rows.tolist(), fmt) for rows, fmt in self.reasons]
        every = np.ones(self.n, dtype=bool)                 # rows holding every metric
        for w in self.present.values():
            if w is not None:
                every &= w
        names = [name for name, _, _ in cols]
        values = list(zip(*[vals for _, vals, _ in cols])) if cols else [()] * self.n
        out = []
        for i, whole in enumerate(every.tolist()):
            if whole:
                d = dict(zip(names, values[i]))
            else:
                d = {name: vals[i] for name, vals, w in cols if w is None or w[i]}
            d["feasible"] = feasible[i]
            d["infeasible_reason"] = "; ".join(fmt(i) for rows, fmt in reasons if rows[i])
            for k in self.guaranteed:
                d.setdefault(k, None)
            out.append(d)
        return out

    def metric_names(self) -> Iterable[str]:
        return self.values.keys()


def _kind(arr: np.ndarray) -> str:
    if arr.dtype == bool:
        return BOOL
    if arr.dtype.kind in "iu":
        return INT
    if arr.dtype == object or arr.dtype.kind == "U":
        return STR
    return FLOAT


def _py_list(arr: np.ndarray, kind: str, n: int) -> list[Any]:
    """``[_py(arr[i], kind) for i in range(n)]``, with numpy's own conversion where it is the same."""
    if kind == NONE:
        return [None] * n
    if kind == FLOAT:
        return arr.astype(np.float64).tolist()
    if kind == INT and arr.dtype.kind in "iu" or kind == BOOL and arr.dtype == bool or isinstance(arr, Categorical):
        return arr.tolist()
    return [_py(arr[i], kind) for i in range(n)]


def _py(v: Any, kind: str) -> Any:
    if kind == NONE:
        return None
    if kind == FLOAT:
        return float(v)
    if kind == INT:
        return int(v)
    if kind == BOOL:
        return bool(v)
    return v
