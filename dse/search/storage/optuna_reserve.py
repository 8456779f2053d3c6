"""A worker's batch of trials reserved in ONE transaction on RDB storages (private optuna names:
those listed in ``dse.search.storage.optuna_compat``).

Reserving a trial through optuna costs about twenty statements in five transactions (pop or
create it, read it back through the ORM, a heartbeat, the worker's name, the slot check), and a
worker reserves a batch of them at a time: on the soak, two thirds of a worker's round trips to
the server. ``reserve`` does the batch in one transaction with the study row locked (as optuna
locks it to number a trial): it reads the trials from ``from_id`` on, lets ``plan`` choose which
queued trials to pop, which to record as surplus (PRUNED, ``surplus_attr``) and how many new
trials to create, then claims, creates, records a heartbeat for and names each. With the study
locked the plan sees every trial that holds a slot, so a worker never creates a trial beyond the
target.

``plan(rows, total) -> (pop ids, surplus ids, new trials)`` gets ``rows`` as
``optuna_read.read_states`` gives them and ``total``, the study's trial count. ``write_params``
then records the parameters the worker drew for its batch, so that a copy of a trial it held
when it died evaluates the same design.
"""
from __future__ import annotations

import datetime as dt
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dse.search.storage.optuna_compat import models

RETRIES = 5        # a SQLite writer that lost the race for the file (optuna's StorageInternalError): again


@dataclass
class Reserved:
    """A reserved RUNNING trial, as the worker reads it (``optuna_compat.trial_id`` and
    ``trial_system_attrs`` read it as they read an optuna ``Trial``)."""
    _trial_id: int
    number: int
    params: dict[str, Any] = field(default_factory=dict)
    system_attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def _cached_frozen_trial(self) -> Any:
        return self


def reserve(rdb: Any, sid: int, from_id: int, plan: Callable, attrs: dict[str, Any],
            surplus_attr: str) -> tuple[list, list[Reserved], int]:
    """Reserve a batch (see the module docstring): ``(rows read, trials reserved in number
    order, trials recorded as surplus)``; each reserved trial carries the user attributes
    ``attrs`` and a heartbeat."""
    from optuna.exceptions import StorageInternalError
    for attempt in range(1, RETRIES + 1):
        try:
            return _reserve(rdb, sid, from_id, plan, attrs, surplus_attr)
        except StorageInternalError:
            if attempt == RETRIES:
                raise
            time.sleep(random.random() * 0.5 * attempt)
    raise AssertionError("not reached")


def _reserve(rdb: Any, sid: int, from_id: int, plan: Callable, attrs: dict[str, Any], surplus_attr: str):
    import sqlalchemy as sa
    from optuna.storages._rdb.storage import _create_scoped_session
    from optuna.trial import TrialState

    from dse.search.storage.optuna_read import states_query
    M = models()
    T = M.TrialModel
    with _create_scoped_session(rdb.scoped_session) as session:
        M.StudyModel.find_or_raise_by_id(sid, session, for_update=True)      # numbering: as optuna's
        rows = [tuple(r) for r in session.execute(states_query(sid, from_id)).all()]
        total = int(session.execute(sa.select(sa.func.count()).select_from(T).where(T.study_id == sid)).scalar_one())
        pop, surplus, fresh = plan(rows, total)
        now = dt.datetime.now()
        queued = {t.trial_id: t for t in session.query(T).filter(T.trial_id.in_(sorted({*pop, *surplus})),
                                                                 T.state == TrialState.WAITING).with_for_update()}
        for tid in surplus:
            if tid in queued:
                queued[tid].state, queued[tid].datetime_start, queued[tid].datetime_complete = \
                    TrialState.PRUNED, now, now
                session.add(M.TrialUserAttributeModel(trial_id=tid, key=surplus_attr, value_json="true"))
        popped = [queued[tid] for tid in pop if tid in queued]
        for t in popped:
            t.state, t.datetime_start = TrialState.RUNNING, now
        new = [T(study_id=sid, number=total + i, state=TrialState.RUNNING, datetime_start=now) for i in range(fresh)]
        session.add_all(new)
        session.flush()
        held = popped + new
        _name_and_beat(session, M, [t.trial_id for t in held], attrs)
        out = [Reserved(t.trial_id, t.number, *_params_and_system(t)) for t in popped]
        out += [Reserved(t.trial_id, t.number) for t in new]
    return rows, sorted(out, key=lambda r: r.number), sum(tid in queued for tid in surplus)


def _name_and_beat(session: Any, M: Any, ids: list[int], attrs: dict[str, Any]) -> None:
    """The user attributes ``attrs`` (replacing a copy's inherited ones) and a first heartbeat."""
    import sqlalchemy as sa
    if not ids:
        return
    U, H = M.TrialUserAttributeModel.__table__, M.TrialHeartbeatModel.__table__
    if attrs:
        session.execute(sa.delete(U).where(U.c.trial_id.in_(ids), U.c.key.in_(sorted(attrs))))
        session.execute(sa.insert(U), [{"trial_id": tid, "key": k, "value_json": json.dumps(v)}
                                       for tid in ids for k, v in attrs.items()])
    session.execute(sa.delete(H).where(H.c.trial_id.in_(ids)))
    session.execute(sa.insert(H), [{"trial_id": tid} for tid in ids])


def _params_and_system(t: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A popped trial's parameters (external values) and system attributes (``fixed_params``...)."""
    from optuna.distributions import json_to_distribution
    params = {p.param_name: json_to_distribution(p.distribution_json).to_external_repr(p.param_value)
              for p in t.params}
    return params, {a.key: json.loads(a.value_json) for a in t.system_attributes}


def write_params(rdb: Any, items: list[tuple[int, dict[str, Any], dict[str, Any]]]) -> int:
    """The parameters drawn for reserved trials, ``(trial id, params, distributions)``, written
    into those still RUNNING in one transaction, as soon as the batch is drawn: a worker that dies
    or hangs before it writes its results leaves trials whose copies (``optuna_stale.retry_copy``
    takes a trial's parameters) evaluate the same designs. Returns how many trials were written."""
    import sqlalchemy as sa
    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb.storage import _create_scoped_session
    from optuna.trial import TrialState
    M = models()
    T, P = M.TrialModel.__table__, M.TrialParamModel.__table__
    items = [it for it in items if it[1]]
    if not items:
        return 0
    with _create_scoped_session(rdb.scoped_session) as session:
        running = set(session.execute(sa.select(T.c.trial_id).where(
            T.c.trial_id.in_(sorted(tid for tid, _, _ in items)), T.c.state == TrialState.RUNNING)
            .order_by(T.c.trial_id).with_for_update()).scalars())
        rows = [{"trial_id": tid, "param_name": name, "param_value": dists[name].to_internal_repr(value),
                 "distribution_json": distribution_to_json(dists[name])}
                for tid, params, dists in items if tid in running for name, value in params.items()]
        if rows:
            session.execute(sa.delete(P).where(P.c.trial_id.in_(sorted(running)),
                                               P.c.param_name.in_(sorted({r["param_name"] for r in rows}))))
            session.execute(sa.insert(P), rows)
    return len(running)
