"""The front a run's progress lines report, kept as trials arrive (``RunningFront``).

``dse run`` reports after every batch how many distinct designs are on the feasible front of
the trials so far. Recomputing that front from every trial at every batch cost a run of n trials
in batches of b a front of up to n rows per batch: 1.3-1.4 s of a 17 s run of 5,000 closed-form
trials (random sampler, batches of 50, ``spaces/full.toml`` with the closed-form latency and power
objectives; 4.8 s when every value was infinite, which takes the pairwise O(n^2) filter).
``RunningFront`` keeps the front and merges each batch into it (|front| x |batch| comparisons),
which gives the same front: front(A u B) = front(front(A) u B), because a row dominated within A is
dominated by a row of A's front (dominance is transitive; a row with a NaN neither dominates nor is
dominated, either way). ``tests/search/execute/test_progress.py`` checks it against the front of all
rows.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from dse.search.front import pareto
from dse.search.front.ndsort import dominated_by


def eligible(t: Any) -> bool:
    """A trial ``Study.best_trials`` may return: COMPLETE and meeting every constraint it has."""
    from optuna.trial import TrialState
    return t.state == TrialState.COMPLETE and all(c <= 0.0 for c in t.constraints.values())


def front_trials(trials: list, directions: list[str]) -> list:
    """The trials ``Study.best_trials`` returns (COMPLETE, feasible when any trial has
    constraints, non-dominated; equal values all kept), without its deep copy of every trial.
    (A trial with a violated constraint has constraints, so "feasible when any trial has them"
    is the trial's own constraints being met: ``eligible``.)"""
    done = [t for t in trials if eligible(t)]
    if not done:
        return []
    keep = pareto.nondominated(pareto.to_min(np.array([t.values for t in done], dtype=float), directions))
    return [t for t, k in zip(done, keep) if k]


class RunningFront:
    """The non-dominated rows (minimisation; equal rows all kept) of every row added so far, each
    with its tag, merged batch by batch (see the module docstring)."""

    def __init__(self, n_objectives: int):
        self.F = np.zeros((0, n_objectives))
        self.tags: list[Hashable] = []

    def add(self, rows: np.ndarray, tags: Sequence[Hashable]) -> None:
        """Merge ``rows`` (one per tag) into the front."""
        if not len(tags):
            return
        B = np.asarray(rows, dtype=float).reshape(len(tags), -1)
        # a front row leaves if a new row dominates it (a new row dominated by the front cannot:
        # whatever it dominates, the front row that dominates it dominates too); a new row stays
        # if no front row and no other new row dominates it
        keep_a = ~dominated_by(B, self.F)               # (dominators, rows)
        keep_b = ~dominated_by(self.F, B) & ~dominated_by(B, B)
        self.F = np.vstack([self.F[keep_a], B[keep_b]])
        self.tags = [t for t, k in zip(self.tags, keep_a) if k] + [t for t, k in zip(tags, keep_b) if k]


class TrialFront:
    """The feasible front of a growing list of optuna trials (a run's in-memory study, whose
    finished trials never change): ``update`` merges the finished trials beyond those seen last
    time, up to the first one still running (a batch asked ahead), which it sees next time."""

    def __init__(self, directions: list[str]):
        self.directions = directions
        self.front = RunningFront(len(directions))
        self.seen = 0
        self.last: Any = None                     # the last trial seen (a finished trial, never replaced)

    def update(self, trials: Sequence) -> TrialFront:
        if self.seen and (len(trials) < self.seen or trials[self.seen - 1] is not self.last):
            # not the list it grew from (the study was rebuilt anew): start again
            self.front, self.seen = RunningFront(len(self.directions)), 0
        end = self.seen
        while end < len(trials) and trials[end].state.is_finished():
            end += 1
        new = [t for t in trials[self.seen:end] if eligible(t)]
        self.seen = end
        self.last = trials[end - 1] if end else None
        if new:
            F = pareto.to_min(np.array([t.values for t in new], dtype=float), self.directions)
            self.front.add(F, [t.user_attrs.get("design_key") for t in new])
        return self

    def designs(self) -> int:
        """Distinct designs (``design_key``) on the front."""
        return len(set(self.front.tags))
