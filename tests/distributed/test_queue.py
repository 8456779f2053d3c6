"""dse.distributed.queue: a grid point failed as stale whose re-queue was cut short is not lost."""
from __future__ import annotations

from dataclasses import replace

import pytest

from dse.distributed.worker import run_worker
from dse.search.storage.stored import is_scored
from dse.search.study.study import load_study
from tests.fixtures import write_distributed_study


def _trials(cfg):
    import optuna
    return optuna.load_study(study_name=cfg.name, storage=cfg.storage).get_trials(deepcopy=False)


def _fail_one_waiting_point(cfg, *, evaluation_error: bool = False) -> dict:
    """Fail a queued grid point the way the storage fails a stale trial (RUNNING -> FAIL), without
    the re-queue that should follow (the connection was lost between the two transactions)."""
    import optuna
    from optuna.trial import TrialState
    storage = optuna.storages.RDBStorage(cfg.storage)
    t = next(t for t in _trials(cfg) if t.state == TrialState.WAITING)
    tid = t._trial_id
    storage.set_trial_state_values(tid, state=TrialState.RUNNING)
    if evaluation_error:
        storage.set_trial_user_attr(tid, "dse", {"error": "boom"})
    storage.set_trial_state_values(tid, state=TrialState.FAIL)
    storage.engine.dispose()
    return dict(t.system_attrs["fixed_params"])


@pytest.mark.parametrize("evaluation_error", [False, True], ids=["stale", "evaluation-error"])
def test_a_stale_point_without_its_requeued_copy_is_queued_again(tmp_path, evaluation_error):
    study = write_distributed_study(tmp_path, trials=12, batch=4, name="lost")
    cfg = replace(load_study(study, storage=f"sqlite:///{tmp_path / 'lost.db'}", check_metrics=False),
                  heartbeat_s=1)     # grace 3 s: a point failed 10 s ago without a copy is lost
    lines: list[str] = []
    first = run_worker(cfg, worker_id="w0", max_trials=4, log=lines.append)
    assert first.evaluated == 4
    _fail_one_waiting_point(cfg, evaluation_error=evaluation_error)
    s = run_worker(cfg, worker_id="w1", log=lines.append)
    complete = [t for t in _trials(cfg) if is_scored(t)]
    keys = {t.user_attrs["design_key"] for t in complete}
    assert len(keys) == len(complete)
    if evaluation_error:        # a design whose evaluation failed stays failed
        assert len(complete) == 11 and s.stopped_by == "exhausted"
    else:
        assert len(complete) == 12 and s.stopped_by == "", lines
        assert any("queued again" in ln for ln in lines)


def test_two_workers_queueing_the_same_lost_point_evaluate_it_once(tmp_path):
    import optuna

    from dse.distributed.queue import redundant_copy, requeue_lost_points, waiting_copy
    study = write_distributed_study(tmp_path, trials=12, batch=4, name="twice")
    cfg = replace(load_study(study, storage=f"sqlite:///{tmp_path / 'twice.db'}", check_metrics=False),
                  heartbeat_s=1)
    run_worker(cfg, worker_id="w0", max_trials=4, log=lambda _: None)
    point = _fail_one_waiting_point(cfg)
    shared = optuna.load_study(study_name=cfg.name, storage=cfg.storage)
    assert requeue_lost_points(shared, cfg, 1, lambda _: None, min_age_s=60) == (0, 1)   # too recent: wait
    assert requeue_lost_points(shared, cfg, 1, lambda _: None, min_age_s=0) == (1, 0)
    assert requeue_lost_points(shared, cfg, 1, lambda _: None, min_age_s=0) == (0, 0)    # queued already
    shared.add_trial(waiting_copy(point))     # what a second worker reading at the same time would add
    first, second = sorted((t for t in _trials(cfg) if t.system_attrs.get("dse_lost_copy")), key=lambda t: t.number)
    assert not redundant_copy(shared, cfg, first) and redundant_copy(shared, cfg, second)   # the later one gives way
    s = run_worker(cfg, worker_id="w1", log=lambda _: None)
    scored = [t for t in _trials(cfg) if is_scored(t)]
    assert len(scored) == 12 and len({t.user_attrs["design_key"] for t in scored}) == 12
    copies = [t for t in _trials(cfg) if t.system_attrs.get("dse_lost_copy")]
    assert sorted(is_scored(t) for t in copies) == [False, True] and s.surplus == 1
    # the copy that gave way is recorded PRUNED whichever was popped first, never left queued
    assert [t.state.name for t in copies if not is_scored(t)] == ["PRUNED"]
