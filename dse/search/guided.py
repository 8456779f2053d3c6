"""The closed-form-guided sampler (``[sampler] name = "guided"``): proposals chosen on the closed form.

A trace-driven evaluation costs milliseconds to seconds; the vectorised closed form with its
bounds (``dse.search.fidelity.closed_form_bounds_many``, ``dse.search.bounds``) costs about a
millisecond. For each batch the sampler spends the cheap fidelity on a few thousand candidates
and the expensive one only on the few it picks (``plan``):

1. **pool**: ``pool`` candidates, a share ``mutants`` of them mutations (1 to 3 knobs drawn
   afresh, ``dse.search.draw``) of the designs on the current feasible front, the others drawn
   uniformly over the space (all of them while there is no front); designs already proposed in
   the study are left out;
2. **rigorous screen**: a candidate whose closed-form bounds violate a constraint, or whose
   objective bounds are weakly dominated by the current front (the trace-driven, feasible trials
   before the batch), is dropped: it can never enter the front (the bounds are never better
   than the trace-driven values; the assumption is stated in ``dse.search.bounds``);
3. **estimate**: each survivor's objectives are estimated as its bound times a ratio learnt
   from the feasible evaluated designs: a ridge regression (``ratio_model``) of log(value /
   bound) per objective on the knobs (one-hot categorical, log numeric), the log bounds and the
   log closed-form hints (``bounds.HINTS``: the core-mesh load and contention the schedule
   recomputes); no evaluated design yet: the raw bound;
4. **pick**: ``batch`` designs: with ``extremes``, first the best estimate of each objective
   (with ``refine``: only if it extends the front in that objective; the front's ends weigh
   most in its hypervolume), then greedily by the hypervolume each
   estimate adds to the current front plus the designs already picked (a Monte Carlo estimate
   on ``samples`` points of the normalised objective box), weighted by the candidate's
   probability of being feasible (a ridge fit of the worst constraint value of the evaluated
   designs, its residuals taken as Gaussian: the bounds cannot see the core-mesh load); ties,
   e.g. nothing adds volume, go to the smallest additive epsilon distance to that front (with
   ``refine``, an estimate equal to a point already there, a design differing only in knobs the
   objectives do not see, comes last). A
   batch thus spreads along the front; a share ``explore`` of it is instead drawn at random
   among the survivors.

Everything is drawn from a generator seeded with the batch seed (``samplers.batch_seed``), and
the plan is a function of that seed and the finished trials before the batch: a resumed study
asks the same trials (``dse.search.runner``). The plan is made at the batch's first question and
handed out trial by trial (``sample_independent``); it is made afresh whenever the finished
trials changed (``dse worker`` asks one trial at a time). A parameter the plan does not hold (a
trial asked beyond the batch) is drawn at random, and so is a whole batch if no candidate
survives the screen (then nothing the pool holds could enter the front).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from dse.errors import ConfigError
from dse.search import draw, fidelity, pareto
from dse.search.bounds import HINTS
from dse.search.objectives import score

# bound metrics (and closed-form hints, ``bounds.HINTS``) the regressions read, as logs
HINT_METRICS = ("ffn_read_us_per_token", "ffn_compute_us_per_token", "occupancy", "effective_mfu",
                "stretch_hop_factor", "dies", *(f"closed_form_{h}" for h in HINTS))
MIN_SIGMA = 0.05             # floor of the feasibility fit's residual spread
EPS_SAME = 1e-12             # normalised distance under which an estimate counts as already there
DEFAULTS = {"pool": 2000, "mutants": 0.75, "explore": 0.2, "extremes": True, "refine": False, "samples": 10000,
            "ridge": 10.0}


def param_key(params: Mapping[str, Any]) -> tuple:
    """A hashable identity of a trial's parameters (the pool leaves out those already proposed)."""
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


class Evaluated:
    """What the finished trials before a batch tell the plan (as told to the sampler): the
    evaluated designs, which are feasible, and the feasible front."""

    def __init__(self, cfg: Any, trials: Sequence):
        self.known = {param_key(t.params) for t in trials}
        done = [t for t in trials if t.state.name == "COMPLETE" and t.values is not None
                and not t.user_attrs.get("screened") and "duplicate_of" not in t.user_attrs.get("dse", {})]
        self.params = [dict(t.params) for t in done]
        self.designs = [t.user_attrs.get("dse", {}).get("design") or cfg.design(t.params) for t in done]
        self.feasible = np.array([bool(t.user_attrs.get("dse", {}).get("feasible"))
                                  and all(math.isfinite(v) for v in t.values) for t in done], dtype=bool)
        self.violation = np.array([max(t.constraints.values(), default=0.0) for t in done], dtype=float)
        self.values = np.array([t.values for t in done], dtype=float).reshape(len(done), len(cfg.objectives.objectives))
        F = pareto.to_min(self.values[self.feasible], cfg.objectives.directions)
        keep = pareto.nondominated(F) if len(F) else np.zeros(0, dtype=bool)
        self.front = F[keep]
        self.front_params = [p for p, k in zip([p for p, f in zip(self.params, self.feasible) if f], keep) if k]


def bound_arrays(cfg: Any, designs: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bounds, ok, hints) of flat designs: ``bounds[i]`` the objectives' closed-form bounds in
    their own directions (NaN where none), ``ok[i]`` whether design i is valid and meets every
    constraint under its bounds, ``hints[i]`` the log of the closed-form hints
    (``bounds.HINTS``, worst over the workloads; 0 where none)."""
    m = len(cfg.objectives.objectives)
    B = np.full((len(designs), m), np.nan)
    H = np.zeros((len(designs), len(HINT_METRICS) + 1))
    ok = np.zeros(len(designs), dtype=bool)
    rows, points = [], []
    for i, d in enumerate(designs):
        try:
            points.append(cfg.points(d))
            rows.append(i)
        except ConfigError:
            continue
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


def candidates(cfg: Any, ev: Evaluated, rng: np.random.Generator, n: int, mutants: float = 0.5
               ) -> list[dict[str, Any]]:
    """Up to ``n`` distinct new candidates: uniform draws and mutants of the front (module docstring)."""
    base = cfg.base_env()
    out, seen = [], set(ev.known)
    parents = ev.front_params
    for i in range(n):
        if parents and rng.random() < mutants:
            p = draw.mutant(cfg.space, base, rng, parents[int(rng.integers(len(parents)))])
        else:
            p = draw.uniform(cfg.space, base, rng)
        key = param_key(p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def plan(cfg: Any, trials: Sequence, rng: np.random.Generator, k: int,
         settings: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The ``k`` parameter sets of the next batch (see the module docstring)."""
    s = {**DEFAULTS, **(settings or {})}
    ev = Evaluated(cfg, trials)
    cands = candidates(cfg, ev, rng, int(s["pool"]), float(s["mutants"]))
    B, ok, H = bound_arrays(cfg, [cfg.design(p) for p in cands])
    Bmin = pareto.to_min(np.where(np.isnan(B), np.inf, B), cfg.objectives.directions)
    ok &= np.isfinite(Bmin).all(axis=1)
    if len(ev.front):
        ok &= ~pareto.weakly_dominated(Bmin, ev.front)
    idx = np.flatnonzero(ok)
    if not len(idx):
        return [draw.uniform(cfg.space, cfg.base_env(), rng) for _ in range(k)]
    est, p_ok = estimates(cfg, ev, [cands[i] for i in idx], B[idx], H[idx], float(s["ridge"]))
    n_explore = min(len(idx), int(round(float(s["explore"]) * k)))
    picked = greedy_hv(est, ev.front, k - n_explore, rng, int(s["samples"]), p_ok,
                       len(B[0]) if s["extremes"] else 0, bool(s["refine"]))
    rest = np.setdiff1d(np.arange(len(idx)), picked)
    if n_explore and len(rest):
        picked += [int(i) for i in rng.choice(rest, size=min(n_explore, len(rest)), replace=False)]
    return [cands[idx[i]] for i in picked]


def estimates(cfg: Any, ev: Evaluated, params: list, B: np.ndarray, H: np.ndarray, ridge: float
              ) -> tuple[np.ndarray, np.ndarray]:
    """(estimated objectives, minimisation form; probability of being feasible) of candidates with
    bounds ``B`` and hints ``H``. Objectives: bound x the ratio ``ratio_model`` learns from the
    feasible evaluated designs. Feasibility: a ridge fit of the worst constraint value of the
    evaluated designs (clipped to [-1, 1]), its residuals taken as Gaussian. Nothing evaluated
    yet: the raw bounds, feasible."""
    if not ev.feasible.any():
        return pareto.to_min(B, cfg.objectives.directions), np.ones(len(B))
    evB, _, evH = bound_arrays(cfg, ev.designs)
    Xev, X = features(cfg, ev.params, evB, evH), features(cfg, params, B, H)
    with np.errstate(all="ignore"):
        logr = np.log(np.abs(ev.values) / np.abs(evB))
    logr[~np.isfinite(logr) | ~ev.feasible[:, None]] = np.nan
    est = pareto.to_min(B * np.exp(ratio_model(Xev, logr, ridge)(X)), cfg.objectives.directions)
    if ev.feasible.all():
        return est, np.ones(len(B))
    viol = np.clip(ev.violation, -1.0, 1.0)[:, None]
    fit = ratio_model(Xev, viol, ridge)
    sigma = max(MIN_SIGMA, float(np.std(viol[:, 0] - fit(Xev)[:, 0])))
    z = -fit(X)[:, 0] / (sigma * math.sqrt(2.0))
    return est, 0.5 * (1.0 + np.vectorize(math.erf)(z))


def greedy_hv(E: np.ndarray, F: np.ndarray, k: int, rng: np.random.Generator, samples: int,
              weight: np.ndarray | None = None, extremes: int = 0, refine: bool = False) -> list[int]:
    """Indices of up to ``k`` rows of ``E``: first the best row of each of the first ``extremes``
    objectives, then one by one by the hypervolume each adds to ``F`` plus the rows picked before
    (times its ``weight``) (Monte Carlo on ``samples`` points of the box between the
    smallest values and the reference point, 1.1 x the front's span beyond its nadir); ties go to
    the smallest additive epsilon distance to that set, then to the lower index. With ``refine``,
    an extreme is taken only if it is better than ``F`` in its objective, and a row equal to one
    of the set comes last."""
    k = min(k, len(E))
    if k <= 0:
        return []
    ref_set = F if len(F) else E
    lo = np.minimum(E.min(axis=0), ref_set.min(axis=0))
    hi = ref_set.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    ref = hi + 0.1 * span
    X = lo + rng.random((samples, E.shape[1])) * (ref - lo)
    X = X[~pareto.weakly_dominated(X, F)] if len(F) else X                 # the volume the front lacks
    dom = np.ones((len(E), len(X)), dtype=bool)                     # candidate covers sample
    for j in range(E.shape[1]):
        dom &= E[:, j, None] <= X[None, :, j]
    uncovered = np.ones(len(X), dtype=bool)
    S = (F - lo) / span if len(F) else np.zeros((0, E.shape[1]))
    En = (E - lo) / span
    w = np.ones(len(E)) if weight is None else weight
    extremes = min(extremes, E.shape[1], k)
    picked: list[int] = []
    for _ in range(k):
        if len(picked) < extremes:                   # first the best estimate of each objective
            j = len(picked)
            best = int(np.lexsort((np.arange(len(E)), -w, E[:, j]))[0])
            beyond = not refine or not len(F) or E[best, j] < F[:, j].min()   # refine: it extends the front
            if best not in picked and beyond:
                picked.append(best)
                uncovered &= ~dom[best]
                S = np.vstack([S, En[best:best + 1]])
                continue
        gain = dom[:, uncovered].sum(axis=1) * w
        eps = np.zeros(len(E))
        if len(S):
            diff = En[:, None, :] - S[None, :, :]
            eps = diff.max(axis=2).min(axis=1)
            if refine:                                                      # already there: last
                eps[(np.abs(diff).max(axis=2) <= EPS_SAME).any(axis=1)] = np.inf
        gain[picked] = -1.0
        order = np.lexsort((np.arange(len(E)), eps, -gain))
        best = int(order[0])
        picked.append(best)
        uncovered &= ~dom[best]
        S = np.vstack([S, En[best:best + 1]])
    return picked


def make(cfg: Any, seed: int, settings: Mapping[str, Any]):
    """The guided sampler (an optuna ``BaseSampler``, handing out ``plan``'s designs) of study ``cfg``
    seeded with ``seed``; ``settings``: ``DEFAULTS`` keys. optuna is imported only here."""
    import optuna

    class _Guided(optuna.samplers.BaseSampler):
        def __init__(self) -> None:
            self.rng = np.random.default_rng(seed)
            self.fallback = optuna.samplers.RandomSampler(seed=seed)
            self.todo: list[dict[str, Any]] = []
            self.basis = -1                               # finished trials the plan was made from
            self.assigned: dict[int, dict[str, Any]] = {}

        def infer_relative_search_space(self, study, trial):
            return {}

        def sample_relative(self, study, trial, search_space):
            return {}

        def sample_independent(self, study, trial, name, distribution):
            params = self.assigned.get(trial.number)
            if params is None:
                params = self.assigned[trial.number] = self._next(study)
            if name in params:                            # legal by construction (dse.search.draw)
                return params[name]
            return self.fallback.sample_independent(study, trial, name, distribution)

        def _next(self, study) -> dict[str, Any]:
            done = [t for t in study.get_trials(deepcopy=False) if t.state.is_finished()]
            if len(done) != self.basis:
                self.todo = plan(cfg, done, self.rng, cfg.batch, settings)
                self.basis = len(done)
            return self.todo.pop(0) if self.todo else {}

    return _Guided()
