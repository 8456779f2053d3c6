"""Trials that never got a heartbeat are failed after the grace period and re-queued."""
from __future__ import annotations

import time

import pytest


def test_trial_without_heartbeat_is_failed_and_requeued(tmp_path):
    """A worker killed between ask() and its first heartbeat: optuna ignores such a trial; fail_stale
    fails it after the grace period and the retry callback queues its parameters again."""
    import optuna
    from optuna.storages import RDBStorage
    from optuna.trial import TrialState

    from dse.distributed.heartbeat import fail_stale
    from dse.search.storage.storage import retry_callback
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = RDBStorage(f"sqlite:///{tmp_path / 'h.db'}", heartbeat_interval=1, grace_period=1,
                         **retry_callback())
    study = optuna.create_study(storage=storage)
    study.enqueue_trial({"x": 0.5})
    with pytest.warns(UserWarning):
        t = study.ask()
    t.suggest_float("x", 0, 1)
    assert fail_stale(study, storage) == 0  # too young
    time.sleep(1.5)
    assert fail_stale(study, storage) == 1
    states = [(s.state, s.params) for s in study.get_trials(deepcopy=False)]
    assert states == [(TrialState.FAIL, {"x": 0.5}), (TrialState.WAITING, {"x": 0.5})]
