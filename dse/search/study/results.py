"""A finished (or running) study read back: trial records, feasible Pareto front, knee.

``load_results(cfg)`` opens the study addressed by a ``StudyConfig`` (same file, storage and
overrides as ``dse run``) and returns ``StudyResults``. The front holds feasible, finished,
distinct designs only (a repeated proposal counts once: its first trial); see
``dse.search.front.pareto`` for the knee method and the hypervolume. Trials read back as told to the
sampler (``dse.search.storage.stored.sampler_form``: an infeasible trial stored PRUNED is a COMPLETE
record here, ``stored`` says how it is stored), so studies written before the stored form read the
same.

Hypervolume on a stated reference point is ``dse.search.review.quality.hypervolume_on`` (what
``dse front`` prints).
"""
from __future__ import annotations

import contextlib
import gc
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dse.search.front import pareto
from dse.search.storage import optuna_read
from dse.search.storage.stored import OUTCOME_ATTR, constraint_keys, is_scored, sampler_form
from dse.search.study.study import StudyConfig


@dataclass
class TrialRecord:
    number: int
    state: str
    values: list[float] | None
    feasible: bool
    reason: str
    design: dict[str, Any]
    params: dict[str, Any]
    design_key: str
    duplicate_of: int | None
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)   # {model: metrics}
    constraints: dict[str, float] = field(default_factory=dict)   # infeasible_workloads, c0, c1, ...
    error: str = ""
    stored: str = ""          # state in the storage (differs from ``state``: see dse.search.storage.stored)
    outcome: str = ""         # why it is not stored COMPLETE (``dse_outcome``)
    screened: str = ""            # multi-fidelity: why no trace-driven evaluation (its values are bounds)

    @property
    def complete(self) -> bool:
        return self.state == "COMPLETE"


@dataclass
class StudyResults:
    cfg: StudyConfig
    records: list[TrialRecord]
    study_attrs: dict[str, Any] = field(default_factory=dict)

    # -- selections ----------------------------------------------------------------------
    @property
    def complete(self) -> list[TrialRecord]:
        return [r for r in self.records if r.complete]

    def candidates(self) -> list[TrialRecord]:
        """Feasible finished distinct designs with finite objective values, in trial order."""
        out, seen = [], set()
        for r in self.complete:
            if not r.feasible or r.values is None or not all(math.isfinite(v) for v in r.values):
                continue
            if r.design_key in seen:
                continue
            seen.add(r.design_key)
            out.append(r)
        return out

    def F(self, recs: list[TrialRecord]) -> np.ndarray:
        """Minimisation array of the records' objective values."""
        m = len(self.cfg.objectives.objectives)
        if not recs:
            return np.zeros((0, m))
        return pareto.to_min(np.array([r.values for r in recs], dtype=float), self.cfg.objectives.directions)

    def front(self) -> list[TrialRecord]:
        cand = self.candidates()
        if not cand:
            return []
        mask = pareto.nondominated(self.F(cand))
        return [r for r, k in zip(cand, mask) if k]

    def knee(self) -> TrialRecord | None:
        fr = self.front()
        if not fr:
            return None
        return fr[pareto.knee_index(self.F(fr))]

    def record(self, number: int) -> TrialRecord:
        for r in self.records:
            if r.number == number:
                return r
        raise KeyError(number)

    # -- views ---------------------------------------------------------------------------
    def objective_values(self, r: TrialRecord) -> dict[str, float | None]:
        if r.values is None:
            return {o.name: None for o in self.cfg.objectives.objectives}
        return {o.name: (v if math.isfinite(v) else None) for o, v in zip(self.cfg.objectives.objectives, r.values)}

    def to_json(self, r: TrialRecord) -> dict[str, Any]:
        """A trial as JSON: params (searched knobs), design (every knob set by the study),
        objectives, metrics of the first workload, and per-workload metrics if several."""
        out: dict[str, Any] = {
            "trial": r.number,
            "params": dict(r.params),
            "design": dict(r.design),
            "objectives": self.objective_values(r),
            "feasible": r.feasible,
            "reason": r.reason,
            "metrics": r.metrics.get(self.cfg.models[0], {}),
        }
        if len(self.cfg.models) > 1:
            out["workloads"] = r.metrics
        if r.duplicate_of is not None:
            out["duplicate_of"] = r.duplicate_of
        if r.screened:
            out["screened"] = r.screened
        return out

    def dataframe(self):
        """One row per trial: trial, state, stored (state in the storage) and outcome (why it is
        not stored COMPLETE; ``dse.search.storage.stored``), feasible, reason, duplicate_of, design_key, screened
        (multi-fidelity: why no trace-driven evaluation), the
        searched params (``p.<knob>``), the objectives (``o.<name>``), the constraint values
        (``c.<name>``) and every scalar metric (``m.<metric>``; ``m.<model>.<metric>`` when the
        study has several workloads)."""
        import pandas as pd
        rows = []
        multi = len(self.cfg.models) > 1
        cnames = ["infeasible_workloads"] + [c.name for c in self.cfg.objectives.constraints]
        for r in self.records:
            row: dict[str, Any] = {"trial": r.number, "state": r.state, "stored": r.stored, "outcome": r.outcome,
                                   "feasible": r.feasible, "reason": r.reason,
                                   "duplicate_of": r.duplicate_of, "design_key": r.design_key,
                                   "screened": r.screened}
            for k, v in r.params.items():
                row[f"p.{k}"] = v
            for k, v in self.objective_values(r).items():
                row[f"o.{k}"] = v
            for i, (k, v) in enumerate(r.constraints.items()):
                row[f"c.{cnames[i] if i < len(cnames) else k}"] = v
            for model, m in r.metrics.items():
                for k, v in m.items():
                    if isinstance(v, (bool, int, float, str)) or v is None:
                        row[f"m.{model}.{k}" if multi else f"m.{k}"] = v
            rows.append(row)
        return pd.DataFrame(rows)


def load_results(cfg: StudyConfig) -> StudyResults:
    """Read every trial of the study ``cfg`` addresses (ConfigError if it does not exist)."""
    from dse.search.storage.storage import open_study, quiet_optuna
    with gc_paused(), quiet_optuna():
        study, _ = open_study(cfg, create=False)
        trials = optuna_read.all_trials(study)
        return results_from_trials(cfg, trials, dict(study.user_attrs))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection within the block: reading a study back builds a few objects
    per trial (frozen trials, their attribute dicts, records), none in a reference cycle, and
    every full collection meanwhile walks all of them again. Reading a 5,000-trial SQLite study
    back in one process took 1.40-1.73 s with collections and 1.04-1.11 s without; `dse front
    --json` on it, 1.99-2.10 s and 1.74-1.97 s (three alternated pairs). On a 10^4-trial journal
    study no difference showed (2.14 / 2.12 s)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def results_from_trials(cfg: StudyConfig, trials: list, study_attrs: dict[str, Any]) -> StudyResults:
    """``StudyResults`` of the stored trials ``trials`` (frozen, in the storage's form: see
    ``dse.search.storage.stored``), as ``load_results`` builds them from the storage; ``dse run`` builds
    its summary this way from the trials it holds (``held_results``)."""
    by_number = {t.number: t for t in trials}
    cnames = constraint_keys(cfg)
    twin_of = _twins(trials)
    recs = []
    for t in trials:
        ua = t.user_attrs.get("dse", {})
        dup = ua.get("duplicate_of", twin_of.get(t.number))
        metrics = ua.get("metrics")
        if metrics is None and dup is not None and dup in by_number:
            metrics = by_number[dup].user_attrs.get("dse", {}).get("metrics")
        told = sampler_form(t)
        recs.append(TrialRecord(
            number=t.number, state=told.state.name, values=list(told.values) if told.values is not None else None,
            feasible=bool(ua.get("feasible", False)), reason=str(ua.get("reason", "")),
            design=dict(ua.get("design", {})),
            params=dict(t.params) if t.state.name != "WAITING" else dict(t.system_attrs.get("fixed_params", {})),
            design_key=str(t.user_attrs.get("design_key", "")), duplicate_of=dup, metrics=dict(metrics or {}),
            constraints=_named(t.constraints, cnames), error=str(ua.get("error", "")),
            stored=t.state.name, outcome=str(t.user_attrs.get(OUTCOME_ATTR, "") or (
                f"repeat of trial {dup}" if t.number in twin_of else "")),
            screened=str(t.user_attrs.get("screened", ""))))
    return StudyResults(cfg, recs, study_attrs)


def _twins(trials: list) -> dict[int, int]:
    """{number: first number} of the evaluated trials whose design an earlier evaluated trial
    holds too, neither marked a repeat: two writers raced on one design and nothing demoted the
    later one yet (a journal storage cannot; a writer killed before it did), or the design is
    infeasible, which ``stored.demote_repeats`` leaves alone (both are stored PRUNED already, and
    the dashboard lists neither). They read as repeats, so no design is counted twice. Screened
    trials (multi-fidelity: values are bounds) are neither firsts nor repeats."""
    first: dict[str, int] = {}
    out = {}
    for t in sorted((t for t in trials if is_scored(t) and "design_key" in t.user_attrs
                     and not t.user_attrs.get("screened")
                     and t.user_attrs.get("dse", {}).get("duplicate_of") is None), key=lambda t: t.number):
        key = t.user_attrs["design_key"]
        if key in first:
            out[t.number] = first[key]
        else:
            first[key] = t.number
    return out


def held_results(cfg: StudyConfig, finished: list, numbers: list[int], stored: list,
                 study_attrs: dict[str, Any]) -> StudyResults:
    """``StudyResults`` of the trials a run holds (``runner._Run.held_results``), equal to those
    ``load_results`` reads back: ``finished[i]`` numbered ``numbers[i]`` in the storage, stored as
    ``stored[i]``, or as ``stored_form(finished[i])`` where that is None (told by the run). `dse run`
    summarises these instead of reading the study back: on bench_search's 768-trial study the read
    took 0.24-0.36 s of a 5-6 s run, and grows with the study."""
    from dse.search.storage.stored import stored_form
    with gc_paused():
        trials = []
        for number, ft, t in zip(numbers, finished, stored):
            if t is None:
                t = stored_form(ft)
                t.number = number
            trials.append(t)
        trials.sort(key=lambda t: t.number)
        return results_from_trials(cfg, trials, study_attrs)


def _named(cons: dict[str, float], names: list[str]) -> dict[str, float]:
    """Constraint values by dse's names, in their order: the stored list form reads as keys
    "0", "1", ...; studies written before it hold ``constraints:<name>`` keys (named, in the
    storage's order)."""
    if cons and all(k.isdigit() for k in cons) and len(cons) == len(names):
        return dict(zip(names, cons.values()))
    return {**{n: cons[n] for n in names if n in cons}, **cons}
