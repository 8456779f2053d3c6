"""The evaluation pool's worker processes: started, reused across runs, stopped at exit.

loky's executors (joblib's, as its own package): ``solo_executors`` (one worker each, for the
affinity pool of ``dse run``) and ``shared_executor`` (one queue for several workers, ``dse
worker``), reused across batches and runs in this process. ``prestart`` starts the solo workers
before their pool exists (``dse run``, as soon as its study is read). A worker exits with its
driver (``dse.lifetime.exit_with_parent``) and raises loky's leak threshold
(``evaluation.keep_worker_caches``); ``release_workers`` lets them go when a run is over and
``stop_workers``, registered at exit, waits for them (each finishes the task it runs).
"""
from __future__ import annotations

import os
import threading

from dse.search.execute.evaluation import keep_worker_caches

WORKER_IDLE_TIMEOUT_S = 300        # an idle loky worker exits after this long


def worker_started() -> None:
    """A worker's first task, empty (``EvaluationPool._start_workers``, ``prestart``)."""


def _exit_with_driver(driver_pid: int) -> None:
    """Pool initializer: the worker exits within a second of its driver's death, even a kill -9
    (``dse.lifetime.exit_with_parent``)."""
    from dse.lifetime import exit_with_parent
    exit_with_parent(driver_pid)
    keep_worker_caches()


_SOLO: list = []                  # this process's single-worker executors, reused across runs
_STARTING: dict = {}              # a _SOLO executor -> its first, empty task (``prestart``)
_SHARED: list = []                # loky's reusable executor, once this process started it
_RELEASED: list = []              # threads stopping executors (``_stop_later``), joined at exit


def stop_workers() -> None:
    """Stop this process's evaluation workers and wait until they are gone (each finishes the
    task it runs; tasks not started were cancelled by ``EvaluationPool.close``). Registered at
    exit (the interpreter is still whole then: dropped later, during its teardown, loky's
    clean-up reports an ignored exception); a later ``submit`` starts new workers. Not killed:
    a worker killed at exit left loky's resource tracker a semaphore to report as leaked (2 of
    12 runs of an NSGA-II study with --jobs 2)."""
    for ex in _SOLO + _SHARED:
        ex.shutdown(wait=True)
    for stopping in _RELEASED:
        stopping.join()
    _SOLO.clear()
    _SHARED.clear()
    _RELEASED.clear()
    _STARTING.clear()


def release_workers() -> None:
    """Stop this process's evaluation workers (each finishes the task it runs) without waiting:
    ``_stop_later``, joined at exit. `dse run` calls it when its run is over, so that its worker
    exits while it prints the summary. A later ``submit`` starts new workers.

    Not ``shutdown(wait=False)``: loky then forgets the executor's manager thread, so a later
    ``shutdown(wait=True)`` no longer joins it. The thread (not a daemon) was still alive at
    exit, so ``lifetime.exit_now`` took the interpreter's normal exit, which waited for it and
    freed the run's caches object by object: `dse run --jobs 2` of ``bench_search.py``'s study
    ended 0.4-0.5 s after its last exit handler, against 0.1 s with ``--jobs 1``."""
    for ex in _SOLO + _SHARED:
        _stop_later(ex)
    _SOLO.clear()
    _SHARED.clear()
    _STARTING.clear()


def _stop_later(ex) -> None:
    """Shut ``ex`` down, waiting, in a thread ``stop_workers`` joins (``release_workers``)."""
    stopping = threading.Thread(target=ex.shutdown, name="dse-stop-workers", daemon=True)
    stopping.start()
    _RELEASED.append(stopping)


def _register_stop() -> None:
    if not (_SOLO or _SHARED or _RELEASED):
        import atexit

        from dse.lifetime import stop_first_at_exit
        atexit.unregister(stop_workers)
        atexit.register(stop_workers)
        stop_first_at_exit(stop_workers)


def _new_executor():
    from loky import ProcessPoolExecutor
    return ProcessPoolExecutor(max_workers=1, timeout=WORKER_IDLE_TIMEOUT_S,
                               initializer=_exit_with_driver, initargs=(os.getpid(),))


def submit_solo(executors: list, i: int, fn, *args):
    """Submit to worker ``i``'s executor; one that broke (a killed worker) is replaced first."""
    try:
        return executors[i].submit(fn, *args)
    except RuntimeError:
        _STARTING.pop(_SOLO[i], None)
        _stop_later(_SOLO[i])         # broken (a killed worker): its manager thread is joined at exit
        executors[i] = _SOLO[i] = _new_executor()
        return executors[i].submit(fn, *args)


def prestart(jobs: int) -> None:
    """Start the workers of an affinity pool of ``jobs`` slots (``jobs - 1`` processes) now, each
    on its first, empty task, which the pool's ``_start_workers`` then waits for instead of
    submitting its own. ``dse run`` calls it as soon as its study file is read: a worker's start
    (a Python process importing dse and numpy, ~0.3 s of CPU) then overlaps the driver's own
    imports and storage opening, while the second core would idle, instead of the first
    evaluations. Measured on ``bench_search.py``'s study with ``--jobs 2``: the worker process
    starts 0.33 s into the run instead of 0.67 s and evaluates from 0.66 s instead of 0.93 s (the
    driver from 0.76-0.81 s); the run's wall time moved by less than the host's noise (11
    alternated pairs: 3.22 s mean against 3.28 s), since the driver asks its first designs only
    once its storage is open."""
    n = jobs if jobs > 0 else (os.cpu_count() or 1)
    if n <= 1:
        return
    for ex in solo_executors(n - 1):
        if ex not in _STARTING:
            _STARTING[ex] = ex.submit(worker_started)


def shared_executor(n: int):
    """loky's reusable executor of ``n`` workers sharing one queue (the same one across runs)."""
    from loky import get_reusable_executor
    _register_stop()
    ex = get_reusable_executor(max_workers=n, timeout=WORKER_IDLE_TIMEOUT_S,
                               initializer=_exit_with_driver, initargs=(os.getpid(),))
    _SHARED[:] = [ex]
    return ex


def solo_executors(n: int) -> list:
    """``n`` single-worker executors: those this process already started, plus new ones."""
    _register_stop()
    while len(_SOLO) < n:
        _SOLO.append(_new_executor())
    return _SOLO[:n]


def first_task(executor):
    """The first, empty task ``prestart`` gave ``executor`` (taken: asked once), or None."""
    return _STARTING.pop(executor, None)
