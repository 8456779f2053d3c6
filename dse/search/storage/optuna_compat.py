"""Every use of optuna's private API in dse, behind one small public function each.

optuna exposes no public way to get a trial's storage id, to write a finished trial in one
transaction, to count trials by state without reading them all, to pop a queued trial without
reading the whole queue, or to compute an exact hypervolume (optuna 5). The package needs these
for speed (thousands of trials, many workers) and for exact fronts, so they are used here and
only here; ``tests/search/storage/test_optuna_compat.py`` exercises each function against the installed
optuna, so an optuna release that renames or changes one of them fails loudly in one place.

Private names used (optuna 4.x and 5.x):

* ``Study._storage``, ``Study._study_id``, ``Study._thread_local.cached_all_trials``
* ``Trial._trial_id``, ``Trial._cached_frozen_trial``, ``FrozenTrial._trial_id``
* ``storages._CachedStorage._backend``, ``RDBStorage.scoped_session``
* ``storages._rdb.models`` (StudyModel, TrialModel, TrialParamModel, Trial*AttributeModel,
  TrialValueModel, TrialIntermediateValueModel, TrialHeartbeatModel),
  ``storages._rdb.storage._create_scoped_session``
* ``storages._heartbeat.is_heartbeat_enabled``
* ``_hypervolume.compute_hypervolume``
* ``storages.InMemoryStorage._studies[id].system_attrs``, ``InMemoryStorage._lock``
* ``study._tell._tell_with_warning``
* ``samplers._tpe.sampler._split_trials`` (wrapped: ``tpe_split_memo``)

Reading every trial of a study in a few plain queries is ``dse.search.storage.optuna_read``;
failing a stale trial and re-queueing it in one transaction, ``dse.search.storage.optuna_stale``
(with ``RDBStorage._get_stale_trial_ids``).
"""
from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any


# ---- handles ---------------------------------------------------------------------------------
def study_storage(study: Any) -> Any:
    """The storage object a study talks to (possibly optuna's caching wrapper)."""
    return study._storage


def study_id(study: Any) -> int:
    """The storage's id of a study."""
    return study._study_id


def trial_id(trial: Any) -> int:
    """The storage's id of a live ``Trial`` or a ``FrozenTrial`` (numbers are per study; ids are not)."""
    return trial._trial_id


def trial_system_attrs(study: Any, trial: Any) -> dict[str, Any]:
    """System attributes of a live trial (optuna 5 no longer exposes them on ``Trial``)."""
    frozen = getattr(trial, "_cached_frozen_trial", None)
    if frozen is None:
        frozen = study._storage.get_trial(trial._trial_id)
    return frozen.system_attrs


def study_system_attrs(study: Any) -> dict[str, Any]:
    """System attributes of a study (samplers keep state there, e.g. NSGA-II's parent population)."""
    return study._storage.get_study_system_attrs(study._study_id)


def clear_study_system_attrs(study: Any) -> bool:
    """Drop every system attribute of an in-memory study (samplers' state: NSGA-II's parent
    populations, QMC's counter), as a fresh study has none; False (nothing done) if its storage
    is not optuna's ``InMemoryStorage`` as this module knows it."""
    storage = study._storage
    attrs = getattr(getattr(storage, "_studies", {}).get(study._study_id), "system_attrs", None)
    if not isinstance(attrs, dict) or not hasattr(storage, "_lock"):
        return False
    with storage._lock:
        attrs.clear()
    return True


def tell_in_place(study: Any, trial: Any, values: Sequence[float] | None = None, state: Any = None) -> Any:
    """``study.tell(trial, values=..., state=...)``, returning the finished trial the study's
    storage holds rather than optuna's deep copy of it: a copy of every user attribute, which
    for a dse trial is the metrics of every model (about a quarter of the driver's time per
    trial under cProfile, on bench_search's trace-driven study). optuna never changes a finished trial in place; a
    caller that does (``StudyMirror.write_batch`` renumbers a repeat) changes the study's trial too."""
    from optuna.study._tell import _tell_with_warning
    _tell_with_warning(study=study, trial=trial, value_or_values=values, state=state)
    return study._storage.get_trial(trial._trial_id)


def forget_cached_trials(study: Any) -> None:
    """Drop the study's per-thread trial cache (after changing a trial behind ``study.ask``)."""
    study._thread_local.cached_all_trials = None


def rdb(storage_or_study: Any):
    """The ``RDBStorage`` behind a storage or a study (unwrapping optuna's cache), or None
    (journal, in-memory)."""
    from optuna.storages import RDBStorage
    st = getattr(storage_or_study, "_storage", storage_or_study)
    st = getattr(st, "_backend", st)
    return st if isinstance(st, RDBStorage) else None


def heartbeat_enabled(storage: Any) -> bool:
    """Whether the storage records heartbeats (RDB storages built with a heartbeat interval)."""
    from optuna.storages._heartbeat import is_heartbeat_enabled
    return is_heartbeat_enabled(storage)


def hypervolume_function() -> Callable | None:
    """optuna's exact WFG hypervolume ``f(points, ref, assume_pareto=...)``, or None if absent."""
    try:
        from optuna._hypervolume import compute_hypervolume
    except ImportError:
        return None
    return compute_hypervolume


# ---- SQL on RDB storages ---------------------------------------------------------------------
def models():
    from optuna.storages._rdb import models
    return models


def _session(rdb_storage: Any):
    """A read session (the caller closes it)."""
    return rdb_storage.scoped_session()


def count_by_state(rdb_storage: Any, sid: int, below_number: int | None = None) -> dict[Any, int]:
    """``{TrialState: count}`` of a study (trials numbered below ``below_number`` only, if given):
    one ``COUNT(*) ... GROUP BY state`` query instead of reading every trial."""
    import sqlalchemy as sa
    T = models().TrialModel
    q = sa.select(T.state, sa.func.count()).where(T.study_id == sid)
    if below_number is not None:
        q = q.where(T.number < below_number)
    session = _session(rdb_storage)
    try:
        return {state: n for state, n in session.execute(q.group_by(T.state)).all()}
    finally:
        session.close()


def count_with_user_attr(rdb_storage: Any, sid: int, key: str, below_number: int | None = None) -> int:
    """Trials of a study (numbered below ``below_number`` only, if given) that carry the user
    attribute ``key``: one ``COUNT(*)`` over a join, without reading the trials."""
    import sqlalchemy as sa
    M = models()
    T, U = M.TrialModel, M.TrialUserAttributeModel
    q = (sa.select(sa.func.count()).select_from(T).join(U, U.trial_id == T.trial_id)
         .where(T.study_id == sid, U.key == key))
    if below_number is not None:
        q = q.where(T.number < below_number)
    session = _session(rdb_storage)
    try:
        return int(session.execute(q).scalar_one())
    finally:
        session.close()


def complete_ids_with_user_attr(rdb_storage: Any, sid: int, key: str, value: Any) -> list[int]:
    """Ids of the COMPLETE trials of a study whose user attribute ``key`` equals ``value``, by
    number: one query over a join, without reading the trials."""
    import sqlalchemy as sa
    from optuna.trial import TrialState
    M = models()
    T, U = M.TrialModel, M.TrialUserAttributeModel
    q = (sa.select(T.trial_id).select_from(T).join(U, U.trial_id == T.trial_id)
         .where(T.study_id == sid, T.state == TrialState.COMPLETE, U.key == key, U.value_json == json.dumps(value))
         .order_by(T.number))
    session = _session(rdb_storage)
    try:
        return [tid for (tid,) in session.execute(q).all()]
    finally:
        session.close()


def twin_values(rdb_storage: Any, sid: int, key: str, values: Sequence[Any] | None = None) -> list[Any]:
    """The values of user attribute ``key`` that two or more COMPLETE trials of the study hold
    (among ``values`` if given): one grouped query."""
    import sqlalchemy as sa
    from optuna.trial import TrialState
    M = models()
    T, U = M.TrialModel, M.TrialUserAttributeModel
    q = (sa.select(U.value_json).select_from(T).join(U, U.trial_id == T.trial_id)
         .where(T.study_id == sid, T.state == TrialState.COMPLETE, U.key == key))
    if values is not None:
        q = q.where(U.value_json.in_([json.dumps(v) for v in values]))
    session = _session(rdb_storage)
    try:
        return [json.loads(v) for (v,) in session.execute(q.group_by(U.value_json).having(sa.func.count() > 1))]
    finally:
        session.close()


def oldest_waiting_ids(rdb_storage: Any, sid: int, limit: int) -> list[int]:
    """Ids of the ``limit`` lowest-numbered WAITING trials of a study."""
    import sqlalchemy as sa
    from optuna.trial import TrialState
    T = models().TrialModel
    session = _session(rdb_storage)
    try:
        return [tid for (tid,) in session.execute(
            sa.select(T.trial_id).where(T.study_id == sid, T.state == TrialState.WAITING)
            .order_by(T.number).limit(limit)).all()]
    finally:
        session.close()


def write_finished_trial(rdb_storage: Any, tid: int, ft: Any) -> None:
    """Write the finished trial ``ft`` (parameters, user and system attributes except
    ``fixed_params``, values, state) into the RUNNING trial ``tid`` in one transaction; raises
    ``optuna.exceptions.UpdateFinishedTrialError`` if that trial is already finished."""
    from optuna.storages._rdb.storage import _create_scoped_session
    M = models()
    with _create_scoped_session(rdb_storage.scoped_session) as session:
        trial = M.TrialModel.find_or_raise_by_id(tid, session, for_update=True)
        rdb_storage.check_trial_is_updatable(tid, trial.state)
        _write_rows(session, M, trial, ft)


def add_finished_trial(rdb_storage: Any, sid: int, ft: Any, retries: int = 5) -> tuple[int, int]:
    """Add the finished trial ``ft`` (as ``write_finished_trial`` writes it) to study ``sid`` as a
    new trial in one transaction, its rows inserted in bulk (optuna's ``create_new_trial``, then
    ``write_finished_trial`` and a read of the number take three transactions and an ORM flush
    per row); returns its (id, number). A batch of one of ``add_finished_trials``."""
    number, ids = add_finished_trials(rdb_storage, sid, lambda first: [ft], retries)
    return ids[0], number


def add_finished_trials(rdb_storage: Any, sid: int, prepare: Callable[[int], Sequence[Any]],
                        retries: int = 5) -> tuple[int, list[int]]:
    """Add finished trials to study ``sid`` as new trials, all in one transaction (a statement
    per table, not per trial): ``prepare(first)`` gets the number the first one takes (the
    trials before it counted with the study row locked, as optuna numbers a trial; they follow
    in order) and returns the trials to write (as ``write_finished_trial`` writes them). Returns
    ``(first, ids)``; retried like ``add_finished_trial``."""
    import random
    import time

    import sqlalchemy as sa
    from optuna.exceptions import StorageInternalError
    from optuna.storages._rdb.storage import _create_scoped_session
    M = models()
    T = M.TrialModel
    for attempt in range(1, retries + 1):
        try:
            with _create_scoped_session(rdb_storage.scoped_session) as session:
                M.StudyModel.find_or_raise_by_id(sid, session, for_update=True)
                first = int(session.execute(sa.select(sa.func.count()).select_from(T)
                                            .where(T.study_id == sid)).scalar_one())
                fts = list(prepare(first))
                now = datetime.now()
                trials = [T(study_id=sid, number=first + i, state=ft.state, datetime_start=now,
                            datetime_complete=now) for i, ft in enumerate(fts)]
                session.add_all(trials)
                session.flush()
                ids = [t.trial_id for t in trials]
                insert_rows(session, M, list(zip(ids, fts)))
                return first, ids
        except StorageInternalError:
            if attempt == retries:
                raise
            time.sleep(random.random() * 2.0)
    raise AssertionError("not reached")


def insert_rows(session: Any, M: Any, items: Sequence[tuple[int, Any]]) -> None:
    """The parameter, attribute and value rows of each ``(tid, ft)``, ``ft`` written into the new
    trial ``tid`` (one bulk insert per table)."""
    import sqlalchemy as sa
    from optuna import distributions
    rows: dict[Any, list[dict]] = {M.TrialParamModel: [], M.TrialUserAttributeModel: [],
                                   M.TrialSystemAttributeModel: [], M.TrialValueModel: []}
    for tid, ft in items:
        system = {k: v for k, v in ft.system_attrs.items() if k != "fixed_params"}
        rows[M.TrialParamModel] += [{"trial_id": tid, "param_name": name,
                                     "param_value": ft.distributions[name].to_internal_repr(value),
                                     "distribution_json": distributions.distribution_to_json(ft.distributions[name])}
                                    for name, value in ft.params.items()]
        rows[M.TrialUserAttributeModel] += [{"trial_id": tid, "key": k, "value_json": json.dumps(v)}
                                            for k, v in ft.user_attrs.items()]
        rows[M.TrialSystemAttributeModel] += [{"trial_id": tid, "key": k, "value_json": json.dumps(v)}
                                              for k, v in system.items()]
        rows[M.TrialValueModel] += [dict(zip(("trial_id", "objective", "value", "value_type"),
                                             (tid, obj, *M.TrialValueModel.value_to_stored_repr(v))))
                                    for obj, v in enumerate(ft.values or [])]
    for model, values in rows.items():
        if values:
            session.execute(sa.insert(model.__table__), values)


def _write_rows(session: Any, M: Any, trial: Any, ft: Any) -> None:
    """Parameters, attributes, values and final state of ``ft`` into the existing trial row
    ``trial``: the rows of the names ``ft`` holds replaced, one DELETE and one INSERT per table
    (the ORM's query, autoflush and insert per row took half a worker's time on the soak)."""
    import sqlalchemy as sa
    tid, system = trial.trial_id, [k for k in ft.system_attrs if k != "fixed_params"]
    for model, col, names in ((M.TrialParamModel, "param_name", list(ft.params)),
                              (M.TrialUserAttributeModel, "key", list(ft.user_attrs)),
                              (M.TrialSystemAttributeModel, "key", system)):
        if names:
            table = model.__table__
            session.execute(sa.delete(table).where(table.c.trial_id == tid, table.c[col].in_(names)))
    insert_rows(session, M, [(tid, ft)])
    trial.state = ft.state
    trial.datetime_complete = datetime.now()


def rewrite_finished_trials(rdb_storage: Any, items: Sequence[tuple[int, Any]], chunk: int = 500) -> None:
    """For each ``(tid, ft)``, replace the state, values and user / system attributes of the
    finished trial ``tid`` by those of ``ft`` (attributes ``ft`` lacks are deleted), in one
    transaction, a few statements per ``chunk`` trials: optuna has no way to change a finished
    trial (migrating trials written in an earlier form)."""
    from optuna.storages._rdb.storage import _create_scoped_session
    M = models()
    T, V = M.TrialModel, M.TrialValueModel
    with _create_scoped_session(rdb_storage.scoped_session) as session:
        for start in range(0, len(items), chunk):
            part = dict(items[start:start + chunk])
            ids = sorted(part)
            trials = {t.trial_id: t for t in session.query(T).filter(T.trial_id.in_(ids)).with_for_update()}
            session.query(V).filter(V.trial_id.in_(ids)).delete(synchronize_session=False)
            for tid, ft in part.items():
                for obj, v in enumerate(ft.values or []):
                    stored, vtype = V.value_to_stored_repr(v)
                    session.add(V(trial_id=tid, objective=obj, value=stored, value_type=vtype))
                trials[tid].state = ft.state
            for model, attrs_of in ((M.TrialUserAttributeModel, lambda ft: ft.user_attrs),
                                    (M.TrialSystemAttributeModel, lambda ft: ft.system_attrs)):
                rows = {(r.trial_id, r.key): r for r in session.query(model).filter(model.trial_id.in_(ids))}
                for (tid, k), row in rows.items():
                    if k not in attrs_of(part[tid]):
                        session.delete(row)
                for tid, ft in part.items():
                    for k, v in attrs_of(ft).items():
                        row = rows.get((tid, k)) or model(trial_id=tid, key=k)
                        row.value_json = json.dumps(v)
                        session.add(row)


# ---- TPE: one split of the trials per trial asked ------------------------------------------------
_SPLIT_MEMO: contextvars.ContextVar = contextvars.ContextVar("dse_tpe_split_memo", default=None)


@contextlib.contextmanager
def tpe_split_memo(memo: dict) -> Iterator[None]:
    """Within the block, optuna's TPE splits a list of trials (``_split_trials``) once and keeps
    the split in ``memo`` (one sampler's): a later call on the same study, the same trials (the
    same objects, in the same states) and the same number below returns it. The split reads only
    the trials' states, values and constraints, and those of a trial change only when it is
    told, which changes its state (the key holds each trial's state, also for a trial told in
    place: ``tell_in_place``). Outside such a block the split is optuna's, unchanged
    (``dse.search.propose.sample.tpe``)."""
    _wrap_split()
    token = _SPLIT_MEMO.set(memo)
    try:
        yield
    finally:
        _SPLIT_MEMO.reset(token)


def _wrap_split() -> None:
    from optuna.samplers._tpe import sampler as tpe
    if getattr(tpe._split_trials, "dse_memo", False):
        return
    original = tpe._split_trials

    def split(study: Any, trials: list, n_below: int) -> tuple[list, list]:
        memo = _SPLIT_MEMO.get()
        if memo is None:
            return original(study, trials, n_below)
        key = (id(study), n_below, tuple((id(t), t.number, t.state) for t in trials))
        if memo.get("key") != key:
            memo["key"], memo["split"] = key, original(study, trials, n_below)   # keeps the trials alive
        below, above = memo["split"]
        return list(below), list(above)

    split.dse_memo = True
    split.__wrapped__ = original
    tpe._split_trials = split
