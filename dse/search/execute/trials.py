"""One trial lifecycle, shared by ``dse run`` (``runner``) and ``dse worker``.

A batch of asked trials goes through the same steps whoever runs it (``Batch``):

1. each trial's parameters become a design (``StudyConfig.design``) and a ``design_key``;
2. designs not in the ``DesignCache`` (nor earlier in the batch) are handed to the
   ``EvaluationPool`` as soon as they are known;
3. in trial order, each trial is recorded (``record``: user attributes and constraints) from
   its outcome, or from the cache for a design seen before (``duplicate_of``), and handed back
   to the caller, which tells it and writes it to the storage, then adds it to the cache.

Per trial the storage keeps two user attributes:

* ``design_key``  digest of the resolved design (cache key: a design is evaluated once per
                  study; a repeated proposal is told the cached result)
* ``dse``         ``{"design": flat knobs without the model, "metrics": {model: metrics},
                  "feasible": bool, "reason": str}``, plus ``"duplicate_of": first trial`` for a
                  repeated design (metrics then live with the first) or ``"error"`` for a failed one

plus ``dse_outcome`` (why, for a trial not stored COMPLETE), and the constraint values optuna's
samplers read (``Trial.set_constraint``, <= 0 satisfied): ``infeasible_workloads`` then ``c0``,
``c1``, ... in the order of the objective file. This is the trial as told to the sampler; the
storage holds its stored form (``dse.search.storage.stored``: infeasible, repeated and non-finite trials
are not COMPLETE there, so optuna-dashboard's best trials are ``dse front``).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dse.search.execute.evaluation import Evaluator, Outcome, design_key
from dse.search.execute.pool import EvaluationPool
from dse.search.execute.warm import domain_key
from dse.search.propose.bound import record_screened
from dse.search.space.objectives import score
from dse.search.storage.stored import OUTCOME_ATTR, constraint_keys, is_scored, outcome

if TYPE_CHECKING:
    from dse.search.study.study import StudyConfig

FAILURE_FLOOR = 10       # a run stops once this many evaluations failed and at least half of them


def too_many_failures(errors: int, attempts: int) -> bool:
    """Whether a run should stop: ``errors`` of ``attempts`` evaluations failed, at least
    ``FAILURE_FLOOR`` of them and at least half of the attempts."""
    return errors > 0 and errors >= max(FAILURE_FLOOR, attempts // 2)


def record(cfg: StudyConfig, trial, key: str, design: Mapping[str, Any], result: Outcome,
           duplicate_of: int | None = None) -> list[float] | None:
    """Set the trial's user attributes and constraints; return its objective values (None: failed)."""
    rec: dict[str, Any] = {"design": dict(design)}
    if duplicate_of is not None:
        rec["duplicate_of"] = duplicate_of
    trial.set_user_attr("design_key", key)
    names = cfg.objectives.names
    if not result.ok:
        rec["error"] = result.error
        trial.set_user_attr("dse", rec)
        trial.set_user_attr(OUTCOME_ATTR, outcome(False, "", None, names, duplicate_of, result.error))
        return None
    sc = score(result.metrics, cfg.objectives)
    if duplicate_of is None:
        rec["metrics"] = result.metrics
    rec["feasible"], rec["reason"] = sc.feasible, sc.reason
    trial.set_user_attr("dse", rec)
    why = outcome(sc.feasible, sc.reason, sc.values, names, duplicate_of)
    if why:
        trial.set_user_attr(OUTCOME_ATTR, why)
    for name, v in zip(constraint_keys(cfg), sc.constraints):
        trial.set_constraint(name, v)
    return sc.values


@dataclass(frozen=True)
class CachedDesign:
    trial: int                                  # number of the first trial that evaluated it
    metrics: dict[str, dict[str, Any]]


class DesignCache:
    """Designs already evaluated in a study: design key -> first trial and its metrics."""

    def __init__(self) -> None:
        self._by_key: dict[str, CachedDesign] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def get(self, key: str) -> CachedDesign | None:
        return self._by_key.get(key)

    def add(self, key: str, number: int, outcome: Outcome) -> None:
        """Remember a successful evaluation (the first one of a design wins)."""
        if outcome.ok and key not in self._by_key:
            self._by_key[key] = CachedDesign(number, outcome.metrics)

    def renumber(self, first: int, shift: int) -> None:
        """Move by ``shift`` the trial numbers ``>= first`` (a batch written later than numbered)."""
        for key, hit in list(self._by_key.items()):
            if hit.trial >= first:
                self._by_key[key] = CachedDesign(hit.trial + shift, hit.metrics)

    def add_trial(self, t) -> bool:
        """Add a finished trial (frozen, stored or as told) of the study; True if it was scored
        (COMPLETE as told to the sampler: it counts toward the target)."""
        if not is_scored(t):
            return False
        rec = t.user_attrs.get("dse", {})
        key = t.user_attrs.get("design_key")
        if key and "metrics" in rec and key not in self._by_key:
            self._by_key[key] = CachedDesign(t.number, rec["metrics"])
        return True

    @classmethod
    def from_trials(cls, trials: Iterable) -> tuple[DesignCache, int, int]:
        """The cache of a study's finished trials, with its scored and feasible counts."""
        cache, complete, feasible = cls(), 0, 0
        for t in trials:
            if cache.add_trial(t):
                complete += 1
                feasible += bool(t.user_attrs.get("dse", {}).get("feasible"))
        return cache, complete, feasible


@dataclass
class Told:
    """One trial of a batch, recorded and ready to be told (``values`` None: failed)."""
    trial: Any
    key: str
    design: dict[str, Any]
    outcome: Outcome
    duplicate_of: int | None
    values: list[float] | None
    screened: str = ""            # why the closed-form screen spared it an evaluation (multi-fidelity)


class Batch:
    """Evaluate a batch of asked trials (see the module docstring); iterate for ``Told`` trials
    in order. The caller tells and writes each one, then adds it to the cache, before the next.

    ``skip``: the first trials are only asked and suggested (the sampler's randomness is consumed
    exactly as when they were first asked), neither evaluated nor yielded: they are already in
    the storage (``replayed`` holds them, to check they came out the same).

    ``screen`` (multi-fidelity, ``dse.search.propose.bound.fidelity.Screen``): a new design it returns a
    ``Screened`` for is recorded as screened instead of evaluated.

    ``after``: the batch before, still being told (this one was asked ahead of it): its designs
    are not submitted again; by the time this batch is told they are in the cache (a failed one
    is evaluated then, as it would have been had this batch been asked after the other)."""

    def __init__(self, cfg: StudyConfig, trials: Iterable, env: Mapping[str, Any], cache: DesignCache,
                 pool: EvaluationPool, fn: Evaluator, skip: int = 0, screen: Callable | None = None,
                 after: Batch | None = None):
        self.cfg, self.cache, self.pool, self.fn = cfg, cache, pool, fn
        earlier = set() if after is None else {key for _, key, _ in after.items}
        self.items: list[tuple[Any, str, dict[str, Any]]] = []
        self.replayed: list[Any] = []
        self.pending: dict[str, Any] = {}
        self.screened: dict[str, Any] = {}
        self.before_wait: Callable[[], None] | None = None   # called before waiting for another process
        self.result_s = 0.0           # wall time in ``pool.result`` (``RunSummary.result_s``)
        self.start = 0                # the study position of its first trial to tell (set by the runner)
        for t in trials:              # trials may be asked lazily: evaluations start meanwhile
            d = cfg.design(cfg.space.suggest(t, env))
            if len(self.replayed) < skip:
                self.replayed.append(t)
                continue
            key = design_key(cfg, d)
            self.items.append((t, key, d))
            if key in cache or key in self.pending or key in self.screened or key in earlier:
                continue
            hit = screen(d) if screen is not None else None
            if hit is not None:
                self.screened[key] = hit
            else:
                self.pending[key] = self._submit(d)

    def _submit(self, design: dict[str, Any]):
        """Hand a design to the pool, on the worker of its scheduling domain."""
        return self.pool.submit(self.fn, design, self.cfg.models, group=domain_key(design))

    @property
    def evaluations(self) -> int:
        """Designs this batch evaluates."""
        return len(self.pending)

    def __iter__(self) -> Iterator[Told]:
        for t, key, d in self.items:
            hit = self.cache.get(key)
            if hit is None and key in self.screened:
                values = record_screened(t, key, d, self.screened[key], constraint_keys(self.cfg))
                yield Told(t, key, d, Outcome(metrics={}), None, values, self.screened[key].reason)
                continue
            if hit is not None:
                outcome, dup = Outcome(metrics=hit.metrics), hit.trial
            else:
                if key not in self.pending:     # the batch before failed to evaluate it
                    self.pending[key] = self._submit(d)
                handle = self.pending[key]
                if self.before_wait is not None and self.pool.pending(handle):
                    self.before_wait()
                t0 = time.perf_counter()
                outcome, dup = self.pool.result(handle), None
                self.result_s += time.perf_counter() - t0
            values = record(self.cfg, t, key, d, outcome, duplicate_of=dup)
            yield Told(t, key, d, outcome, dup, values)
