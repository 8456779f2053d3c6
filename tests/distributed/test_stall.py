"""A worker that stalls (SIGSTOP, swapped out) past the heartbeat grace is a hung worker, not a dead
one: when it goes on, the trials another worker failed and re-queued meanwhile are left to their
copies and the worker carries on. The soak's first run lost such a worker (exit 1): it stalled
between reserving a trial and naming itself on it, which now happen in one transaction."""
from __future__ import annotations

import optuna
import pytest

from dse.distributed import quota
from dse.distributed.audit import audit
from dse.distributed.worker import run_worker
from dse.search.execute.evaluation import evaluate_design
from dse.search.storage import optuna_compat as oc
from dse.search.storage.optuna_read import read_trials
from dse.search.storage.optuna_stale import fail_and_requeue, retry_copy
from dse.search.storage.storage import MAX_RETRY
from dse.search.study.results import load_results
from dse.search.study.study import load_study
from tests.fixtures import write_distributed_study


@pytest.mark.parametrize("when", ["reserving", "evaluating"])
def test_a_stalled_worker_leaves_the_trial_to_its_copy_and_goes_on(tmp_path, monkeypatch, when):
    study_file = write_distributed_study(tmp_path, sampler="random", trials=6, batch=2, name="stall")
    cfg = load_study(study_file, storage=f"sqlite:///{tmp_path / 'stall.db'}", check_metrics=False)
    stalled, logged, rdb = [], [], []

    def stall(tid: int) -> None:          # meanwhile another worker fails the trial as stale
        if not stalled:
            assert fail_and_requeue(rdb[0], tid, retry_copy(MAX_RETRY))
            stalled.append(tid)

    real = quota.Ledger.reserve

    def reserve(ledger, *a, **k):
        reserved, surplus = real(ledger, *a, **k)
        rdb[:] = [ledger.rdb]
        if when == "reserving":
            stall(oc.trial_id(reserved[0]))
        return reserved, surplus

    def evaluate(design, models):
        if when == "evaluating":
            running = rdb[0].get_all_trials(1, deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
            stall(oc.trial_id(running[0]))
        return evaluate_design(design, models)

    monkeypatch.setattr(quota.Ledger, "reserve", reserve)
    s = run_worker(cfg, worker_id="w0", log=logged.append, evaluator=evaluate)
    assert len(stalled) == 1 and s.dropped == 1 and s.complete == 6
    assert any("re-queued by another worker while it ran here" in line for line in logged)
    study = optuna.load_study(study_name=cfg.name, storage=cfg.storage)
    trials = read_trials(oc.rdb(study), oc.study_id(study))
    a = audit(trials, ["minimize", "minimize"], 6, [r.number for r in load_results(cfg).front()])
    assert (a.held, a.requeued, a.n_lost, a.n_duplicates, a.front_equal) == (1, 1, 0, 0, True)
    held = next(t for t in trials if t.state.name == "FAIL")
    copy = next(t for t in trials if t.system_attrs.get("retry_history") == [held.number])
    if when == "reserving":          # before its design was drawn: the copy draws afresh
        assert held.params == {} and a.undrawn == 1
    else:                            # drawn, written ahead of its result: the copy evaluates the same design
        assert held.params and copy.params == held.params and copy.state.name in ("COMPLETE", "PRUNED")
        assert a.undrawn == 0
