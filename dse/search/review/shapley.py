"""Shapley values of a vector-valued set function: exact, or by seeded permutation sampling.

``n`` players switch one by one from a start state to an end state; ``values(coalitions)`` gives,
for each coalition (a ``frozenset`` of switched players), a vector of outputs (every objective,
say). Player ``i``'s contribution is the mean, over orders of the players, of the change of the
outputs when ``i`` is switched after the players before it in the order:

* exact (``n <= exact_max``): every one of the ``2^n`` coalitions evaluated once, and
  ``phi_i = sum_{S not containing i} |S|! (n-|S|-1)! / n! (v(S + i) - v(S))``;
* sampled: ``orders`` random orders (``numpy.random.default_rng(seed)``: deterministic), ``phi_i``
  the mean of ``i``'s marginal changes over them, with its standard error (standard deviation of
  those changes / sqrt(orders)).

Either way each order telescopes (its marginal changes add to ``v(all) - v(none)``), so the
contributions add up to the total change exactly (to rounding). An output that is not finite for
some coalition used makes that output's contributions NaN (not attributable): the caller says so.
``edges`` lists the (player, coalition before it) steps used, for the caller's own bookkeeping
(which switches flip feasibility).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Coalition = frozenset


@dataclass
class Attribution:
    """Contributions ``phi`` (players x outputs), their standard errors (None when exact), the
    total ``v(all) - v(none)``, and the coalitions' values."""
    phi: np.ndarray
    stderr: np.ndarray | None
    total: np.ndarray
    exact: bool
    orders: int                                      # sampled orders (0: exact)
    values: dict[Coalition, np.ndarray]
    edges: list[tuple[int, Coalition]]


def shapley(n: int, values: Callable[[Sequence[Coalition]], Sequence[np.ndarray]], *, exact_max: int = 10,
            orders: int = 64, seed: int = 0) -> Attribution:
    """Shapley values of ``n`` players (module docstring); ``values`` is called once, with every
    coalition needed (each once)."""
    if n < 0 or orders < 1:
        raise ValueError("n >= 0 and orders >= 1")
    if n <= exact_max:
        return _exact(n, values)
    return _sampled(n, values, orders, seed)


def _evaluate(coalitions: list[Coalition], values) -> dict[Coalition, np.ndarray]:
    out = values(coalitions)
    return {c: np.asarray(v, dtype=float) for c, v in zip(coalitions, out)}


def _exact(n: int, values) -> Attribution:
    players = range(n)
    coalitions = [frozenset(c) for k in range(n + 1) for c in itertools.combinations(players, k)]
    v = _evaluate(coalitions, values)
    full, none = frozenset(players), frozenset()
    phi = np.zeros((n, len(v[none])))
    edges = []
    weight = [math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n) for k in range(n)]
    for i in players:
        for s in coalitions:
            if i in s:
                continue
            phi[i] += weight[len(s)] * (v[s | {i}] - v[s])
            edges.append((i, s))
    return Attribution(phi, None, v[full] - v[none], True, 0, v, edges)


def _sampled(n: int, values, orders: int, seed: int) -> Attribution:
    rng = np.random.default_rng(seed)
    perms = [rng.permutation(n) for _ in range(orders)]
    needed: dict[Coalition, None] = {}
    for p in perms:
        s: frozenset = frozenset()
        needed[s] = None
        for i in p:
            s = s | {int(i)}
            needed[s] = None
    v = _evaluate(list(needed), values)
    m = len(v[frozenset()])
    marg = np.zeros((orders, n, m))
    edges = {}
    for k, p in enumerate(perms):
        s = frozenset()
        for i in p:
            i = int(i)
            marg[k, i] = v[s | {i}] - v[s]
            edges[(i, s)] = None
            s = s | {i}
    phi = marg.mean(axis=0)
    se = marg.std(axis=0, ddof=1) / math.sqrt(orders) if orders > 1 else np.full_like(phi, np.nan)
    return Attribution(phi, se, v[frozenset(range(n))] - v[frozenset()], False, orders, v, list(edges))
