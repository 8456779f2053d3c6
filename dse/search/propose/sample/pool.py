"""The guided sampler's pool drawn column by column: ``n`` uniform draws and mutants at once.

``sequential`` draws a pool design by design (``draw.uniform`` / ``draw.mutant``: one knob of one
design per step); ``pool`` draws the same *distribution* knob by knob, each knob for every
candidate at once with numpy:

* row ``i`` is a mutant with probability ``mutants`` (while there are ``parents``), of a parent
  chosen uniformly; a mutant draws 1..``max_knobs`` of the searched knobs afresh (their number
  uniform, then a uniform subset of that size) and keeps every other knob of its parent that is
  still legal under the bounds its earlier knobs set (else draws it afresh: ``draw``'s rule);
  the other rows are uniform draws (every knob fresh);
* the knobs are walked in the space's order, as ``draw._Compiled.draw`` walks them: a fixed knob
  sets its value, a knob whose ``when`` fails for a row is absent from that row (the row's later
  knobs see the base value, as in ``draw``), and a numeric knob's (low, high, step) are computed
  once per group of rows that share the values of the knobs its bounds refer to (``Space.bounds``
  via ``draw.compiled``: a bound out of range raises as it does there);
* fresh values: categorical uniform over the choices, int uniform over the steps or log-uniform
  (optuna's rule, ``draw.fresh_int``), float uniform over the grid (values cleaned to 12
  significant digits, ``draw.fresh_float``), the range, or log-uniform.

Rows are returned as ``draw`` returns them (dicts of the active searched knobs in the space's
order; Python ``int`` / ``float`` / the choice object), without duplicates or ``known`` keys,
first occurrence kept. The random stream is another than ``sequential``'s (the same seed draws
another pool; ``tests/search/propose/test_draw_pool.py`` holds the two to the same marginals).
A kept categorical value is the space's choice equal to the parent's (optuna hands back the
choice object itself, so this is the parent's value).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dse.search.propose.sample import draw
from dse.search.space.space import Space

MISSING = object()      # a knob neither drawn for a row nor in the base


def sequential(space: Space, base: Mapping[str, Any], rng: np.random.Generator, n: int, mutants: float,
               parents: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``n`` draws one design at a time (duplicates kept): the reference distribution of ``pool``
    (and ``guided.candidates``' draw before ``pool``)."""
    out = []
    for _ in range(n):
        if parents and rng.random() < mutants:
            out.append(draw.mutant(space, base, rng, parents[int(rng.integers(len(parents)))]))
        else:
            out.append(draw.uniform(space, base, rng))
    return out


def sequential_pool(space: Space, base: Mapping[str, Any], rng: np.random.Generator, n: int, mutants: float,
                    parents: Sequence[Mapping[str, Any]], known: set, key: Callable[[Mapping[str, Any]], Any]
                    ) -> list[dict[str, Any]]:
    """``sequential`` without duplicates or ``known`` keys: the pool ``guided.candidates`` drew
    before ``pool`` (benchmarks/bench_plan.py measures the two)."""
    out, seen = [], set(known)
    for p in sequential(space, base, rng, n, mutants, parents):
        k = key(p)
        if k not in seen:
            seen.add(k)
            out.append(p)
    return out


class _Env:
    """What each row of the pool sees for each knob: a column drawn for some rows (values and an
    active mask; categorical: codes into the choices), else the base value."""

    def __init__(self, base: Mapping[str, Any], n: int):
        self.base, self.n = base, n
        self.cols: dict[str, tuple[np.ndarray, np.ndarray, list | None]] = {}
        self.fixed: dict[str, Any] = {}

    def codes(self, name: str) -> tuple[np.ndarray, list]:
        """(per-row code, the Python value of each code; MISSING: not in the row's env)."""
        if name in self.fixed:
            return np.zeros(self.n, dtype=np.int64), [self.fixed[name]]
        fallback = self.base.get(name, MISSING)
        if name not in self.cols:
            return np.zeros(self.n, dtype=np.int64), [fallback]
        values, active, choices = self.cols[name]
        if choices is not None:
            table, inv = list(choices), values
        else:
            u, inv = np.unique(values, return_inverse=True)
            table = u.tolist()
        return np.where(active, inv.reshape(-1), len(table)), table + [fallback]

    def groups(self, names: Sequence[str], rows: np.ndarray) -> tuple[np.ndarray, list[dict[str, Any]]]:
        """The rows grouped by the values of ``names``: (group of each row, each group's values;
        a name MISSING for the group is left out)."""
        combined = np.zeros(len(rows), dtype=np.int64)
        cols = []
        for name in names:
            c, table = self.codes(name)
            combined = combined * len(table) + c[rows]
            cols.append((name, c[rows], table))
        _, first, inv = np.unique(combined, return_index=True, return_inverse=True)
        envs = [{name: table[c[f]] for name, c, table in cols if table[c[f]] is not MISSING} for f in first]
        return inv.reshape(-1), envs


def _active(env: _Env, when: tuple) -> np.ndarray:
    """Rows where every ``when`` condition holds (a missing knob reads as None, as ``Dim.active``)."""
    ok = np.ones(env.n, dtype=bool)
    for name, vals in when:
        c, table = env.codes(name)
        ok &= np.array([(None if t is MISSING else t) in vals for t in table], dtype=bool)[c]
    return ok


def _bounds(c: Any, d: Any, refs: tuple, env: _Env, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """(low, high, step) of knob ``d`` for each of ``rows`` (step: NaN when the knob has none)."""
    if not refs:
        inv, envs = np.zeros(len(rows), dtype=np.int64), [{}]
    else:
        inv, envs = env.groups(refs, rows)
    b = [c.bounds(d, refs, e) for e in envs]
    lo = np.array([x[0] for x in b])[inv]
    hi = np.array([x[1] for x in b])[inv]
    step = np.array([np.nan if x[2] is None else x[2] for x in b], dtype=float)[inv]
    return lo, hi, step


def _int_column(rng: np.random.Generator, lo, hi, step, log: bool, pv, keep) -> np.ndarray:
    """An int knob: the parent's value ``pv`` where kept and legal, else drawn afresh."""
    step = np.where(np.isnan(step), 1, step).astype(np.int64)
    with np.errstate(invalid="ignore"):
        legal = keep & (pv >= lo) & (pv <= hi) & (np.fmod(pv - lo, step) == 0)
    if log:
        x = np.exp(rng.uniform(np.log(lo), np.log(hi + 1)))
        fresh = np.clip(np.floor(x), lo, hi)
    else:
        fresh = lo + step * rng.integers(0, (hi - lo) // step + 1)
    return np.where(legal, pv, fresh).astype(np.int64)


def _float_column(rng: np.random.Generator, lo, hi, step, log: bool, pv, keep) -> np.ndarray:
    """A float knob: the parent's value where kept and legal, else drawn afresh."""
    lo, hi = lo.astype(float), hi.astype(float)
    with np.errstate(invalid="ignore"):
        legal = keep & (pv >= lo) & (pv <= hi)
        if not np.isnan(step).all():
            r = (pv - lo) / step
            legal &= np.abs(r - np.round(r)) < 1e-9
    if not np.isnan(step).all():
        k = rng.integers(0, np.floor((hi - lo) / step + 1e-9).astype(np.int64) + 1)
        u, inv = np.unique(lo + step * k, return_inverse=True)
        fresh = np.array([float(f"{x:.12g}") for x in u.tolist()])[inv.reshape(-1)]
    elif log:
        fresh = np.exp(rng.uniform(np.log(lo), np.log(hi)))
    else:
        fresh = rng.uniform(lo, hi)
    return np.where(legal, pv, fresh)


def _parent_column(d: Any, choices: list, parents: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Each parent's value of ``d``: categorical, the index of the equal choice (-1: none); numeric,
    the value as a float (NaN: none)."""
    if d.type == "categorical":
        return np.array([next((i for i, ch in enumerate(choices) if p.get(d.name, MISSING) == ch), -1)
                         for p in parents], dtype=np.int64)
    out = []
    for p in parents:
        v = p.get(d.name)
        out.append(float(v) if isinstance(v, (int, float)) else np.nan)
    return np.array(out, dtype=float)


def _mutated(rng: np.random.Generator, n: int, m: int, max_knobs: int) -> np.ndarray:
    """(n, m): the knobs each row draws afresh: 1..max_knobs of m, a uniform subset of that size."""
    k = rng.integers(1, min(max_knobs, m) + 1, size=n)
    order = np.argsort(rng.random((n, m)), axis=1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(m), (n, m)), axis=1)
    return rank < k[:, None]


def columns(space: Space, base: Mapping[str, Any], rng: np.random.Generator, n: int, mutants: float,
            parents: Sequence[Mapping[str, Any]], max_knobs: int = 3) -> list[tuple[str, np.ndarray, ...]]:
    """The pool as columns: (knob, each row's value as a Python object, its ``repr``, active rows)
    per searched knob, in the space's order (where the knob is inactive: None, 'None')."""
    c = draw.compiled(space)
    is_mut = rng.random(n) < mutants if parents else np.zeros(n, dtype=bool)
    pick = rng.integers(len(parents), size=n) if parents else np.zeros(n, dtype=np.int64)
    mutate = _mutated(rng, n, len(c.names), max_knobs) if parents else np.ones((n, len(c.names)), dtype=bool)
    slot = {name: j for j, name in enumerate(c.names)}
    env, out = _Env(base, n), []
    for d, refs, choices in c.dims:
        if d.type == "fixed":
            env.fixed[d.name] = d.value
            continue
        active = _active(env, d.when) if d.when else np.ones(n, dtype=bool)
        rows = np.flatnonzero(active)
        keep = (is_mut & ~mutate[:, slot[d.name]])[rows]
        pv = _parent_column(d, choices, parents)[pick[rows]] if parents else np.full(len(rows), np.nan)
        full = np.zeros(n, dtype=float if d.type == "float" else np.int64)
        if d.type == "categorical":
            fresh = rng.integers(len(choices), size=len(rows))
            full[rows] = np.where(keep & (pv >= 0), pv, fresh) if parents else fresh
            env.cols[d.name] = (full, active, choices)
            at = np.where(active, full, -1)
            out.append((d.name, _objects(choices + [None])[at], _objects([repr(x) for x in choices + [None]])[at],
                        active))
            continue
        if len(rows):
            column = _int_column if d.type == "int" else _float_column
            full[rows] = column(rng, *_bounds(c, d, refs, env, rows), d.log, pv, keep)
        env.cols[d.name] = (full, active, None)
        out.append((d.name, np.where(active, full.astype(object), None), _reprs(full, active), active))
    return out


def _objects(values: Sequence[Any]) -> np.ndarray:
    """A 1-D object array holding ``values`` themselves."""
    a = np.empty(len(values), dtype=object)
    a[:] = list(values)
    return a


def _reprs(full: np.ndarray, active: np.ndarray) -> np.ndarray:
    """``repr`` of the Python value of each row of a numeric column (inactive: 'None'), computed
    once per distinct value."""
    u, inv = np.unique(full, return_inverse=True)
    table = _objects([repr(x) for x in u.tolist()] + ["None"])
    return table[np.where(active, inv.reshape(-1), len(u))]


def pool(space: Space, base: Mapping[str, Any], rng: np.random.Generator, n: int, mutants: float,
         parents: Sequence[Mapping[str, Any]], known: set, max_knobs: int = 3) -> list[dict[str, Any]]:
    """Up to ``n`` distinct candidates (module docstring) whose ``key`` (``BoundMemo.key``: the
    sorted knob names and the ``repr`` of each value in that order) is not in ``known``; the keys
    are built per group of rows with the same active knobs, each distinct value's ``repr`` once."""
    cols = columns(space, base, rng, n, mutants, parents, max_knobs)
    pattern = np.zeros(n, dtype=np.int64)
    for *_, act in cols:
        if not act.all():
            pattern = pattern * 2 + act
    rows: list = [None] * n
    keys: list = [None] * n
    for code in np.unique(pattern).tolist():
        idx = np.flatnonzero(pattern == code)
        sel = [(name, vals[idx].tolist(), rep[idx].tolist()) for name, vals, rep, act in cols if act[idx[0]]]
        srt = sorted(sel, key=lambda s: s[0])
        names, order = tuple(s[0] for s in sel), tuple(s[0] for s in srt)
        for i, r, k in zip(idx.tolist(), zip(*[s[1] for s in sel]), zip(*[s[2] for s in srt])):
            rows[i], keys[i] = dict(zip(names, r)), (order, k)
    out, seen = [], set(known)
    for p, k in zip(rows, keys):
        if k not in seen:
            seen.add(k)
            out.append(p)
    return out
