"""Stale trials failed and re-queued in one transaction (dse.search.storage.optuna_stale)."""
from __future__ import annotations

import threading
import time

import optuna
import pytest
from optuna.trial import TrialState

from dse.search.storage import optuna_compat as oc
from dse.search.storage import optuna_stale as st
from dse.search.storage.storage import MAX_RETRY, quiet_optuna


def _study(url: str, grace: int = 1):
    from optuna.storages import RDBStorage
    with quiet_optuna():
        storage = RDBStorage(url, heartbeat_interval=1, grace_period=grace)
        study = optuna.create_study(study_name="s", storage=storage)
    return study, storage


@pytest.fixture
def rdb_study(tmp_path):
    return _study(f"sqlite:///{tmp_path / 's.db'}")


def _running(study, x: float | None = None, attrs: dict | None = None):
    if x is not None:
        study.enqueue_trial({"x": x})
    with quiet_optuna(), pytest.warns(UserWarning) if x is not None else _nothing():
        t = study.ask()
    if x is not None:
        t.suggest_float("x", 0, 1)
    for k, v in (attrs or {}).items():
        t.set_user_attr(k, v)
    return t


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _trials(storage, study):
    return storage.get_all_trials(oc.study_id(study), deepcopy=False)


def test_a_stale_trial_is_failed_and_its_copy_queued_at_once(rdb_study):
    study, storage = rdb_study
    t = _running(study, 0.25, {"dse_worker": "w1"})
    assert st.fail_and_requeue(storage, oc.trial_id(t), st.retry_copy(MAX_RETRY))
    failed, copy = _trials(storage, study)
    assert failed.state == TrialState.FAIL and failed.datetime_complete is not None
    assert copy.state == TrialState.WAITING and copy.number == 1
    assert copy.params == {"x": 0.25} and copy.user_attrs == {"dse_worker": "w1"}
    assert copy.system_attrs["failed_trial"] == 0 and copy.system_attrs["retry_history"] == [0]
    assert copy.system_attrs["fixed_params"] == {"x": 0.25}
    assert not st.fail_and_requeue(storage, oc.trial_id(t), st.retry_copy(MAX_RETRY))   # finished: nothing done
    assert len(_trials(storage, study)) == 2


def test_an_interrupted_requeue_leaves_the_trial_running(rdb_study, monkeypatch):
    """The soak's lost trials: optuna failed a stale trial, then a kill (or a lost connection)
    stopped its re-queue, and the trial stayed FAIL without a copy. Now both or neither."""
    study, storage = rdb_study
    t = _running(study, 0.5)

    def cut(*a, **k):
        raise ConnectionError("server closed the connection unexpectedly")
    monkeypatch.setattr(st, "_add_waiting", cut)
    with pytest.raises(ConnectionError):
        st.fail_and_requeue(storage, oc.trial_id(t), st.retry_copy(MAX_RETRY))
    assert [x.state for x in _trials(storage, study)] == [TrialState.RUNNING]
    monkeypatch.undo()
    assert st.fail_and_requeue(storage, oc.trial_id(t), st.retry_copy(MAX_RETRY))
    assert [x.state for x in _trials(storage, study)] == [TrialState.FAIL, TrialState.WAITING]


def test_no_copy_past_the_retries(rdb_study):
    study, storage = rdb_study
    copy = st.retry_copy(2)
    assert copy({"number": 5, "params": {}, "user_attrs": {}, "system_attrs": {"retry_history": [1]}}) \
        == {"params": {}, "user_attrs": {}, "system_attrs": {"failed_trial": 5, "retry_history": [1, 5]}}
    assert copy({"number": 7, "params": {}, "user_attrs": {}, "system_attrs": {"retry_history": [1, 5]}}) is None
    t = _running(study)
    storage.set_trial_system_attr(oc.trial_id(t), "retry_history", [3, 4])
    assert st.fail_and_requeue(storage, oc.trial_id(t), copy)
    assert [x.state for x in _trials(storage, study)] == [TrialState.FAIL]


def test_queued_copy_is_enqueue_trials(rdb_study):
    study, storage = rdb_study
    t = _running(study)
    assert st.fail_and_requeue(storage, oc.trial_id(t), st.queued_copy({"x": 0.75}, {"requeued_from": 0}))
    study.enqueue_trial({"x": 0.75}, user_attrs={"requeued_from": 0})
    ours, optunas = _trials(storage, study)[1:]
    assert (ours.state, ours.params, ours.user_attrs, ours.system_attrs) == \
        (optunas.state, optunas.params, optunas.user_attrs, optunas.system_attrs)


def test_stale_and_orphan_ids(rdb_study):
    study, storage = rdb_study
    beating, silent = _running(study), _running(study)
    storage.record_heartbeat(oc.trial_id(beating))
    sid = oc.study_id(study)
    assert st.stale_ids(storage, sid) == [] and st.orphan_ids(storage, sid, 1.0) == []
    time.sleep(2.2)
    assert st.stale_ids(storage, sid) == [oc.trial_id(beating)]
    assert st.orphan_ids(storage, sid, 1.0) == [oc.trial_id(silent)]
    assert st.orphan_ids(storage, sid, 60.0) == []


@pytest.mark.postgres
def test_two_sweepers_queue_one_copy(postgres_url):
    """Every worker sweeps: on a server, two racing on one stale trial make one copy."""
    study, storage = _study(postgres_url)
    ts = [_running(study, x / 10) for x in range(6)]
    results: list[bool] = []

    def sweep():
        for t in ts:
            results.append(st.fail_and_requeue(storage, oc.trial_id(t), st.retry_copy(MAX_RETRY)))
    threads = [threading.Thread(target=sweep) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sum(results) == 6
    trials = _trials(storage, study)
    assert sorted(t.system_attrs["failed_trial"] for t in trials if t.state == TrialState.WAITING) == list(range(6))
    assert sorted(t.number for t in trials) == list(range(12))
    storage.engine.dispose()


def test_record_heartbeats_in_one_transaction(rdb_study):
    """As optuna's record_heartbeat, for many trials at once: a row for a trial without one, a new
    time for one with one; staleness reads them as optuna's own."""
    study, storage = rdb_study
    a, b = _running(study), _running(study)
    storage.record_heartbeat(oc.trial_id(a))
    sid, ids = oc.study_id(study), [oc.trial_id(a), oc.trial_id(b)]
    time.sleep(1.2)
    st.record_heartbeats(storage, ids)
    assert st.stale_ids(storage, sid) == [] and st.orphan_ids(storage, sid, 1.0) == []
    time.sleep(2.2)
    assert st.stale_ids(storage, sid) == ids
    st.record_heartbeats(storage, ids[:1])
    assert st.stale_ids(storage, sid) == ids[1:]
