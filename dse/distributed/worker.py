"""The worker loop behind ``dse worker``: any number of processes, on any hosts, on one study.

Every worker opens the same study in a shared storage (PostgreSQL, or SQLite / a journal file on
one host), asks trials, evaluates them and tells the results. What makes many workers safe:

* **Exactly N complete trials** (``quota``): a trial is evaluated only while it holds one of the
  study's N slots; on RDB storages a batch is reserved in one transaction with the study locked,
  so no trial beyond the N slots is created (elsewhere a worker that loses the race for the last
  slots records its trial as PRUNED, ``dse_surplus``, without evaluating it).
* **Dead and hung workers** (``heartbeat``): each worker keeps a heartbeat for the trials it holds;
  the others fail a trial whose heartbeat is older than the storage's grace period and re-queue
  it with the same parameters in the same transaction (the batch's designs are written as soon
  as they are drawn); the copy takes the freed slot. A hung worker that goes on drops the results
  of the trials failed meanwhile.
* **Grid studies**: the process that creates the study queues the grid points once (the others
  wait for ``dse_grid_queued``); workers then only pop queued points, so no point is evaluated
  twice and the set of designs, hence the Pareto front, is that of a single-process run.
* **Samplers** (nsga2, tpe, gp, random) are seeded per worker (study seed + worker id), so
  workers do not propose the same sequence.
* **Signals** (``signals.Shutdown``): SIGINT/SIGTERM finish and record the in-flight batch, then
  stop; a second signal aborts and re-queues the batch.
* **A lost database** (``reconnect.Outage``): a server that restarts or vanishes costs one line;
  the loop stops (the heartbeats of the trials it held stop with it, so they turn stale and are
  re-queued with the same parameters by whichever worker sweeps first), waits with bounded
  backoff for at most ``--db-retry`` seconds, and goes on with fresh connections, keeping its
  mirror, cache and sampler; past the budget the worker exits 3 (``DatabaseUnreachable``) and a
  later worker finishes the study.

* **Cost per trial**: a batch is *reserved* in the shared storage in one transaction
  (``dse.search.storage.optuna_reserve``: RUNNING, named, a first heartbeat: each trial holds a
  slot and survives the worker's death), sampled on an in-memory mirror of the study
  (``dse.search.storage.mirror.StudyMirror``, synced every batch with the trials the other workers
  finished, read from the oldest unfinished one on) and each trial written back in one transaction
  (``dse.search.storage.storage.finish_trial``), instead of optuna's transaction per parameter,
  attribute and state change. Nothing a worker does per batch reads the whole study (the soak,
  ``benchmarks/bench_soak.py``: the same trials/s at 20,000 trials as at the start).

Evaluation, design keys, caching and the recorded attributes are the trial lifecycle of
``dse run`` (``dse.search.execute.trials.Batch``), so a worker's trials are indistinguishable from its.
``dse run`` and ``dse worker`` may share a study, but only workers guarantee the exact count.
"""
from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from optuna.trial import TrialState

from dse.distributed import quota
from dse.distributed.heartbeat import Heartbeats, fail_stale, grace_period_s, heartbeat_interval_s
from dse.distributed.opening import open_worker_study, worker_name
from dse.distributed.queue import (
    ask_reserved,
    prune_leftover_copies,
    queue_grid,
    redundant_copy,
    requeue,
    requeue_lost_points,
)
from dse.distributed.reconnect import DEFAULT_BUDGET_S, Outage, is_connection_error, probe_storage
from dse.distributed.signals import Shutdown
from dse.errors import ConfigError, DSEError
from dse.search.execute.evaluation import evaluate_design
from dse.search.execute.pool import EvaluationPool, quick_dispatch
from dse.search.execute.trials import Batch, DesignCache, too_many_failures
from dse.search.storage import optuna_compat as oc
from dse.search.storage.mirror import StudyMirror
from dse.search.storage.storage import (
    finish_trial,
    mask_text,
    quiet_optuna,
    storage_label,
)
from dse.search.storage.stored import demote_repeats, stored_form
from dse.search.study.study import StudyConfig

SURPLUS_ATTR = "dse_surplus"
LOST_POINT_AGE_S = 10.0   # a grid point failed as stale this long ago without a copy was not re-queued
WORKER_ATTR = "dse_worker"
_MIRRORED = (TrialState.COMPLETE, TrialState.FAIL)    # finished states a worker learns from


@dataclass
class WorkerSummary:
    study: str
    storage: str
    worker: str
    target: int
    complete: int = 0            # COMPLETE trials in the study when this worker stopped
    evaluated: int = 0           # trials this worker told COMPLETE (or FAIL on a model error)
    repeats_demoted: int = 0     # COMPLETE trials of a design another worker also evaluated, stored as repeats
    surplus: int = 0             # trials this worker asked but found beyond the target (PRUNED)
    requeued: int = 0            # trials of dead workers this worker failed and re-queued
    duplicates: int = 0          # trials answered from the design cache
    errors: int = 0
    dropped: int = 0             # results dropped: the trial had been failed as stale meanwhile
    elapsed_s: float = 0.0
    stopped_by: str = ""         # "" (target reached), "signal", "max-trials", "exhausted", "running-elsewhere"
    signum: int | None = None    # the signal that stopped it (stopped_by == "signal")

    @property
    def rate(self) -> float:
        return self.evaluated / self.elapsed_s if self.elapsed_s > 0 else 0.0


# ---- the loop ------------------------------------------------------------------------------
def run_worker(cfg: StudyConfig, *, jobs: int = 1, worker_id: str | None = None, max_trials: int | None = None,
               poll_s: float = 1.0, evaluator=None, log: Callable[[str], None] | None = None,
               db_retry_s: float = DEFAULT_BUDGET_S) -> WorkerSummary:
    """Work on ``cfg``'s study until it has ``cfg.trials`` COMPLETE trials (all workers together),
    a signal asks to stop, or this worker has evaluated ``max_trials``. The heartbeat interval is
    ``cfg.heartbeat_s`` (give every worker of a study the same). A lost database connection is
    ridden out (``reconnect.Outage``: one line, bounded backoff for ``db_retry_s`` seconds), then
    the loop goes on with fresh connections, keeping what the worker has read (``_Worker.reopen``);
    ``DatabaseUnreachable`` past the budget."""
    log = _masked(log or (lambda msg: print(f"dse worker: {msg}", file=sys.stderr, flush=True)), cfg.storage)
    t0 = time.perf_counter()
    summary: WorkerSummary | None = None
    with quiet_optuna(), Shutdown() as shutdown:
        outage = Outage(lambda: probe_storage(cfg), log, storage_label(cfg), budget_s=db_retry_s,
                        stop=lambda: shutdown.requested)
        w = None
        while True:
            try:
                if w is None:
                    w = _Worker(cfg, jobs, worker_name(worker_id), evaluator or evaluate_design, log, summary)
                    summary = w.summary
                else:
                    w.reopen()
                w.loop(max_trials, poll_s, shutdown)
                break
            except Exception as exc:   # noqa: BLE001 - anything but a lost connection is re-raised
                if isinstance(exc, DSEError) and summary is None:   # a wrong URL, a full server: one line now
                    raise
                outage.ride_out(exc)
                if shutdown.requested:       # a signal while waiting for the server: stop now
                    if summary is None:
                        raise KeyboardInterrupt from None
                    summary.stopped_by, summary.signum = "signal", shutdown.signum
                    break
    summary.elapsed_s = time.perf_counter() - t0
    return summary


def _masked(log: Callable[[str], None], url: str | None) -> Callable[[str], None]:
    """``log`` with the storage URL's password masked in every line (a driver's message may quote it)."""
    return log if not url else (lambda msg: log(mask_text(msg, url)))


class _Worker:
    """One ``dse worker`` process: its view of the shared study and its loop."""

    def __init__(self, cfg: StudyConfig, jobs: int, worker: str, fn, log: Callable[[str], None],
                 summary: WorkerSummary | None = None):
        self.cfg, self.jobs, self.fn, self.log = cfg, jobs, fn, log
        self.study, self.storage, sampler, created = open_worker_study(cfg, worker)
        self.grace = grace_period_s(self.storage)
        self.interval = heartbeat_interval_s(self.storage)
        target = cfg.trials
        if cfg.sampler == "grid":
            target = queue_grid(self.study, cfg, created, wait_s=max(10.0, self.grace or 30.0), log=log)
        self.summary = summary or WorkerSummary(cfg.name, storage_label(cfg), worker, target)
        self.env = cfg.base_env()
        self.mirror = StudyMirror(self.study, self.storage, cfg.objectives.directions, sampler)
        self.ledger = quota.Ledger(self.study)
        self.cache, _, _ = DesignCache.from_trials(self.mirror.sync(queue_waiting=False, states=_MIRRORED))

    def reopen(self) -> None:
        """After a lost connection: the shared study on fresh connections; the mirror, the design
        cache and the ledger are kept (a finished trial never changes, so what they hold is still
        true). Building the worker anew re-read the whole study: after each server restart of the
        soak every worker parsed the ~10,000 trials it already held, and the study stood still for a
        minute at 20,000 trials."""
        self.study, self.storage, _, _ = open_worker_study(self.cfg, self.summary.worker)
        self.mirror.pstudy, self.mirror.storage = self.study, self.storage
        self.ledger.study, self.ledger.rdb = self.study, oc.rdb(self.study)

    def loop(self, max_trials: int | None, poll_s: float, shutdown: Shutdown) -> WorkerSummary:
        s = self.summary
        pool = EvaluationPool(self.jobs)
        last_sweep = 0.0
        waiting_note = False
        try:
            with Heartbeats(self.storage, self.interval, log=self.log) as beats, quick_dispatch(self.jobs != 1):
                while True:
                    if shutdown.requested:
                        s.stopped_by, s.signum = "signal", shutdown.signum
                        break
                    if max_trials is not None and s.evaluated >= max_trials:
                        s.stopped_by = "max-trials"
                        break
                    now = time.monotonic()
                    if self.interval is not None and now - last_sweep >= min(self.interval, 5.0):
                        s.requeued += fail_stale(self.study, self.storage)
                        last_sweep = now
                    c = self.ledger.counts()
                    s.complete = c.complete
                    if c.complete >= s.target:
                        if self.cfg.sampler == "grid":
                            s.surplus += prune_leftover_copies(self.study, SURPLUS_ATTR)
                        break
                    k = self._batch_size(c, max_trials)
                    if k is None:
                        break
                    if k <= 0:
                        if not waiting_note:
                            self.log(f"{c.running} trial(s) running elsewhere hold the last slots; waiting "
                                     f"(a dead worker's trials are re-queued after {self.grace:.0f} s)")
                            waiting_note = True
                        time.sleep(poll_s)
                        continue
                    waiting_note = False
                    batch = self._reserve(k, beats, check_queued=c.holding > s.target)
                    if batch:
                        for t in self.mirror.sync(queue_waiting=False, states=_MIRRORED):
                            self.cache.add_trial(t)           # what the other workers finished meanwhile
                        self._evaluate(batch, pool, beats)
                s.complete = self.ledger.counts().complete
        finally:
            pool.close()
        return s

    def _batch_size(self, c: quota.Counts, max_trials: int | None) -> int | None:
        """Trials to reserve next; 0: wait for others; None: stop (``stopped_by`` says why)."""
        s = self.summary
        if self.cfg.sampler == "grid":
            waiting, recent = c.waiting, 0
            if waiting == 0 and c.running == 0:
                if c.complete < s.target and self.grace is not None:   # a stale point whose re-queue was cut short
                    waiting, recent = requeue_lost_points(self.study, self.cfg, s.target - c.holding, self.log,
                                                          min_age_s=max(LOST_POINT_AGE_S, 2 * self.grace))
                if waiting == 0 and recent == 0:
                    s.stopped_by = "exhausted"   # failed points beyond their retries
                    return None
            k = min(self.cfg.batch, waiting)
        else:
            k = min(self.cfg.batch, c.waiting + max(0, s.target - c.holding))
        if max_trials is not None:
            k = min(k, max_trials - s.evaluated)
        if k <= 0 and self.grace is None:
            s.stopped_by = "running-elsewhere"  # no heartbeat: cannot tell dead from slow
            return None
        return k

    def _reserve(self, k: int, beats: Heartbeats, check_queued: bool) -> list:
        """Reserve up to ``k`` trials that hold a slot; a trial beyond the target is recorded PRUNED.

        A trial popped from the queue already held its slot while WAITING; it is checked only when
        more trials hold slots than the target (``check_queued``: a transient race). A trial another
        worker failed as stale meanwhile (this one stalled, e.g. SIGSTOP, past the grace period)
        is left to its re-queued copy."""
        import optuna
        s, out = self.summary, []
        if self.ledger.rdb is not None:
            return self._reserve_batch(k, beats)
        for _ in range(k):
            t = ask_reserved(self.study)
            beats.add(oc.trial_id(t))
            try:
                held = self._hold(t, check_queued)
            except optuna.exceptions.UpdateFinishedTrialError:
                beats.discard(oc.trial_id(t))
                self.log(f"trial {t.number} was re-queued by another worker while this one stalled; left to its copy")
                s.dropped += 1
                break
            if not held:
                beats.discard(oc.trial_id(t))
                s.surplus += 1
                break
            out.append(t)
        return out

    def _reserve_batch(self, k: int, beats: Heartbeats) -> list:
        """RDB storages: the batch reserved in one transaction (``quota.Ledger.reserve``); a queued
        grid point another worker holds too gives way (``redundant_copy``)."""
        import optuna
        s, grid = self.summary, self.cfg.sampler == "grid"
        reserved, surplus = self.ledger.reserve(k, s.target, {WORKER_ATTR: s.worker}, SURPLUS_ATTR, fresh=not grid)
        s.surplus += surplus
        out = []
        for t in reserved:
            if grid and ("fixed_params" not in t.system_attrs or redundant_copy(self.study, self.cfg, t)):
                with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):   # stale meanwhile
                    self.storage.set_trial_user_attr(oc.trial_id(t), SURPLUS_ATTR, True)
                    self.storage.set_trial_state_values(oc.trial_id(t), state=TrialState.PRUNED)
                s.surplus += 1
                continue
            beats.hold(oc.trial_id(t))
            out.append(t)
        return out

    def _hold(self, t, check_queued: bool) -> bool:
        """Whether the reserved ``t`` may be evaluated (marked with this worker's name); if not, it
        lost the race for a queued grid point or the target is held by others: recorded PRUNED."""
        study, s = self.study, self.summary
        fresh = "fixed_params" not in oc.trial_system_attrs(study, t) and not t.params
        grid = self.cfg.sampler == "grid"
        if (grid and (fresh or redundant_copy(study, self.cfg, t))) or \
                ((fresh or check_queued) and not self.ledger.holds_slot(t.number, s.target)):
            t.set_user_attr(SURPLUS_ATTR, True)
            oc.study_storage(study).set_trial_state_values(oc.trial_id(t), state=TrialState.PRUNED)
            return False
        t.set_user_attr(WORKER_ATTR, s.worker)
        return True

    def _evaluate(self, trials: list, pool: EvaluationPool, beats: Heartbeats) -> None:
        """Sample (on the in-memory mirror), evaluate (new designs only) and write one batch of
        reserved trials, each in one transaction; re-queue the batch if interrupted."""
        cfg, study, s = self.cfg, self.study, self.summary
        inflight = {oc.trial_id(t): (t, {}) for t in trials}
        drawn = []               # (trial id, params, distributions) of the designs drawn afresh

        def asked():
            for t in trials:
                fixed = dict(oc.trial_system_attrs(study, t).get("fixed_params", {})) or dict(t.params)
                mt = self.mirror.ask(fixed)
                yield mt
                inflight[oc.trial_id(t)] = (t, dict(mt.params))
                if not fixed:
                    drawn.append((oc.trial_id(t), dict(mt.params), dict(mt.distributions)))
        try:
            batch = Batch(cfg, asked(), self.env, self.cache, pool, self.fn)
            self._record_params(drawn)
            for t, told in zip(trials, batch):
                self._write(t, told)
                del inflight[oc.trial_id(t)]
                beats.discard(oc.trial_id(t))
        except BaseException as exc:
            if not is_connection_error(exc):   # a lost server: their heartbeat expiry re-queues them
                requeue(study, list(inflight.values()), log=self.log)
            for t, _ in inflight.values():
                beats.discard(oc.trial_id(t))
            raise
        if too_many_failures(s.errors, s.evaluated):
            raise ConfigError(f"{cfg.source}: {s.errors} of {s.evaluated} evaluations failed in this "
                              f"worker; stopping")

    def _record_params(self, drawn: list) -> None:
        """The batch's drawn designs into its reserved trials (RDB), before the results are
        written: the copy of a trial this worker holds when it dies evaluates the same design."""
        from dse.search.storage.optuna_reserve import write_params
        if self.ledger.rdb is None or not drawn:
            return
        try:
            write_params(self.ledger.rdb, drawn)
        except Exception as exc:    # noqa: BLE001 - a safety net: a lost connection shows at the next write
            if not is_connection_error(exc):
                self.log(f"could not record the batch's designs ahead of its results ({type(exc).__name__})")

    def _write(self, t, told) -> None:
        """Tell the mirror and fill the reserved trial ``t`` with the told result."""
        import optuna
        s = self.summary
        if told.duplicate_of is not None:
            s.duplicates += 1
        elif not told.outcome.ok:
            s.errors += 1
        told.trial.set_user_attr(WORKER_ATTR, s.worker)
        ft = self.mirror.tell(told.trial, told.values)
        try:
            finish_trial(self.storage, oc.trial_id(t), ft)
        except optuna.exceptions.UpdateFinishedTrialError:
            # Failed as stale by another worker (this one stalled): its re-queued copy goes on.
            self.log(f"trial {t.number} was re-queued by another worker while it ran here; result dropped")
            s.dropped += 1
        else:
            s.evaluated += 1
            if told.duplicate_of is None:
                self.cache.add(told.key, t.number, told.outcome)
                if stored_form(ft).state == TrialState.COMPLETE:   # another worker may have evaluated it meanwhile
                    s.repeats_demoted += demote_repeats(self.storage, oc.study_id(self.study), told.key)
        self.mirror.seen.add(oc.trial_id(t))

