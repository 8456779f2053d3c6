"""The worker's slot quota on a real RDB storage."""
from __future__ import annotations

import pytest


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


def test_scored_trials_stored_pruned_or_failed_hold_slots(tmp_path):
    """An infeasible (PRUNED) or non-finite (FAIL) trial that was scored is stored with its values
    (``dse.search.storage.stored``) and counts as COMPLETE; a surplus PRUNED or failed trial does not.
    Both the SQL count (RDB) and the trial scan (other storages)."""
    import optuna
    from optuna.trial import TrialState

    from dse.distributed import quota
    from dse.search.storage.stored import VALUES_ATTR
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for storage in (f"sqlite:///{tmp_path / 's.db'}", None):
        study = optuna.create_study(storage=storage)
        ts = [study.ask() for _ in range(5)]
        ts[0].set_user_attr(VALUES_ATTR, [1.0])
        study.tell(ts[0], state=TrialState.PRUNED)          # infeasible, scored
        study.tell(ts[1], state=TrialState.PRUNED)          # surplus
        ts[2].set_user_attr(VALUES_ATTR, ["inf"])
        study.tell(ts[2], state=TrialState.FAIL)            # non-finite objective, scored
        study.tell(ts[3], state=TrialState.FAIL)            # evaluation error
        assert quota.counts(study) == quota.Counts(complete=2, running=1, waiting=0), storage
        assert quota.slot(study, 2) == 1 and quota.slot(study, 4) == 2 and quota.slot(study, 5) == 3


def test_the_ledger_counts_as_the_full_queries_do(tmp_path):
    """``Ledger`` reads only the trials from the oldest unfinished one on; after every change of a
    random sequence (asks, tells in every stored form, queued trials popped late) it gives the
    counts and slots of the queries over the whole study."""
    import random

    import optuna
    from optuna.trial import TrialState

    from dse.distributed import quota
    from dse.distributed.queue import claim
    from dse.search.storage import optuna_compat as oc
    from dse.search.storage.stored import VALUES_ATTR
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = random.Random(3)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'l.db'}")
    ledger, running, floors = quota.Ledger(study), [], set()
    for _ in range(160):
        op = rng.random()
        if op < 0.35 or not running:
            running.append(study.ask())
        elif op < 0.45:
            study.enqueue_trial({"x": rng.random()})
        elif op < 0.55:
            waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
            if waiting and claim(study, oc.trial_id(waiting[-1])):     # the newest first: an old one stays open
                running.append(optuna.Trial(study, oc.trial_id(waiting[-1])))
        else:
            t = running.pop(rng.randrange(len(running)))
            state = rng.choice([TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL])
            if state != TrialState.COMPLETE and rng.random() < 0.5:
                t.set_user_attr(VALUES_ATTR, [1.0])                    # scored, stored PRUNED / FAIL
            study.tell(t, 1.0 if state == TrialState.COMPLETE else None, state=state)
        assert ledger.counts() == quota.counts(study)
        n = len(study.get_trials(deepcopy=False))
        for number in rng.sample(range(n), min(n, 5)):
            assert ledger.holds_slot(number, 20) == quota.holds_slot(study, number, 20)
        floors.add(ledger.floor)
    assert len(floors) > 10 and ledger.scored_below > 0          # it did move, and counts below it


def _reserve_all(url: str, target: int, k: int, out: list) -> None:
    import optuna

    from dse.distributed import quota
    from dse.search.storage.storage import quiet_optuna
    with quiet_optuna():
        study = optuna.load_study(study_name="r", storage=url)
    ledger = quota.Ledger(study)
    while True:
        got, surplus = ledger.reserve(k, target, {"dse_worker": "t"}, "dse_surplus")
        out += [t.number for t in got]
        if not got and not surplus:
            return
        for t in got:             # half told COMPLETE, half failed without a copy (their slots free again)
            study.tell(optuna.Trial(study, t._trial_id), 1.0 if t.number % 2 else None,
                       state=optuna.trial.TrialState.COMPLETE if t.number % 2 else optuna.trial.TrialState.FAIL)
        if ledger.counts().complete >= target:
            return


@pytest.mark.postgres
def test_racing_reservations_never_pass_the_target(postgres_url):
    """Four threads reserving batches of 3 at once, failing half: with the study row locked the
    plan sees every slot, so exactly the target completes and no trial beyond it is created."""
    import threading

    import optuna

    from dse.distributed import quota
    from dse.search.storage.storage import quiet_optuna
    with quiet_optuna():
        study = optuna.create_study(study_name="r", storage=postgres_url)
    study.enqueue_trial({"x": 0.5})
    outs = [[] for _ in range(4)]
    threads = [threading.Thread(target=_reserve_all, args=(postgres_url, 10, 3, o)) for o in outs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    trials = study.get_trials(deepcopy=False)
    assert quota.counts(study).complete == 10
    assert [t.state.name for t in trials].count("COMPLETE") == 10 and "RUNNING" not in [t.state.name for t in trials]
    assert sorted(n for o in outs for n in o) == [t.number for t in trials]      # every trial reserved once
    assert trials[0].params == {"x": 0.5} or trials[0].system_attrs.get("fixed_params") == {"x": 0.5}
    assert all(t.user_attrs.get("dse_worker") == "t" for t in trials)
