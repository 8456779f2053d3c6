"""Legal points of a search space drawn without optuna: uniform draws and mutations of a parent.

``Space.suggest`` asks an optuna trial for each active knob; ``Draw`` answers those questions
from a numpy generator instead, so every point it yields honours the space exactly as a
sampler's would (conditional bounds, steps, ``when`` conditions, fixed knobs):

* uniform: every knob drawn uniformly over its legal values (log-uniform on a log scale);
* mutation of ``parent`` (a trial's parameters): the knobs named in ``mutate`` are drawn afresh,
  every other knob keeps the parent's value when it is still legal (a bound that moved with an
  earlier mutated knob may make it illegal: it is then drawn afresh too).
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dse.search.space.space import Space, ask_knob


def legal_int(x: Any, low: int, high: int, step: int) -> bool:
    """Whether ``x`` is a value of the int knob's range and step."""
    return low <= x <= high and (x - low) % step == 0


def legal_float(x: Any, low: float, high: float, step: float | None) -> bool:
    """Whether ``x`` is a value of the float knob's range (and grid, with a step)."""
    if not low <= x <= high:
        return False
    return step is None or abs((x - low) / step - round((x - low) / step)) < 1e-9


def fresh_int(rng: np.random.Generator, low: int, high: int, step: int, log: bool) -> int:
    """An int knob drawn uniformly over its values (log-uniform on a log scale)."""
    if log:                                   # optuna: a log-scale int has step 1 and low >= 1
        x = math.exp(rng.uniform(math.log(low), math.log(high + 1)))
        return int(min(high, max(low, math.floor(x))))
    return int(low + step * rng.integers((high - low) // step + 1))


def fresh_float(rng: np.random.Generator, low: float, high: float, step: float | None, log: bool) -> float:
    """A float knob drawn uniformly over its grid or range (log-uniform on a log scale)."""
    if step is not None:
        n = int(math.floor((high - low) / step + 1e-9))
        return float(f"{low + step * int(rng.integers(n + 1)):.12g}")
    if log:
        return float(math.exp(rng.uniform(math.log(low), math.log(high))))
    return float(rng.uniform(low, high))


class Draw:
    """A stand-in for an optuna trial that ``Space.suggest`` asks (see the module docstring)."""

    def __init__(self, rng: np.random.Generator, parent: Mapping[str, Any] | None = None,
                 mutate: Sequence[str] = ()):
        self.rng, self.parent, self.mutate = rng, dict(parent or {}), set(mutate)

    def _kept(self, name: str, legal) -> tuple[bool, Any]:
        if name in self.mutate or name not in self.parent:
            return False, None
        v = self.parent[name]
        return (True, v) if legal(v) else (False, None)

    def suggest_categorical(self, name: str, choices: list) -> Any:
        ok, v = self._kept(name, lambda x: x in choices)
        return v if ok else choices[int(self.rng.integers(len(choices)))]

    def suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int:
        ok, v = self._kept(name, lambda x: legal_int(x, low, high, step))
        return int(v) if ok else fresh_int(self.rng, low, high, step, log)

    def suggest_float(self, name: str, low: float, high: float, step: float | None = None,
                      log: bool = False) -> float:
        ok, v = self._kept(name, lambda x: legal_float(x, low, high, step))
        return float(v) if ok else fresh_float(self.rng, low, high, step, log)


_MISSING = object()


class _Compiled:
    """What ``Space.suggest`` recomputes for every point, computed once per space: the knobs an
    expression bound reads, the choices as a list, and (low, high, step) memoised on the values
    of those knobs (``Space.bounds`` is a function of them alone). ``suggest`` asks the trial the
    same questions in the same order as ``Space.suggest``, so a generator draws the same stream."""

    MAX_MEMO = 1 << 14

    def __init__(self, space: Space):
        self.space = space
        self.dims = []
        for d in space.dims:
            refs: set[str] = set()
            for b in (d.low, d.high, d.step):
                if b is not None:
                    refs |= b.refs
            self.dims.append((d, tuple(sorted(refs)), list(d.choices)))
        self.names = space.searched_names
        self.memo: dict[tuple, tuple] = {}

    def bounds(self, d, refs: tuple[str, ...], env: Mapping[str, Any]) -> tuple:
        key = (d.name, *[(env.get(r, _MISSING), type(env.get(r, _MISSING))) for r in refs])
        hit = self.memo.get(key)
        if hit is None:
            hit = self.space.bounds(d, env)           # a bound out of range raises: never memoised
            if len(self.memo) >= self.MAX_MEMO:
                self.memo.clear()
            self.memo[key] = hit
        return hit

    def walk(self, env: dict[str, Any]) -> Iterator[tuple[Any, tuple[str, ...], list]]:
        """``(knob, refs, choices)`` of each searched knob active under ``env``, in the space's
        order; a fixed knob's value is set into ``env`` on the way (the caller sets each yielded
        knob's value into ``env`` before asking for the next: a later ``when`` reads it)."""
        for d, refs, choices in self.dims:
            if d.type == "fixed":
                env[d.name] = d.value
                continue
            if d.when and not d.active(env):
                continue
            yield d, refs, choices

    def suggest(self, trial: Any, base: Mapping[str, Any]) -> dict[str, Any]:
        """``Space.suggest(trial, base)``, restricted to the searched knobs (``searched``)."""
        env = dict(base)
        out: dict[str, Any] = {}
        for d, refs, choices in self.walk(env):
            v = ask_knob(trial, d, choices, None if d.type == "categorical" else self.bounds(d, refs, env))
            env[d.name] = out[d.name] = v
        return out

    def draw(self, rng: np.random.Generator, base: Mapping[str, Any], parent: Mapping[str, Any] | None = None,
             mutate: Sequence[str] = ()) -> dict[str, Any]:
        """``suggest(Draw(rng, parent, mutate), base)`` with ``Draw``'s answers inlined (the
        same draws from ``rng``, in the same order)."""
        parent = parent or {}
        env = dict(base)
        out: dict[str, Any] = {}
        for d, refs, choices in self.dims:
            name = d.name
            if d.type == "fixed":
                env[name] = d.value
                continue
            if d.when and not d.active(env):
                continue
            kept = name in parent and name not in mutate
            v = parent[name] if kept else None
            if d.type == "categorical":
                if not (kept and v in choices):
                    v = choices[int(rng.integers(len(choices)))]
            else:
                lo, hi, step = self.bounds(d, refs, env)
                if d.type == "int":
                    step = step or 1
                    v = int(v) if kept and legal_int(v, lo, hi, step) else fresh_int(rng, lo, hi, step, d.log)
                else:
                    v = float(v) if kept and legal_float(v, lo, hi, step) else fresh_float(rng, lo, hi, step, d.log)
            env[name] = out[name] = v
        return out


_COMPILED: dict[int, _Compiled] = {}


def compiled(space: Space) -> _Compiled:
    """The space's ``_Compiled`` form (kept for the last few spaces seen)."""
    c = _COMPILED.get(id(space))
    if c is None or c.space is not space:
        if len(_COMPILED) >= 8:
            _COMPILED.clear()
        c = _COMPILED[id(space)] = _Compiled(space)
    return c


def uniform(space: Space, base: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """One point of ``space`` drawn uniformly (knob by knob) over its legal values."""
    return compiled(space).draw(rng, base)


def mutant(space: Space, base: Mapping[str, Any], rng: np.random.Generator, parent: Mapping[str, Any],
           max_knobs: int = 3) -> dict[str, Any]:
    """``parent`` with 1..``max_knobs`` of its searched knobs drawn afresh (see the module docstring)."""
    c = compiled(space)
    names = c.names
    k = int(rng.integers(1, min(max_knobs, len(names)) + 1))
    pick = [names[i] for i in rng.choice(len(names), size=k, replace=False)]
    return c.draw(rng, base, parent, pick)


def reference_uniform(space: Space, base: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """``uniform`` through ``Space.suggest`` (the slow reference of the compiled path)."""
    return searched(space, space.suggest(Draw(rng), base))


def reference_mutant(space: Space, base: Mapping[str, Any], rng: np.random.Generator, parent: Mapping[str, Any],
                     max_knobs: int = 3) -> dict[str, Any]:
    """``mutant`` through ``Space.suggest`` (the slow reference of the compiled path)."""
    names = space.searched_names
    k = int(rng.integers(1, min(max_knobs, len(names)) + 1))
    pick = [names[i] for i in rng.choice(len(names), size=k, replace=False)]
    return searched(space, space.suggest(Draw(rng, parent, pick), base))


def searched(space: Space, values: Mapping[str, Any]) -> dict[str, Any]:
    """The searched knobs of ``values`` (what a trial's ``params`` hold)."""
    keep = {d.name for d in space.dims if d.searched}
    return {k: v for k, v in values.items() if k in keep}


class _NoDraw:
    """A generator that refuses to draw (``is_legal``: every knob must be kept)."""

    def __getattr__(self, name: str):
        raise _Illegal(name)


class _Illegal(Exception):
    pass


def is_legal(space: Space, base: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """Whether ``params`` are exactly the searched knobs of a point of ``space`` (every active knob
    present with a legal value, no other knob)."""
    try:
        kept = compiled(space).suggest(Draw(_NoDraw(), params), base)   # type: ignore[arg-type]
    except _Illegal:
        return False
    return kept == dict(params)
