"""Finish a reserved trial in one transaction.

A worker reserves a trial in the shared storage (RUNNING, with a heartbeat: it holds a slot and
is re-queued if the worker dies), but samples, records and tells on an in-memory mirror of the
study (``WorkerMirror``): optuna's per-call API would cost one transaction per parameter,
attribute and state change (15+ per trial). ``finish_trial`` writes the finished in-memory trial
(parameters, user and system attributes, values, state) into the reserved trial at once.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from optuna.trial import FrozenTrial, TrialState


def _rdb(storage: Any):
    from optuna.storages import RDBStorage
    st = getattr(storage, "_backend", storage)
    return st if isinstance(st, RDBStorage) else None


def finish_trial(storage: Any, trial_id: int, ft: FrozenTrial) -> None:
    """Write ``ft`` (finished) into the RUNNING trial ``trial_id``; raises
    ``optuna.exceptions.UpdateFinishedTrialError`` if that trial is already finished (another
    worker failed it as stale: its re-queued copy carries the work on)."""
    rdb = _rdb(storage)
    if rdb is None:
        return _finish_by_api(storage, trial_id, ft)
    from optuna import distributions
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session
    M = models
    with _create_scoped_session(rdb.scoped_session) as session:
        trial = M.TrialModel.find_or_raise_by_id(trial_id, session, for_update=True)
        rdb.check_trial_is_updatable(trial_id, trial.state)
        params = {p.param_name: p for p in session.query(M.TrialParamModel).filter_by(trial_id=trial_id)}
        for name, value in ft.params.items():
            dist = ft.distributions[name]
            row = params.get(name) or M.TrialParamModel(trial_id=trial_id, param_name=name)
            row.param_value = dist.to_internal_repr(value)
            row.distribution_json = distributions.distribution_to_json(dist)
            session.add(row)
        for model, attrs in ((M.TrialUserAttributeModel, ft.user_attrs),
                             (M.TrialSystemAttributeModel, {k: v for k, v in ft.system_attrs.items()
                                                            if k != "fixed_params"})):
            rows = {r.key: r for r in session.query(model).filter_by(trial_id=trial_id)}
            for k, v in attrs.items():
                row = rows.get(k) or model(trial_id=trial_id, key=k)
                row.value_json = json.dumps(v)
                session.add(row)
        for obj, v in enumerate(ft.values or []):
            stored, vtype = M.TrialValueModel.value_to_stored_repr(v)
            session.add(M.TrialValueModel(trial_id=trial_id, objective=obj, value=stored, value_type=vtype))
        trial.state = ft.state
        trial.datetime_complete = datetime.now()


def _finish_by_api(storage: Any, trial_id: int, ft: FrozenTrial) -> None:
    """The same through the storage API, one call per item (journal and other storages)."""
    for name, value in ft.params.items():
        dist = ft.distributions[name]
        storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
    for k, v in ft.user_attrs.items():
        storage.set_trial_user_attr(trial_id, k, v)
    for k, v in ft.system_attrs.items():
        if k != "fixed_params":
            storage.set_trial_system_attr(trial_id, k, v)
    storage.set_trial_state_values(trial_id, state=ft.state,
                                   values=ft.values if ft.state == TrialState.COMPLETE else None)


class WorkerMirror:
    """The worker's sampler on an in-memory study holding every finished trial of the shared one."""

    def __init__(self, directions, sampler):
        import optuna
        self.mem = optuna.create_study(directions=directions, sampler=sampler)
        self.seen: set[int] = set()   # shared-study trial ids mirrored (or written by this worker)

    def sync(self, pstudy) -> list[FrozenTrial]:
        """Mirror finished trials of the shared study not seen yet; return them."""
        new = []
        for t in pstudy.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
            if t._trial_id in self.seen:
                continue
            self.seen.add(t._trial_id)
            if t.distributions or t.state == TrialState.COMPLETE:
                try:
                    self.mem.add_trial(t)
                except ValueError:  # e.g. a failed trial without parameters: nothing to learn from
                    pass
            new.append(t)
        return new

    def ask(self, fixed: dict[str, Any] | None):
        """An in-memory trial; ``fixed`` parameters (a queued grid point, a re-queued trial) win."""
        if fixed:
            self.mem.enqueue_trial(dict(fixed))
        return self.mem.ask()

    def tell(self, trial, values: list[float] | None) -> FrozenTrial:
        if values is None:
            return self.mem.tell(trial, state=TrialState.FAIL)
        return self.mem.tell(trial, values=values)
