"""The closed-form-guided sampler (``[sampler] name = "guided"``): proposals chosen on the closed form.

A trace-driven evaluation costs milliseconds to seconds; the vectorised closed form with its
bounds (``dse.search.propose.bound``: ``closed_form_bounds_many``, ``metrics``) costs about a
millisecond. For each batch the sampler spends the cheap fidelity on a few thousand candidates
and the expensive one only on the few it picks (``plan``):

1. **pool**: ``pool`` candidates, a share ``mutants`` of them mutations (1 to 3 knobs drawn
   afresh, ``dse.search.propose.sample.draw``'s rule) of the designs on the current feasible front, the
   others drawn uniformly over the space (all of them while there is no front), drawn knob by
   knob for the whole pool at once (``dse.search.propose.sample.pool``); designs already proposed
   in the study are left out;
2. **rigorous screen**: a candidate whose closed-form bounds violate a constraint, or whose
   objective bounds are weakly dominated by the current front (the trace-driven, feasible trials
   before the batch), is dropped: it can never enter the front (the bounds are never better
   than the trace-driven values; the assumption is stated in ``dse.search.propose.bound.metrics``);
3. **estimate** (``dse.search.propose.bound.estimate.Estimator``): each survivor's objectives are estimated
   as its bound times a ratio learnt from the feasible evaluated designs: a ridge regression of
   log(value / bound) per objective on the knobs (one-hot categorical, log numeric), the log
   bounds and the log closed-form hints (``bounds.HINTS``: the core-mesh load and contention the
   schedule recomputes); and its probability of being feasible (the bounds cannot see the
   core-mesh load): a ridge fit of the worst constraint value, or with ``logistic`` a
   penalised logistic regression of the outcome; no evaluated design yet: the raw bound;
4. **pick**: ``batch`` designs: with ``extremes``, first the best estimate of each objective
   (with ``refine``: only if it extends the front in that objective; the front's ends weigh
   most in its hypervolume), then greedily by the hypervolume each
   estimate adds to the current front plus the designs already picked (a Monte Carlo estimate
   on ``samples`` points of the normalised objective box), weighted by the candidate's
   probability of being feasible; ties,
   e.g. nothing adds volume, go to the smallest additive epsilon distance to that front (with
   ``refine``, an estimate equal to a point already there, a design differing only in knobs the
   objectives do not see, comes last). A
   batch thus spreads along the front; a share ``explore`` of it is instead drawn at random
   among the survivors, or with ``novelty`` taken one by one among them as the design the ratio
   regression knows least (``estimate.leverage_picks``: a run otherwise stays in the region of
   its first good designs, where its regression was fitted and is too pessimistic elsewhere).

Everything is drawn from a generator seeded with the batch seed (``samplers.batch_seed``), and
the plan is a function of that seed and the finished trials before the batch: a resumed study
asks the same trials (``dse.search.execute.runner``). The plan is made at the batch's first question and
handed out trial by trial (``sample_independent``); it is made afresh whenever the finished
trials changed (``dse worker`` asks one trial at a time). A parameter the plan does not hold (a
trial asked beyond the batch) is drawn at random, and so is a whole batch if no candidate
survives the screen (then nothing the pool holds could enter the front).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dse.search.front import pareto
from dse.search.propose.bound import BoundMemo, ChunkedBounds, Estimator, bound_arrays  # noqa: F401 (guided.bound_arrays)
from dse.search.propose.sample import draw
from dse.search.propose.sample import pool as draw_pool

EPS_SAME = 1e-12             # normalised distance under which an estimate counts as already there
DEFAULTS = {"pool": 2000, "mutants": 0.75, "explore": 0.2, "extremes": True, "refine": False, "samples": 10000,
            "ridge": 10.0, "logistic": False, "novelty": False, "utility": 0.0}


def param_key(params: Mapping[str, Any]) -> tuple:
    """A hashable identity of a trial's parameters (the pool leaves out those already proposed)."""
    return BoundMemo.key(params)


TRIAL_ROWS_KEPT = 50_000                           # finished trials whose rows ``_row`` keeps
FINISHED = ("COMPLETE", "PRUNED", "FAIL")          # states whose parameters are final


class Evaluated:
    """What the finished trials before a batch tell the plan (as told to the sampler): the
    evaluated designs, which are feasible, and the feasible front."""

    def __init__(self, cfg: Any, trials: Sequence, pending: Sequence[Mapping[str, Any]] = ()):
        self.trials = list(trials)
        ident = (id(cfg), tuple(id(t) for t in self.trials), tuple(t.state.name for t in self.trials))
        hit = next((e for e in _EVALUATED if e[0] == ident), None)
        if hit is None:
            hit = (ident, self.trials, _read(cfg, self.trials), {}, cfg)
            _EVALUATED.insert(0, hit)
            del _EVALUATED[EVALUATED_KEPT:]
        (known, self.params, self.keys, self.designs, self.feasible, self.violation, self.values, self.front,
         self.front_params) = hit[2]
        self.known = known | {param_key(p) for p in pending}
        self.derived: dict = hit[3]           # what is learnt from these trials alone (``estimator``)

    def estimator(self, cfg: Any, ridge: float, logistic: bool, memo: BoundMemo) -> Estimator:
        """``Estimator(cfg, self, ridge, logistic, memo)``, learnt once for the same trials (it
        reads the evaluated designs, not the pending ones: a knee batch's plan and its global
        share fitted the same regressions twice)."""
        got = self.derived.get(("estimator", ridge, logistic))
        if got is None:
            got = self.derived[("estimator", ridge, logistic)] = Estimator(cfg, self, ridge, logistic, memo)
        return got


# The trials' side of the last few ``Evaluated`` (a knee-phase batch read the same trials four
# times: its plan, its global share, the verdict and the signature after it). An entry keeps its
# trials and study (so their ids are not reused) and is read, never changed; what is learnt from
# its trials (an estimator, the knee candidates) is kept beside it.
_EVALUATED: list[tuple[Any, list, tuple, dict, Any]] = []
EVALUATED_KEPT = 2


_TRIAL_ROWS: dict[int, tuple[Any, Any, tuple]] = {}   # id(trial) -> (trial, cfg, ``_row``)


def _row(cfg: Any, t: Any) -> tuple:
    """(its ``param_key``, None or, for a design the plan learns from, (params, key, flat design,
    feasible, worst constraint value, values)) of a trial; a finished trial's is kept per trial
    object (its record no longer changes: each plan and verdict of a 1,440-trial study read every
    trial again, its parameters' key too: 2-3 % of the catalog study's driver, issue 48)."""
    finished = t.state.name in FINISHED
    if finished:
        hit = _TRIAL_ROWS.get(id(t))
        if hit is not None and hit[0] is t and hit[1] is cfg:
            return hit[2]
    attrs = t.user_attrs.get("dse", {})
    use = (t.state.name == "COMPLETE" and t.values is not None and not t.user_attrs.get("screened")
           and "duplicate_of" not in attrs)
    key = param_key(t.params)
    row = (key, (dict(t.params), key, attrs.get("design") or cfg.design(t.params),
                 bool(attrs.get("feasible")) and all(math.isfinite(v) for v in t.values),
                 max(t.constraints.values(), default=0.0), tuple(t.values)) if use else None)
    if finished:
        if len(_TRIAL_ROWS) >= TRIAL_ROWS_KEPT:
            _TRIAL_ROWS.clear()
        _TRIAL_ROWS[id(t)] = (t, cfg, row)
    return row


def _read(cfg: Any, trials: list) -> tuple:
    """What ``Evaluated`` reads of ``trials`` (its attributes but the pending designs')."""
    rows = [_row(cfg, t) for t in trials]
    known = {r[0] for r in rows}
    done = [r[1] for r in rows if r[1] is not None]
    params = [r[0] for r in done]
    keys = [r[1] for r in done]                       # param_key of each
    designs = [r[2] for r in done]
    feasible = np.array([r[3] for r in done], dtype=bool)
    violation = np.array([r[4] for r in done], dtype=float)
    values = np.array([r[5] for r in done], dtype=float).reshape(len(done), len(cfg.objectives.objectives))
    F = pareto.to_min(values[feasible], cfg.objectives.directions)
    keep = pareto.nondominated(F) if len(F) else np.zeros(0, dtype=bool)
    front_params = [p for p, k in zip([p for p, f in zip(params, feasible) if f], keep) if k]
    return known, params, keys, designs, feasible, violation, values, F[keep], front_params


def candidates(cfg: Any, ev: Evaluated, rng: np.random.Generator, n: int, mutants: float = 0.5,
               sink: ChunkedBounds | None = None) -> list[dict[str, Any]]:
    """Up to ``n`` distinct new candidates: uniform draws and mutants of the front (module
    docstring), drawn column by column (``draw_pool.pool``); their flat designs are also added
    to ``sink`` (its chunks' bounds computed on the workers, ``estimate.ChunkedBounds``)."""
    out = draw_pool.pool(cfg.space, cfg.base_env(), rng, n, mutants, ev.front_params, ev.known)
    if sink is not None:
        sink.add([cfg.design(p) for p in out])
    return out


def plan(cfg: Any, trials: Sequence, rng: np.random.Generator, k: int,
         settings: Mapping[str, Any] | None = None, memo: BoundMemo | None = None,
         pending: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The ``k`` parameter sets of the next batch (see the module docstring); ``memo`` keeps the
    bounds of the designs picked, for the regressions of the plans after (a cache: the plan is
    the same without it)."""
    s = {**DEFAULTS, **(settings or {})}
    memo = memo or BoundMemo()
    ev = Evaluated(cfg, trials, pending)
    chunks = ChunkedBounds(cfg)                    # the bounds, on the workers while the pool is drawn
    cands = candidates(cfg, ev, rng, int(s["pool"]), float(s["mutants"]), chunks)
    designs = chunks.designs
    B, ok, H = chunks.arrays()
    Bmin = pareto.to_min(np.where(np.isnan(B), np.inf, B), cfg.objectives.directions)
    ok &= np.isfinite(Bmin).all(axis=1)
    if len(ev.front):
        ok &= ~pareto.weakly_dominated(Bmin, ev.front)
    idx = np.flatnonzero(ok)
    if not len(idx):
        return [draw.uniform(cfg.space, cfg.base_env(), rng) for _ in range(k)]
    estimator = ev.estimator(cfg, float(s["ridge"]), bool(s["logistic"]), memo)
    est, p_ok = estimator([cands[i] for i in idx], B[idx], H[idx])
    n_explore = min(len(idx), int(round(float(s["explore"]) * k)))
    picked = utility_picks(cfg, ev, [cands[i] for i in idx], est, p_ok, int(round(float(s["utility"]) * k)))
    hv = greedy_hv(est, ev.front, k - n_explore, rng, int(s["samples"]), p_ok,
                   len(B[0]) if s["extremes"] else 0, bool(s["refine"]))
    picked += [i for i in hv if i not in picked][: max(0, k - n_explore - len(picked))]
    rest = np.setdiff1d(np.arange(len(idx)), picked)
    if n_explore and len(rest) and s["novelty"]:
        picked += [int(rest[i]) for i in estimator.novel([cands[idx[i]] for i in rest], B[idx[rest]], H[idx[rest]],
                                                          n_explore)]
    elif n_explore and len(rest):
        picked += [int(i) for i in rng.choice(rest, size=min(n_explore, len(rest)), replace=False)]
    rows = idx[picked]
    memo.keep([designs[i] for i in rows], B[rows], ok[rows], H[rows])
    return [cands[i] for i in rows]


def utility_picks(cfg: Any, ev: Evaluated, params: Sequence[Mapping[str, Any]], est: np.ndarray,
                  p_ok: np.ndarray, n: int) -> list[int]:
    """Up to ``n`` rows of the estimates ``est`` (minimisation form) with the highest estimated
    knee utility on the current front's scale (``dse.search.front.knee``) plus the log of the
    probability of being feasible, one per architecture (the knee keys), best first: the share
    of a batch that climbs the knee's figure of merit rather than the front's volume."""
    if n <= 0 or not len(ev.front) or not len(est):
        return []
    from dse.search.front import knee as kn
    keys = tuple(getattr(getattr(cfg, "knee", None), "keys", kn.KNEE_KEYS))
    eu = kn.Scale.of(ev.front).utility(est) + np.log(np.maximum(p_ok, 1e-12))
    base = cfg.base_env()
    out, seen = [], set()
    for i in np.lexsort((np.arange(len(eu)), -eu)).tolist():
        if not np.isfinite(eu[i]):
            break
        g = tuple(repr({**base, **params[i]}.get(k)) for k in keys)
        if g not in seen:
            seen.add(g)
            out.append(int(i))
            if len(out) >= n:
                break
    return out


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
    dom = E[:, 0, None] <= X[None, :, 0]                            # candidate covers sample
    for j in range(1, E.shape[1]):
        dom &= E[:, j, None] <= X[None, :, j]
    uncovered = np.ones(len(X), dtype=bool)
    count = dom.sum(axis=1)                                         # uncovered samples each covers
    En = (E - lo) / span
    eps: np.ndarray | None = None                                   # distance to the set (empty: None)
    same = np.zeros(len(E), dtype=bool)                             # equal to a row of the set
    for s in (F - lo) / span:
        eps, same = _closer(En, s, eps, same, refine)
    w = np.ones(len(E)) if weight is None else weight
    extremes = min(extremes, E.shape[1], k)
    picked: list[int] = []
    for _ in range(k):
        best = -1
        if len(picked) < extremes:                   # first the best estimate of each objective
            j = len(picked)
            best = int(np.lexsort((np.arange(len(E)), -w, E[:, j]))[0])
            beyond = not refine or not len(F) or E[best, j] < F[:, j].min()   # refine: it extends the front
            if best in picked or not beyond:
                best = -1
        if best < 0:
            gain = count * w
            gain[picked] = -1.0
            dist = np.zeros(len(E)) if eps is None else np.where(same, np.inf, eps)
            order = np.lexsort((np.arange(len(E)), dist, -gain))
            best = int(order[0])
        picked.append(best)
        newly = dom[best] & uncovered
        if newly.any():
            count -= dom[:, newly].sum(axis=1)
            uncovered &= ~newly
        eps, same = _closer(En, En[best], eps, same, refine)
    return picked


def _closer(En: np.ndarray, s: np.ndarray, eps: np.ndarray | None, same: np.ndarray, refine: bool
            ) -> tuple[np.ndarray, np.ndarray]:
    """The additive epsilon distance of the rows of ``En`` to a set grown by row ``s`` (``eps``:
    to the set before, None if it was empty), and whether each row equals a row of it (with
    ``refine``)."""
    diff = En - s
    d = diff.max(axis=1)
    eps = d if eps is None else np.minimum(eps, d)
    if refine:
        same = same | (np.abs(diff).max(axis=1) <= EPS_SAME)
    return eps, same


_MEMOS: dict[str, BoundMemo] = {}


def memo_of(cfg: Any) -> BoundMemo:
    """The ``BoundMemo`` of study ``cfg`` in this process (each batch gets a new sampler; the
    memo outlives it; kept for the last few studies)."""
    key = cfg.fingerprint()
    if key not in _MEMOS and len(_MEMOS) >= 4:
        _MEMOS.clear()
    return _MEMOS.setdefault(key, BoundMemo())


def basis(cfg: Any, study: Any, position: int | None, lag: int = 0) -> tuple[list, list[dict[str, Any]]]:
    """(the finished trials a plan reads, the params of trials it must not propose again): all of
    the study's finished trials and none; with ``lag`` batches (``[sampler] lag = 1``,
    ``samplers.lagged``) the first ``position - lag x batch`` finished trials (position: finished
    trials before the batch asked; None: all the study's), in trial order, and the params of every
    later trial already asked (the batch before, running or finished: its designs are known, its
    results not yet) (``samplers.blind``)."""
    done = [t for t in study.get_trials(deepcopy=False) if t.state.is_finished()]
    if not lag:
        return done, []
    done.sort(key=lambda t: t.number)
    n = max(0, (len(done) if position is None else position) - lag * cfg.batch)
    seen = {t.number for t in done[:n]}
    pending = [dict(t.params) for t in study.get_trials(deepcopy=False)
               if t.number not in seen and t.params and (t.state.is_finished() or t.state.name == "RUNNING")]
    return done[:n], pending


def make(cfg: Any, seed: int, settings: Mapping[str, Any], position: int | None = None, lag: int = 0):
    """The guided sampler (an optuna ``BaseSampler``, handing out ``plan``'s designs) of study ``cfg``
    seeded with ``seed``; ``settings``: ``DEFAULTS`` keys; ``position``, ``lag``: as ``basis``.
    optuna is imported only here."""
    import optuna

    class _Guided(optuna.samplers.BaseSampler):
        def __init__(self) -> None:
            self.rng = np.random.default_rng(seed)
            self.fallback = optuna.samplers.RandomSampler(seed=seed)
            self.todo: list[dict[str, Any]] = []
            self.basis = -1                               # finished trials the plan was made from
            self.assigned: dict[int, dict[str, Any]] = {}
            self.memo = memo_of(cfg)                      # bounds of the designs picked

        def infer_relative_search_space(self, study, trial):
            return {}

        def sample_relative(self, study, trial, search_space):
            return {}

        def sample_independent(self, study, trial, name, distribution):
            params = self.assigned.get(trial.number)
            if params is None:
                params = self.assigned[trial.number] = self._next(study)
            if name in params:                            # legal by construction (dse.search.propose.sample.draw)
                return params[name]
            return self.fallback.sample_independent(study, trial, name, distribution)

        def _next(self, study) -> dict[str, Any]:
            done, pending = basis(cfg, study, position, lag)
            if len(done) != self.basis:
                self.todo = plan(cfg, done, self.rng, cfg.batch, settings, self.memo, pending)
                self.basis = len(done)
            return self.todo.pop(0) if self.todo else {}

    return _Guided()
