"""Coordinate sweeps of one design: every legal value of every searched knob, one knob at a time.

The knee phase (``dse.search.propose.knee.front``) refines a knee candidate by *coordinate
ascent*: from the candidate's best design it takes every design that differs from it in one
knob (``variants``), estimates them all on the closed form, and evaluates the best value of
each knob. Unlike a random step, the sweep is the same for every seed: two runs holding the same
candidate design look at the same alternatives, so they climb the same way.

A knob's values (``values``): every choice of a categorical, every value of an int or a stepped
float over its range at the parent's other knobs (a bound that refers to another knob, e.g.
``pe_groups_per_core <= core_side**2``, is taken at the parent's values), ``GRID`` points of an
unstepped float (geometric on a log scale). When a moved knob moves another knob's bound, the
other knob keeps its value if still legal, else takes its nearest legal value (``legalise``); a
knob whose ``when`` condition turns false drops out, one that turns true takes its first value
nearest the space's low bound.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dse.search.propose import sample
from dse.search.propose.bound import BoundMemo

GRID = 9                     # values of an unstepped continuous knob in a sweep
MAX_VALUES = 64              # an int knob with more values than this is swept on a geometric grid of this many


def values(d: Any, bounds: tuple | None, choices: list) -> list[Any]:
    """Every legal value of knob ``d`` under ``bounds`` (module docstring)."""
    if d.type == "categorical":
        return list(choices)
    lo, hi, step = bounds
    if d.type == "int":
        step = step or 1
        n = (hi - lo) // step + 1
        if n <= MAX_VALUES:
            return list(range(lo, hi + 1, step))
        grid = np.unique(np.round(np.geomspace(1, n, MAX_VALUES) - 1).astype(int))
        return [int(lo + step * i) for i in grid]
    if step:
        return [float(f"{lo + i * step:.12g}") for i in range(int(round((hi - lo) / step)) + 1)]
    pts = np.geomspace(lo, hi, GRID) if d.log and lo > 0 else np.linspace(lo, hi, GRID)
    return [float(x) for x in pts]


def _nearest(v: Any, vals: list[Any]) -> Any:
    if v in vals:
        return v
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return vals[0]
    return min(vals, key=lambda x: (abs(x - v), x))


def _legal(d: Any, v: Any, b: tuple | None, choices: list) -> bool:
    if v is None:
        return False
    if d.type == "categorical":
        return v in choices
    if d.type == "int":
        return sample.legal_int(v, b[0], b[1], b[2] or 1)
    return sample.legal_float(v, b[0], b[1], b[2])


def legalise(space: Any, base: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` made a legal point of ``space``: each knob kept if legal, else its nearest
    legal value (module docstring)."""
    c = sample.compiled(space)
    env, out = dict(base), {}
    for d, refs, choices in c.walk(env):
        b = None if d.type == "categorical" else c.bounds(d, refs, env)
        v = params.get(d.name)
        if not _legal(d, v, b, choices):
            v = _nearest(v if v is not None else (b[0] if b else None), values(d, b, choices))
        env[d.name] = out[d.name] = v
    return out


def variants(space: Any, base: Mapping[str, Any], parent: Mapping[str, Any],
             only: tuple[str, ...] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Every design one knob away from ``parent`` (legalised; the knobs of ``only`` when given)
    and, per design, the knob moved; in the space's knob order, each knob's values ascending."""
    c = sample.compiled(space)
    env: dict[str, Any] = dict(base)
    out, knob, seen = [], [], {BoundMemo.key(parent)}
    for d, refs, choices in c.walk(env):
        if only is None or d.name in only:
            b = None if d.type == "categorical" else c.bounds(d, refs, env)
            coupled = d.name in _steering(c)
            for v in values(d, b, choices):
                if v == parent.get(d.name):
                    continue
                q = {**parent, d.name: v}
                if coupled:                     # it moves another knob's bound or condition
                    q = legalise(space, base, q)
                key = BoundMemo.key(q)
                if key not in seen:
                    seen.add(key)
                    out.append(q)
                    knob.append(d.name)
        env[d.name] = parent.get(d.name)
    return out, knob


def steering(space: Any) -> frozenset[str]:
    """Knobs of ``space`` another knob's bound or ``when`` condition reads (moving one may make
    another knob's value illegal: ``legalise`` it)."""
    return _steering(sample.compiled(space))


def _steering(c: Any) -> frozenset[str]:
    """Knobs another knob's bound or ``when`` condition reads (moving one may move that knob)."""
    hit = getattr(c, "_knee_steering", None)
    if hit is None:
        names = set()
        for d, refs, _ in c.dims:
            names |= set(refs) | {k for k, _ in d.when}
        hit = c._knee_steering = frozenset(names)
    return hit
