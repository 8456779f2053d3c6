"""Trials of dead workers on RDB storages: found in two queries, each failed and re-queued in ONE
transaction (private optuna names: those listed in ``dse.search.storage.optuna_compat``, and
``RDBStorage._get_stale_trial_ids``).

optuna fails a stale trial and re-queues it (its stale-trial callback) in two transactions: a
process killed, or a connection lost, between them leaves the trial FAIL with no copy, and the
design it held is lost (the soak found six so, a worker killed while it swept the trials a server
restart had made stale). Here the trial is set FAIL and its copy inserted in one transaction, with
the study row locked first (as optuna locks it to number a new trial) and the trial row second;
whatever interrupts it leaves the trial RUNNING, and the next sweep takes it again.

* ``stale_ids``: RUNNING trials whose heartbeat is older than the grace period (optuna's query);
  ``orphan_ids``: RUNNING trials that never beat, started more than the grace period ago.
* ``fail_and_requeue(rdb, tid, copy)``: FAIL the trial if it is still RUNNING, and add
  ``copy(view)`` (``None``: no copy) as a new WAITING trial of its study.
* ``record_heartbeats``: the heartbeats of many trials in one transaction.
* ``retry_copy``: the copy optuna's ``RetryHeartbeatStaleTrialCallback`` makes (same parameters,
  attributes, ``failed_trial`` / ``retry_history``; none past ``max_retry``); ``queued_copy``:
  ``study.enqueue_trial(params, user_attrs=...)``'s WAITING trial.

A *view* is ``{"number", "params": {name: (internal value, distribution JSON)}, "user_attrs",
"system_attrs"}``.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from typing import Any

from dse.search.storage.optuna_compat import models


def stale_ids(rdb: Any, sid: int) -> list[int]:
    """RUNNING trials of study ``sid`` whose last heartbeat is older than the storage's grace period."""
    return list(rdb._get_stale_trial_ids(sid))


def orphan_ids(rdb: Any, sid: int, grace_s: float) -> list[int]:
    """RUNNING trials of study ``sid`` that never recorded a heartbeat and started more than
    ``grace_s`` ago: their worker died between reserving them and their first heartbeat."""
    import sqlalchemy as sa
    from optuna.trial import TrialState

    from dse.search.storage.optuna_read import trial_datetimes
    M = models()
    T, H = M.TrialModel, M.TrialHeartbeatModel
    c = T.__table__.c
    q = (sa.select(c.trial_id, c.datetime_start).where(c.study_id == sid, c.state == TrialState.RUNNING)
         .where(~sa.exists().where(H.__table__.c.trial_id == c.trial_id)))
    session = rdb.scoped_session()
    try:
        rows = session.execute(q).all()
    finally:
        session.close()
    when, now = trial_datetimes(T), dt.datetime.now()
    return sorted(tid for tid, start in rows
                  if start is not None and (now - when("start", start)).total_seconds() > grace_s)


def fail_and_requeue(rdb: Any, tid: int, copy: Callable[[dict], dict | None]) -> bool:
    """In one transaction: set trial ``tid`` FAIL if it is RUNNING and add ``copy(view)`` (unless
    None) as a new WAITING trial of its study. False if the trial was no longer RUNNING (another
    process finished or failed it first); nothing is changed then."""
    import sqlalchemy as sa
    from optuna.storages._rdb.storage import _create_scoped_session
    from optuna.trial import TrialState
    M = models()
    T = M.TrialModel
    with _create_scoped_session(rdb.scoped_session) as session:
        sid = session.execute(sa.select(T.study_id).where(T.trial_id == tid)).scalar_one()
        M.StudyModel.find_or_raise_by_id(sid, session, for_update=True)     # optuna's order: study, then trial
        trial = T.find_or_raise_by_id(tid, session, for_update=True)
        if trial.state != TrialState.RUNNING:
            return False
        view = {"number": trial.number,
                "params": {p.param_name: (p.param_value, p.distribution_json) for p in trial.params},
                "user_attrs": {a.key: json.loads(a.value_json) for a in trial.user_attributes},
                "system_attrs": {a.key: json.loads(a.value_json) for a in trial.system_attributes}}
        trial.state = TrialState.FAIL
        trial.datetime_complete = dt.datetime.now()
        new = copy(view)
        if new is not None:
            _add_waiting(session, M, sid, new)
        return True


def _add_waiting(session: Any, M: Any, sid: int, new: dict) -> None:
    """Insert ``new`` (a view) as the next-numbered WAITING trial of study ``sid`` (its row locked)."""
    import sqlalchemy as sa
    from optuna.trial import TrialState
    T = M.TrialModel
    number = int(session.execute(sa.select(sa.func.count()).select_from(T).where(T.study_id == sid)).scalar_one())
    row = T(study_id=sid, number=number, state=TrialState.WAITING)
    session.add(row)
    session.flush()
    tid = row.trial_id
    for name, (value, dist) in new["params"].items():
        session.add(M.TrialParamModel(trial_id=tid, param_name=name, param_value=value, distribution_json=dist))
    for model, attrs in ((M.TrialUserAttributeModel, new["user_attrs"]),
                         (M.TrialSystemAttributeModel, new["system_attrs"])):
        for k, v in attrs.items():
            session.add(model(trial_id=tid, key=k, value_json=json.dumps(v)))


def retry_copy(max_retry: int) -> Callable[[dict], dict | None]:
    """The copy of a stale trial optuna's ``RetryHeartbeatStaleTrialCallback(max_retry)`` queues:
    same parameters and attributes; ``failed_trial`` (the first failed number) and
    ``retry_history`` (every failed number); none once the history is longer than ``max_retry``."""
    def copy(view: dict) -> dict | None:
        system = {"failed_trial": view["number"], "retry_history": [], **view["system_attrs"]}
        system["retry_history"] = [*system["retry_history"], view["number"]]
        if len(system["retry_history"]) > max_retry:
            return None
        return {"params": dict(view["params"]), "user_attrs": dict(view["user_attrs"]), "system_attrs": system}
    return copy


def queued_copy(params: dict[str, Any], user_attrs: dict[str, Any]) -> Callable[[dict], dict]:
    """The WAITING trial ``study.enqueue_trial(params, user_attrs=user_attrs)`` adds."""
    def copy(view: dict) -> dict:
        return {"params": {}, "user_attrs": dict(user_attrs), "system_attrs": {"fixed_params": dict(params)}}
    return copy


def record_heartbeats(rdb: Any, ids: Sequence[int]) -> None:
    """A heartbeat (the server's clock, as optuna records one) for each trial of ``ids``, in one
    transaction of two or three statements (optuna's ``record_heartbeat``: a transaction of three
    per trial, every heartbeat interval, for every trial a worker holds)."""
    import sqlalchemy as sa
    from optuna.storages._rdb.storage import _create_scoped_session
    H = models().TrialHeartbeatModel.__table__
    ids = sorted(set(ids))
    if not ids:
        return
    with _create_scoped_session(rdb.scoped_session, True) as session:
        have = {tid for (tid,) in session.execute(sa.select(H.c.trial_id).where(H.c.trial_id.in_(ids)))}
        if have:
            session.execute(sa.update(H).where(H.c.trial_id.in_(sorted(have))).values(heartbeat=sa.func.now()))
        if len(have) < len(ids):
            session.execute(sa.insert(H), [{"trial_id": tid} for tid in ids if tid not in have])
