"""Distributed studies: many worker processes on many hosts sharing one optuna study.

* ``heartbeat``: optuna's heartbeat for ask/tell loops (optuna records heartbeats only inside
  ``study.optimize``), so trials of a dead worker go stale, are failed and re-queued.
* ``quota``: exactly N complete trials whatever the number of workers (slot accounting).
* ``signals``: SIGINT/SIGTERM -> finish and record the in-flight batch; a second signal aborts
  and re-queues it.
* ``worker``: the worker loop behind ``dse worker``; ``fill``: in-memory sampling mirror and
  one-transaction write of a reserved trial.
* ``copy``: ``dse study copy`` / ``dse study list`` (SQLite <-> PostgreSQL <-> journal).
"""
