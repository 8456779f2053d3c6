"""Heartbeats for ask/tell loops.

optuna starts a heartbeat thread only inside ``study.optimize``; a trial obtained with
``study.ask()`` never gets a heartbeat row, so it is never seen as stale and a worker killed while
running it would leave it RUNNING for ever. ``Heartbeats`` records a heartbeat for every trial
this process holds, every ``heartbeat_interval`` seconds of the storage, from one daemon thread.
Another worker then fails the trials of a dead worker after the grace period
(``optuna.storages.fail_stale_trials``) and the storage's stale-trial callback re-queues them.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from dse.distributed.reconnect import is_connection_error
from dse.search.storage import optuna_compat as oc
from dse.search.storage.storage import HEARTBEAT_GRACE_INTERVALS


def heartbeat_interval_s(storage: Any) -> float | None:
    """The storage's heartbeat interval, or None when it has no heartbeat (journal, in-memory)."""
    return storage.get_heartbeat_interval() if oc.heartbeat_enabled(storage) else None


class Heartbeats:
    """Keep the heartbeat of the trials this process runs (use as a context manager)."""

    def __init__(self, storage: Any, interval_s: float | None = None, log: Callable[[str], None] | None = None):
        self.storage = storage
        self.interval_s = interval_s if interval_s is not None else heartbeat_interval_s(storage)
        self.log = log
        self._failing = False                 # the last beat failed (logged once per outage)
        self._ids: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.interval_s is not None

    def add(self, trial_id: int) -> None:
        """Start beating for a trial (records one heartbeat at once)."""
        if not self.enabled:
            return
        with self._lock:
            self._ids.add(trial_id)
        self.storage.record_heartbeat(trial_id)

    def discard(self, trial_id: int) -> None:
        with self._lock:
            self._ids.discard(trial_id)

    def beat(self) -> None:
        with self._lock:
            ids = sorted(self._ids)
        error = None
        for tid in ids:
            try:
                self.storage.record_heartbeat(tid)
            except Exception as exc:  # a transient database error: the next beat retries
                error = exc
        if error is not None and not self._failing and self.log is not None and not is_connection_error(error):
            # (a lost connection is the worker loop's one line: reconnect.Outage)
            self.log(f"heartbeat failed ({type(error).__name__}); retrying every {self.interval_s:g} s")
        self._failing = error is not None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.beat()

    def __enter__(self) -> Heartbeats:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="dse-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def grace_period_s(storage: Any) -> float | None:
    """Seconds without a heartbeat after which a RUNNING trial is stale (None: no heartbeat)."""
    interval = heartbeat_interval_s(storage)
    if interval is None:
        return None
    grace = getattr(storage, "grace_period", None)
    return float(grace if grace is not None else HEARTBEAT_GRACE_INTERVALS * interval)


def _orphan_ids(storage: Any, study: Any, grace_s: float) -> list[int]:
    """RUNNING trials that never got a heartbeat and started more than ``grace_s`` ago: their
    worker died between ``ask`` and its first heartbeat (optuna ignores such trials)."""
    import datetime as dt

    from optuna.trial import TrialState
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    now = dt.datetime.now()
    old = {oc.trial_id(t) for t in running
           if t.datetime_start is not None and (now - t.datetime_start).total_seconds() > grace_s}
    if not old:
        return []
    return sorted(old - oc.ids_with_heartbeat(oc.rdb(storage), old))


def fail_stale(study: Any, storage: Any) -> int:
    """Fail the trials of dead workers (stale heartbeat, or none at all past the grace period)
    and re-queue them through the storage's stale-trial callback. Returns how many were failed."""
    import copy

    import optuna
    from optuna.trial import TrialState
    grace = grace_period_s(storage)
    if grace is None:
        return 0
    before = {oc.trial_id(t) for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))}
    optuna.storages.fail_stale_trials(study)
    failed = 0
    callback = storage.get_heartbeat_stale_trial_callback()
    for tid in _orphan_ids(storage, study, grace):
        try:
            if storage.set_trial_state_values(tid, state=TrialState.FAIL):
                failed += 1
                if callback is not None:
                    callback(study, copy.deepcopy(storage.get_trial(tid)))
        except optuna.exceptions.UpdateFinishedTrialError:  # another worker got there first
            pass
    after = {oc.trial_id(t) for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))}
    return max(failed, len(after - before))
