"""The pool of worker processes that evaluates designs (``EvaluationPool``, ``make_pool``).

``EvaluationPool`` fans evaluations out to joblib's loky executor (reused across batches and
runs); ``jobs == 1`` evaluates in this process, lazily, when the result is asked for. With
``affinity`` each worker is an executor of its own, and the pool hands it designs of the groups
(scheduling domains) it owns as it frees up (see the class). A worker exits with its driver
(``dse.lifetime.exit_with_parent``) and raises loky's leak threshold
(``evaluation.keep_worker_caches``); at exit the workers are stopped (``stop_workers``: each
finishes the design it runs) before the exit handlers that would wait for them.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import deque
from concurrent.futures import CancelledError, Future
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

from dse.search.evaluation import Evaluator, Outcome, keep_worker_caches, safe_evaluate

WORKER_IDLE_TIMEOUT_S = 300        # an idle loky worker exits after this long
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


def _exit_with_driver(driver_pid: int) -> None:
    """Pool initializer: the worker exits within a second of its driver's death, even a kill -9
    (``dse.lifetime.exit_with_parent``)."""
    from dse.lifetime import exit_with_parent
    exit_with_parent(driver_pid)
    keep_worker_caches()


class EvaluationPool:
    """Process workers (joblib's loky executor, reused across batches and runs); ``jobs == 1``
    evaluates in this process, lazily, when the result is asked for. ``jobs == -1``: every core.

    Without ``affinity`` (``dse worker``) the workers share one queue: each takes the next design
    when it is free. With ``affinity`` (``dse run``, any sampler) each worker is a
    single-process executor of its own, and a group (``warm.domain_key``: one
    scheduling domain and placement) is owned by the worker that first takes one of its
    designs. Submitted designs wait in the pool; whenever a worker holds fewer than
    ``AFFINITY_DEPTH`` designs it takes, in order of preference, the oldest pending design of a
    group it owns, of a group nobody owns yet (which it then owns), or, when it has nothing left
    to run, the oldest pending design whose owner is full (stolen: no worker idles while designs
    wait, and none warms a group's caches while it still has work of its own). A worker's caches
    (placement, unit layout and per-tile-width job tables: ~5-20 MB and ~10 ms per domain) then
    serve the group's later designs instead of being rebuilt in every worker.

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
        self.waiting: deque = deque()  # (future, fn, design, models, group) not handed to a worker
        self.handles: dict = {}       # future -> the loky future it runs as (None: waiting)
        self.lock = threading.Lock()

    def submit(self, fn: Evaluator, design: Mapping[str, Any], models: Sequence[str], group: Any = None):
        """Start evaluating a design (on ``group``'s worker, see the class); returns a handle
        for ``result``."""
        if self.jobs == 1:
            return (fn, design, models)
        n = self.jobs if self.jobs > 0 else (os.cpu_count() or 1)
        if self.executor is None:
            self.executor = _solo_executors(n) if self.affinity else [_shared_executor(n)]
            self.queued = [0] * len(self.executor)
            self.owned = [0] * len(self.executor)
        if not self.affinity:
            try:
                handle = self.executor[0].submit(safe_evaluate, fn, dict(design), tuple(models))
            except RuntimeError:      # the executor broke (a killed worker): a new one
                self.executor[0] = _shared_executor(n)
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

    def _forget(self, handle) -> None:
        with self.lock:
            self.handles.pop(handle, None)

    def _assign(self) -> list[tuple[int, tuple]]:
        """Under the lock: hand waiting designs to the workers with room (see the class); the
        (worker, task) pairs to submit."""
        out = []
        while self.waiting:
            room = [i for i in range(len(self.queued)) if self.queued[i] < AFFINITY_DEPTH]
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

    def _choose(self, i: int) -> tuple[int, int] | None:
        """The waiting design worker ``i`` takes: (i, index), or None."""
        new = stolen = None
        for k, task in enumerate(self.waiting):
            group = task[4]
            owner = self.owner.get(group)
            if group is not None and owner == i:
                return i, k
            if new is None and (group is None or owner is None):
                new = k
            if stolen is None and owner is not None and self.queued[i] == 0 and self.queued[owner] >= AFFINITY_DEPTH:
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
            try:
                inner = executors[i].submit(safe_evaluate, fn, design, models)
            except RuntimeError:      # that executor broke (a killed worker): a new one
                _SOLO[i].shutdown(wait=False)
                executors[i] = _SOLO[i] = _new_executor()
                inner = executors[i].submit(safe_evaluate, fn, design, models)
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
        """The outcome of a submitted evaluation (waits for it)."""
        if isinstance(handle, tuple):
            return safe_evaluate(*handle)
        try:
            return handle.result()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # a worker died (killed, out of memory): the run stops, trials re-queued
            from dse.errors import DSEError
            raise DSEError(f"an evaluation worker died ({type(exc).__name__}: {exc}); "
                           f"re-run the same command to resume") from None

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


_SOLO: list = []                  # this process's single-worker executors, reused across runs
_SHARED: list = []                # loky's reusable executor, once this process started it


def stop_workers() -> None:
    """Stop this process's evaluation workers and wait until they are gone (each finishes the
    task it runs; tasks not started were cancelled by ``EvaluationPool.close``). Registered at
    exit (the interpreter is still whole then: dropped later, during its teardown, loky's
    clean-up reports an ignored exception); a later ``submit`` starts new workers. Not killed:
    a worker killed at exit left loky's resource tracker a semaphore to report as leaked (2 of
    12 runs of an NSGA-II study with --jobs 2)."""
    for ex in _SOLO + _SHARED:
        ex.shutdown(wait=True)
    _SOLO.clear()
    _SHARED.clear()


def _register_stop() -> None:
    if not (_SOLO or _SHARED):
        import atexit
        from dse.lifetime import stop_first_at_exit
        atexit.unregister(stop_workers)
        atexit.register(stop_workers)
        stop_first_at_exit(stop_workers)


def _new_executor():
    from joblib.externals.loky import ProcessPoolExecutor
    return ProcessPoolExecutor(max_workers=1, timeout=WORKER_IDLE_TIMEOUT_S,
                               initializer=_exit_with_driver, initargs=(os.getpid(),))


def _shared_executor(n: int):
    """loky's reusable executor of ``n`` workers sharing one queue (the same one across runs)."""
    from joblib.externals.loky import get_reusable_executor
    _register_stop()
    ex = get_reusable_executor(max_workers=n, timeout=WORKER_IDLE_TIMEOUT_S,
                               initializer=_exit_with_driver, initargs=(os.getpid(),))
    _SHARED[:] = [ex]
    return ex


def _solo_executors(n: int) -> list:
    """``n`` single-worker executors: those this process already started, plus new ones."""
    _register_stop()
    while len(_SOLO) < n:
        _SOLO.append(_new_executor())
    return _SOLO[:n]


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


def make_pool(jobs: int, backend: str = "loky", scheduler: str | None = None, affinity: bool = False):
    """The evaluation pool of a run: loky processes (``EvaluationPool``, ``affinity`` as there)
    or a dask.distributed cluster (``dask_pool.DaskPool``, same interface)."""
    if backend == "dask":
        from dse.search.dask_pool import DaskPool
        return DaskPool(safe_evaluate, scheduler=scheduler, workers=jobs)
    return EvaluationPool(jobs, affinity)
