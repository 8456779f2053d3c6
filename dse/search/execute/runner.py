"""Run a study: optuna ask/tell in batches, evaluation fanned out to worker processes.

The driver (this process) alone talks to the storage: it asks a batch of trials on an in-memory
mirror of the study (``mirror.StudyMirror``), and the batch goes through the trial lifecycle
shared with ``dse worker`` (``trials.Batch``: designs, cache, evaluation in the
``EvaluationPool``, recording); results are told back in trial order, and the batch's trials are
written to the storage together, in one transaction, once the batch is told (on a storage
other than RDB, or when the batch fills re-queued WAITING trials, each as it is told). Hence a
seeded study gives the same trials whatever ``jobs`` is (the batch size is a study setting,
never derived from ``jobs``); a run stopped by Ctrl-C writes the trials it told and loses only
its in-flight evaluations, and one killed outright loses at most the batch in flight.

Deterministic resume: ``trials`` is a target count of finished trials; re-running the same
study continues until the target. Batch *i* holds the finished trials at positions
``[i * batch, (i + 1) * batch)`` of the study; its trials are asked from a sampler seeded with
``samplers.batch_seed(seed, i)`` on an in-memory study holding exactly the trials before the
batch. Every trial is thus a function of the seed, its position and the trials before its batch:
a run interrupted anywhere (Ctrl-C, SIGTERM, SIGKILL, mid-batch or between batches) and resumed,
any number of times, re-asks the interrupted batch identically (its written trials are asked
again without being evaluated, and checked) and ends with the trials of an uninterrupted run
(``samplers.SAMPLERS`` says which samplers promise it; ``dse run`` says so when it cannot).
With worker processes and a sampler blind to the results (``SamplerKind.blind``: random) or to
the last batch's (guided with ``[sampler] lag = 1``: ``samplers.blind``), the
next batch is asked while the current one is evaluated, from the sampler seeded for it: the
trials it asks are those asking after the batch would give, and its evaluations queue behind the
current batch's, so the workers never wait at the batch barrier (repeats of a design still being
evaluated wait for it; nothing is written before its batch is told).
Trials another process left RUNNING with a stale heartbeat (``dse worker``) are failed and
re-queued by the storage's retry callback; the next run evaluates them first (no replay then).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dse.errors import ConfigError
from dse.search.execute.evaluation import Evaluator, evaluate_design
from dse.search.execute.grid_queue import grid_queue, waiting_params
from dse.search.execute.pool import EvaluationPool, make_pool, quick_dispatch
from dse.search.execute.progress import TrialFront
from dse.search.execute.trials import Batch, DesignCache, too_many_failures
from dse.search.propose.bound import screen_for
from dse.search.propose.knee import track as track_knee
from dse.search.propose.samplers import SAMPLERS, batch_seed, blind, make_sampler
from dse.search.space.objectives import score
from dse.search.storage.mirror import StudyMirror
from dse.search.storage.sqlite_guard import driver_lock
from dse.search.storage.storage import close_storage, open_study, quiet_optuna, storage_label, study_sqlite_path
from dse.search.study.study import StudyConfig

WRITE_AHEAD_MIN_TRIALS = 4   # told trials written while the driver waits for a worker (see _Unwritten)


@dataclass
class RunSummary:
    study: str
    storage: str
    target: int
    complete: int                 # finished trials in the study after the run
    new_trials: int               # trials told by this run
    evaluations: int              # designs actually evaluated by this run
    duplicates: int               # trials answered from the cache
    feasible: int                 # feasible trials in the study
    errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0
    interrupted: bool = False
    exhausted: bool = False       # grid: every point done
    screened: int = 0             # trials the multi-fidelity screen spared an evaluation
    asked_ahead: int = 0          # batches asked while the one before was evaluated (blind samplers)
    # wall time the driver spent getting evaluations' results: with --jobs 1 the evaluations
    # themselves (run here, as they are asked for); with workers, those it ran itself and its
    # waits for the others. The rest of ``elapsed_s`` is asking, telling, writing and set-up.
    result_s: float = 0.0
    notes: list[str] = field(default_factory=list)   # said to the user (e.g. a resume that cannot be exact)
    # the study's trials as read back (``load_results``), from those the run holds; None when the
    # storage may hold trials it did not see (``_Run.held_results``). Not part of the JSON summary.
    results: Any = field(default=None, repr=False, compare=False)

    def fields(self) -> dict[str, Any]:
        """The summary's figures (``dse run --json``), without ``results``."""
        return {k: v for k, v in self.__dict__.items() if k != "results"}


def run_study(cfg: StudyConfig, *, jobs: int = 1, progress: bool = False,
              evaluator: Evaluator | None = None, max_batches: int | None = None,
              max_evaluations: int | None = None, on_batch: Callable[[dict], None] | None = None,
              backend: str = "loky", scheduler: str | None = None,
              notify: Callable[[str], None] | None = None) -> RunSummary:
    """Run (or resume) ``cfg`` until it has ``cfg.trials`` finished trials.

    ``evaluator`` replaces :func:`evaluate_design` (tests); ``max_batches`` stops early;
    ``max_evaluations`` stops once the study holds that many distinct evaluated designs
    (search-quality benchmarks count evaluations, not trials); ``on_batch`` is called after each
    batch with ``{complete, target, feasible, front, elapsed_s, new_trials}`` (progress lines).
    ``backend = "dask"`` sends the evaluations to a dask.distributed cluster (``scheduler``
    address, or a local cluster of ``jobs`` worker processes). ``notify`` is called with each note
    for the user as it arises (also kept in ``RunSummary.notes``).
    """
    make_sampler(cfg, cfg.seed)   # a sampler that cannot be built (missing extra) fails before any file
    with quiet_optuna(), driver_lock(study_sqlite_path(cfg), cfg.name):
        run = _Run(cfg, jobs, progress, evaluator or evaluate_design, notify, backend)
        try:
            s = run.loop(max_batches, max_evaluations, on_batch, backend, scheduler)
            s.results = run.held_results()
            return s
        finally:     # the run's connections close now, not whenever its objects are collected
            close_storage(run.storage)


class _Run:
    """One ``dse run``: the study, its mirror, cache and counts, and the run loop."""

    def __init__(self, cfg: StudyConfig, jobs: int, progress: bool, fn: Evaluator,
                 notify: Callable[[str], None] | None = None, backend: str = "loky"):
        import optuna
        self.t0 = time.perf_counter()
        self.notify = notify
        self.warming: list = []       # placement handles queued ahead of the first batch (kept: see warm)
        self.cfg, self.fn, self.jobs = cfg, fn, jobs
        self.env = cfg.base_env()
        make_sampler(cfg, cfg.seed)   # a sampler that cannot be built (missing extra) fails before any file
        self.pool, self.tracing = None, []
        self.blind = blind(cfg) and cfg.fidelity != "multi"   # batches asked ahead
        if jobs != 1 and backend == "loky":   # the worker starts while the storage opens
            from dse.search.execute import warm
            self.pool = make_pool(jobs, affinity=True)
            self.tracing = warm.submit_traces(cfg, self.pool)
        self.pstudy, storage = open_study(cfg, create=True)
        self.cfg, self.knee = track_knee(cfg, self.pstudy)   # [search] knee phase, as recorded
        cfg = self.cfg
        self.storage = storage
        optuna.storages.fail_stale_trials(self.pstudy)         # trials of dead `dse worker`s: re-queued
        n_existing = len(self.pstudy.get_trials(deepcopy=False))
        self.mirror = StudyMirror(self.pstudy, storage, cfg.objectives.directions,
                                  make_sampler(cfg, cfg.seed + n_existing))
        self.finished = sorted(self.mirror.sync(), key=lambda t: t.number)   # persistent, in order
        # finished's persistent numbers and stored forms (None: told here); exact: numbers final
        self.numbers = [t.number for t in self.finished]
        self.stored: list = list(self.finished)
        self.exact = True
        self.cache, self.complete, self.feasible = DesignCache.from_trials(self.finished)
        target = cfg.trials
        self.grid = None
        if cfg.sampler == "grid":
            queued = waiting_params(self.pstudy)
            self.grid = grid_queue(cfg, self.cache, queued)
            target = min(target, self.complete + len(queued) + len(self.grid))
        self.summary = RunSummary(cfg.name, storage_label(cfg), target, self.complete, 0, 0, 0, self.feasible)
        if self.finished and self.complete < target:
            self._resume_notes()
        self.bar = _progress(progress, target, self.complete, cfg.name)
        self.front = TrialFront(cfg.objectives.directions)   # for the progress lines

    def loop(self, max_batches: int | None, max_evaluations: int | None,
             on_batch: Callable[[dict], None] | None = None, backend: str = "loky",
             scheduler: str | None = None) -> RunSummary:
        cfg, s = self.cfg, self.summary
        if self.complete >= s.target:
            pool = EvaluationPool(1)
        else:
            pool = self.pool or make_pool(self.jobs, backend, scheduler, affinity=True)
        if (self.jobs != 1 or backend != "loky") and self.complete < s.target:
            from dse.search.execute import warm
            warm.wait(self.tracing or warm.submit_traces(cfg, pool), pool)
            self.warming = warm.submit_placements(cfg, pool)     # queued ahead of the first batch
        batches, ahead = 0, None
        workers = self.jobs != 1 or backend != "loky"
        # workers served at once at each barrier (not when asked ahead); no estimate.offloading: slower (scale-out.md)
        with quick_dispatch(workers and not self.blind):
            try:
                while self.complete < s.target and (max_batches is None or batches < max_batches):
                    if batches:
                        for t in self.mirror.sync():                   # trials other processes finished meanwhile
                            self.finished.append(t)
                            self.numbers.append(t.number)
                            self.stored.append(t)
                            if self.cache.add_trial(t):
                                self.complete += 1
                                self.feasible += bool(t.user_attrs.get("dse", {}).get("feasible"))
                        if self.complete >= s.target:
                            break
                    if self.knee is not None and self.knee.step(self.finished, self._note):
                        break
                    k, skip = self._batch_size(max_evaluations)
                    if k <= 0:
                        break
                    if ahead is not None and ahead.start == len(self.finished):
                        batch = ahead                          # asked while the batch before ran
                    else:
                        batch = self._ask_batch(k, skip, pool)
                    last = max_batches is not None and batches + 1 >= max_batches
                    ahead = None if last or not workers else self._ask_ahead(batch, k, skip, max_evaluations, pool)
                    self._tell_batch(batch, write_ahead=ahead is None)
                    batches += 1
                    if on_batch is not None:
                        on_batch(self._progress_line())
                    if too_many_failures(s.errors, s.new_trials):
                        raise ConfigError(f"{cfg.source}: {s.errors} of {s.new_trials} evaluations failed "
                                          f"(first: {s.first_error}); stopping")
            except KeyboardInterrupt:
                s.interrupted = True
                raise
            finally:
                pool.close()
                if self.bar is not None:
                    self.bar.close()
                s.complete, s.feasible = self.complete, self.feasible
                s.elapsed_s = time.perf_counter() - self.t0
        if self.knee is not None:
            self.knee.final(self.finished)
        s.exhausted = self.grid is not None and not self.grid
        return s

    def _batch_size(self, max_evaluations: int | None) -> tuple[int, int]:
        """New trials to ask next, and how many trials of the current batch are already written
        (re-asked first, not evaluated). Grid: queue that many points first."""
        exact = self.grid is None and not self.mirror.queued   # re-queued trials of dead workers: no replay
        skip = len(self.finished) % self.cfg.batch if exact else 0
        k = min(self.cfg.batch - skip, self.summary.target - self.complete)
        if max_evaluations is not None:
            k = min(k, max_evaluations - len(self.cache))
            if k <= 0:
                return 0, 0
        if self.grid is not None:
            queued = len(self.mirror.queued)
            n_new = max(0, k - queued)
            for params in self.grid[:n_new]:
                self.mirror.mem.enqueue_trial(params)
            del self.grid[:n_new]
            k = min(k, queued + n_new)
        return k, skip

    def _ask_batch(self, k: int, skip: int, pool: EvaluationPool) -> Batch:
        """Ask the whole batch before telling anything (the sampler sees the same state whatever
        ``jobs`` is); each new design goes to the pool as soon as it is asked. Except for a grid,
        the sampler starts afresh from the trials before the batch, seeded for the batch."""
        cfg = self.cfg
        start = len(self.finished) - skip
        if self.grid is None:
            sampler = make_sampler(cfg, batch_seed(cfg.seed, start // cfg.batch), start)
            self.mirror.rebuild(self.finished[:start], sampler)
        batch = Batch(cfg, (self.mirror.ask() for _ in range(skip + k)), self.env, self.cache, pool, self.fn,
                      skip=skip, screen=screen_for(cfg, self.finished[:start], self.cache))
        batch.start = len(self.finished)
        self._check_replay(batch.replayed, self.finished[start:])
        return batch

    def _ask_ahead(self, batch: Batch, k: int, skip: int, max_evaluations: int | None,
                   pool: EvaluationPool) -> Batch | None:
        """The next batch, asked now while ``batch`` is evaluated (workers never wait at the
        barrier), where that asks what asking after the barrier would: a sampler blind to the
        results (``SamplerKind.blind``), no screen, no grid or re-queued trials, no evaluation
        cap, and a next batch that is full whatever ``batch``'s outcomes (the loop drops it if
        other processes wrote trials meanwhile)."""
        cfg = self.cfg
        start = len(self.finished) + k
        if (not self.blind or self.grid is not None or self.mirror.queued or max_evaluations is not None
                or skip + k != cfg.batch
                or self.summary.target - self.complete - k < cfg.batch):
            return None
        self.mirror.mem.sampler = make_sampler(cfg, batch_seed(cfg.seed, start // cfg.batch), start)
        ahead = Batch(cfg, (self.mirror.ask() for _ in range(cfg.batch)), self.env, self.cache, pool, self.fn,
                      after=batch)
        ahead.start = start
        self.summary.asked_ahead += 1
        return ahead

    def _tell_batch(self, batch: Batch, write_ahead: bool = True) -> None:
        """Tell (and write) the batch's trials in order, as their evaluations come back; told
        trials are written while the driver waits for a worker if ``write_ahead`` (not needed
        when the next batch is already queued: workers are busy while the batch is written)."""
        s = self.summary
        first = self.mirror.next_number()     # None: each trial written as told
        unwritten = None if first is None else _Unwritten(self.mirror, self.cache, first)
        batch.before_wait = None if unwritten is None or not write_ahead else unwritten.write_ahead
        try:
            for told in batch:
                self._tell(told, unwritten)
        finally:                              # Ctrl-C, an error: what was told is kept
            s.evaluations += batch.evaluations
            s.result_s += batch.result_s
            if unwritten is not None:
                unwritten.write()
                self.exact = self.exact and not unwritten.shifted

    def _tell(self, told, unwritten: _Unwritten | None) -> None:
        """Tell one trial of the batch and write it (``unwritten`` None), else number it and keep
        it in ``unwritten`` (written in one transaction with the rest of the batch, or ahead)."""
        cfg, s = self.cfg, self.summary
        ft = self.mirror.tell(told.trial, told.values)
        number = self.mirror.write(told.trial, ft) if unwritten is None else unwritten.add(ft)
        self.finished.append(ft)          # as written (the next batch's sampler starts from these)
        self.numbers.append(number)
        self.stored.append(None)
        if told.screened:
            s.screened += 1
        elif told.duplicate_of is None:
            self.cache.add(told.key, number, told.outcome)
        else:
            s.duplicates += 1
        s.new_trials += 1
        if told.outcome.ok:
            self.complete += 1
            self.feasible += not told.screened and score(told.outcome.metrics, cfg.objectives).feasible
        else:
            s.errors += 1
            s.first_error = s.first_error or told.outcome.error
        if self.bar is not None:
            self.bar.update(1 if told.outcome.ok else 0)
            self.bar.set_postfix(feasible=self.feasible, refresh=False)

    def held_results(self):
        """The study's results as ``load_results`` reads them back, from the trials this run holds
        (``results.held_results``), or None when the storage may hold trials it does not
        (another process wrote meanwhile, WAITING trials) or their numbers moved."""
        from dse.search.study.results import held_results
        n = len(self.finished)
        if not self.exact or sorted(self.numbers) != list(range(n)) or self.mirror.stored_count() != n:
            return None
        return held_results(self.cfg, self.finished, self.numbers, self.stored, dict(self.pstudy.user_attrs))

    def _check_replay(self, asked: list, written: list) -> None:
        """The re-asked trials of an interrupted batch must be those written: otherwise the study
        was not written by this procedure (another dse version, workers) and the user is told."""
        if any(a.params != w.params for a, w in zip(asked, written)):
            self._note(f"study {self.cfg.name!r}: the interrupted batch's written trials differ from what "
                       f"the sampler proposes again (a study written by another dse version, or by "
                       f"workers); it continues, but not as an uninterrupted run would have")

    def _resume_notes(self) -> None:
        why = SAMPLERS[self.cfg.sampler].not_resumable
        if why:
            self._note(f"resuming study {self.cfg.name!r}: sampler {self.cfg.sampler!r} does not promise the "
                       f"trials of an uninterrupted run ({why})")
        if any("dse_worker" in t.user_attrs for t in self.finished):
            self._note(f"resuming study {self.cfg.name!r}: it holds trials of `dse worker` processes; the "
                       f"result is not that of an uninterrupted `dse run`")

    def _note(self, text: str) -> None:
        if text not in self.summary.notes:
            self.summary.notes.append(text)
            if self.notify is not None:
                self.notify(text)

    def _progress_line(self) -> dict:
        """Where the run stands (for progress lines): counts, front size (distinct designs)."""
        front = self.front.update(self.mirror.mem.get_trials(deepcopy=False))
        return {"complete": self.complete, "target": self.summary.target, "feasible": self.feasible,
                "front": front.designs(), "elapsed_s": time.perf_counter() - self.t0,
                "new_trials": self.summary.new_trials}


class _Unwritten:
    """Told trials of a batch not yet written, numbered from ``first``: the persistent number
    the next one takes if nothing else writes to the study meanwhile (``write`` corrects it, and
    the cache, by the shift the storage reports)."""

    def __init__(self, mirror: StudyMirror, cache: DesignCache, first: int):
        self.mirror, self.cache, self.first, self.fts = mirror, cache, first, []
        self.shifted = False          # another process wrote meanwhile: the numbers kept moved

    def add(self, ft) -> int:
        """Keep the told trial ``ft``; its persistent number."""
        self.fts.append(ft)
        return self.first + len(self.fts) - 1

    def write(self) -> None:
        """Write the trials kept, in one transaction. They are let go first: a write interrupted
        (Ctrl-C inside it) is not tried again, so its trials end written or not, never twice."""
        fts, self.fts = self.fts, []
        if not fts:
            return
        shift = self.mirror.write_batch(fts, self.first)
        if shift:
            self.cache.renumber(self.first, shift)
            self.shifted = True
        self.first += shift + len(fts)

    def write_ahead(self) -> None:
        """The driver is about to wait for a result computed elsewhere: write what is kept now
        (once there are ``WRITE_AHEAD_MIN_TRIALS``), rather than all of it once the batch is told,
        while every worker waits for the next batch (a transaction costs ~1.2 ms + 0.26 ms per
        trial on SQLite)."""
        if len(self.fts) >= WRITE_AHEAD_MIN_TRIALS:
            self.write()


def _progress(enabled: bool, total: int, initial: int, name: str):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, unit="trial", desc=name, dynamic_ncols=True, smoothing=0.1)
