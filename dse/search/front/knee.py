"""Knee candidates: every local bulge of a front, grouped into architectures, scored, with margins.

Works on a front in *minimisation* form ``F`` (n points x m objectives; ``pareto.to_min``).

Coordinates (``Scale``): relative, not normalised
    An objective whose values on the front all have one sign (latency, dollars, MFU: every
    physical objective of this project) gets the *relative* coordinate ``N = ln |f|`` (its sign
    flipped for a maximised objective, so that smaller is better). One unit of ``N`` is a factor e
    of that objective, whatever its spread, and a difference of 0.02 is 2 %; the objective's unit
    only shifts every utility by one constant. The coordinate of a design depends on the design
    alone: adding a design to a front changes no other design's utility, and two runs (or two
    batches of one run) that found the same design give it the same utility. The normalisations tried
    before hinged on the front: min-max on its two extremes (one far-off design rescaled every
    objective), then its 10 % and 90 % quantiles (``QUANTILES``), which still differ between
    runs that found different fronts: on ``studies/full.toml``, seeds 0-4, they turned a
    0.08-margin knee of the merged front into a 0.008-margin loss on one seed
    (``benchmarks/bench_knee.py``). Fixed bounds from the space's closed form would be stable
    but miss the trace-driven values by the closed form's error, objective by objective.
    An objective that is zero or changes sign on the front (a slack, a difference) has no
    relative scale: it falls back to the robust linear one, ``N = (f - q10) / (q90 - q10)``; an
    objective constant on the front is dropped.

Utility (``Scale.utility``)
    ``u = -sum_j N_j``: with relative coordinates, ``u = -ln prod_j |f_j|`` (maximised objectives
    inverted: for latency, cost and MFU, ``ln(MFU / (latency x cost))``, a figure of merit in the
    objectives' units): a design 2 % better than another in one objective and equal in the
    others scores 0.02 more. Its level sets are the hyperplanes on which a relative gain in one
    objective is paid by the same relative loss in the others, so its maximum on a front is the
    point where that trade turns from cheap to dear: the knee of the front drawn in log
    coordinates (the hyperplane-distance knee of Das 1999 / Deb & Gupta 2011 with every
    objective weighted by its relative change rather than by its range on one front).

Neighbourhood and candidates (``local_maxima``)
    The neighbourhood of a front point is every other front point within Euclidean distance
    ``RADIUS`` of it in the coordinates (0.1: about 10 % in each objective), together with its ``k = 2 (m - 1)``
    nearest front points and any within ``SLACK`` times the k-th nearest distance (so an
    isolated point still has neighbours: on a two-objective front sorted by the first
    objective, the points either side; on a three-objective lattice, all six around a point).
    A *candidate* is a point whose utility is no lower than any of its neighbours' and higher
    than at least one's (a local maximum that bulges: a flat stretch of front holds none; equal
    points both qualify and then group together). A front without any has its best-utility
    points as candidates. A point with the best value of some objective on the front is an end
    of the front, not a compromise between its objectives, and is not a candidate (unless no
    other point is): a far-off design, very good in one objective and very poor in the others,
    is such an end, so adding one cannot move the knee even when its product of objectives is
    the best.

Grouping, score, margin, ambiguity (``knee_candidates``)
    The caller gives each row a group key (``designs`` and ``keys``: the design knobs that name
    an architecture, e.g. core side, array depth, tile width, pooling); candidates of one key
    form one *architecture*, represented by its best candidate, and scored by its utility.
    Architectures are ranked by score (ties: nearer the origin, then the objectives in their
    order, then the earlier row). Architectures whose best candidates have the same objective
    values are one point of the front: the first keeps it, the others are listed as
    *equivalent* to it (not ranked apart with a zero margin). The *margin* of an architecture is
    its score minus the next one's (the last one's is None); a sole candidate's is its score
    minus the best utility of any front point of another architecture (None when there is
    none). The choice is *ambiguous* when the top margin is below ``threshold``
    (``AMBIGUOUS_MARGIN``: 0.02, the top architecture's product of objectives less than 2 %
    better than the next one's).

Rivals (``rivals``)
    Candidates are local maxima, so a design of another architecture next to the top candidate
    (within its neighbourhood, with a slightly lower utility), or just off the front (dominated
    by a hair), is no candidate and was not compared: the top margin measured only between
    bulges said "clear by 0.77" on a run whose next architecture had a design 0.09 below, and
    "clear by 0.04" on 20 seeds pooled while 20 other seeds found that architecture 0.004
    *above* it (``studies/full.toml``, docs/guide/knees.md). So the top margin is also measured
    against the *rival*: the best design of any other architecture among the front and the
    ``rivals`` rows the caller passes (every feasible design it evaluated), leaving out the front's
    ends as the candidates do (a far-off design cannot make the knee ambiguous either) and any
    design worse than the front in an objective constant on it (dropped from the scale, so its
    utility cannot see that loss: a one-design front stays uncontested). The top margin is the
    smaller of the two, and ``KneeCandidates.rival`` names the design when it is the rival that
    set it.
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KNEE_KEYS = ("core_side", "array_depth", "tile_width", "pooling")   # what names an architecture (default)
QUANTILES = (0.10, 0.90)     # linear fallback: robust normalisation of an objective without a sign
RADIUS = 0.10                # neighbourhood radius in the coordinates (about 10 % of each objective)
AMBIGUOUS_MARGIN = 0.02      # top margin below this: the knee is an ambiguous choice (2 %)
TOL = 1e-9                   # utilities closer than this are equal
SLACK = 1.25                 # neighbours: also every point within 1.25 x the k-th nearest distance
TINY = 1e-300                # floor of |f| in a relative coordinate (an estimate of the wrong sign)


@dataclass(frozen=True)
class Scale:
    """How each objective becomes a knee coordinate (module docstring): ``log[j]`` relative
    (``sign[j]`` the sign of its values, ``ref[j]`` 0), else linear
    from ``ref[j]`` (the 10 % quantile) over ``span[j]``; ``span[j] == 0``: dropped."""
    log: np.ndarray
    sign: np.ndarray
    ref: np.ndarray
    span: np.ndarray

    @classmethod
    def of(cls, F: np.ndarray, q: tuple[float, float] = QUANTILES) -> Scale:
        """The scale of the front ``F``."""
        F = np.asarray(F, dtype=float)
        sign = np.where((F > 0).all(axis=0), 1.0, np.where((F < 0).all(axis=0), -1.0, 0.0))
        log = (sign != 0) & (np.ptp(F, axis=0) > 0)
        lo, hi = robust_bounds(F, q)
        ref = np.where(log, 0.0, lo)
        span = np.where(log, 1.0, np.where(hi > lo, hi - lo, 0.0))
        return cls(log, sign, ref, span)

    def coords(self, F: np.ndarray) -> np.ndarray:
        """The coordinates of the rows of ``F`` (dropped objectives left out); smaller is better."""
        F = np.asarray(F, dtype=float)
        with np.errstate(invalid="ignore"):
            rel = self.sign * (np.log(np.maximum(self.sign * F, TINY)) - self.ref)
        lin = (F - self.ref) / np.where(self.span > 0, self.span, 1.0)
        return np.where(self.log, rel, lin)[:, self.span > 0]

    def utility(self, F: np.ndarray) -> np.ndarray:
        """The knee utility of the rows of ``F`` (module docstring)."""
        return utility(self.coords(F))


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
class Rival:
    """The best design of another architecture than the top candidate's, when it (not the next
    candidate) sets the top margin (module docstring, "Rivals")."""
    group: tuple                     # its architecture's key
    score: float                     # its utility
    row: int                         # row of F (< len(F)), else len(F) + row of the rivals passed
    trial: int | None = None         # its trial, where the caller knows it

    def to_json(self, keys: Sequence[str] = ()) -> dict[str, Any]:
        arch = dict(zip(keys, self.group)) if keys else list(self.group)
        return {"architecture": arch, "score": self.score, "trial": self.trial}


@dataclass
class KneeCandidates:
    candidates: list[Candidate]
    scale: Scale                     # the coordinates the utilities were computed in
    keys: tuple[str, ...] = ()
    threshold: float = AMBIGUOUS_MARGIN
    utility: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rival: Rival | None = None       # the design of another architecture that set the top margin

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
    """Per-objective ``(lo, hi)`` of the linear fallback (module docstring): the quantiles, or the
    min and max where they coincide; ``hi == lo`` marks an objective constant on the front."""
    F = np.asarray(F, dtype=float)
    lo, hi = np.quantile(F, q[0], axis=0), np.quantile(F, q[1], axis=0)
    mn, mx = F.min(axis=0), F.max(axis=0)
    flat = ~(hi > lo)
    return np.where(flat, mn, lo), np.where(flat, mx, hi)


def utility(N: np.ndarray) -> np.ndarray:
    """The knee utility of rows in knee coordinates: ``-sum N`` (module docstring)."""
    return -np.asarray(N, dtype=float).sum(axis=1)


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


def ends(rows: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Which ``rows`` (coordinates) are as good as the front ``N``'s best in some objective: its
    ends, not compromises (module docstring)."""
    return (rows <= N.min(axis=0) + TOL).any(axis=1)


def interior(rows: np.ndarray, N: np.ndarray) -> np.ndarray:
    """``rows`` without the front's extremes (a row with the best value of some objective), unless
    that leaves none: an extreme is an end of the front, not a compromise (module docstring).
    With fewer than two objectives varying on the front there is nothing to compromise on."""
    if N.shape[1] < 2 or len(rows) == 0:
        return rows
    extreme = ends(N, N)
    inner = rows[~extreme[rows]]
    return inner if len(inner) else rows


def _group_keys(n: int, designs: Sequence[Mapping[str, Any]] | None, keys: Sequence[str]) -> list[tuple]:
    if designs is None or not keys:
        return [(i,) for i in range(n)]            # no grouping: each point its own architecture
    return [arch_key(d, keys) for d in designs]


def arch_key(design: Mapping[str, Any], keys: Sequence[str]) -> tuple:
    """A design's architecture: its values of ``keys``, each hashable (its repr otherwise)."""
    return tuple(_hashable(design.get(k)) for k in keys)


def _hashable(v: Any) -> Hashable:
    return v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)


def knee_candidates(F: np.ndarray, designs: Sequence[Mapping[str, Any]] | None = None, keys: Sequence[str] = (),
                    *, threshold: float | None = None, radius: float = RADIUS,
                    scale: Scale | None = None,
                    rivals: tuple[np.ndarray, Sequence[Mapping[str, Any]]] | None = None) -> KneeCandidates:
    """The knee candidates of the front ``F`` grouped by ``keys`` of ``designs`` (one mapping per
    row), best first; ``scale`` fixes the coordinates instead of ``Scale.of(F)``;
    ``threshold``: the ambiguity margin (default ``AMBIGUOUS_MARGIN``); ``rivals``: ``(F, designs)``
    of more evaluated designs (minimisation form) the top margin is also measured against
    (module docstring, "Rivals")."""
    threshold = AMBIGUOUS_MARGIN if threshold is None else threshold
    F = np.asarray(F, dtype=float)
    n = len(F)
    if n == 0:
        m = F.shape[1] if F.ndim == 2 else 0
        return KneeCandidates([], scale or Scale.of(np.ones((1, m))), tuple(keys), threshold)
    scale = scale if scale is not None else Scale.of(F)
    N = scale.coords(F)
    u = utility(N)
    groups = _group_keys(n, designs, keys)
    near = np.round(np.linalg.norm(N, axis=1), 12)
    order_key = {i: (-round(float(u[i]), 12), near[i], *np.round(F[i], 12), i) for i in range(n)}
    best: dict[tuple, Candidate] = {}
    for i in sorted(interior(local_maxima(N, u, radius), N).tolist(), key=order_key.__getitem__):
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
    rival = _rival(cands[0], F, N, u, groups, scale, rivals, keys) if designs is not None and keys else None
    if rival is not None and (cands[0].margin is None or cands[0].score - rival.score < cands[0].margin):
        cands[0].margin = cands[0].score - rival.score
    else:
        rival = None
    return KneeCandidates(cands, scale, tuple(keys), threshold, u, rival)


def _rival(top: Candidate, F: np.ndarray, N: np.ndarray, u: np.ndarray, groups: list[tuple], scale: Scale,
           rivals: tuple[np.ndarray, Sequence[Mapping[str, Any]]] | None, keys: Sequence[str]) -> Rival | None:
    """The best row of another architecture than ``top``'s among the front (``F``, its coordinates
    ``N``, utilities ``u``, ``groups``) and ``rivals``, on the front's scale; the front's ends
    left out, and any rival worse than the front in an objective the scale dropped (constant on
    the front: its utility cannot see that loss) (module docstring, "Rivals")."""
    Ns, us, gs, worse = [N], [u], list(groups), [np.zeros(len(F), dtype=bool)]
    if rivals is not None and len(rivals[0]):
        Fr = np.asarray(rivals[0], dtype=float)
        Nr = scale.coords(Fr)
        Ns.append(Nr)
        us.append(utility(Nr))
        gs += _group_keys(len(Fr), rivals[1], keys)
        const = scale.span <= 0                       # the objectives the scale dropped
        ref = F[0, const]
        worse.append((Fr[:, const] > ref + 1e-9 * np.maximum(np.abs(ref), 1.0)).any(axis=1))
    Na, ua, bad = np.vstack(Ns), np.concatenate(us), np.concatenate(worse)
    end = ends(Na, N) if N.shape[1] >= 2 else np.zeros(len(Na), dtype=bool)
    other = np.array([not top.names(g) for g in gs]) & ~end & ~bad
    if not other.any():
        return None
    i = int(np.argmax(np.where(other, ua, -np.inf)))
    return Rival(gs[i], float(ua[i]), i)
