"""Shapley values: the exact formula and sampled orders against a brute-force oracle (the mean
over every order of each player's marginal change) on small synthetic games."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dse.search.review.shapley import shapley


def game(s: frozenset) -> np.ndarray:
    """Two outputs with interactions: a product term and a threshold."""
    x = [1.0 if i in s else 0.0 for i in range(3)]
    return np.array([3 * x[0] + 2 * x[0] * x[1] - x[2] + 5 * x[0] * x[1] * x[2],
                     float(sum(x) >= 2)])


def oracle(n, v):
    phi = np.zeros((n, len(v(frozenset()))))
    perms = list(itertools.permutations(range(n)))
    for p in perms:
        s = frozenset()
        for i in p:
            phi[i] += v(s | {i}) - v(s)
            s = s | {i}
    return phi / len(perms)


def batch(v, calls=None):
    def values(coalitions):
        if calls is not None:
            calls.extend(coalitions)
        return [v(c) for c in coalitions]
    return values


def test_exact_matches_brute_force_oracle_on_three_players():
    calls = []
    att = shapley(3, batch(game, calls), exact_max=8)
    assert att.exact and att.stderr is None
    np.testing.assert_allclose(att.phi, oracle(3, game), atol=1e-12)
    assert len(calls) == len(set(calls)) == 8              # every coalition evaluated once
    np.testing.assert_allclose(att.phi.sum(axis=0), game(frozenset({0, 1, 2})) - game(frozenset()), atol=1e-12)


def test_sampled_orders_add_up_exactly_and_are_seeded():
    def v(s):
        return np.array([sum((i + 1) ** 2 for i in s) + 7 * (0 in s and 5 in s) + 0.5 * len(s) ** 2])
    n = 12
    a = shapley(n, batch(v), exact_max=8, orders=40, seed=3)
    b = shapley(n, batch(v), exact_max=8, orders=40, seed=3)
    assert not a.exact and a.orders == 40
    assert np.array_equal(a.phi, b.phi)
    assert abs(a.phi.sum() - (v(frozenset(range(n))) - v(frozenset()))[0]) < 1e-9
    # additive players are exact in every order; the interacting ones land within a few errors
    truth = np.array([(i + 1) ** 2 + 0.5 * n for i in range(n)], dtype=float)
    truth[[0, 5]] += 3.5
    assert np.all(np.abs(a.phi[:, 0] - truth) <= 4 * a.stderr[:, 0] + 1e-9)


def test_non_finite_output_is_not_attributable():
    def v(s):
        return np.array([1.0 * len(s), math.nan if s == frozenset({1}) else 2.0])
    att = shapley(2, batch(v))
    assert np.all(np.isfinite(att.phi[:, 0])) and not np.all(np.isfinite(att.phi[:, 1]))


def test_bad_arguments():
    with pytest.raises(ValueError):
        shapley(2, batch(game), orders=0)
