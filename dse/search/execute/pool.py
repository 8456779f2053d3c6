"""The pool of worker processes that evaluates designs (``EvaluationPool``, ``make_pool``).

``EvaluationPool`` fans evaluations out to loky's executor (joblib's, as its own package: its
resource tracker and workers start without importing joblib; reused across batches and
runs); ``jobs == 1`` evaluates in this process, lazily, when the result is asked for. With
``affinity`` each worker is an executor of its own, the pool hands it designs of the groups
(scheduling domains) it owns as it frees up, and this process is one of the ``jobs``: it
evaluates designs itself whenever it would wait for a result (see the class). The worker
processes themselves (started, reused across runs, stopped at exit) are ``dse.search.execute.workers``.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError, Future
from contextlib import contextmanager
from typing import Any

from dse.search.execute.evaluation import Evaluator, Outcome, safe_evaluate
from dse.search.execute.workers import first_task, shared_executor, solo_executors, submit_solo, worker_started

# Designs handed to one worker and not finished (the one it runs and those queued behind it):
# enough that a worker never waits for the driver between two designs (a design is handed over
# from a thread of the driver, which waits up to 5 ms for the GIL while the driver asks or
# tells; designs take 5-10 ms), few enough that the pool still chooses, as each worker frees
# up, which pending design it takes. Idle gaps per worker on bench_search's study: 0.61-0.88 s
# with 2, 0.42-0.61 s with 3 (four runs each).
AFFINITY_DEPTH = 3
# The driver's GIL switch interval while evaluations run in other processes (Python's default is
# 5 ms). loky hands a submitted design to a worker, and a result back, through threads of the
# driver; while the driver's main thread asks or tells (pure Python), each hand-over waits for
# the GIL. Measured on 2 cores, a task submitted while the main thread computes for 20 ms reached
# its worker after 9.7 ms (median) at 5 ms and 2.6 ms at 0.5 ms: workers idled at every batch start.
DISPATCH_SWITCH_INTERVAL_S = 0.0005


class EvaluationPool:
    """Process workers (loky's executor, reused across batches and runs); ``jobs == 1``
    evaluates in this process, lazily, when the result is asked for. ``jobs == -1``: every core.

    Without ``affinity`` (``dse worker``) the workers share one queue: each takes the next design
    when it is free. With ``affinity`` (``dse run``, any sampler) the pool has ``jobs`` slots:
    ``jobs - 1`` workers, each a single-process executor of its own, and this process (``here``,
    the last slot). A group (``warm.domain_key``: one scheduling domain and placement) is owned
    by the slot that first takes one of its designs. Submitted designs wait in the pool; whenever
    a worker holds fewer than ``AFFINITY_DEPTH`` designs it takes, in order of preference, the
    oldest pending design of a group it owns, of a group nobody owns yet (which it then owns),
    or, when it has nothing left to run, the oldest pending design whose owner is full or is
    this process (stolen: no worker idles while designs wait, and none warms a group's caches
    while it still has work of its own). A slot's caches (placement, unit layout and
    per-tile-width job tables: ~5-20 MB and ~10 ms per domain) then serve the group's later
    designs instead of being rebuilt in every process.

    This process takes a design by the same rules, one at a time, only when it asks for a result
    that is not ready (``result``): it would otherwise wait, while it also asks, tells and writes
    trials. A worker holds no design until it has started (``_start_workers``). A design that
    kills its process (a segfault, the OOM killer) then ends the run if this process runs it, as
    with ``--jobs 1`` (the run resumes; in a worker it fails with one line). Before, ``jobs``
    workers and the driver shared ``jobs`` cores, and the driver's CPU (asking, telling, SQLite,
    loky's threads: about 1.7 s of bench_search's 768-trial study) took the cores from the
    workers: on 2 cores a design cost a worker 7.8-9.0 ms of wall time for 6.4-7.3 ms of CPU.
    Now the worker's designs take their CPU time (5.6-6.2 ms). ``dse run`` of that study with
    ``--jobs 2``, three alternated pairs: 4.55 / 4.90 / 5.10 s against 5.07 / 5.28 / 5.69 s,
    the span of the evaluations 3.35-3.77 s against 3.60-3.99 s; the same trials, row for row.

    Measured on the 644 designs of ``bench_search.py``'s study: handing each design to a worker
    when it is submitted (its owner unless that queue was 3 longer than the shortest) warmed 41
    of its 49 groups in both workers, and the designs took 8.3-8.7 ms each after their group's
    first, against 6.5 ms in one process. With a batch barrier (NSGA-II on that study, five
    alternated pairs) the affine pool spent 7.44-7.71 s of CPU against 7.77-8.56 s for one
    shared queue, and 5.53-5.86 s of wall time against 5.70-6.55 s."""

    def __init__(self, jobs: int, affinity: bool = False):
        self.jobs, self.affinity = jobs, affinity
        self.executor = None          # kept for callers that test it (None: no worker started)
        self.owner: dict[Any, int] = {}
        self.queued: list[int] = []   # designs handed to each worker and not finished
        self.owned: list[int] = []    # groups each worker owns
        self.started: list[bool] = []   # each worker's empty first task is back
        self.calls: list[int] = []    # of ``queued``: ``submit_call`` tasks (not designs)
        self.waiting: deque = deque()  # (future, fn, design, models, group) not handed to a worker
        self.handles: dict = {}       # future -> the loky future it runs as (None: waiting)
        self.lock = threading.Lock()
        self.here: int | None = None  # this process's slot (affinity and jobs > 1: the last one)

    def submit(self, fn: Evaluator, design: Mapping[str, Any], models: Sequence[str], group: Any = None):
        """Start evaluating a design (on ``group``'s worker, see the class); returns a handle
        for ``result``."""
        if self.jobs == 1:
            return (fn, design, models)
        n = self.jobs if self.jobs > 0 else (os.cpu_count() or 1)
        if self.executor is None:
            if self.affinity and n > 1:       # n - 1 workers, and this process evaluates too
                self.executor = solo_executors(n - 1) + [None]
                self.here = n - 1
            else:
                self.executor = solo_executors(n) if self.affinity else [shared_executor(n)]
            self.queued = [0] * len(self.executor)
            self.owned = [0] * len(self.executor)
            self.started = [False] * len(self.executor)
            self.calls = [0] * len(self.executor)
            if self.affinity:
                self._start_workers()
        if not self.affinity:
            try:
                handle = self.executor[0].submit(safe_evaluate, fn, dict(design), tuple(models))
            except RuntimeError:      # the executor broke (a killed worker): a new one
                self.executor[0] = shared_executor(n)
                handle = self.executor[0].submit(safe_evaluate, fn, dict(design), tuple(models))
            with self.lock:
                self.handles[handle] = handle
            handle.add_done_callback(self._forget)
            return handle
        future: Future = Future()
        with self.lock:
            self.waiting.append((future, fn, dict(design), tuple(models), group))
            self.handles[future] = None
        self._dispatch()
        return future

    def submit_call(self, fn, *args):
        """Run ``fn(*args)`` on an idle worker now (the guided sampler's plan at the batch barrier,
        ``estimate.offloading``): a future, or None when no started worker holds no design
        (``jobs == 1``, workers starting or busy: the caller computes it itself)."""
        if not self.affinity or self.here is None or self.executor is None:
            return None
        with self.lock:
            free = [i for i in range(len(self.executor)) if i != self.here and self.started[i]
                    and self.queued[i] == self.calls[i]]
            if not free:
                return None
            i = min(free, key=lambda j: (self.calls[j], j))
            self.queued[i] += 1
            self.calls[i] += 1
            executors = self.executor
        inner = submit_solo(executors, i, fn, *args)
        inner.add_done_callback(lambda _, i=i: self._call_done(i))
        return inner

    def _call_done(self, i: int) -> None:
        with self.lock:
            self.queued[i] -= 1
            self.calls[i] -= 1
        self._dispatch()

    def _start_workers(self) -> None:
        """Each worker's first task is an empty one: until it is back (the worker started, ~0.5 s),
        the worker counts as full, so designs wait for this process instead of behind it. A
        worker ``prestart`` started already has its first task under way: that one is waited for."""
        for i in range(len(self.executor)):
            if i != self.here:
                self.queued[i] += 1
                first = first_task(self.executor[i])
                if first is None:
                    first = submit_solo(self.executor, i, worker_started)
                first.add_done_callback(lambda _, i=i: self._up(i))

    def _up(self, i: int) -> None:
        with self.lock:
            self.queued[i] -= 1
            self.started[i] = True
        self._dispatch()

    def _forget(self, handle) -> None:
        with self.lock:
            self.handles.pop(handle, None)

    def _assign(self) -> list[tuple[int, tuple]]:
        """Under the lock: hand waiting designs to the workers with room (see the class); the
        (worker, task) pairs to submit."""
        out = []
        while self.waiting:
            room = [i for i in range(len(self.queued))        # this process takes its own (result)
                    if i != self.here and self.queued[i] < self._depth(i)]
            if not room:
                break
            pick = None
            for i in sorted(room, key=lambda j: (self.queued[j], self.owned[j], j)):
                pick = self._choose(i)
                if pick is not None:
                    break
            if pick is None:
                break
            i, k = pick
            task = self.waiting[k]
            del self.waiting[k]
            if task[0].set_running_or_notify_cancel():      # False: cancelled while it waited
                self.queued[i] += 1
                out.append((i, task))
        return out

    def _depth(self, i: int) -> int:
        """Tasks worker ``i`` may hold: only its empty first task until that is back
        (``_start_workers``), so it takes no design while it starts."""
        return AFFINITY_DEPTH if self.started[i] else 1

    def _choose(self, i: int) -> tuple[int, int] | None:
        """The waiting design slot ``i`` takes: (i, index), or None."""
        new = stolen = None
        for k, task in enumerate(self.waiting):
            group = task[4]
            owner = self.owner.get(group)
            if group is not None and owner == i:
                return i, k
            if new is None and (group is None or owner is None):
                new = k
            if stolen is None and owner is not None and self.queued[i] == 0 and \
                    (owner == self.here or self.queued[owner] >= self._depth(owner)):
                stolen = k
        k = new if new is not None else stolen
        if k is None:
            return None
        group = self.waiting[k][4]
        if group is not None and group not in self.owner:
            self.owner[group] = i
            self.owned[i] += 1
        return i, k

    def _dispatch(self) -> None:
        """Hand what can be handed to the workers (from the driver's thread, or loky's when a
        design finishes; submitted outside the lock)."""
        with self.lock:
            tasks, executors = self._assign(), self.executor   # close() may drop self.executor meanwhile
        for i, (future, fn, design, models, _) in tasks:
            inner = submit_solo(executors, i, safe_evaluate, fn, design, models)
            with self.lock:
                if future in self.handles:
                    self.handles[future] = inner
            inner.add_done_callback(lambda done, i=i, future=future: self._finished(i, future, done))

    def _finished(self, i: int, future: Future, inner) -> None:
        with self.lock:
            self.queued[i] -= 1
            self.handles.pop(future, None)
        if inner.cancelled():
            future.set_exception(CancelledError())
        elif inner.exception() is not None:
            future.set_exception(inner.exception())
        else:
            future.set_result(inner.result())
        self._dispatch()

    def pending(self, handle) -> bool:
        """True while another process still computes the evaluation (``result`` would wait);
        False in this process (``jobs == 1``: it is computed when asked for)."""
        return not isinstance(handle, tuple) and not handle.done()

    def result(self, handle) -> Outcome:
        """The outcome of a submitted evaluation (waits for it; with a slot of its own, this
        process evaluates the designs it takes meanwhile, see the class)."""
        if isinstance(handle, tuple):
            return safe_evaluate(*handle)
        while self.here is not None and not handle.done():
            task = self._take_here()
            if task is None:          # nothing this process may take: wait for the workers
                break
            self._run_here(task)
        try:
            return handle.result()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # a worker died (killed, out of memory): the run stops, trials re-queued
            from dse.errors import DSEError
            raise DSEError(f"an evaluation worker died ({type(exc).__name__}: {exc}); "
                           f"re-run the same command to resume") from None

    def _take_here(self) -> tuple | None:
        """The waiting design this process evaluates next (``_choose`` for its slot), or None."""
        with self.lock:
            while self.waiting and self.executor is not None:
                pick = self._choose(self.here)
                if pick is None:
                    return None
                task = self.waiting[pick[1]]
                del self.waiting[pick[1]]
                if task[0].set_running_or_notify_cancel():      # False: cancelled while it waited
                    self.queued[self.here] += 1
                    return task
        return None

    def _run_here(self, task) -> None:
        """Evaluate a design in this process; Ctrl-C (or SIGTERM, as the CLI maps it) fails its
        handle as cancelled and goes on up."""
        future, fn, design, models, _ = task
        try:
            outcome = safe_evaluate(fn, design, models)
        except BaseException:
            future.set_exception(CancelledError())
            raise
        finally:
            with self.lock:
                self.queued[self.here] -= 1
                self.handles.pop(future, None)
        future.set_result(outcome)

    def close(self) -> None:
        """Drop the tasks not started (a stopped run's batches asked ahead); the workers stay
        warm for the next run in this process."""
        with self.lock:
            waiting, self.waiting = list(self.waiting), deque()
            running = [inner for inner in self.handles.values() if inner is not None]
        for task in waiting:
            task[0].cancel()
        for inner in running:
            inner.cancel()
        self.executor = None


@contextmanager
def quick_dispatch(enabled: bool = True) -> Iterator[None]:
    """Within the block, this process hands the GIL over every ``DISPATCH_SWITCH_INTERVAL_S``
    (when ``enabled``: evaluations run in other processes), then as before."""
    before = sys.getswitchinterval()
    if enabled:
        sys.setswitchinterval(DISPATCH_SWITCH_INTERVAL_S)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def evaluate_all(fn: Evaluator, tasks: Sequence[tuple[Mapping[str, Any], Sequence[str]]], jobs: int,
                 group: Callable[[Mapping[str, Any]], Any] | None = None) -> list[dict]:
    """``fn(design, models)`` of every task, in task order, on an affinity pool of ``jobs`` slots
    (``make_pool``: loky workers, each group on one of them, which exit with this process and are
    stopped at its exit; this process evaluates too). ``group``: what a task's caches are keyed
    by (default ``warm.domain_key``, its scheduling domain; the re-evaluations under other
    workloads group by workload, whose trace each worker would else generate again). The
    re-evaluations of ``dse front --robust`` and ``dse report --robust`` run here. A failed
    evaluation stops them with its error line."""
    from dse.errors import DSEError
    from dse.search.execute.warm import domain_key
    key = group or domain_key
    pool = make_pool(jobs, affinity=True)
    try:
        handles = [pool.submit(fn, d, m, group=key(d)) for d, m in tasks]
        outcomes = [pool.result(h) for h in handles]
    finally:
        pool.close()
    for o in outcomes:
        if not o.ok:
            raise DSEError(f"a re-evaluated design failed: {o.error}")
    return [o.metrics for o in outcomes]


def run_many(jobs: int, group: Callable[[Mapping[str, Any]], Any] | None = None):
    """``evaluate_all`` on ``jobs`` slots (``group``: as there) as a ``run_many(fn, tasks)``
    callable (None for one job: the caller evaluates in its own process)."""
    if jobs == 1:
        return None
    import functools
    return functools.partial(evaluate_all, jobs=jobs, group=group)


def workload_key(design: Mapping[str, Any]) -> tuple:
    """What a design's workload is (its trace, seed and drawn constants): the group of a
    re-evaluation under another workload (``dse front --robust``), whose trace, profile and
    placements no other workload shares."""
    from dse.pipeline.uncertainty import CONSTANTS_KEY
    return tuple(str(design.get(k)) for k in ("trace", "trace_seed", "trace_steps", CONSTANTS_KEY))


def make_pool(jobs: int, backend: str = "loky", scheduler: str | None = None, affinity: bool = False):
    """The evaluation pool of a run: loky processes (``EvaluationPool``, ``affinity`` as there)
    or a dask.distributed cluster (``dask_pool.DaskPool``, same interface)."""
    if backend == "dask":
        from dse.search.execute.dask_pool import DaskPool
        return DaskPool(safe_evaluate, scheduler=scheduler, workers=jobs)
    return EvaluationPool(jobs, affinity)
