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
from typing import Any, Mapping, Sequence

import numpy as np

from dse.search.space import Space


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
        ok, v = self._kept(name, lambda x: low <= x <= high and (x - low) % step == 0)
        if ok:
            return int(v)
        if log:                                   # optuna: a log-scale int has step 1 and low >= 1
            x = math.exp(self.rng.uniform(math.log(low), math.log(high + 1)))
            return int(min(high, max(low, math.floor(x))))
        return int(low + step * self.rng.integers((high - low) // step + 1))

    def suggest_float(self, name: str, low: float, high: float, step: float | None = None,
                      log: bool = False) -> float:
        def legal(x: float) -> bool:
            if not low <= x <= high:
                return False
            return step is None or abs((x - low) / step - round((x - low) / step)) < 1e-9
        ok, v = self._kept(name, legal)
        if ok:
            return float(v)
        if step is not None:
            n = int(math.floor((high - low) / step + 1e-9))
            return float(f"{low + step * int(self.rng.integers(n + 1)):.12g}")
        if log:
            return float(math.exp(self.rng.uniform(math.log(low), math.log(high))))
        return float(self.rng.uniform(low, high))


def uniform(space: Space, base: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """One point of ``space`` drawn uniformly (knob by knob) over its legal values."""
    return searched(space, space.suggest(Draw(rng), base))


def mutant(space: Space, base: Mapping[str, Any], rng: np.random.Generator, parent: Mapping[str, Any],
           max_knobs: int = 3) -> dict[str, Any]:
    """``parent`` with 1..``max_knobs`` of its searched knobs drawn afresh (see the module docstring)."""
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
        kept = searched(space, space.suggest(Draw(_NoDraw(), params), base))   # type: ignore[arg-type]
    except _Illegal:
        return False
    return kept == dict(params)
