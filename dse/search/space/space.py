"""Search spaces: the validated model of a ``spaces/*.toml`` file (``Space``, ``Dim``, ``Bound``).

A space lists the knobs a study varies, in order; a later knob's bounds may be expressions of
earlier ones, and ``when`` activates a knob only for given values of earlier knobs. The file
format and its validator are ``dse.search.space.space_file`` (``load_space``, ``space_from_dict``);
this module asks a trial for a design (``Space.suggest``), evaluates bounds (``Space.bounds``)
and enumerates a grid (``Space.grid``).
"""
from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dse.errors import ConfigError
from dse.search.space import expr
from dse.spec.params import BY_NAME, Param, coerce

MAX_GRID = 2_000_000
BOUNDS_MEMO_MAX = 10_000       # (knob, values its bounds refer to) entries kept by ``Space.bounds``


@dataclass(frozen=True)
class Bound:
    """A constant or an expression over earlier knobs."""
    text: str
    const: float | int | None = None
    tree: ast.Expression | None = field(default=None, compare=False)

    def value(self, env: Mapping[str, Any]) -> float | int:
        if self.tree is None:
            assert self.const is not None
            return self.const
        return expr.evaluate(self.tree, env)

    @property
    def refs(self) -> set[str]:
        return expr.names(self.tree) if self.tree is not None else set()


@dataclass(frozen=True)
class Dim:
    """One knob of a space."""
    name: str
    type: str                        # int | float | categorical | fixed  ("log" resolved to int/float + log)
    log: bool = False
    low: Bound | None = None
    high: Bound | None = None
    step: Bound | None = None
    choices: tuple[Any, ...] = ()
    value: Any = None
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    @property
    def searched(self) -> bool:
        return self.type != "fixed"

    def active(self, env: Mapping[str, Any]) -> bool:
        return all(env.get(k) in vals for k, vals in self.when)

    @functools.cached_property
    def bound_refs(self) -> tuple[str, ...]:
        """The knobs its bounds (low, high, step) refer to, sorted (none: constant bounds)."""
        return tuple(sorted(set().union(*(b.refs for b in (self.low, self.high, self.step) if b is not None))))


def ask_knob(trial: Any, d: Dim, choices: list, bounds: tuple | None) -> Any:
    """Ask ``trial`` for active knob ``d``: one of ``choices``, or within ``bounds`` (low, high, step)."""
    if d.type == "categorical":
        return trial.suggest_categorical(d.name, choices)
    if d.type == "int":
        return trial.suggest_int(d.name, bounds[0], bounds[1], step=bounds[2] or 1, log=d.log)
    return trial.suggest_float(d.name, bounds[0], bounds[1], step=bounds[2], log=d.log)


@dataclass(frozen=True)
class Space:
    source: str
    dims: tuple[Dim, ...]
    description: str = ""
    # ``bounds`` kept per (knob, values of the knobs its bounds refer to): a study asks them for
    # every knob of every trial, and most are constants (a cache: the values do not depend on it)
    _bounds: dict = field(default_factory=dict, init=False, compare=False, hash=False, repr=False)

    # -- sampling ------------------------------------------------------------------------
    def suggest(self, trial: Any, base: Mapping[str, Any]) -> dict[str, Any]:
        """Ask ``trial`` (an optuna trial) for every active knob; return the knob values this space
        sets (fixed ones included). ``base`` holds the other knobs (for bounds and conditions)."""
        env = dict(base)
        out: dict[str, Any] = {}
        for d in self.dims:
            if d.type != "fixed" and not d.active(env):
                continue
            v = d.value if d.type == "fixed" else ask_knob(
                trial, d, list(d.choices), None if d.type == "categorical" else self.bounds(d, env))
            env[d.name] = out[d.name] = v
        return out

    def bounds(self, d: Dim, env: Mapping[str, Any]) -> tuple[Any, Any, Any]:
        """Evaluate (low, high, step) of a numeric dim and check them against the knob (the same
        values for the same values, and types, of the knobs they refer to: kept in ``_bounds``;
        bounds that fail raise every time)."""
        key = (d.name, *((type(v), v) for v in (env.get(r) for r in d.bound_refs)))
        hit = self._bounds.get(key)
        if hit is None:
            hit = self._evaluate_bounds(d, env)
            if len(self._bounds) >= BOUNDS_MEMO_MAX:
                self._bounds.clear()
            self._bounds[key] = hit
        return hit

    def _evaluate_bounds(self, d: Dim, env: Mapping[str, Any]) -> tuple[Any, Any, Any]:
        p = BY_NAME[d.name]
        key = f"params.{d.name}"
        vals = []
        for nm, b in (("low", d.low), ("high", d.high), ("step", d.step)):
            if b is None:
                vals.append(None)
                continue
            try:
                v = b.value(env)
            except expr.ExprError as exc:
                raise ConfigError(f"{self.source}: {key}.{nm} = {b.text!r}: {exc}") from None
            if nm != "step":
                v = _coerce_bound(p, v, self.source, f"{key}.{nm}", b.text, env, b.refs)
            elif p.kind == "int":
                if float(v) != int(v) or v <= 0:
                    raise ConfigError(f"{self.source}: {key}.step = {b.text!r} evaluates to {v}: "
                                      f"must be a positive integer")
                v = int(v)
            elif v <= 0:
                raise ConfigError(f"{self.source}: {key}.step = {b.text!r} evaluates to {v}: must be positive")
            vals.append(v)
        lo, hi, step = vals
        if lo > hi:
            refs = _env_text(env, (d.low.refs | d.high.refs))  # type: ignore[union-attr]
            raise ConfigError(f"{self.source}: {key}: low {lo} > high {hi}{refs}: must be low <= high")
        return lo, hi, step

    # -- enumeration (grid / exhaustive) -------------------------------------------------
    def grid(self, base: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every point of the space (conditions and dependent bounds honoured), in a fixed order.
        Float knobs need a ``step``; log-scale floats cannot be enumerated."""
        out: list[dict[str, Any]] = []

        def rec(i: int, env: dict[str, Any], chosen: dict[str, Any]) -> None:
            if len(out) > MAX_GRID:
                raise ConfigError(f"{self.source}: the grid has more than {MAX_GRID} points; "
                                  f"use a sampler (nsga2, tpe, random) or coarser steps")
            if i == len(self.dims):
                out.append(dict(chosen))
                return
            d = self.dims[i]
            if d.type == "fixed":
                values = [d.value]
            elif not d.active(env):
                rec(i + 1, env, chosen)
                return
            elif d.type == "categorical":
                values = list(d.choices)
            else:
                values = self._values(d, env)
            for v in values:
                env2 = dict(env)
                env2[d.name] = v
                chosen2 = dict(chosen)
                chosen2[d.name] = v
                rec(i + 1, env2, chosen2)

        rec(0, dict(base), {})
        return out

    def _values(self, d: Dim, env: Mapping[str, Any]) -> list[Any]:
        lo, hi, step = self.bounds(d, env)
        if d.type == "int":
            return list(range(lo, hi + 1, step or 1))
        if step is None:
            raise ConfigError(f"{self.source}: params.{d.name}: a float knob needs a 'step' for the grid sampler")
        n = int(math.floor((hi - lo) / step + 1e-9))
        return [_clean(lo + k * step) for k in range(n + 1)]

    @property
    def searched_names(self) -> list[str]:
        return [d.name for d in self.dims if d.searched]

    def canonical(self) -> dict[str, Any]:
        """A JSON-able description (used to detect a changed space on resume)."""
        out = {}
        for d in self.dims:
            item: dict[str, Any] = {"type": d.type}
            if d.log:
                item["log"] = True
            for nm in ("low", "high", "step"):
                b = getattr(d, nm)
                if b is not None:
                    item[nm] = b.const if b.tree is None else b.text
            if d.choices:
                item["choices"] = list(d.choices)
            if d.type == "fixed":
                item["value"] = d.value
            if d.when:
                item["when"] = {k: list(v) for k, v in d.when}
            out[d.name] = item
        return out


def _clean(x: float) -> float:
    return float(f"{x:.12g}")


def _env_text(env: Mapping[str, Any], refs: set[str]) -> str:
    if not refs:
        return ""
    return " (with " + ", ".join(f"{k} = {env.get(k)!r}" for k in sorted(refs)) + ")"


def _coerce_bound(p: Param, v: Any, source: str, key: str, text: str, env: Mapping[str, Any], refs: set[str]) -> Any:
    if p.kind == "int" and isinstance(v, float) and v.is_integer():
        v = int(v)
    try:
        return coerce(p, v, source, key)
    except ConfigError:
        if not refs:
            raise
        raise ConfigError(f"{source}: {key} = {text!r} evaluates to {v!r}{_env_text(env, refs)}: "
                          f"must be {p.allowed()}") from None
