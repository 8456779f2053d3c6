"""Exactly N complete trials, whatever the number of workers and however many of them die.

A trial *holds a slot* while it is WAITING, RUNNING or COMPLETE (an evaluated infeasible, repeated
or non-finite trial is stored PRUNED / FAIL with its values, ``dse.search.storage.stored``: it counts as
COMPLETE). Trial numbers are assigned
serially by the storage (optuna locks the study row while creating a trial), so the slot of a
trial is the number of slot-holding trials with a smaller number. A worker evaluates a trial only
if its slot is < N; otherwise it lost a race at the end of the study and records the trial as
PRUNED without evaluating it (not a design result, not counted). A trial of a dead worker is
failed (heartbeat) and its re-queued copy takes the freed slot, so the study ends with exactly N
COMPLETE trials.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from optuna.trial import TrialState

from dse.search.storage import optuna_compat as oc
from dse.search.storage.stored import VALUES_ATTR, is_scored

HOLDING = (TrialState.WAITING, TrialState.RUNNING, TrialState.COMPLETE)


@dataclass(frozen=True)
class Counts:
    complete: int
    running: int
    waiting: int

    @property
    def holding(self) -> int:
        return self.complete + self.running + self.waiting


def counts_of(trials: Iterable[Any]) -> Counts:
    """Counts by state of a list of (frozen) trials."""
    n = {TrialState.COMPLETE: 0, TrialState.RUNNING: 0, TrialState.WAITING: 0}
    for t in trials:
        if is_scored(t):
            n[TrialState.COMPLETE] += 1
        elif t.state in n:
            n[t.state] += 1
    return Counts(n[TrialState.COMPLETE], n[TrialState.RUNNING], n[TrialState.WAITING])


def _count_sql(study: Any, number: int | None) -> dict[TrialState, int] | None:
    """One ``COUNT(*) ... GROUP BY state`` query (RDB storages); None elsewhere."""
    rdb = oc.rdb(study)
    if rdb is None:
        return None
    by = oc.count_by_state(rdb, oc.study_id(study), number)
    scored = oc.count_with_user_attr(rdb, oc.study_id(study), VALUES_ATTR, number)   # stored PRUNED / FAIL
    by[TrialState.COMPLETE] = by.get(TrialState.COMPLETE, 0) + scored
    return by


def counts(study: Any) -> Counts:
    """Trial counts of a study by state, fresh from the storage (a COUNT query on RDB storages:
    reading every queued trial would cost O(trials) per call)."""
    by = _count_sql(study, None)
    if by is None:
        return counts_of(study.get_trials(deepcopy=False))
    return Counts(by.get(TrialState.COMPLETE, 0), by.get(TrialState.RUNNING, 0), by.get(TrialState.WAITING, 0))


def slot(study: Any, number: int) -> int:
    """Slot-holding trials numbered below ``number``."""
    by = _count_sql(study, number)
    if by is None:
        return sum(1 for t in study.get_trials(deepcopy=False) if t.number < number
                   and (t.state in HOLDING or is_scored(t)))
    return sum(by.get(s, 0) for s in HOLDING)


def holds_slot(study: Any, number: int, target: int) -> bool:
    """Whether the trial numbered ``number`` (held by the caller) may be evaluated."""
    return slot(study, number) < target


class Ledger:
    """``counts`` and ``holds_slot`` of one study, read incrementally on RDB storages: a finished
    trial never changes whether it holds a slot (it does if scored), so the trials below the
    oldest unfinished one are counted once (``scored_below``) and only those from it on are read
    again (``optuna_read.read_states``: one query over a few dozen rows, instead of two COUNTs over
    the whole study whose join grew with every trial, per loop and per trial reserved). Other
    storages: the module's functions."""

    def __init__(self, study: Any):
        self.study, self.rdb, self.sid = study, oc.rdb(study), oc.study_id(study)
        self.floor = 0                # every trial below this id is finished ...
        self.scored_below = 0         # ... and this many of them hold a slot

    def _rows(self) -> list:
        from dse.search.storage.optuna_read import read_states
        return self._advance(read_states(self.rdb, self.sid, self.floor))

    def _advance(self, rows: list) -> list:
        """Move the floor past the finished trials of ``rows`` (read from the floor on); the rest."""
        from dse.search.storage.optuna_read import floor
        new = floor(((tid, state.is_finished()) for tid, _, state, _ in rows), self.floor)
        self.scored_below += sum(scored for tid, _, _, scored in rows if self.floor <= tid < new)
        self.floor = new
        return [r for r in rows if r[0] >= new]

    def counts(self) -> Counts:
        if self.rdb is None:
            return counts(self.study)
        rows = self._rows()
        return Counts(self.scored_below + sum(r[3] for r in rows), sum(r[2] == TrialState.RUNNING for r in rows),
                      sum(r[2] == TrialState.WAITING for r in rows))

    def holds_slot(self, number: int, target: int) -> bool:
        """Whether the trial numbered ``number`` (held by the caller: unfinished, so not below the
        floor; a finished one is asked of the whole study) may be evaluated."""
        rows = self._rows() if self.rdb is not None else []
        if not rows or number < min(r[1] for r in rows):
            return holds_slot(self.study, number, target)
        return self.scored_below + sum(1 for r in rows if r[1] < number and (r[2] in HOLDING or r[3])) < target

    def reserve(self, k: int, target: int, attrs: dict[str, Any], surplus_attr: str, fresh: bool = True):
        """Reserve up to ``k`` trials that hold one of the ``target`` slots, in one transaction
        (``optuna_reserve``): queued trials first, oldest first, then new ones (if ``fresh``)
        while slots are free; queued trials beyond the target are recorded PRUNED with
        ``surplus_attr``. ``(reserved trials, surplus recorded)``. RDB storages only."""
        from dse.search.storage.optuna_reserve import reserve

        def plan(rows: list, total: int) -> tuple[list[int], list[int], int]:
            below, pop, surplus = self.scored_below, [], []
            rows = [r for r in rows if r[0] >= self.floor]
            holding = below + sum(1 for r in rows if r[2] in HOLDING or r[3])
            for tid, _, state, scored in sorted(rows, key=lambda r: r[1]):
                if state == TrialState.WAITING and below >= target:
                    surplus.append(tid)
                elif state == TrialState.WAITING and len(pop) < k:
                    pop.append(tid)
                below += state in HOLDING or scored
            return pop, surplus, min(k - len(pop), max(0, target - holding + len(surplus))) if fresh else 0

        rows, reserved, surplus = reserve(self.rdb, self.sid, self.floor, plan, attrs, surplus_attr)
        self._advance(rows)
        return reserved, surplus
