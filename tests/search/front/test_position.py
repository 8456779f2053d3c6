"""Where a design sits against a front: dominators, additive epsilon, best improvement and the
nearest design, each against a plain re-computation from its definition."""
from __future__ import annotations

import numpy as np

from dse.search.front import position


def _random_case(seed: int):
    rng = np.random.default_rng(seed)
    F = rng.integers(0, 5, size=(12, 3)).astype(float)
    r = rng.integers(0, 5, size=3).astype(float)
    return F, r


def test_dominators_match_the_definition():
    for seed in range(20):
        F, r = _random_case(seed)
        want = [all(f[j] <= r[j] for j in range(3)) and any(f[j] < r[j] for j in range(3)) for f in F]
        assert position.dominators(F, r).tolist() == want
    assert position.dominators(np.zeros((0, 2)), np.zeros(2)).tolist() == []


def test_additive_epsilon_is_the_smallest_shift_some_design_meets():
    for seed in range(20):
        F, r = _random_case(seed)
        s = position.front_scale(F)
        eps, row = position.additive_epsilon(F, r, s)
        # some design meets r + eps (scaled) everywhere, none meets any smaller shift
        assert np.all(F[row] <= r + eps * s + 1e-12)
        grid = np.linspace(eps - 2, eps, 401)[:-1]
        assert not any(np.all(F <= r + e * s, axis=1).any() for e in grid)
        # <= 0 exactly when some front design weakly dominates r
        assert (eps <= 0) == bool(np.all(F <= r, axis=1).any())


def test_front_scale_never_zero_and_best_improvement_per_objective():
    F = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, 1.0]])
    s = position.front_scale(F)
    assert s.tolist() == [2.0, 5.0, 1.0]            # constant column: its magnitude
    gain, rows = position.best_improvement(F, np.array([2.0, 6.0, 0.5]))
    assert gain.tolist() == [1.0, 1.0, -0.5] and rows.tolist() == [0, 0, 1]


def test_nearest_is_the_closest_in_the_scaled_space():
    for seed in range(10):
        F, r = _random_case(seed)
        s = position.front_scale(F)
        row, d = position.nearest(F, r, s)
        dists = [float(np.sqrt((((f - r) / s) ** 2).sum())) for f in F]
        assert d == min(dists) and dists[row] == d
