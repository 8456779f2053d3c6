"""Distributed studies: many worker processes on many hosts sharing one optuna study.

* ``heartbeat``: optuna's heartbeat for ask/tell loops (optuna records heartbeats only inside
  ``study.optimize``), so trials of a dead worker go stale, are failed and re-queued.
* ``quota``: exactly N complete trials whatever the number of workers (slot accounting).
* ``signals``: SIGINT/SIGTERM -> finish and record the in-flight batch; a second signal aborts
  and re-queues it.
* ``queue``: popping queued trials, re-queueing interrupted ones, queueing a grid once.
* ``worker``: the worker loop behind ``dse worker`` (the trial lifecycle, the in-memory mirror
  and the one-transaction write are ``dse.search``'s, shared with ``dse run``).

This package sits on top of ``dse.search`` and uses its public names only; nothing in
``dse.search`` imports it.
* ``copy``: ``dse study copy`` / ``dse study list`` (SQLite <-> PostgreSQL <-> journal).
"""
