"""Knee candidates (dse.search.front.knee): hand-made fronts with known bulges, the one-far-point
invariance of the robust normalisation, the ambiguity flag."""
from __future__ import annotations

import numpy as np
import pytest

from dse.search.front import knee, pareto


def two_bulges(depth_a: float = 0.10, depth_b: float = 0.06, n: int = 41) -> np.ndarray:
    """A straight two-objective front f2 = 1 - f1 with two dents toward the ideal point: at
    f1 = 0.3 (``depth_a``) and f1 = 0.72 (``depth_b``); every point non-dominated."""
    x = np.linspace(0.0, 1.0, n)
    y = 1.0 - x - depth_a * np.exp(-((x - 0.3) / 0.12) ** 2) - depth_b * np.exp(-((x - 0.72) / 0.12) ** 2)
    F = np.column_stack([x, y])
    assert pareto.nondominated(F).all()
    return F


def arch(F: np.ndarray) -> list[dict]:
    """Designs: architecture 'a' left of f1 = 0.5, 'b' right of it; a knob that varies per point."""
    return [{"side": "a" if x < 0.5 else "b", "other": i} for i, (x, _) in enumerate(F)]


def test_two_bulges_give_two_candidates_in_order():
    F = two_bulges()
    kc = knee.knee_candidates(F)                      # no grouping: every point its own architecture
    assert [c.index for c in kc.candidates] == [12, 29]   # f1 = 0.30 then f1 = 0.725
    assert kc.candidates[0].score > kc.candidates[1].score
    grouped = knee.knee_candidates(F, arch(F), ["side"])
    assert [c.group for c in grouped.candidates] == [("a",), ("b",)]
    assert grouped.top == 12
    assert grouped.margin == pytest.approx(grouped.candidates[0].score - grouped.candidates[1].score)
    assert not grouped.ambiguous


def test_candidates_of_one_architecture_merge():
    F = two_bulges()
    designs = [{"side": "same"} for _ in F]
    kc = knee.knee_candidates(F, designs, ["side"])
    assert len(kc.candidates) == 1
    assert kc.candidates[0].members == [12, 29]
    assert kc.candidates[0].margin is None           # no other architecture on the front


def test_three_objectives_two_bulges():
    """A flat simplex front sum(f) = 1 with two dents; candidates are found in three dimensions."""
    g = np.linspace(0, 1, 21)
    pts = np.array([(a, b, 1 - a - b) for a in g for b in g if a + b <= 1 + 1e-12])
    dent = 0.12 * np.exp(-np.sum((pts - [0.6, 0.2, 0.2]) ** 2, axis=1) / 0.02) + \
        0.07 * np.exp(-np.sum((pts - [0.1, 0.2, 0.7]) ** 2, axis=1) / 0.02)
    F = pts - dent[:, None] / 3
    F = F[pareto.nondominated(F)]
    kc = knee.knee_candidates(F)
    assert len(kc.candidates) >= 2                  # the two dents first (a corner may follow)
    np.testing.assert_allclose(F[kc.candidates[0].index] + 0.04, [0.6, 0.2, 0.2], atol=0.02)
    np.testing.assert_allclose(F[kc.candidates[1].index] + 0.07 / 3, [0.1, 0.2, 0.7], atol=0.02)


@pytest.mark.parametrize("far", [(-5.0, 50.0), (-0.5, 3.0), (40.0, -3.0), (2.0, -0.4)])
def test_one_far_point_cannot_move_the_knee(far):
    F = two_bulges()
    top = knee.knee_candidates(F, arch(F), ["side"]).top
    G = np.vstack([F, far])
    assert pareto.nondominated(G).all()             # the far point is on the front too
    kc = knee.knee_candidates(G, arch(F) + [{"side": "far", "other": -1}], ["side"])
    assert kc.top == top
    assert [c.group for c in kc.candidates][:2] == [("a",), ("b",)]


def test_min_max_knee_moves_with_one_far_point():
    """The contrast the robust normalisation exists for: pareto.knee_index (extremes) moves."""
    F = two_bulges()
    G = np.vstack([F, (-5.0, 50.0)])
    assert pareto.chord_knee_index(G) != pareto.chord_knee_index(F) == 12


def test_ambiguity_flag_below_threshold():
    F = two_bulges(0.080, 0.078)
    kc = knee.knee_candidates(F, arch(F), ["side"])
    assert len(kc.candidates) == 2
    assert kc.margin < knee.AMBIGUOUS_MARGIN and kc.ambiguous
    clear = knee.knee_candidates(two_bulges(0.11, 0.03), arch(F), ["side"])
    assert clear.margin > knee.AMBIGUOUS_MARGIN and not clear.ambiguous
    assert knee.knee_candidates(F, arch(F), ["side"], threshold=kc.margin / 2).ambiguous is False


def test_signature_rounds_scores():
    F = two_bulges()
    sig = knee.knee_candidates(F, arch(F), ["side"]).signature(3, 2)
    assert [s[0] for s in sig] == [["a"], ["b"]]
    assert all(s[1] == round(s[1], 2) for s in sig)


def test_degenerate_fronts():
    assert knee.knee_candidates(np.zeros((0, 2))).candidates == []
    one = knee.knee_candidates(np.array([[1.0, 2.0]]))
    assert one.top == 0 and one.margin is None and not one.ambiguous
    flat = knee.knee_candidates(np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]]))   # dominated rows are the
    assert flat.top == 0                                                           # caller's; constant f2


def test_robust_bounds_fall_back_to_min_max_when_quantiles_coincide():
    F = np.array([[0.0, 1.0]] * 19 + [[1.0, 0.0]])
    lo, hi = knee.robust_bounds(F)
    np.testing.assert_allclose(lo, [0.0, 0.0])
    np.testing.assert_allclose(hi, [1.0, 1.0])


# Relative (log) coordinates: every objective of one sign on the front --------------------------------

def positive_two_bulges(depth_a: float = 0.10, depth_b: float = 0.06) -> np.ndarray:
    """``two_bulges`` drawn in log coordinates: f1 = e^(2 x), f2 = e^(2 y), both positive (a
    latency and a cost, say), the bulges at x = 0.3 and x = 0.72."""
    return np.exp(2.0 * two_bulges(depth_a, depth_b))


ARCH = arch(two_bulges())      # the same architectures as the linear front's


def test_positive_front_uses_relative_coordinates_and_finds_both_bulges():
    F = positive_two_bulges()
    kc = knee.knee_candidates(F, ARCH, ["side"])
    assert kc.scale.log.all()
    assert [c.index for c in kc.candidates] == [12, 29]
    # the score is -ln(f1 f2): 2 x (the dent) above the straight front's level
    straight = kc.scale.utility(np.exp(2.0 * two_bulges(0.0, 0.0)))   # the same front, no dents
    assert kc.candidates[0].score - straight[12] == pytest.approx(2 * 0.10, rel=1e-3)


def test_relative_knee_ignores_units_and_the_rest_of_the_front():
    F = positive_two_bulges()
    ref = knee.knee_candidates(F, ARCH, ["side"])
    scaled = knee.knee_candidates(F * [1e-6, 3e4], ARCH, ["side"])     # other units
    assert [c.index for c in scaled.candidates] == [c.index for c in ref.candidates]
    np.testing.assert_allclose([c.margin for c in scaled.candidates[:1]], [ref.candidates[0].margin], rtol=1e-9)
    # a utility depends on its design alone: the same on half the front
    keep = np.arange(0, len(F), 2)
    np.testing.assert_allclose(knee.knee_candidates(F[keep]).utility, ref.utility[keep], atol=1e-12)
    np.testing.assert_allclose(ref.utility, -np.log(F).sum(axis=1), atol=1e-12)


@pytest.mark.parametrize("far", [(1e-6, 1e6), (1e5, 1e-4), (1e-6, 1e3), (0.5, 90.0), (60.0, 0.9)])
def test_relative_knee_cannot_move_with_one_far_point(far):
    """Far points very good in one objective and very poor in the other, including ones whose
    product of objectives beats every design of the front (1e-6 x 1e3): an end of the front is
    not a knee."""
    F = positive_two_bulges()
    ref = knee.knee_candidates(F, ARCH, ["side"])
    G = np.vstack([F, far])
    assert pareto.nondominated(G).all()
    kc = knee.knee_candidates(G, ARCH + [{"side": "far", "other": -1}], ["side"])
    assert kc.top == ref.top
    assert [c.group for c in kc.candidates][:2] == [("a",), ("b",)]
    assert kc.candidates[0].margin == pytest.approx(ref.candidates[0].margin, abs=1e-12)


def test_maximised_objective_is_relative_too_and_mixed_signs_fall_back():
    F = positive_two_bulges()
    mfu = np.column_stack([F[:, 0], -1.0 / F[:, 1]])        # maximise 1/f2: to_min form is negative
    a, b = knee.knee_candidates(F), knee.knee_candidates(mfu)
    assert b.scale.log.all() and list(b.scale.sign) == [1.0, -1.0]
    np.testing.assert_allclose(a.utility - a.utility[0], b.utility - b.utility[0], atol=1e-12)
    mixed = F.copy()
    mixed[:, 1] -= np.median(mixed[:, 1])                   # a slack: zero and both signs on the front
    s = knee.Scale.of(mixed)
    assert list(s.log) == [True, False] and s.span[1] > 0


def test_an_estimate_of_the_wrong_sign_stays_finite_and_ordered():
    """A minimised objective at or below zero is its best value, a maximised one at or below zero
    its worst (the coordinate stays monotone in the objective, never NaN)."""
    F = positive_two_bulges()
    u = knee.knee_candidates(F).scale.utility(np.array([[-1.0, 1.0], [1e-3, 1.0], [1.0, 1.0]]))
    assert np.isfinite(u).all() and u[0] >= u[1] > u[2]
    G = np.column_stack([F[:, 0], -F[:, 1]])
    v = knee.knee_candidates(G).scale.utility(np.array([[1.0, 1.0], [1.0, -1e-3], [1.0, -1.0]]))
    assert np.isfinite(v).all() and v[0] <= v[1] < v[2]


def test_a_design_of_another_architecture_next_to_the_top_sets_its_margin():
    """A front row beside the top candidate (so no local maximum, no candidate) of another
    architecture, with a utility just below the top's: the choice between the two architectures
    is ambiguous, whatever the next bulge's margin."""
    F = two_bulges()
    designs = arch(F)
    ref = knee.knee_candidates(F, designs, ["side"])
    assert ref.rival is None and not ref.ambiguous
    designs[13] = {"side": "c", "other": 13}
    kc = knee.knee_candidates(F, designs, ["side"])
    assert [c.group for c in kc.candidates] == [("a",), ("b",)]        # the candidates are unchanged
    assert kc.rival is not None and kc.rival.group == ("c",) and kc.rival.row == 13
    assert kc.margin == pytest.approx(kc.utility[12] - kc.utility[13])
    assert kc.margin < ref.margin and kc.ambiguous
    assert kc.candidates[1].margin == ref.candidates[1].margin        # only the top's margin changes


def test_a_dominated_rival_design_sets_the_top_margin_and_far_ones_do_not():
    F = two_bulges()
    ref = knee.knee_candidates(F, arch(F), ["side"])
    near = F[12] + 0.002                                                 # just behind the top knee
    kc = knee.knee_candidates(F, arch(F), ["side"], rivals=(near[None, :], [{"side": "c"}]))
    assert kc.rival.group == ("c",) and kc.rival.row == len(F)
    assert kc.margin == pytest.approx(kc.candidates[0].score - kc.scale.utility(near[None, :])[0])
    assert 0 < kc.margin < knee.AMBIGUOUS_MARGIN and kc.ambiguous
    assert kc.top == ref.top
    # the top's own architecture is no rival; a design far behind it does not lower the margin
    own = knee.knee_candidates(F, arch(F), ["side"], rivals=(near[None, :], [{"side": "a"}]))
    far = knee.knee_candidates(F, arch(F), ["side"], rivals=(F[12][None, :] + 1.0, [{"side": "c"}]))
    for other in (own, far):
        assert other.rival is None and other.margin == pytest.approx(ref.margin)


def test_an_end_of_the_front_is_no_rival():
    """A rival as good as the front's best in one objective is an end, not a compromise: it
    cannot make the knee ambiguous (as it cannot become the knee)."""
    F = positive_two_bulges()
    ref = knee.knee_candidates(F, ARCH, ["side"])
    end = np.array([[F[:, 0].min(), F[12, 1] * 1.001]])
    kc = knee.knee_candidates(F, ARCH, ["side"], rivals=(end, [{"side": "c"}]))
    assert kc.rival is None and kc.margin == pytest.approx(ref.margin)


def test_a_rival_worse_in_an_objective_constant_on_the_front_does_not_count():
    """A one-design front drops every objective from its scale (each is constant on it): a
    design it dominates is worse in an objective the utility cannot see, so it is no rival
    and the sole knee stays uncontested; one equal in those objectives still is a rival."""
    F = np.array([[1.0, 2.0]])
    dominated = np.array([[1.0, 2.5]])
    kc = knee.knee_candidates(F, [{"side": "a"}], ["side"], rivals=(dominated, [{"side": "b"}]))
    assert kc.rival is None and kc.margin is None and not kc.ambiguous
    tie = knee.knee_candidates(F, [{"side": "a"}], ["side"], rivals=(F.copy(), [{"side": "b"}]))
    assert tie.rival is not None and tie.rival.group == ("b",) and tie.margin == 0.0 and tie.ambiguous
