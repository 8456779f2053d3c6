"""Pareto front, hypervolume and knee against slow independent oracles and hand-worked cases."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.search.front import pareto
from dse.search.front.pareto import _hv_slicing, hypervolume, nondominated, to_min
from dse.search.front.pareto import chord_knee_index as knee_index  # the chord knee (before issue 32)


def _dominates(a, b) -> bool:
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def _front_oracle(P):
    return [not any(_dominates(q, p) for q in P) for p in P]


def _hv_cells(P, ref):
    """Count unit cells dominated by integer points (brute force, independent of both HV codes)."""
    m = len(ref)
    cells = 0
    for cell in itertools.product(*[range(int(r)) for r in ref]):
        if any(all(p[k] <= cell[k] for k in range(m)) for p in P):
            cells += 1
    return cells


points = st.lists(st.tuples(*[st.integers(0, 6)] * 3), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(points)
def test_nondominated_matches_oracle(P):
    assert list(nondominated(np.array(P, float))) == _front_oracle(P)


@settings(max_examples=40, deadline=None)
@given(points, st.integers(2, 3))
def test_hypervolume_matches_cell_count(P, m):
    P = [p[:m] for p in P]
    ref = np.full(m, 7.0)
    oracle = _hv_cells(P, ref)
    A = np.array(P, float)
    assert hypervolume(A, ref) == pytest.approx(oracle)
    F = A[nondominated(A)]
    assert _hv_slicing(F, ref) == pytest.approx(oracle)


def test_hypervolume_ignores_points_beyond_reference():
    assert hypervolume(np.array([[5.0, 5.0], [1.0, 9.0]]), np.array([4.0, 4.0])) == 0.0
    assert hypervolume(np.zeros((0, 2)), np.array([1.0, 1.0])) == 0.0


def test_knee_two_objectives_hand_worked():
    # An L-shaped front: (1, 1) bulges farthest toward the ideal from the chord (0,10)-(10,0).
    F = np.array([[0, 10], [1, 1], [3, 0.5], [10, 0]], float)
    assert knee_index(F) == 1
    # Kneedle-style check: distance to the chord in normalised space is max at index 1.
    N = pareto.normalise(F)
    d = (1 - N.sum(axis=1)) / np.sqrt(2)
    assert int(np.argmax(d)) == 1


def test_knee_invariant_to_positive_affine_rescaling():
    rng = np.random.default_rng(3)
    x = np.sort(rng.random(15))
    F = np.column_stack([x, (1 - x) ** 3])           # convex front
    k = knee_index(F)
    G = F * np.array([1000.0, 0.01]) + np.array([-5.0, 7.0])
    assert knee_index(G) == k


def test_knee_maximised_objective_via_to_min():
    vals = np.array([[0.1, 1.0], [0.8, 2.0], [0.9, 10.0]])  # maximise first, minimise second
    F = to_min(vals, ["maximize", "minimize"])
    assert nondominated(F).all()
    assert knee_index(F) == 1


def test_knee_concave_front_falls_back_to_nearest_ideal():
    F = np.array([[0, 1], [0.5, 0.9], [0.9, 0.5], [1, 0]], float)   # bulges away from the ideal
    d = np.linalg.norm(pareto.normalise(F), axis=1)
    assert knee_index(F) == int(np.argmin(d))


def test_knee_three_objectives_hyperplane():
    # Extremes at the unit vectors; (0.2, 0.2, 0.2) is farthest below the plane x+y+z=1.
    F = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.2, 0.2, 0.2], [0.3, 0.3, 0.1]], float)
    assert knee_index(F) == 3


def test_knee_degenerate_cases():
    assert knee_index(np.array([[1.0, 2.0]])) == 0
    assert knee_index(np.array([[1.0, 2.0], [1.0, 2.0]])) == 0          # ties -> earliest
    assert knee_index(np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]])) == 0   # one objective constant
    with pytest.raises(ValueError):
        knee_index(np.zeros((0, 2)))


def test_knee_index_is_the_top_knee_candidate():
    """``pareto.knee_index`` (the knee every command shows) is the top knee candidate: it agrees
    with the chord knee on clear cases, is invariant to a change of units (positive rescaling;
    an objective that crosses zero, on the linear fallback, to positive affine maps too) and
    keeps the same degenerate answers."""
    from dse.search.front.knee import knee_candidates
    F = np.array([[0, 10], [1, 1], [3, 0.5], [10, 0]], float)
    assert pareto.knee_index(F) == 1 == knee_candidates(F).top
    rng = np.random.default_rng(3)
    x = np.sort(rng.random(15))
    F = np.column_stack([x, (1 - x) ** 3])
    G = F * np.array([1000.0, 0.01])
    assert pareto.knee_index(G) == pareto.knee_index(F)
    Z = F - F.mean(axis=0)                                   # both objectives cross zero: linear fallback
    assert pareto.knee_index(Z * np.array([1000.0, 0.01]) + np.array([-5.0, 0.0])) == pareto.knee_index(Z)
    assert pareto.knee_index(np.array([[1.0, 2.0], [1.0, 2.0]])) == 0
    assert pareto.knee_index(np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]])) == 0
    with pytest.raises(ValueError):
        pareto.knee_index(np.zeros((0, 2)))
