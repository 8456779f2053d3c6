"""Estimates of trace-driven objectives and feasibility from the closed form (the guided sampler's step 3).

The vectorised closed form with its bounds (``dse.search.propose.bound.fidelity.closed_form_bounds_many``,
``dse.search.propose.bound.metrics``) gives each design a bound of every objective and a few closed-form hints
(``bound_arrays``). ``Estimator`` learns, from the designs the study evaluated on the trace:

* each objective's ratio to its bound: a ridge regression (``ratio_model``) of log(value /
  bound) on the knobs (one-hot categorical, log numeric), the log bounds and the log hints
  (``features``); estimate = bound x the predicted ratio;
* the probability of meeting the constraints (the bounds cannot see the core-mesh load): by
  default a ridge fit of the worst constraint value (clipped to [-1, 1]), its residuals taken as
  Gaussian; with ``logistic``, an L2-penalised logistic regression of the feasible / infeasible
  outcome on the same features (``logistic_model``: calibrated, it does not write off a region
  the evaluated designs barely reached, which the clipped fit extrapolates to near zero).

Nothing evaluated yet: the raw bounds, feasible. ``leverage_picks`` names the candidates the
ratio regression knows least (the guided sampler's ``novelty`` exploration).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from dse.search.front import pareto
from dse.search.propose.bound import columns as bound_table
from dse.search.propose.bound import fidelity
from dse.search.propose.bound.metrics import HINTS
from dse.search.space.objectives import score

# bound metrics (and closed-form hints, ``bounds.HINTS``) the regressions read, as logs
HINT_METRICS = ("ffn_read_us_per_token", "ffn_compute_us_per_token", "occupancy", "effective_mfu",
                "stretch_hop_factor", "dies", *(f"closed_form_{h}" for h in HINTS))
MIN_SIGMA = 0.05             # floor of the feasibility fit's residual spread


def bound_arrays(cfg: Any, designs: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bounds, ok, hints) of flat designs: ``bounds[i]`` the objectives' closed-form bounds in
    their own directions (NaN where none), ``ok[i]`` whether design i is valid and meets every
    constraint under its bounds, ``hints[i]`` the log of the closed-form hints
    (``bounds.HINTS``, worst over the workloads; 0 where none). Computed on numpy columns over
    every design at once (``bound_table``: 4-7x faster on a pool of 2,000), equal bit for bit to
    ``bound_arrays_reference`` (``tests/search/propose/test_bound_table.py``). Within
    ``offloading``, ``OFFLOAD_MIN`` designs or more are computed in chunks on the study's workers
    (``ChunkedBounds``: the same arrays)."""
    if _OFFLOAD and _OFFLOAD[-1] is not None and len(designs) >= OFFLOAD_MIN:
        half = len(designs) // 2                              # one half on a worker, the other here
        chunks = ChunkedBounds(cfg, half)
        chunks.add(designs[:half])
        chunks.add(designs[half:], hand_out=False)
        return chunks.arrays()
    return bound_arrays_here(cfg, designs)


def bound_arrays_here(cfg: Any, designs: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``bound_arrays`` computed in this process (what a worker runs for a chunk)."""
    return bound_table.bound_arrays(cfg, designs, HINT_METRICS, bound_arrays_reference)

_OFFLOAD: list = []                  # the run's ``submit(fn, *args)`` (``offloading``), innermost last
OFFLOAD_CHUNK = 256                  # designs per bounds task handed to a worker
OFFLOAD_MIN = 2 * OFFLOAD_CHUNK      # fewer designs: computed here at once (a task costs ~1-2 ms)


@contextmanager
def offloading(submit: Callable[..., Any] | None) -> Iterator[None]:
    """Within the block, the bounds of a plan's candidates (``ChunkedBounds``, and ``bound_arrays``
    of ``OFFLOAD_MIN`` designs or more) are computed in chunks by ``submit(fn, *args)``: the study's
    idle workers (``EvaluationPool.submit_call``: a future, or None when no worker is free); the
    chunks are reassembled in order, so the arrays, hence the plan, are those computed here."""
    _OFFLOAD.append(submit)
    try:
        yield
    finally:
        _OFFLOAD.pop()


class ChunkedBounds:
    """``bound_arrays`` of designs given chunk by chunk (``add``) while the caller draws the next:
    with an offloader (``offloading``) each chunk of ``chunk`` designs goes to a worker as soon as
    it is complete; ``arrays`` takes the chunks the workers finished and computes here every
    other one (the last first; a chunk still running on a worker is computed again here rather
    than waited for: the plan is never later than in this process alone, bar the hand-overs), and
    concatenates every chunk in order. A design's row does not depend on the designs computed
    beside it (``BoundMemo``; ``tests/search/propose/test_guided_offload.py``), so the arrays
    are those of one ``bound_arrays`` call over all the designs. Without an offloader: that call."""

    def __init__(self, cfg: Any, chunk: int = OFFLOAD_CHUNK):
        self.cfg, self.designs, self.chunk = cfg, [], max(1, chunk)
        self.submit = _OFFLOAD[-1] if _OFFLOAD else None
        self.parts: list[tuple[int, int, Any]] = []     # (start, end, future or None)
        self.sent = 0                                    # designs handed out in chunks
        self.offloaded = 0                               # chunks a worker computed (benchmarks, tests)

    def add(self, designs: Sequence[Mapping[str, Any]], hand_out: bool = True) -> None:
        """Append designs; hand out each complete chunk (unless not ``hand_out``: the rest is
        computed here)."""
        self.designs.extend(designs)
        while hand_out and self.submit is not None and len(self.designs) - self.sent >= self.chunk:
            a, self.sent = self.sent, self.sent + self.chunk
            self.parts.append((a, self.sent, self.submit(bound_arrays_here, self.cfg, self.designs[a:self.sent])))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bounds, ok, hints) of every design added, in order."""
        if not any(f is not None for _, _, f in self.parts):
            return bound_arrays_here(self.cfg, self.designs)
        parts = self.parts + ([(self.sent, len(self.designs), None)] if self.sent < len(self.designs) else [])
        out: list = [None] * len(parts)
        for i in reversed(range(len(parts))):            # the last first: the workers took the first
            a, b, fut = parts[i]
            if fut is not None and fut.done() and not fut.cancelled() and fut.exception() is None:
                out[i] = fut.result()
                self.offloaded += 1
                continue
            if fut is not None:                          # not done: never waited for (a loaded host
                fut.cancel()                             # may not run the worker soon), computed here
            out[i] = bound_arrays_here(self.cfg, self.designs[a:b])
        return tuple(np.concatenate([o[j] for o in out]) for j in range(3))   # type: ignore[return-value]


_SORTED: dict[tuple, tuple] = {}     # knob names, in a design's order -> sorted (``BoundMemo.key``)


class BoundMemo:
    """``bound_arrays`` rows kept by design for a study (``guided.memo_of``): a design's row does not
    depend on the designs computed beside it (each row is the per-design reference's,
    ``tests/search/propose/test_bound_table.py``), so the evaluated designs' bounds, which every plan's
    regression reads, are computed once per study rather than once per batch."""

    MAX_ROWS = 20_000                 # ~3 KB a row; then it starts afresh (a cache: only speed depends on it)

    def __init__(self) -> None:
        self.rows: dict[tuple, tuple[np.ndarray, bool, np.ndarray]] = {}
        self.neighbours: dict[tuple, Any] = {}    # a knee-phase parent's moves (knee.ascent.Chains._moves)
        self.fitted: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}   # ``evaluated_rows``
        self.archs: dict[tuple, tuple] = {}       # an evaluated design's architecture (knee.ascent.Chains)

    @staticmethod
    def key(design: Mapping[str, Any]) -> tuple:
        """A hashable identity of a design (or of a trial's parameters): its knob names, sorted,
        and the ``repr`` of each value in that order (equal for two designs exactly when their
        sorted (name, repr) pairs are; the sorted names are kept per order of the names, so a
        plan's ~2,000 candidates are not sorted one by one: 1.85x faster)."""
        names = tuple(design)
        order = _SORTED.get(names)
        if order is None:
            if len(_SORTED) >= 1024:
                _SORTED.clear()
            order = _SORTED[names] = tuple(sorted(names))
        return order, tuple(map(repr, map(design.__getitem__, order)))

    def keep(self, designs: Sequence[Mapping[str, Any]], B: np.ndarray, ok: np.ndarray, H: np.ndarray,
             keys: Sequence[tuple] | None = None) -> None:
        """Remember the rows of ``designs`` (as ``bound_arrays`` returned them; ``keys``: theirs,
        when the caller has them)."""
        if len(self.rows) + len(designs) > self.MAX_ROWS:
            self.rows.clear()
        for k, b, o, h in zip(keys if keys is not None else map(self.key, designs), B, ok, H):
            self.rows[k] = (b.copy(), bool(o), h.copy())

    def arrays(self, cfg: Any, designs: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``bound_arrays(cfg, designs)``, computing only the rows not kept yet."""
        keys = [self.key(d) for d in designs]
        rows = {i: self.rows[k] for i, k in enumerate(keys) if k in self.rows}
        if not rows:
            B, ok, H = bound_arrays(cfg, designs)
            self.keep(designs, B, ok, H, keys)
            return B, ok, H
        miss = [i for i in range(len(designs)) if i not in rows]
        if miss:
            B, ok, H = bound_arrays(cfg, [designs[i] for i in miss])
            rows.update((i, (B[j], bool(ok[j]), H[j])) for j, i in enumerate(miss))
            self.keep([designs[i] for i in miss], B, ok, H, [keys[i] for i in miss])
        out = [rows[i] for i in range(len(designs))]
        return (np.array([r[0] for r in out]), np.array([r[1] for r in out], dtype=bool),
                np.array([r[2] for r in out]))


def bound_arrays_reference(cfg: Any, designs: Sequence[Mapping[str, Any]]
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``bound_arrays`` one design at a time (a dict of bound metrics per design and workload,
    scored one by one): the reference the column path is tested against."""
    m = len(cfg.objectives.objectives)
    B = np.full((len(designs), m), np.nan)
    H = np.zeros((len(designs), len(HINT_METRICS) + 1))
    ok = np.zeros(len(designs), dtype=bool)
    rows, points = bound_table.valid_points(cfg, designs)
    for i, pts, per_model in zip(rows, points, fidelity.closed_form_bounds_many(points)):
        if all(p.trace == "catalog" for p in pts.values()):
            sc = score(per_model, cfg.objectives)        # the closed form is the study's own value
            bound = sc.values
        else:
            bound, sc = fidelity.design_bound(cfg.objectives, per_model)
        B[i] = [np.nan if b is None else b for b in bound]
        ok[i] = sc.feasible
        H[i] = hints(per_model)
    return B, ok, H


def hints(per_model: Mapping[str, Mapping[str, Any]]) -> list[float]:
    """Log of the ``HINT_METRICS`` (worst, i.e. largest, over the workloads; 0 where none) and how
    far the design is from read-bound: max(0, log(compute time at the MFU bound / read time))."""
    out = []
    for name in HINT_METRICS:
        vals = [m.get(name) for m in per_model.values()]
        vals = [float(v) for v in vals if isinstance(v, (int, float)) and v > 0]
        out.append(math.log(max(vals)) if vals else 0.0)
    t = [(m.get("ffn_compute_us_per_token"), m.get("effective_mfu"), m.get("ffn_read_us_per_token"))
         for m in per_model.values()]
    t = [math.log(c / e / r) for c, e, r in t if c and e and r and c > 0 and e > 0 and r > 0]
    return out + [max(0.0, max(t)) if t else 0.0]


def features(cfg: Any, params: Sequence[Mapping[str, Any]], bounds: np.ndarray, hints: np.ndarray) -> np.ndarray:
    """Regression features of designs: one-hot categorical knobs, log of the positive numeric
    ones (an inactive knob: its base value), log |bound| of each objective and the hints."""
    base = cfg.base_env()
    cols = []
    for d in cfg.space.dims:
        if not d.searched:
            continue
        vals = [p.get(d.name, base.get(d.name)) for p in params]
        if d.type == "categorical":
            cols += [[float(v == c) for v in vals] for c in d.choices]
        else:
            cols.append([math.log(v) if isinstance(v, (int, float)) and v > 0 else 0.0 for v in vals])
    X = np.array(cols, dtype=float).T.reshape(len(params), len(cols))
    with np.errstate(all="ignore"):
        logb = np.nan_to_num(np.log(np.abs(bounds)), nan=0.0, posinf=0.0, neginf=0.0)
    return np.hstack([X, logb, hints])


def ratio_model(X: np.ndarray, logr: np.ndarray, ridge: float):
    """A ridge regression of targets ``logr`` (one column each, e.g. log(value / bound) per
    objective) on standardised features ``X``, with an unpenalised intercept; returns
    ``predict(X)``. NaN targets are left out of their column's fit (none left: 0)."""
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Z = (X - mu) / sd
    W = np.zeros((X.shape[1], logr.shape[1]))
    b = np.zeros(logr.shape[1])
    for j in range(logr.shape[1]):
        ok = np.isfinite(logr[:, j])
        if not ok.any():
            continue
        z, y = Z[ok], logr[ok, j]
        zc, yc = z - z.mean(axis=0), y - y.mean()
        W[:, j] = np.linalg.solve(zc.T @ zc + ridge * np.eye(X.shape[1]), zc.T @ yc)
        b[j] = y.mean() - z.mean(axis=0) @ W[:, j]
    return lambda Xn: ((Xn - mu) / sd) @ W + b


def logistic_model(X: np.ndarray, y: np.ndarray, penalty: float, iterations: int = 50):
    """An L2-penalised logistic regression of 0/1 outcomes ``y`` on standardised features ``X``
    (unpenalised intercept starting at the log-odds of the mean, Newton steps until they stop
    moving); returns ``predict(X)``: the probability of outcome 1."""
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    A = np.hstack([np.ones((len(X), 1)), (X - mu) / sd])
    w = np.zeros(A.shape[1])
    prior = min(max(float(y.mean()), 1e-3), 1.0 - 1e-3)
    w[0] = math.log(prior / (1.0 - prior))
    R = penalty * np.eye(A.shape[1])
    R[0, 0] = 0.0
    for _ in range(iterations):
        q = 1.0 / (1.0 + np.exp(-np.clip(A @ w, -500, 500)))
        H = (A * (q * (1.0 - q))[:, None]).T @ A + R + 1e-9 * np.eye(A.shape[1])
        step = np.linalg.solve(H, A.T @ (q - y) + R @ w)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return lambda Xn: 1.0 / (1.0 + np.exp(-np.clip(np.hstack([np.ones((len(Xn), 1)), (Xn - mu) / sd]) @ w, -500, 500)))


class Estimator:
    """Estimated objectives (minimisation form) and probability of being feasible of candidates,
    learnt from the evaluated designs ``ev`` (``dse.search.propose.sample.guided.Evaluated``; module docstring);
    ``ridge``: the penalty of every regression; ``logistic``: feasibility from
    ``logistic_model`` instead of the clipped fit of the worst constraint value; ``memo``: the
    sampler's ``BoundMemo`` of the evaluated designs' bounds."""

    def __init__(self, cfg: Any, ev: Any, ridge: float, logistic: bool = False, memo: BoundMemo | None = None):
        self.cfg, self.ev = cfg, ev
        self.ratio = self.feasibility = self.p_infeasible = None
        self.ridge, self.Xev = ridge, None
        if not ev.feasible.any():
            return
        evB, evH, Xev = evaluated_rows(cfg, ev, memo or BoundMemo())
        self.Xev = Xev
        with np.errstate(all="ignore"):
            logr = np.log(np.abs(ev.values) / np.abs(evB))
        logr[~np.isfinite(logr) | ~ev.feasible[:, None]] = np.nan
        self.ratio = ratio_model(Xev, logr, ridge)
        if ev.feasible.all():
            return
        if logistic:
            self.p_infeasible = logistic_model(Xev, (~ev.feasible).astype(float), ridge)
            return
        viol = np.clip(ev.violation, -1.0, 1.0)[:, None]
        fit = ratio_model(Xev, viol, ridge)
        self.sigma = max(MIN_SIGMA, float(np.std(viol[:, 0] - fit(Xev)[:, 0])))
        self.feasibility = fit

    def __call__(self, params: list, B: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(estimates, probabilities) of candidates ``params`` with bounds ``B`` and hints ``H``."""
        dirs = self.cfg.objectives.directions
        if self.ratio is None:
            return pareto.to_min(B, dirs), np.ones(len(B))
        X = features(self.cfg, params, B, H)
        est = pareto.to_min(B * np.exp(self.ratio(X)), dirs)
        if self.p_infeasible is not None:
            return est, 1.0 - self.p_infeasible(X)
        if self.feasibility is None:
            return est, np.ones(len(B))
        z = -self.feasibility(X)[:, 0] / (self.sigma * math.sqrt(2.0))
        return est, 0.5 * (1.0 + np.vectorize(math.erf)(z))

    def novel(self, params: list, B: np.ndarray, H: np.ndarray, k: int) -> list[int]:
        """``leverage_picks`` of candidates ``params`` (bounds ``B``, hints ``H``) against the
        evaluated designs; nothing evaluated yet: the first ``k``."""
        if self.Xev is None:
            return list(range(min(k, len(params))))
        return leverage_picks(self.Xev, features(self.cfg, params, B, H), k, self.ridge)


def evaluated_rows(cfg: Any, ev: Any, memo: BoundMemo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bounds, hints, ``features``) of the evaluated designs of ``ev`` (``guided.Evaluated``),
    each design's rows kept in ``memo`` by its parameters' key (``ev.keys``): a row depends on
    that design alone, so every plan's fit reads the rows of the designs evaluated before instead
    of computing them again (each plan of a 1,440-trial study computed 1,400 rows: the part of
    its cost that grew with the trials, issue 48)."""
    kept = memo.fitted
    miss = [i for i, k in enumerate(ev.keys) if k not in kept]
    if miss:
        if len(kept) + len(miss) > memo.MAX_ROWS:
            kept.clear()
            miss = list(range(len(ev.keys)))
        B, _, H = memo.arrays(cfg, [ev.designs[i] for i in miss])
        X = features(cfg, [ev.params[i] for i in miss], B, H)
        for j, i in enumerate(miss):
            kept[ev.keys[i]] = (B[j].copy(), H[j].copy(), X[j].copy())
    rows = [kept[k] for k in ev.keys]
    return tuple(np.array([r[j] for r in rows]) for j in range(3))  # type: ignore[return-value]


def leverage_picks(Xev: np.ndarray, X: np.ndarray, k: int, ridge: float) -> list[int]:
    """Indices of ``k`` rows of ``X``, one by one the row a ridge regression on ``Xev`` knows
    least: the largest leverage z' (Z'Z + ridge I)^-1 z (features standardised and centred on
    ``Xev``), each row taken joining Z before the next is chosen (ties: the lower index)."""
    mu, sd = Xev.mean(axis=0), Xev.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Z, C = (Xev - mu) / sd, (X - mu) / sd
    A = Z.T @ Z + ridge * np.eye(Z.shape[1])
    out: list[int] = []
    for _ in range(min(k, len(X))):
        lev = np.einsum("ij,ij->i", C, np.linalg.solve(A, C.T).T)
        lev[out] = -np.inf
        best = int(np.argmax(lev))
        out.append(best)
        A += np.outer(C[best], C[best])
    return out
