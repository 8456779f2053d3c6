"""What a finished distributed study holds, checked from its stored trials alone (the soak's read-back).

``audit(trials, directions, target, front)`` takes the study's trials as stored (frozen, any
order; ``dse.search.storage.optuna_read.read_trials`` reads them in a few queries) and answers:

* **count**: scored trials (``stored.is_scored``: COMPLETE, or PRUNED / FAIL with values) against
  the target; trials left RUNNING or WAITING (there must be none);
* **held trials**: a trial a worker reserved but never wrote (killed, hung past the heartbeat
  grace, interrupted) is stored FAIL without dse's record. Each must have a copy, re-queued with
  the same parameters (optuna's stale-trial callback: ``retry_history`` ends with its number;
  ``queue.requeue``: ``requeued_from``), or have failed with its reason (retries exhausted).
  Neither is a *lost* trial. A trial reserved before its design was drawn holds no parameters
  yet: its copy is drawn afresh;
* **duplicates**: designs (``design_key``) stored COMPLETE more than once. A repeat is stored
  PRUNED with ``dse_outcome = "repeat of trial N"`` (documented, not a duplicate), and N must be
  that design's COMPLETE trial;
* **front**: the non-dominated stored COMPLETE trials (one per design), recomputed here by a
  plain check (``nondominated``, independent of ``dse.search.front``), against the
  front ``dse front`` gives (``front``: its trial numbers);
* **throughput**: scored trials per second in each minute since the first trial started
  (``per_minute``), from the stored completion times.

``dump_line(t)`` is one trial as a JSON line (``bench_soak.py --dump``).
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dse.search.storage.storage import MAX_RETRY
from dse.search.storage.stored import OUTCOME_ATTR, VALUES_ATTR, is_scored

REQUEUED_FROM = "requeued_from"        # user attribute of a copy queued by ``queue.requeue``
RETRY_HISTORY = "retry_history"        # system attribute of a copy queued by optuna's stale-trial callback
MARKS = ("dse_outcome", "dse_surplus", "dse_worker", "requeued_from", "design_key")       # user attributes dumped
SYSTEM_MARKS = ("failed_trial", "retry_history", "fixed_params", "dse_lost_copy")       # system attributes dumped


@dataclass
class Audit:
    target: int
    trials: int = 0
    complete: int = 0                  # scored trials
    running: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    held: int = 0                      # trials reserved and never written (stale, interrupted)
    requeued: int = 0                  # ... re-queued with the same parameters
    undrawn: int = 0                   # ... of them held before their design was drawn: no parameters
    exhausted: int = 0                 # ... failed with their reason: retries exhausted
    lost: list[int] = field(default_factory=list)          # ... neither
    changed_params: list[int] = field(default_factory=list)  # ... re-queued with other parameters
    duplicates: dict[str, list[int]] = field(default_factory=dict)   # design key -> COMPLETE trials
    repeats: int = 0                   # documented repeats (PRUNED, "repeat of trial N")
    bad_repeats: list[int] = field(default_factory=list)   # "repeat of trial N" where N is not the design's
    surplus: int = 0                   # trials beyond the target, recorded PRUNED unevaluated
    front: list[int] = field(default_factory=list)         # dse front's trial numbers
    front_oracle: list[int] = field(default_factory=list)  # recomputed here
    per_minute: list[float] = field(default_factory=list)  # scored trials / s in each minute

    @property
    def n_lost(self) -> int:
        """Trials lost: held trials neither re-queued nor failed with a reason, re-queued with other
        parameters, left RUNNING / WAITING, and missing scored trials."""
        return (len(self.lost) + len(self.changed_params) + len(self.running) + len(self.waiting)
                + max(0, self.target - self.complete))

    @property
    def n_duplicates(self) -> int:
        """Completions beyond the first of a design, undocumented repeats, and scored trials beyond the target."""
        return (sum(len(v) - 1 for v in self.duplicates.values()) + len(self.bad_repeats)
                + max(0, self.complete - self.target))

    @property
    def front_equal(self) -> bool:
        return sorted(self.front) == sorted(self.front_oracle)

    @property
    def ok(self) -> bool:
        return self.n_lost == 0 and self.n_duplicates == 0 and self.front_equal


def effective_params(t: Any) -> dict[str, Any]:
    """The design a trial stands for: a queued point's ``fixed_params``, else its parameters."""
    return dict(t.system_attrs.get("fixed_params") or t.params)


def _held(t: Any) -> bool:
    """Reserved and never written: FAIL without dse's record (an evaluation error has one)."""
    return t.state.name == "FAIL" and "dse" not in t.user_attrs and not is_scored(t)


def audit(trials: Sequence[Any], directions: Sequence[str], target: int, front: Sequence[int]) -> Audit:
    """Check the stored ``trials`` of a study (see the module docstring); ``front``: the trial
    numbers ``dse front`` puts on the front."""
    a = Audit(target=target, trials=len(trials), front=sorted(front))
    by_number = {t.number: t for t in trials}
    copies: dict[int, list[Any]] = {}
    for t in trials:
        src = t.user_attrs.get(REQUEUED_FROM)
        hist = t.system_attrs.get(RETRY_HISTORY) or []
        for n in {src, hist[-1] if hist else None} - {None, t.number}:
            copies.setdefault(int(n), []).append(t)
    first_complete: dict[str, int] = {}
    for t in sorted(trials, key=lambda t: t.number):
        state = t.state.name
        a.complete += is_scored(t)
        if state == "RUNNING":
            a.running.append(t.number)
        elif state == "WAITING":
            a.waiting.append(t.number)
        elif state == "PRUNED" and t.user_attrs.get("dse_surplus"):
            a.surplus += 1
        elif _held(t):
            _check_held(a, t, copies.get(t.number, []))
        if state == "COMPLETE" and "design_key" in t.user_attrs:
            key = t.user_attrs["design_key"]
            a.duplicates.setdefault(key, []).append(t.number)
            first_complete.setdefault(key, t.number)
    a.duplicates = {k: v for k, v in a.duplicates.items() if len(v) > 1}
    for t in trials:
        why = str(t.user_attrs.get(OUTCOME_ATTR, ""))
        if t.state.name == "PRUNED" and why.startswith("repeat of trial "):
            a.repeats += 1
            first = by_number.get(int(why.rsplit(" ", 1)[1]))
            key = t.user_attrs.get("design_key")
            if first is None or first.user_attrs.get("design_key") != key or not is_scored(first):
                a.bad_repeats.append(t.number)
    kept = [by_number[n] for n in sorted(first_complete.values())]
    a.front_oracle = [kept[i].number for i in nondominated([list(t.values) for t in kept], directions)]
    a.per_minute = per_minute([t for t in trials if is_scored(t)], trials)
    return a


def _check_held(a: Audit, t: Any, copies: list[Any]) -> None:
    a.held += 1
    want = effective_params(t)
    if copies:
        if not want or any(effective_params(c) == want for c in copies):
            a.requeued += 1
            a.undrawn += not want
        else:
            a.changed_params.append(t.number)
    elif len(t.system_attrs.get(RETRY_HISTORY) or []) >= MAX_RETRY:
        a.exhausted += 1                # optuna's callback queues no copy past max_retry
    else:
        a.lost.append(t.number)


def nondominated(points: Sequence[Sequence[float]], directions: Sequence[str]) -> list[int]:
    """Indices (ascending) of the points no other point dominates (at least as good in every
    objective, better in one): a plain check against the front so far, in lexicographic order
    (a point's dominators all come before it, and the front's members dominate whatever the
    rest do), independent of ``dse.search.front``."""
    sign = [1.0 if d.lower().startswith("min") else -1.0 for d in directions]
    p = [tuple(s * v for s, v in zip(sign, row)) for row in points]
    front: list[int] = []
    for i in sorted(range(len(p)), key=lambda k: p[k]):
        a = p[i]
        if not any(all(x <= y for x, y in zip(p[j], a)) and p[j] != a for j in front):
            front.append(i)
    return sorted(front)


def per_minute(scored: Sequence[Any], trials: Sequence[Any]) -> list[float]:
    """Scored trials per second in each minute since the first trial of ``trials`` started
    (the last minute: over its elapsed part)."""
    starts = [t.datetime_start for t in trials if t.datetime_start is not None]
    ends = sorted(t.datetime_complete for t in scored if t.datetime_complete is not None)
    if not starts or not ends:
        return []
    t0 = min(starts)
    span = (ends[-1] - t0).total_seconds()
    n = max(1, math.ceil(span / 60))
    counts = [0] * n
    for e in ends:
        counts[min(n - 1, int((e - t0).total_seconds() // 60))] += 1
    last = span - 60 * (n - 1)
    return [c / 60 for c in counts[:-1]] + [counts[-1] / max(last, 1.0)]


def dump_line(t: Any) -> str:
    """One stored trial as a JSON line: number, state, params, values (a scored trial stored
    PRUNED / FAIL: its ``dse_values``) and the attributes that mark repeats and retries."""
    values = list(t.values) if t.values is not None else t.user_attrs.get(VALUES_ATTR)
    rec = {"number": t.number, "state": t.state.name, "params": t.params, "values": values,
           "user_attrs": {k: t.user_attrs[k] for k in MARKS if k in t.user_attrs},
           "system_attrs": {k: t.system_attrs[k] for k in SYSTEM_MARKS if k in t.system_attrs}}
    return json.dumps(rec, sort_keys=True, default=str)
