"""Knee candidates: every local bulge of a front, grouped into architectures, scored, with margins.

Works on a front in *minimisation* form ``F`` (n points x m objectives; ``pareto.to_min``).

Normalisation (``robust_bounds``)
    Each objective is scaled by robust quantiles of the front, ``lo = q10`` and ``hi = q90``
    (``QUANTILES``), to ``N = (f - lo) / (hi - lo)``: 0 is a good value on the front, 1 a poor
    one; values beyond the quantiles fall outside [0, 1]. The min-max normalisation of
    ``pareto.knee_index`` hinges on the two extreme points of each objective: one far-off
    design (very good in one objective, very poor in the others, hence non-dominated) rescales
    every other objective and moves the knee. A quantile moves by at most one order statistic
    when one point is added, so the scales barely move; fixed bounds from the space's closed
    form would not move at all, but would tie this module to a study (``front`` knows no study).
    An objective constant on the front is dropped; one whose quantiles coincide (all but a few
    points equal) falls back to its min and max.

Utility (``utility``)
    ``u = (1 - sum_j N_j) / sqrt(m)``: the signed distance to the hyperplane ``sum_j N_j = 1``
    through the robust anchors (each the q10 of one objective and the q90 of the others),
    positive on the ideal point's side. On a two-objective front normalised min-max whose
    extremes are the anchors, this is the chord distance of ``pareto.knee_index`` (Das 1999;
    Deb & Gupta 2011); it stays defined, and stable, when the extremes are not the anchors.

Neighbourhood and candidates (``local_maxima``)
    The neighbourhood of a front point is every other front point within normalised Euclidean
    distance ``RADIUS`` of it, together with its ``k = 2 (m - 1)`` nearest front points and any
    within ``SLACK`` times the k-th nearest distance (so an isolated point still has neighbours:
    on a two-objective front sorted by the first objective, the points either side; on a
    three-objective lattice, all six around a point, not four of them picked by rounding). A *candidate* is a point whose utility is no lower than any of its
    neighbours' and higher than at least one's (a local maximum that bulges: a flat stretch of
    front holds none; equal points both qualify and then group together). A front without any
    (straight, or concave toward the ideal) has its best-utility points as candidates.

Grouping, score, margin, ambiguity (``knee_candidates``)
    The caller gives each row a group key (``designs`` and ``keys``: the design knobs that name
    an architecture, e.g. core side, array depth, tile width, pooling); candidates of one key
    form one *architecture*, represented by its best candidate, and scored by its utility.
    Architectures are ranked by score (ties: nearer the ideal, then the objectives in their
    order, then the earlier row). Architectures whose best candidates have the same objective
    values are one point of the front: the first keeps it, the others are listed as
    *equivalent* to it (not ranked apart with a zero margin). The *margin* of an architecture is its score minus the next
    one's (the last one's is None); a sole candidate's is its score minus the best utility of
    any front point of another architecture (None when there is none). The choice is *ambiguous*
    when the top margin is below ``threshold`` (``AMBIGUOUS_MARGIN``, normalised units: a
    difference in utility smaller than 2 % of the robust span of one objective, about the
    scatter of the knee's objectives between seeds of a study).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Hashable, Mapping, Sequence

import numpy as np

QUANTILES = (0.10, 0.90)     # robust normalisation of each objective over the front
RADIUS = 0.10                # neighbourhood radius, normalised units
AMBIGUOUS_MARGIN = 0.02      # top margin below this: the knee is an ambiguous choice
TOL = 1e-9                   # utilities closer than this are equal
SLACK = 1.25                 # neighbours: also every point within 1.25 x the k-th nearest distance


@dataclass
class Candidate:
    index: int                       # row of F: the architecture's best candidate
    score: float                     # its utility
    group: tuple                     # the architecture's key (values of ``keys``)
    members: list[int]               # rows of F of every candidate of this architecture
    margin: float | None = None      # score minus the next architecture's (see the module docstring)
    equivalent: list[tuple] = field(default_factory=list)   # other architectures with the same objectives

    def to_json(self) -> dict[str, Any]:
        return {"row": self.index, "score": self.score, "margin": self.margin, "members": self.members,
                "equivalent": [list(g) for g in self.equivalent]}

    def names(self, group: tuple) -> bool:
        """Whether ``group`` is this candidate's architecture or one equivalent to it."""
        return group == self.group or group in self.equivalent


@dataclass
class KneeCandidates:
    candidates: list[Candidate]
    lo: np.ndarray                   # normalisation (minimisation form, per objective)
    hi: np.ndarray
    keys: tuple[str, ...] = ()
    threshold: float = AMBIGUOUS_MARGIN
    utility: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def top(self) -> int | None:
        return self.candidates[0].index if self.candidates else None

    @property
    def margin(self) -> float | None:
        return self.candidates[0].margin if self.candidates else None

    @property
    def ambiguous(self) -> bool:
        m = self.margin
        return m is not None and m < self.threshold

    def signature(self, n: int = 3, digits: int = 3) -> list[list[Any]]:
        """The top ``n`` architectures and their scores rounded to ``digits``: what "the
        candidates did not change" compares."""
        return [[list(c.group), round(c.score, digits)] for c in self.candidates[:n]]


def _merge_equivalent(cands: list[Candidate], F: np.ndarray) -> list[Candidate]:
    """Candidates of different architectures with the same objective values (a knob the
    objectives do not see, such as pooling on some designs) are one point of the front: the
    first keeps it and lists the others as ``equivalent``."""
    out: list[Candidate] = []
    for c in cands:
        same = next((o for o in out if np.allclose(F[o.index], F[c.index], rtol=1e-9, atol=0.0)), None)
        if same is None:
            out.append(c)
        else:
            same.equivalent.append(c.group)
            same.members += c.members
    return out


def robust_bounds(F: np.ndarray, q: tuple[float, float] = QUANTILES) -> tuple[np.ndarray, np.ndarray]:
    """Per-objective ``(lo, hi)`` of the normalisation (module docstring); ``hi == lo`` marks an
    objective constant on the front."""
    F = np.asarray(F, dtype=float)
    lo, hi = np.quantile(F, q[0], axis=0), np.quantile(F, q[1], axis=0)
    mn, mx = F.min(axis=0), F.max(axis=0)
    flat = ~(hi > lo)
    return np.where(flat, mn, lo), np.where(flat, mx, hi)


def normalised(F: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``F`` scaled by ``(lo, hi)``; objectives with ``hi <= lo`` dropped."""
    keep = hi > lo
    return (np.asarray(F, dtype=float)[:, keep] - lo[keep]) / (hi[keep] - lo[keep])


def utility(N: np.ndarray) -> np.ndarray:
    """Signed distance of the normalised rows to the hyperplane ``sum N = 1`` (module docstring)."""
    m = N.shape[1]
    if m == 0:
        return np.zeros(len(N))
    return (1.0 - N.sum(axis=1)) / math.sqrt(m)


def local_maxima(N: np.ndarray, u: np.ndarray, radius: float = RADIUS) -> np.ndarray:
    """Rows whose utility is no lower than any neighbour's (module docstring)."""
    n, m = N.shape
    if n <= 1:
        return np.arange(n)
    D = np.linalg.norm(N[:, None, :] - N[None, :, :], axis=2)
    np.fill_diagonal(D, np.inf)
    k = min(n - 1, max(1, 2 * (m - 1)))
    kth = np.sort(D, axis=1)[:, k - 1:k]
    near = (D <= radius) | (D <= SLACK * kth)
    worse = near & (u[None, :] > u[:, None] + TOL)
    lower = near & (u[None, :] < u[:, None] - TOL)
    peaks = np.flatnonzero(~worse.any(axis=1) & lower.any(axis=1))
    if len(peaks):
        return peaks
    return np.flatnonzero(u >= u.max() - TOL)         # no bulge anywhere (a flat front): its best points


def _group_keys(n: int, designs: Sequence[Mapping[str, Any]] | None, keys: Sequence[str]) -> list[tuple]:
    if designs is None or not keys:
        return [(i,) for i in range(n)]            # no grouping: each point its own architecture
    return [tuple(_hashable(d.get(k)) for k in keys) for d in designs]


def _hashable(v: Any) -> Hashable:
    return v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)


def knee_candidates(F: np.ndarray, designs: Sequence[Mapping[str, Any]] | None = None, keys: Sequence[str] = (),
                    *, threshold: float | None = None, radius: float = RADIUS,
                    bounds: tuple[np.ndarray, np.ndarray] | None = None) -> KneeCandidates:
    """The knee candidates of the front ``F`` grouped by ``keys`` of ``designs`` (one mapping per
    row), best first; ``bounds`` fixes the normalisation instead of ``robust_bounds(F)``;
    ``threshold``: the ambiguity margin (default ``AMBIGUOUS_MARGIN``)."""
    threshold = AMBIGUOUS_MARGIN if threshold is None else threshold
    F = np.asarray(F, dtype=float)
    n = len(F)
    if n == 0:
        z = np.zeros(F.shape[1] if F.ndim == 2 else 0)
        return KneeCandidates([], z, z, tuple(keys), threshold)
    lo, hi = bounds if bounds is not None else robust_bounds(F)
    N = normalised(F, lo, hi)
    u = utility(N)
    groups = _group_keys(n, designs, keys)
    near = np.round(np.linalg.norm(N, axis=1), 12)
    order_key = {i: (-round(float(u[i]), 12), near[i], *np.round(F[i], 12), i) for i in range(n)}
    best: dict[tuple, Candidate] = {}
    for i in sorted(local_maxima(N, u, radius).tolist(), key=order_key.__getitem__):
        g = groups[i]
        if g in best:
            best[g].members.append(i)
        else:
            best[g] = Candidate(i, float(u[i]), g, [i])
    cands = _merge_equivalent(sorted(best.values(), key=lambda c: order_key[c.index]), F)
    for a, b in zip(cands, cands[1:]):
        a.margin = a.score - b.score
    if len(cands) == 1:
        rest = [float(u[i]) for i in range(n) if not cands[0].names(groups[i])]
        cands[0].margin = cands[0].score - max(rest) if rest else None
    return KneeCandidates(cands, lo, hi, tuple(keys), threshold, u)
