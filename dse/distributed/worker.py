"""The worker loop behind ``dse worker``: any number of processes, on any hosts, on one study.

Every worker opens the same study in a shared storage (PostgreSQL, or SQLite / a journal file on
one host), asks trials, evaluates them and tells the results. What makes many workers safe:

* **Exactly N complete trials** (``quota``): a trial is evaluated only while it holds one of the
  study's N slots; a worker that loses the race for the last slots records its trial as PRUNED
  (``dse_surplus``) without evaluating it.
* **Dead workers** (``heartbeat``): each worker keeps a heartbeat for the trials it holds; the
  others fail a trial whose heartbeat is older than the storage's grace period and the storage's
  stale-trial callback re-queues it (same parameters); the copy takes the freed slot.
* **Grid studies**: the process that creates the study queues the grid points once (the others
  wait for ``dse_grid_queued``); workers then only pop queued points, so no point is evaluated
  twice and the set of designs, hence the Pareto front, is that of a single-process run.
* **Samplers** (nsga2, tpe, gp, random) are seeded per worker (study seed + worker id), so
  workers do not propose the same sequence.
* **Signals** (``signals.Shutdown``): SIGINT/SIGTERM finish and record the in-flight batch, then
  stop; a second signal aborts and re-queues the batch.

* **Cost per trial**: the trial is *reserved* in the shared storage (RUNNING + heartbeat: it holds
  a slot and survives the worker's death), sampled on an in-memory mirror of the study
  (``fill.WorkerMirror``, synced with the other workers' finished trials every batch) and written
  back in one transaction (``fill.finish_trial``), instead of optuna's one transaction per
  parameter, attribute and state change.

Evaluation, design keys, caching and the recorded attributes are the runner's
(``dse.search.runner``), so a worker's trials are indistinguishable from ``dse run``'s.
``dse run`` and ``dse worker`` may share a study, but only workers guarantee the exact count.
"""
from __future__ import annotations

import hashlib
import os
import random
import socket
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from dse.distributed import quota
from dse.distributed.fill import WorkerMirror, finish_trial
from dse.distributed.heartbeat import Heartbeats, fail_stale, grace_period_s, heartbeat_interval_s
from dse.distributed.signals import Shutdown
from dse.errors import ConfigError
from dse.search.study import StudyConfig

GRID_ATTR = "dse_grid_queued"
SURPLUS_ATTR = "dse_surplus"
WORKER_ATTR = "dse_worker"


def set_heartbeat(interval_s: int) -> None:
    """Heartbeat interval of the storages this process opens; the grace period after which a
    silent trial is failed and re-queued is three intervals. Give every worker the same value."""
    import dse.search.storage as st
    if not 1 <= interval_s <= 3600:
        raise ConfigError(f"--heartbeat {interval_s}: must be an integer number of seconds in [1, 3600]")
    st.HEARTBEAT_INTERVAL_S = int(interval_s)
    st.GRACE_PERIOD_S = 3 * int(interval_s)


@dataclass
class WorkerSummary:
    study: str
    storage: str
    worker: str
    target: int
    complete: int = 0            # COMPLETE trials in the study when this worker stopped
    evaluated: int = 0           # trials this worker told COMPLETE (or FAIL on a model error)
    surplus: int = 0             # trials this worker asked but found beyond the target (PRUNED)
    requeued: int = 0            # trials of dead workers this worker failed and re-queued
    duplicates: int = 0          # trials answered from the design cache
    errors: int = 0
    dropped: int = 0             # results dropped: the trial had been failed as stale meanwhile
    elapsed_s: float = 0.0
    stopped_by: str = ""         # "" (target reached), "SIGTERM", "SIGINT", "max-trials", "exhausted", ...

    @property
    def rate(self) -> float:
        return self.evaluated / self.elapsed_s if self.elapsed_s > 0 else 0.0


def worker_name(worker_id: str | None) -> str:
    """A name for this worker (``host:pid`` unless given)."""
    return worker_id or f"{socket.gethostname()}:{os.getpid()}"


def worker_seed(study_seed: int, worker: str) -> int:
    """Sampler seed of one worker: the study seed mixed with the worker's name."""
    digest = hashlib.sha256(f"{study_seed}:{worker}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


# ---- opening -------------------------------------------------------------------------------
def _create_once(cfg: StudyConfig) -> bool:
    """Create the study if absent; True for the one process that created it."""
    import optuna
    from optuna.exceptions import DuplicatedStudyError

    from dse.search.storage import open_storage
    storage = open_storage(cfg.storage, cfg.name, cfg.results_dir, stem=cfg.base_name)
    try:
        storage.get_study_id_from_name(cfg.name)
        return False
    except KeyError:
        pass
    try:
        optuna.create_study(study_name=cfg.name, storage=storage, directions=cfg.objectives.directions,
                            load_if_exists=False)
        return True
    except DuplicatedStudyError:
        return False
    finally:
        engine = getattr(storage, "engine", None)
        if engine is not None:
            engine.dispose()


def open_worker_study(cfg: StudyConfig, worker: str):
    """(study, raw storage, created); the study's sampler is this worker's (seeded by its name)."""
    from dse.search.runner import make_sampler, open_study
    created = _create_once(cfg)
    study, storage = open_study(cfg, create=True)
    study.sampler = make_sampler(replace(cfg, seed=worker_seed(cfg.seed, worker)), 0)
    return study, storage, created


def grid_points(cfg: StudyConfig) -> list[dict[str, Any]]:
    """The grid's distinct designs as trial parameters, in the runner's grid order."""
    from dse.search.runner import _grid_queue
    return _grid_queue(cfg, {})


def queue_grid(study, cfg: StudyConfig, created: bool, *, wait_s: float, log: Callable[[str], None]) -> int:
    """Queue the grid once per study; returns the grid target (distinct points, capped by trials).

    The creating process queues the first ``target`` points and then sets ``dse_grid_queued``.
    Others wait for that mark; if it does not come within ``wait_s`` (creator died, or the study
    was started by ``dse run``), they queue the points neither done, running nor queued.
    """
    from optuna.trial import TrialState

    from dse.search.runner import _grid_queue, _load_cache
    points = grid_points(cfg)
    target = min(cfg.trials, len(points))
    if created:
        for params in points[:target]:
            study.enqueue_trial(params)
        study.set_user_attr(GRID_ATTR, target)
        return target
    deadline = time.monotonic() + wait_s
    while GRID_ATTR not in study.user_attrs and time.monotonic() < deadline:
        time.sleep(0.2)
    if GRID_ATTR in study.user_attrs:
        return min(target, int(study.user_attrs[GRID_ATTR]))
    log(f"no grid queue mark after {wait_s:.0f} s: queueing the missing grid points")
    cache, complete, _ = _load_cache(study)
    pending = study.get_trials(deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING))
    held = [dict(t.system_attrs.get("fixed_params", t.params)) for t in pending]
    missing = _grid_queue(cfg, cache, held)
    for params in missing[:max(0, target - complete - len(held))]:
        study.enqueue_trial(params)
    study.set_user_attr(GRID_ATTR, target)
    return target


# ---- the loop ------------------------------------------------------------------------------
def run_worker(cfg: StudyConfig, *, jobs: int = 1, worker_id: str | None = None, max_trials: int | None = None,
               poll_s: float = 1.0, evaluator=None, log: Callable[[str], None] | None = None) -> WorkerSummary:
    """Work on ``cfg``'s study until it has ``cfg.trials`` COMPLETE trials (all workers together),
    a signal asks to stop, or this worker has evaluated ``max_trials``."""
    from dse.search.runner import quiet_optuna
    log = log or (lambda msg: print(f"dse worker: {msg}", file=sys.stderr, flush=True))
    with quiet_optuna(), Shutdown() as shutdown:
        return _run(cfg, jobs=jobs, worker=worker_name(worker_id), max_trials=max_trials, poll_s=poll_s,
                    evaluator=evaluator, log=log, shutdown=shutdown)


def _run(cfg: StudyConfig, *, jobs: int, worker: str, max_trials: int | None, poll_s: float, evaluator,
         log: Callable[[str], None], shutdown: Shutdown) -> WorkerSummary:
    from dse.search.runner import _load_cache, _Pool, evaluate_design
    from dse.search.storage import mask_url
    t0 = time.perf_counter()
    study, storage, created = open_worker_study(cfg, worker)
    grace = grace_period_s(storage)
    interval = heartbeat_interval_s(storage)
    target = cfg.trials
    if cfg.sampler == "grid":
        target = queue_grid(study, cfg, created, wait_s=max(10.0, grace or 30.0), log=log)
    where = mask_url(cfg.storage) if cfg.storage else str(cfg.results_dir / f"{cfg.base_name}.db")
    summary = WorkerSummary(cfg.name, where, worker, target)
    fn = evaluator or evaluate_design
    env = cfg.base_env()
    cache, _, _ = _load_cache(study)
    mirror = WorkerMirror(cfg.objectives.directions, study.sampler)
    mirror.sync(study)
    pool = _Pool(jobs)
    last_sweep = 0.0
    waiting_note = False
    try:
        with Heartbeats(storage) as beats:
            while True:
                if shutdown.requested:
                    summary.stopped_by = f"signal {shutdown.signum}"
                    break
                if max_trials is not None and summary.evaluated >= max_trials:
                    summary.stopped_by = "max-trials"
                    break
                now = time.monotonic()
                if interval is not None and now - last_sweep >= min(interval, 5.0):
                    summary.requeued += fail_stale(study, storage)
                    last_sweep = now
                c = quota.counts(study)
                summary.complete = c.complete
                if c.complete >= target:
                    break
                free = target - c.holding
                if cfg.sampler == "grid":
                    k = min(cfg.batch, c.waiting)
                    if k == 0 and c.running == 0:
                        summary.stopped_by = "exhausted"   # failed points beyond their retries
                        break
                else:
                    k = min(cfg.batch, c.waiting + max(0, free))
                if max_trials is not None:
                    k = min(k, max_trials - summary.evaluated)
                if k <= 0:
                    if grace is None:
                        summary.stopped_by = "running-elsewhere"  # no heartbeat: cannot tell dead from slow
                        break
                    if not waiting_note:
                        log(f"{c.running} trial(s) running elsewhere hold the last slots; waiting "
                            f"(a dead worker's trials are re-queued after {grace:.0f} s)")
                        waiting_note = True
                    time.sleep(poll_s)
                    continue
                waiting_note = False
                batch = _ask_batch(study, cfg, k, target, beats, summary, check_queued=c.holding > target)
                if not batch:
                    continue
                for t in mirror.sync(study):   # what the other workers finished meanwhile
                    _cache_add(cache, t)
                _evaluate_batch(study, cfg, batch, env, cache, pool, fn, beats, summary, mirror, log)
            summary.complete = quota.counts(study).complete
    finally:
        pool.close()
        summary.elapsed_s = time.perf_counter() - t0
    return summary


def ask(study):
    """``study.ask()``, popping a queued trial in O(1) on RDB storages.

    optuna's ask reads every WAITING trial to pop one (O(queue) per ask, O(N^2) for a queued
    grid); here a few of the oldest queued ids are read and claimed with optuna's own atomic
    WAITING -> RUNNING transition. Any other storage, or an empty queue, uses ``study.ask()``."""
    import optuna
    from optuna.trial import TrialState
    rdb = quota._rdb(study)
    if rdb is not None:
        import sqlalchemy as sa
        from optuna.storages._rdb import models
        T = models.TrialModel
        session = rdb.scoped_session()
        try:
            ids = [tid for (tid,) in session.execute(
                sa.select(T.trial_id).where(T.study_id == study._study_id, T.state == TrialState.WAITING)
                .order_by(T.number).limit(8)).all()]
        finally:
            session.close()
        random.shuffle(ids)  # many workers: do not all fight for the same oldest trial
        for tid in ids:
            try:
                if study._storage.set_trial_state_values(tid, state=TrialState.RUNNING):
                    study._thread_local.cached_all_trials = None
                    return optuna.Trial(study, tid)
            except optuna.exceptions.UpdateFinishedTrialError:
                continue
    return study.ask()


def system_attrs(study, trial) -> dict[str, Any]:
    """System attributes of a live trial (optuna 5 no longer exposes them on ``Trial``)."""
    frozen = getattr(trial, "_cached_frozen_trial", None)
    if frozen is None:
        frozen = study._storage.get_trial(trial._trial_id)
    return frozen.system_attrs


def _ask_batch(study, cfg: StudyConfig, k: int, target: int, beats: Heartbeats, summary: WorkerSummary,
               check_queued: bool) -> list:
    """Ask up to ``k`` trials that hold a slot; a trial beyond the target is recorded PRUNED.

    A trial popped from the queue already held its slot while WAITING; it is checked only when
    more trials hold slots than the target (``check_queued``: a transient race)."""
    from optuna.trial import TrialState
    out = []
    for _ in range(k):
        t = ask(study)
        beats.add(t._trial_id)
        fresh = "fixed_params" not in system_attrs(study, t) and not t.params
        if (cfg.sampler == "grid" and fresh) or ((fresh or check_queued)
                                                 and not quota.holds_slot(study, t.number, target)):
            # Lost the race for a queued grid point, or the target is already held by others.
            t.set_user_attr(SURPLUS_ATTR, True)
            study.tell(t, state=TrialState.PRUNED)
            beats.discard(t._trial_id)
            summary.surplus += 1
            break
        t.set_user_attr(WORKER_ATTR, summary.worker)
        out.append(t)
    return out


def _cache_add(cache: dict, t) -> None:
    """Add a finished trial of the shared study to the design cache (first trial of each design)."""
    rec = t.user_attrs.get("dse", {})
    key = t.user_attrs.get("design_key")
    if t.state.name == "COMPLETE" and key and "metrics" in rec and key not in cache:
        cache[key] = {"trial": t.number, "status": "ok", "result": rec["metrics"]}


def _evaluate_batch(study, cfg: StudyConfig, trials: list, env, cache, pool, fn, beats: Heartbeats,
                    summary: WorkerSummary, mirror: WorkerMirror, log) -> None:
    """Sample (on the in-memory mirror), evaluate (new designs only) and write one batch of
    reserved trials, each in one transaction; re-queue the batch if interrupted."""
    import optuna

    from dse.search.runner import _record, design_key
    inflight = {t._trial_id: (t, {}) for t in trials}
    try:
        mem, designs, keys = [], [], []
        for t in trials:
            fixed = dict(system_attrs(study, t).get("fixed_params", {})) or dict(t.params)
            mt = mirror.ask(fixed)
            d = cfg.design(cfg.space.suggest(mt, env))
            inflight[t._trial_id] = (t, dict(mt.params))
            mem.append(mt)
            designs.append(d)
            keys.append(design_key(cfg, d))
        todo: dict[str, dict[str, Any]] = {}
        for key, d in zip(keys, designs):
            if key not in cache and key not in todo:
                todo[key] = d
        fresh = dict(zip(todo, pool.map(fn, list(todo.values()), cfg.models)))
        for t, mt, key, d in zip(trials, mem, keys, designs):
            if key in cache:
                rec = cache[key]
                status, res = rec["status"], rec["result"]
                values = _record(cfg, mt, key, d, status, res, duplicate_of=rec["trial"])
                summary.duplicates += 1
            else:
                status, res = fresh[key]
                values = _record(cfg, mt, key, d, status, res)
                if status != "ok":
                    summary.errors += 1
            mt.set_user_attr(WORKER_ATTR, summary.worker)
            ft = mirror.tell(mt, values)
            try:
                finish_trial(study._storage, t._trial_id, ft)
            except optuna.exceptions.UpdateFinishedTrialError:
                # Failed as stale by another worker (this one stalled): its re-queued copy goes on.
                log(f"trial {t.number} was re-queued by another worker while it ran here; result dropped")
                summary.dropped += 1
            else:
                summary.evaluated += 1
                if status == "ok" and key not in cache:
                    cache[key] = {"trial": t.number, "status": status, "result": res}
            mirror.seen.add(t._trial_id)
            del inflight[t._trial_id]
            beats.discard(t._trial_id)
    except BaseException:
        requeue(study, list(inflight.values()))
        for t, _ in inflight.values():
            beats.discard(t._trial_id)
        raise
    if summary.errors and summary.errors >= max(10, summary.evaluated // 2):
        raise ConfigError(f"{cfg.source}: {summary.errors} of {summary.evaluated} evaluations failed in this "
                          f"worker; stopping")


def requeue(study, trials: list) -> int:
    """Fail interrupted reserved trials and queue them again with the same parameters (sampled on
    the mirror, or the queued grid point). ``trials``: (trial, sampled params). Returns how many
    were re-queued."""
    from optuna.trial import TrialState
    n = 0
    for t, sampled in trials:
        params = dict(system_attrs(study, t).get("fixed_params", {}))
        params.update(t.params)
        params.update(sampled)
        try:
            if params:
                study.enqueue_trial(params, user_attrs={"requeued_from": t.number})
                n += 1
            study.tell(t, state=TrialState.FAIL)
        except Exception:  # the database is gone too: the heartbeat expiry re-queues it later
            pass
    return n
