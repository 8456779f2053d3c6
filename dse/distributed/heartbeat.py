"""Heartbeats for ask/tell loops.

optuna starts a heartbeat thread only inside ``study.optimize``; a trial obtained with
``study.ask()`` never gets a heartbeat row, so it is never seen as stale and a worker killed while
running it would leave it RUNNING for ever. ``Heartbeats`` records a heartbeat for every trial
this process holds, every ``heartbeat_interval`` seconds of the storage, from one daemon thread.
Another worker then fails the trials of a dead worker after the grace period and re-queues them
with the same parameters, each in one transaction (``fail_stale``).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from dse.distributed.reconnect import is_connection_error
from dse.search.storage import optuna_compat as oc
from dse.search.storage.storage import HEARTBEAT_GRACE_INTERVALS, MAX_RETRY


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

    def hold(self, trial_id: int) -> None:
        """Beat for a trial whose first heartbeat was recorded when it was reserved."""
        with self._lock:
            self._ids.add(trial_id)

    def discard(self, trial_id: int) -> None:
        with self._lock:
            self._ids.discard(trial_id)

    def beat(self) -> None:
        from dse.search.storage.optuna_stale import record_heartbeats
        with self._lock:
            ids = sorted(self._ids)
        error, rdb = None, oc.rdb(self.storage)
        for group in ([ids] if rdb is not None else [[tid] for tid in ids]):
            try:      # RDB: every trial held in one transaction
                record_heartbeats(rdb, group) if rdb is not None else self.storage.record_heartbeat(group[0])
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


def fail_stale(study: Any, storage: Any) -> int:
    """Fail the trials of dead workers (stale heartbeat, or none at all past the grace period),
    each re-queued with the same parameters in the same transaction (``optuna_stale``: a kill or a
    lost connection between the two can no longer leave a trial failed without its copy). Returns
    how many this process failed."""
    from dse.search.storage.optuna_stale import fail_and_requeue, orphan_ids, retry_copy, stale_ids
    grace, rdb = grace_period_s(storage), oc.rdb(storage)
    if grace is None or rdb is None:
        return 0
    sid = oc.study_id(study)
    copy = retry_copy(MAX_RETRY)
    failed = sum(fail_and_requeue(rdb, tid, copy) for tid in sorted(set(stale_ids(rdb, sid))
                                                                     | set(orphan_ids(rdb, sid, grace))))
    if failed:
        oc.forget_cached_trials(study)
    return failed
