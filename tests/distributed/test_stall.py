"""A worker that stalls (SIGSTOP, swapped out) past the heartbeat grace is a hung worker, not a dead
one: when it goes on, the trials another worker failed and re-queued meanwhile are left to their
copies and the worker carries on (the soak's first run lost such a worker: exit 1)."""
from __future__ import annotations

import optuna

from dse.distributed import quota
from dse.distributed.audit import audit
from dse.distributed.worker import run_worker
from dse.search.storage import optuna_compat as oc
from dse.search.storage.optuna_read import read_trials
from dse.search.storage.optuna_stale import fail_and_requeue, retry_copy
from dse.search.storage.storage import MAX_RETRY
from dse.search.study.results import load_results
from dse.search.study.study import load_study
from tests.fixtures import write_distributed_study


def test_a_worker_stalled_while_reserving_leaves_the_trial_to_its_copy(tmp_path, monkeypatch):
    study_file = write_distributed_study(tmp_path, sampler="random", trials=6, batch=2, name="stall")
    cfg = load_study(study_file, storage=f"sqlite:///{tmp_path / 'stall.db'}", check_metrics=False)
    real, stalled, logged = quota.Ledger.holds_slot, [], []

    def holds_slot(ledger, number, target):
        if not stalled:      # the worker stalls here; another one fails its trial as stale meanwhile
            tid = ledger.rdb.get_trial_id_from_study_id_trial_number(ledger.sid, number)
            assert fail_and_requeue(ledger.rdb, tid, retry_copy(MAX_RETRY))
            stalled.append(number)
        return real(ledger, number, target)

    monkeypatch.setattr(quota.Ledger, "holds_slot", holds_slot)
    s = run_worker(cfg, worker_id="w0", log=logged.append)
    assert stalled == [0] and s.dropped == 1 and s.complete == 6
    assert any("re-queued by another worker while this one stalled" in line for line in logged)
    study = optuna.load_study(study_name=cfg.name, storage=cfg.storage)
    trials = read_trials(oc.rdb(study), oc.study_id(study))
    a = audit(trials, ["minimize", "minimize"], 6, [r.number for r in load_results(cfg).front()])
    assert (a.held, a.requeued, a.n_lost, a.n_duplicates, a.front_equal) == (1, 1, 0, 0, True)
