"""The shared study's queue: popping a queued trial, re-queueing interrupted ones, queueing a grid.

* ``ask_reserved``: ``study.ask()``, popping a queued trial in O(1) on RDB storages.
* ``requeue``: fail interrupted reserved trials and queue them again with the same parameters
  (one transaction each on RDB storages).
* ``queue_grid``: the grid points, queued once per study (the creating process queues them; the
  others wait for ``dse_grid_queued``).
* ``requeue_lost_points``: grid points left with neither a result nor a queued copy (their stale
  trial was failed but the re-queue that follows was cut short), queued again;
  ``prune_leftover_copies``: those copies still queued once the grid's target is reached.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from dse.distributed import quota
from dse.search.execute.grid_queue import grid_queue, point_key
from dse.search.execute.trials import DesignCache
from dse.search.storage import optuna_compat as oc
from dse.search.storage.storage import MAX_RETRY
from dse.search.storage.stored import is_scored
from dse.search.study.study import StudyConfig

GRID_ATTR = "dse_grid_queued"
LOST_COPY = "dse_lost_copy"   # system attribute of a grid point queued again by requeue_lost_points
POP_CANDIDATES = 8      # queued trials read per pop (many workers: not all fighting for the oldest)


def ask_reserved(study):
    """``study.ask()``, popping a queued trial in O(1) on RDB storages.

    optuna's ask reads every WAITING trial to pop one (O(queue) per ask, O(N^2) for a queued
    grid); here a few of the oldest queued ids are read and claimed with optuna's own atomic
    WAITING -> RUNNING transition, and an empty queue creates the trial. Other storages:
    ``study.ask()``."""
    import optuna
    rdb = oc.rdb(study)
    if rdb is None:
        return study.ask()
    ids = oc.oldest_waiting_ids(rdb, oc.study_id(study), POP_CANDIDATES)
    random.shuffle(ids)  # many workers: do not all fight for the same oldest trial
    for tid in ids:
        if claim(study, tid):
            oc.forget_cached_trials(study)
            return optuna.Trial(study, tid)
    # a new trial (optuna's ask would first read every trial the study gained into its cache)
    oc.forget_cached_trials(study)
    return optuna.Trial(study, oc.study_storage(study).create_new_trial(oc.study_id(study)))


def claim(study, tid: int) -> bool:
    """Claim the WAITING trial ``tid`` with optuna's atomic WAITING -> RUNNING transition; False if
    another process got there first."""
    import optuna
    from optuna.trial import TrialState
    try:
        return bool(oc.study_storage(study).set_trial_state_values(tid, state=TrialState.RUNNING))
    except optuna.exceptions.UpdateFinishedTrialError:
        return False


def requeue(study, trials: list, log: Callable[[str], None]) -> int:
    """Fail interrupted reserved trials and queue them again with the same parameters (sampled on
    the mirror, or the queued grid point; none yet: drawn afresh), each in one transaction on RDB
    storages (a trial another worker failed as stale meanwhile is left to its copy).
    ``trials``: (trial, sampled params). Returns how many were re-queued."""
    from optuna.trial import TrialState

    from dse.search.storage.optuna_stale import fail_and_requeue, queued_copy
    rdb, n = oc.rdb(study), 0
    for t, sampled in trials:
        params = dict(oc.trial_system_attrs(study, t).get("fixed_params", {}))
        params.update(t.params)
        params.update(sampled)
        try:
            if rdb is not None:
                n += fail_and_requeue(rdb, oc.trial_id(t), queued_copy(params, {"requeued_from": t.number}))
                continue
            if params:
                study.enqueue_trial(params, user_attrs={"requeued_from": t.number})
                n += 1
            study.tell(t, state=TrialState.FAIL)
        except Exception as exc:  # the database is gone too: the heartbeat expiry re-queues it later
            log(f"trial {t.number}: could not re-queue it now ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); its heartbeat expiry will")
    oc.forget_cached_trials(study)
    return n


def grid_points(cfg: StudyConfig) -> list[dict[str, Any]]:
    """The grid's distinct designs as trial parameters, in the runner's grid order."""
    return grid_queue(cfg)


def queue_grid(study, cfg: StudyConfig, created: bool, *, wait_s: float, log: Callable[[str], None]) -> int:
    """Queue the grid once per study; returns the grid target (distinct points, capped by trials).

    The creating process queues the first ``target`` points and then sets ``dse_grid_queued``.
    Others wait for that mark while the queue grows; if it does not come within ``wait_s`` of the
    queue's last growth (creator died, or the study was started by ``dse run``), they queue the
    points neither done, running nor queued.
    """
    from optuna.trial import TrialState
    points = grid_points(cfg)
    target = min(cfg.trials, len(points))
    if created:
        for params in points[:target]:
            study.enqueue_trial(params)
        study.set_user_attr(GRID_ATTR, target)
        return target
    deadline = time.monotonic() + wait_s
    held = quota.counts(study).holding
    while GRID_ATTR not in study.user_attrs and time.monotonic() < deadline:
        time.sleep(0.2)
        now_held = quota.counts(study).holding
        if now_held > held:                       # the creator is still queueing: keep waiting
            held, deadline = now_held, time.monotonic() + wait_s
    if GRID_ATTR in study.user_attrs:
        return min(target, int(study.user_attrs[GRID_ATTR]))
    log(f"no grid queue mark after {wait_s:.0f} s: queueing the missing grid points")
    cache, complete, _ = DesignCache.from_trials(study.get_trials(deepcopy=False))   # scored, in any stored state
    pending = study.get_trials(deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING))
    queued = [dict(t.system_attrs.get("fixed_params", t.params)) for t in pending]
    missing = grid_queue(cfg, cache, queued)
    for params in missing[:max(0, target - complete - len(queued))]:
        study.enqueue_trial(params)
    study.set_user_attr(GRID_ATTR, target)
    return target


def requeue_lost_points(study, cfg: StudyConfig, room: int, log: Callable[[str], None],
                        min_age_s: float) -> tuple[int, int]:
    """Queue again (at most ``room``) grid points that hold no slot although they failed only as
    stale, at most ``MAX_RETRY`` times, never with an evaluation error, at least ``min_age_s``
    ago. Returns (points queued again, points that failed so recently that the worker which failed
    them may still be re-queueing them: wait).

    The storage fails a stale trial and re-queues it in two transactions: a connection lost
    between them (a server restart) leaves the point FAIL with no copy, and the grid would end one
    point short. A point that failed more often (it keeps killing its workers) or whose
    evaluation failed stays failed. Two workers may queue the same point: ``redundant_copy``."""
    import datetime as dt

    from optuna.trial import TrialState
    now = dt.datetime.now()
    trials = study.get_trials(deepcopy=False)
    done = {t.user_attrs.get("design_key") for t in trials if is_scored(t)}   # in any stored state
    pending = [dict(t.system_attrs.get("fixed_params", t.params)) for t in trials
               if t.state in (TrialState.WAITING, TrialState.RUNNING)]
    fails: dict[str, int] = {}
    young: set[str] = set()
    for t in trials:
        params = t.system_attrs.get("fixed_params")
        if t.state == TrialState.FAIL and params and not is_scored(t):
            key = point_key(cfg, params)
            evaluated = "dse" in t.user_attrs     # its evaluation failed: not a stale trial
            fails[key] = fails.get(key, 0) + (MAX_RETRY + 1 if evaluated else 1)
            if t.datetime_complete is None or (now - t.datetime_complete).total_seconds() < min_age_s:
                young.add(key)
    lost = [p for p in grid_queue(cfg, done, pending) if 0 < fails.get(point_key(cfg, p), 0) <= MAX_RETRY]
    waiting = sum(point_key(cfg, p) in young for p in lost)
    lost = [p for p in lost if point_key(cfg, p) not in young][:max(0, room)]
    for params in lost:
        study.add_trial(waiting_copy(params))
    if lost:
        log(f"{len(lost)} grid point(s) failed as stale without a re-queued copy: queued again")
    return len(lost), waiting


def waiting_copy(params: dict[str, Any]):
    """A WAITING trial of a grid point, marked as queued again by ``requeue_lost_points``."""
    import optuna
    return optuna.trial.create_trial(state=optuna.trial.TrialState.WAITING,
                                     system_attrs={"fixed_params": dict(params), LOST_COPY: True})


def prune_leftover_copies(study, mark: str) -> int:
    """Record PRUNED (with the user attribute ``mark`` = True) the copies of ``requeue_lost_points``
    still WAITING once the grid's target is evaluated: another copy of their point was evaluated,
    so they are beyond the target; left WAITING they would stay queued for ever. Each is claimed
    with optuna's atomic WAITING -> RUNNING first (another worker may prune it at the same time).
    Returns how many this process pruned."""
    from optuna.trial import TrialState
    storage, n = oc.study_storage(study), 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        tid = oc.trial_id(t)
        if not t.system_attrs.get(LOST_COPY) or not claim(study, tid):
            continue
        storage.set_trial_user_attr(tid, mark, True)
        storage.set_trial_state_values(tid, state=TrialState.PRUNED)
        n += 1
    return n


def redundant_copy(study, cfg: StudyConfig, trial) -> bool:
    """Whether the popped ``trial``, a copy queued by ``requeue_lost_points``, must give way: its
    point is held (queued, running or evaluated) by a trial that is no such copy, by an evaluated
    one, or by one with a smaller number (two workers queued the same point)."""
    from optuna.trial import TrialState
    attrs = oc.trial_system_attrs(study, trial)
    if not attrs.get(LOST_COPY):
        return False
    key = point_key(cfg, attrs["fixed_params"])
    for t in study.get_trials(deepcopy=False):
        scored = is_scored(t)
        if t.number == trial.number or not (scored or t.state in (TrialState.WAITING, TrialState.RUNNING)):
            continue
        other = t.user_attrs.get("design_key") if scored else (
            point_key(cfg, t.system_attrs["fixed_params"]) if t.system_attrs.get("fixed_params") else None)
        if other == key and (not t.system_attrs.get(LOST_COPY) or scored or t.number < trial.number):
            return True
    return False
