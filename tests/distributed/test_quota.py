"""The worker's slot quota on a real RDB storage."""
from __future__ import annotations


def test_quota_slots(tmp_path):
    """Slot accounting on a real RDB storage: WAITING, RUNNING and COMPLETE hold slots, numbers decide."""
    import optuna
    from optuna.trial import TrialState

    from dse.distributed import quota
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'q.db'}")
    ts = [study.ask() for _ in range(5)]
    study.tell(ts[0], 1.0)
    study.tell(ts[1], state=TrialState.FAIL)
    study.tell(ts[2], state=TrialState.PRUNED)
    study.enqueue_trial({"x": 1})
    assert quota.counts(study) == quota.Counts(complete=1, running=2, waiting=1)
    # holding with smaller numbers: 0 (complete); 3 and 4 running; 5 waiting
    assert quota.slot(study, 3) == 1 and quota.slot(study, 4) == 2 and quota.slot(study, 6) == 4
    assert quota.holds_slot(study, 4, target=3) and not quota.holds_slot(study, 4, target=2)
