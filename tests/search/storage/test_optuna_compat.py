"""Each private optuna API dse uses (``dse.search.storage.optuna_compat``), exercised against the installed
optuna: an optuna release that renames or changes one of them fails here, by name."""
from __future__ import annotations

import json

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from dse.search.storage import optuna_compat as oc
from dse.search.storage import optuna_read
from dse.search.storage.storage import quiet_optuna


@pytest.fixture
def rdb_study(tmp_path):
    from optuna.storages import RDBStorage
    with quiet_optuna():
        storage = RDBStorage(f"sqlite:///{tmp_path / 'c.db'}", heartbeat_interval=1, grace_period=3)
        study = optuna.create_study(study_name="c", storage=storage, directions=["minimize", "maximize"])
    return study, storage


def test_study_handles(rdb_study):
    study, storage = rdb_study
    assert oc.study_id(study) == storage.get_study_id_from_name("c")
    assert oc.rdb(oc.study_storage(study)) is storage       # unwraps optuna's caching storage
    assert oc.rdb(study) is storage and oc.rdb(storage) is storage
    assert oc.rdb(optuna.create_study()) is None             # in-memory: no RDB


def test_trial_handles(rdb_study):
    study, storage = rdb_study
    t = study.ask({"x": FloatDistribution(0, 1)})
    assert storage.get_trial(oc.trial_id(t)).number == t.number
    frozen = study.get_trials(deepcopy=False)[0]
    assert oc.trial_id(frozen) == oc.trial_id(t)
    study.enqueue_trial({"x": 0.5})
    q = study.ask()
    assert oc.trial_system_attrs(study, q)["fixed_params"] == {"x": 0.5}


def test_study_system_attrs():
    study = optuna.create_study(sampler=optuna.samplers.NSGAIISampler(population_size=2, seed=0))
    assert oc.study_system_attrs(study) == {}
    for _ in range(6):
        t = study.ask({"x": FloatDistribution(0, 1)})
        study.tell(t, t.params["x"])
    assert oc.study_system_attrs(study), "NSGA-II no longer caches its parents in the study"


def test_tell_in_place_finishes_as_tell_does_without_the_copy():
    """The trial returned equals what ``Study.tell`` returns on a twin study, and is the study's
    own object (not a copy); a failed trial likewise."""
    from optuna.trial import TrialState
    twins = [optuna.create_study(directions=["minimize", "maximize"], sampler=optuna.samplers.RandomSampler(seed=3))
             for _ in range(2)]
    got = []
    for study in twins:
        t = study.ask({"x": FloatDistribution(0, 1)})
        t.set_user_attr("dse", {"metrics": {"m": {"a": 1.0, "b": [1, 2]}}})
        f = study.ask({"x": FloatDistribution(0, 1)})
        got.append((study, t, f))
    (a, ta, fa), (b, tb, fb) = got
    done = oc.tell_in_place(a, ta, values=[0.5, 2.0])
    want = b.tell(tb, values=[0.5, 2.0])
    assert done.state == want.state == TrialState.COMPLETE and done.values == want.values
    assert done.params == want.params and done.user_attrs == want.user_attrs
    assert done is a.get_trials(deepcopy=False)[0]
    failed = oc.tell_in_place(a, fa, state=TrialState.FAIL)
    assert failed.state == b.tell(fb, state=TrialState.FAIL).state == TrialState.FAIL
    assert failed is a.get_trials(deepcopy=False)[1]


def test_forget_cached_trials_drops_the_thread_cache(rdb_study):
    study, storage = rdb_study
    assert hasattr(study._thread_local, "cached_all_trials"), "optuna's per-thread trial cache moved"
    study._thread_local.cached_all_trials = []
    oc.forget_cached_trials(study)
    assert study._thread_local.cached_all_trials is None


def test_heartbeat_enabled(rdb_study, tmp_path):
    _, storage = rdb_study
    assert oc.heartbeat_enabled(storage)
    from optuna.storages import RDBStorage
    assert not oc.heartbeat_enabled(RDBStorage(f"sqlite:///{tmp_path / 'n.db'}"))
    assert not oc.heartbeat_enabled(optuna.storages.InMemoryStorage())


def test_count_by_state_and_oldest_waiting(rdb_study):
    study, storage = rdb_study
    for x in (0.1, 0.2, 0.3):
        study.enqueue_trial({"x": x})
    t = study.ask()                                 # pops the oldest queued trial
    study.tell(t, [1.0, 2.0])
    sid = oc.study_id(study)
    assert oc.count_by_state(storage, sid) == {TrialState.COMPLETE: 1, TrialState.WAITING: 2}
    assert oc.count_by_state(storage, sid, below_number=2) == {TrialState.COMPLETE: 1, TrialState.WAITING: 1}
    waiting = [tr for tr in study.get_trials(deepcopy=False) if tr.state == TrialState.WAITING]
    assert oc.oldest_waiting_ids(storage, sid, 1) == [oc.trial_id(waiting[0])]
    assert oc.oldest_waiting_ids(storage, sid, 8) == [oc.trial_id(w) for w in waiting]


def test_count_with_user_attr(rdb_study):
    study, storage = rdb_study
    for i in range(4):
        t = study.ask()
        if i % 2:
            t.set_user_attr("mark", i)
        t.set_user_attr("other", i)
        study.tell(t, state=TrialState.PRUNED)
    sid = oc.study_id(study)
    assert oc.count_with_user_attr(storage, sid, "mark") == 2
    assert oc.count_with_user_attr(storage, sid, "mark", below_number=3) == 1
    assert oc.count_with_user_attr(storage, sid, "other") == 4
    assert oc.count_with_user_attr(storage, sid, "absent") == 0


def test_write_finished_trial_in_one_transaction(rdb_study):
    study, storage = rdb_study
    mem = optuna.create_study(directions=["minimize", "maximize"])
    mt = mem.ask({"x": FloatDistribution(0, 1)})
    mt.set_user_attr("dse", {"design": {"x": mt.params["x"]}})
    mt.set_constraint("c0", -1.0)
    ft = mem.tell(mt, [3.0, 4.0])
    tid = storage.create_new_trial(oc.study_id(study))
    oc.write_finished_trial(storage, tid, ft)
    got = storage.get_trial(tid)
    assert got.state == TrialState.COMPLETE and got.values == [3.0, 4.0]
    assert got.params == ft.params and got.distributions == ft.distributions
    assert got.user_attrs == ft.user_attrs and dict(got.constraints) == {"c0": -1.0}
    assert json.dumps(got.system_attrs, sort_keys=True) == json.dumps(
        {k: v for k, v in ft.system_attrs.items() if k != "fixed_params"}, sort_keys=True)
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):
        oc.write_finished_trial(storage, tid, ft)                 # finished already: refused


def test_add_finished_trial_as_optuna_writes_it(rdb_study):
    study, storage = rdb_study
    mem = optuna.create_study(directions=["minimize", "maximize"])
    sid = oc.study_id(study)
    study.enqueue_trial({"x": 0.25})                    # a WAITING trial takes number 0 first
    for k in range(3):
        mt = mem.ask({"x": FloatDistribution(0, 1), "n": optuna.distributions.IntDistribution(1, 9)})
        mt.set_user_attr("dse", {"design": dict(mt.params), "k": k})
        mt.set_constraint("c0", float(k) - 1.0)
        ft = mem.tell(mt, [float(k), -2.5]) if k != 1 else mem.tell(mt, state=TrialState.FAIL)
        tid, number = oc.add_finished_trial(storage, sid, ft)
        got = storage.get_trial(tid)
        assert number == got.number == k + 1
        assert got.state == ft.state and got.values == ft.values
        assert got.params == ft.params and got.distributions == ft.distributions
        assert got.user_attrs == ft.user_attrs and dict(got.constraints) == dict(ft.constraints)
        assert got.datetime_start is not None and got.datetime_complete >= got.datetime_start
    assert [t.number for t in study.get_trials(deepcopy=False)] == [0, 1, 2, 3]


def test_hypervolume_function():
    hv = oc.hypervolume_function()
    assert hv is not None, "optuna._hypervolume.compute_hypervolume is gone (dse falls back to slicing)"
    F = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    assert hv(F, np.array([2.0, 2.0]), assume_pareto=True) == pytest.approx(3.25)


def test_rewrite_finished_trials(rdb_study):
    study, storage = rdb_study
    t = study.ask({"x": FloatDistribution(0, 1)})
    t.set_user_attr("keep", 1)
    t.set_user_attr("drop", 2)
    t.set_constraint("c0", 0.5)
    study.tell(t, [1.0, float("inf")])
    old = storage.get_trial(oc.trial_id(t))
    new = optuna.trial.create_trial(state=TrialState.PRUNED, params=old.params, distributions=old.distributions,
                                    user_attrs={"keep": 1, "added": [1.0, "inf"]}, system_attrs={"constraints": [0.5]})
    oc.rewrite_finished_trials(storage, [(oc.trial_id(t), new)])
    got = optuna.load_study(study_name="c", storage=storage).get_trials(deepcopy=False)[0]
    assert got.state == TrialState.PRUNED and got.values is None and got.params == {"x": old.params["x"]}
    assert got.user_attrs == {"keep": 1, "added": [1.0, "inf"]}
    assert got.system_attrs == {"constraints": [0.5]} and got.constraints == {"0": 0.5}


def test_add_finished_trials_writes_a_batch_numbered_after_the_study(rdb_study):
    study, storage = rdb_study
    mem = optuna.create_study(directions=["minimize", "maximize"])
    sid = oc.study_id(study)
    study.enqueue_trial({"x": 0.25})                    # a WAITING trial takes number 0 first
    fts = []
    for k in range(3):
        mt = mem.ask({"x": FloatDistribution(0, 1), "n": optuna.distributions.IntDistribution(1, 9)})
        mt.set_user_attr("dse", {"design": dict(mt.params), "k": k})
        mt.set_constraint("c0", float(k) - 1.0)
        fts.append(mem.tell(mt, [float(k), -2.5]) if k != 1 else mem.tell(mt, state=TrialState.FAIL))
    seen = []
    first, ids = oc.add_finished_trials(storage, sid, lambda n: seen.append(n) or fts)
    assert first == 1 and seen == [1] and len(ids) == 3
    for k, (tid, ft) in enumerate(zip(ids, fts)):
        got = storage.get_trial(tid)
        assert got.number == k + 1 and got.state == ft.state and got.values == ft.values
        assert got.params == ft.params and got.distributions == ft.distributions
        assert got.user_attrs == ft.user_attrs and dict(got.constraints) == dict(ft.constraints)
    assert [t.number for t in study.get_trials(deepcopy=False)] == [0, 1, 2, 3]


def _varied_trials(study) -> None:
    """Trials of every state, parameter type and non-finite value optuna stores."""
    from optuna.distributions import CategoricalDistribution, IntDistribution
    dists = {"f": FloatDistribution(0.1, 10, log=True), "s": FloatDistribution(0, 1, step=0.25),
             "i": IntDistribution(1, 64, log=True), "c": CategoricalDistribution([None, True, "a", 2.5, 3])}
    for k, (vals, state) in enumerate([([1.0, 2.0], TrialState.COMPLETE),
                                       ([float("inf"), -float("inf")], TrialState.COMPLETE),
                                       (None, TrialState.FAIL), (None, TrialState.PRUNED), (None, TrialState.RUNNING)]):
        t = study.ask(dists)
        t.set_user_attr("dse", {"design": {"core_side": k}, "metrics": {"m": {"x": [1, None, 2.5]}}, "ok": k % 2 == 0})
        t.set_user_attr("design_key", f"k{k}")
        storage = oc.study_storage(study)
        storage.set_trial_system_attr(oc.trial_id(t), "constraints", [0.0, float(k)])
        if k == 3:
            storage.set_trial_intermediate_value(oc.trial_id(t), 0, 0.5)
            storage.set_trial_intermediate_value(oc.trial_id(t), 3, float("inf"))
        if state == TrialState.COMPLETE:
            study.tell(t, vals)
        elif state != TrialState.RUNNING:
            study.tell(t, state=state)
    study.enqueue_trial({"f": 2.0, "c": "a"}, user_attrs={"queued": 1})
    study.add_trial(optuna.trial.create_trial(values=[0.0, 1.0], params={"x": 0.5},
                                              distributions={"x": FloatDistribution(0, 1)}))


def _check_read_trials(study, storage) -> None:
    _varied_trials(study)
    want = storage.get_all_trials(oc.study_id(study), deepcopy=False)
    got = optuna_read.read_trials(storage, oc.study_id(study))
    assert len(want) == len(got) == 7
    for w, g in zip(want, got):
        assert g == w and g.params == w.params and g.distributions == w.distributions
        assert [type(v) for v in g.params.values()] == [type(v) for v in w.params.values()]
        assert oc.trial_id(g) == oc.trial_id(w)
    assert got[1].values == [float("inf"), -float("inf")] and got[3].intermediate_values == {0: 0.5, 3: float("inf")}
    assert optuna_read.all_trials(study) == want


@pytest.fixture
def far_timezone(monkeypatch):
    """Local time 5:30 ahead of UTC (optuna 5 stores UTC and gives local time)."""
    import time
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_read_trials_equals_optunas_on_sqlite(rdb_study, far_timezone):
    _check_read_trials(*rdb_study)


@pytest.mark.postgres
def test_read_trials_equals_optunas_on_postgresql(postgres_url):
    from optuna.storages import RDBStorage
    with quiet_optuna():
        storage = RDBStorage(postgres_url)
        study = optuna.create_study(study_name=f"read-{np.random.default_rng().integers(1 << 40)}", storage=storage,
                                    directions=["minimize", "maximize"])
    try:
        _check_read_trials(study, storage)
    finally:
        optuna.delete_study(study_name=study.study_name, storage=storage)


def test_all_trials_of_a_journal_or_in_memory_study_are_optunas(tmp_path):
    with quiet_optuna():
        study = optuna.create_study(directions=["minimize", "maximize"])
        _varied_trials(study)
        assert optuna_read.all_trials(study) == study.get_trials(deepcopy=False)
