"""A batch reserved in one transaction, and its drawn designs recorded (dse.search.storage.optuna_reserve)."""
from __future__ import annotations

import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from dse.search.storage import optuna_compat as oc
from dse.search.storage import optuna_reserve as rs
from dse.search.storage.optuna_stale import fail_and_requeue, retry_copy
from dse.search.storage.storage import quiet_optuna


def _study(tmp_path):
    from optuna.storages import RDBStorage
    with quiet_optuna():
        storage = RDBStorage(f"sqlite:///{tmp_path / 'r.db'}", heartbeat_interval=1, grace_period=3)
        study = optuna.create_study(study_name="r", storage=storage)
    return study, storage


def test_reserve_pops_prunes_creates_names_and_beats(tmp_path):
    study, storage = _study(tmp_path)
    study.tell(study.ask({"x": FloatDistribution(0, 1)}), 1.0)                  # 0
    study.enqueue_trial({"x": 0.25})                                             # 1: popped
    study.enqueue_trial({"x": 0.75})                                             # 2: surplus
    seen = []

    def plan(rows, total):
        seen.append((rows, total))
        return [rows[1][0]], [rows[2][0]], 2

    rows, got, surplus = rs.reserve(storage, oc.study_id(study), 0, plan, {"dse_worker": "w"}, "dse_surplus")
    assert [r[1:] for r in seen[0][0]] == [(0, TrialState.COMPLETE, True), (1, TrialState.WAITING, False),
                                           (2, TrialState.WAITING, False)] and seen[0][1] == 3
    assert [t.number for t in got] == [1, 3, 4] and surplus == 1
    assert got[0].system_attrs["fixed_params"] == {"x": 0.25} and got[1].params == {}
    trials = storage.get_all_trials(oc.study_id(study), deepcopy=False)
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.RUNNING, TrialState.PRUNED,
                                         TrialState.RUNNING, TrialState.RUNNING]
    assert trials[2].user_attrs == {"dse_surplus": True}
    assert all(trials[n].user_attrs == {"dse_worker": "w"} and trials[n].datetime_start is not None for n in (1, 3, 4))
    assert rs.reserve(storage, oc.study_id(study), 0, lambda rows, total: ([], [], 0), {}, "s")[1:] == ([], 0)
    from dse.search.storage.optuna_stale import stale_ids
    assert stale_ids(storage, oc.study_id(study)) == []                         # each has its first heartbeat


def test_drawn_designs_reach_the_copies(tmp_path):
    study, storage = _study(tmp_path)
    (a, b), _ = rs.reserve(storage, oc.study_id(study), 0, lambda rows, total: ([], [], 2), {}, "s")[1:]
    dist = {"x": FloatDistribution(0, 1)}
    assert fail_and_requeue(storage, b._trial_id, retry_copy(3))                # b failed before its write
    assert rs.write_params(storage, [(a._trial_id, {"x": 0.5}, dist), (b._trial_id, {"x": 0.9}, dist)]) == 1
    trials = storage.get_all_trials(oc.study_id(study), deepcopy=False)
    assert trials[0].params == {"x": 0.5} and trials[1].params == {}           # a failed trial is not changed
    assert fail_and_requeue(storage, a._trial_id, retry_copy(3))
    copy = storage.get_all_trials(oc.study_id(study), deepcopy=False)[-1]
    assert copy.state == TrialState.WAITING and copy.params == {"x": 0.5}
