"""Evaluating designs: the evaluation itself, the design key, and a pool of worker processes.

``evaluate_design`` runs in worker processes; it returns ``{model: metrics}`` (JSON-able). A
model bug does not stop a study: ``safe_evaluate`` turns the exception into a failed
``Outcome`` carrying the error line.

``EvaluationPool`` fans evaluations out to joblib's loky executor (reused across batches and
runs); ``jobs == 1`` evaluates in this process, lazily, when the result is asked for.

loky restarts a worker whose memory grew by more than 300 MB since its first task (when psutil
is installed), taking the growth for a leak. The model's per-process caches (synthetic traces,
placements, per-placement unit layouts) are deliberate and bounded, and a restart rebuilds them
(it never changes a result, only costs time: enough to make ``--jobs 2`` no faster than
``--jobs 1``). Each worker therefore raises that threshold to ``WORKER_MEMORY_GROWTH_MAX`` when it
starts (``keep_worker_caches``: loky offers no public setting, so its module constant is set
there and only there; ``tests/search/test_evaluation.py`` fails if loky drops it).
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from dse.errors import ConfigError

if TYPE_CHECKING:
    from dse.search.study import StudyConfig

Evaluator = Callable[[Mapping[str, Any], Sequence[str]], dict[str, dict[str, Any]]]
WORKER_IDLE_TIMEOUT_S = 300        # an idle loky worker exits after this long
WORKER_MEMORY_GROWTH_MAX = 4 << 30  # a loky worker growing more than this is replaced (a leak)
# The driver's GIL switch interval while evaluations run in other processes (Python's default is
# 5 ms). loky hands a submitted design to a worker, and a result back, through threads of the
# driver; while the driver's main thread asks or tells (pure Python), each hand-over waits for
# the GIL. Measured on 2 cores, a task submitted while the main thread computes for 20 ms reached
# its worker after 9.7 ms (median) at 5 ms and 2.6 ms at 0.5 ms: workers idled at every batch start.
DISPATCH_SWITCH_INTERVAL_S = 0.0005


@dataclass(frozen=True)
class Outcome:
    """The result of evaluating one design: ``metrics`` (``{model: metrics}``) or ``error``."""
    metrics: dict[str, dict[str, Any]] | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.metrics is not None


def evaluate_design(design: Mapping[str, Any], models: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Evaluate one design on every model: ``{model: metrics}`` (JSON-able). A knob combination
    the spec rejects is an infeasible result, not an error."""
    from dse.pipeline.evaluate import evaluate
    from dse.spec import DesignPoint
    out: dict[str, dict[str, Any]] = {}
    for m in models:
        try:
            pt = DesignPoint.from_dict({**design, "model": m})
        except ConfigError as exc:
            out[m] = {"feasible": False, "infeasible_reason": f"invalid design: {exc}"}
            continue
        out[m] = jsonable(evaluate(pt).metrics)
    return out


def safe_evaluate(fn: Evaluator, design: Mapping[str, Any], models: Sequence[str]) -> Outcome:
    """``fn(design, models)`` as an ``Outcome``; an exception becomes a failed outcome."""
    if not _PROCESS_TUNED:
        _tune_process()
    try:
        return Outcome(metrics=fn(design, models))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # a model bug: the trial fails with the error recorded, the study goes on
        return Outcome(error=traceback.format_exception_only(type(exc), exc)[-1].strip())


# glibc hands an allocation above its mmap threshold to the kernel, and frees it back at once:
# every such numpy temporary of an evaluation (the schedule's per-step arrays, 1-30 MB) is then
# fresh memory, which the kernel zeroes at first touch (huge pages where numpy asks for them). A
# trace-driven evaluation spent 12-19 % of its CPU zeroing pages (perf, bench_search.py's study),
# more in two processes at once (they share the memory bus). Above these thresholds a process
# keeps what it frees for its next allocations instead: measured in one process on 200 of that
# study's designs, page faults 167k -> 113k and 15.2-15.7 -> 14.2-14.8 ms per design.
MALLOC_MMAP_THRESHOLD_BYTES = 32 << 20     # glibc's largest allowed value on 64-bit systems
MALLOC_TRIM_THRESHOLD_BYTES = 1 << 30      # free memory at the heap top kept up to this much
_PROCESS_TUNED = False


def _tune_process() -> None:
    """Once per evaluating process, from its first evaluation: freed memory kept for reuse, no
    numpy huge pages (both below)."""
    global _PROCESS_TUNED
    _PROCESS_TUNED = True
    keep_freed_memory()
    skip_huge_pages()


def keep_freed_memory() -> bool:
    """In this process, let glibc's malloc keep freed memory for reuse (the thresholds above).
    False where the C library is not glibc."""
    import ctypes
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3          # glibc's <malloc.h> parameter numbers
    return bool(mallopt(m_mmap_threshold, MALLOC_MMAP_THRESHOLD_BYTES)) and \
        bool(mallopt(m_trim_threshold, MALLOC_TRIM_THRESHOLD_BYTES))


# numpy asks the kernel for transparent huge pages (madvise) on every array of 4 MB and more; each
# first touch of such memory then zeroes a whole 2 MB page. An evaluation's arrays of that size are
# short-lived temporaries and per-domain tables, for which huge pages buy nothing measurable while
# the zeroing costs: on bench_search.py's 644 designs in one process (2-core VM, THP "madvise"),
# 5.8-6.9 s of CPU (1.3-1.6 s system) with them against 5.2-5.9 s (0.5 s) without, same metrics.


def skip_huge_pages() -> bool:
    """In this process, stop numpy asking for transparent huge pages (``NUMPY_MADVISE_HUGEPAGE=0``,
    which numpy reads only when imported, set after the import). False where numpy has no such
    switch."""
    import numpy as np
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None:
        return False
    switch(False)
    return True


def jsonable(m: Mapping[str, Any]) -> dict[str, Any]:
    """Metrics as plain JSON values (numpy scalars unwrapped, non-finite floats as None)."""
    out: dict[str, Any] = {}
    for k, v in m.items():
        if hasattr(v, "item") and callable(v.item):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        if isinstance(v, (list, tuple)):
            v = [x.item() if hasattr(x, "item") else x for x in v]
        if v is None or isinstance(v, (bool, int, float, str, list, dict)):
            out[k] = v
    return out


def design_key(cfg: "StudyConfig", design: Mapping[str, Any]) -> str:
    """Digest of a design: knobs resolved (derived PE groups filled), model excluded."""
    from dse.spec import DesignPoint, default_pe_groups
    try:
        d = DesignPoint.from_dict({**design, "model": cfg.models[0]}).to_dict()
        d["pe_groups_per_core"] = d["pe_groups_per_core"] or default_pe_groups(d["core_side"])
        d.pop("model")
    except ConfigError:
        d = dict(design)
    blob = json.dumps(d, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]

def _exit_with_driver(driver_pid: int) -> None:
    """Pool initializer: the worker exits within a second of its driver's death, even a kill -9
    (``dse.lifetime.exit_with_parent``)."""
    from dse.lifetime import exit_with_parent
    exit_with_parent(driver_pid)
    keep_worker_caches()


def keep_worker_caches(max_growth_bytes: int = WORKER_MEMORY_GROWTH_MAX) -> bool:
    """In a loky worker: let its memory grow by ``max_growth_bytes`` past its first task before
    loky takes the growth for a leak and replaces the worker (loky's own threshold, 300 MB, is
    below what the model's bounded per-process caches legitimately hold, so workers were replaced
    every few dozen evaluations and each replacement reloaded its traces and recomputed its
    placements: the --jobs 2 run was no faster than --jobs 1). loky has no public setting for it;
    its module constant is set here, in the worker, and nowhere else. False if loky has no such
    constant (then its default stays)."""
    from joblib.externals.loky import process_executor
    if not isinstance(getattr(process_executor, "_MAX_MEMORY_LEAK_SIZE", None), int):
        return False
    process_executor._MAX_MEMORY_LEAK_SIZE = int(max_growth_bytes)
    return True



class EvaluationPool:
    """Process workers (joblib's loky executor, reused across batches and runs); ``jobs == 1``
    evaluates in this process, lazily, when the result is asked for. ``jobs == -1``: every core.

    Without ``affinity`` the workers share one queue: each takes the next design when it is free
    (best where the driver waits for a whole batch: no worker idles while another has designs
    queued). With ``affinity`` (a run whose next batch is queued behind the current one) each
    worker is a single-process executor of its own, and designs of one ``group``
    (``warm.domain_key``: one scheduling domain and placement) go to the same worker while its
    queue is at most ``AFFINITY_MARGIN`` tasks longer than the shortest one, else to the worker
    with the shortest queue. A worker's caches (placement, unit
    layout and per-tile-width job tables: ~5-20 MB and ~10 ms per domain) then serve the
    group's later designs instead of being rebuilt in every worker: measured on the 644 designs
    of ``bench_search.py``'s study split between two processes by domain, 10.1-10.5 s of CPU
    against 12.6 s split in turn (one process: 11.3-11.5 s)."""

    def __init__(self, jobs: int, affinity: bool = False):
        self.jobs, self.affinity = jobs, affinity
        self.executor = None          # kept for callers that test it (None: no worker started)
        self.owner: dict[Any, int] = {}
        self.queued: list[int] = []   # tasks handed to each worker and not finished
        self.owned: list[int] = []
        self.handles: set = set()     # those tasks
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
            self.owned = [0] * len(self.executor)     # groups each worker owns
        i = self._pick(group) if self.affinity else 0
        try:
            handle = self.executor[i].submit(safe_evaluate, fn, dict(design), tuple(models))
        except RuntimeError:          # that executor broke (a killed worker): a new one
            if self.affinity:
                _SOLO[i].shutdown(wait=False)
                self.executor[i] = _SOLO[i] = _new_executor()
            else:
                self.executor[i] = _shared_executor(n)
            handle = self.executor[i].submit(safe_evaluate, fn, dict(design), tuple(models))
        with self.lock:
            self.queued[i] += 1
            self.handles.add(handle)
        handle.add_done_callback(functools.partial(self._done, i))
        return handle

    def _pick(self, group: Any) -> int:
        """The worker for a task of ``group``: its owner unless that queue is too long, else (and
        for a new group, which it then owns) the shortest queue, ties to the fewest groups owned."""
        with self.lock:
            least = min(range(len(self.queued)), key=lambda j: (self.queued[j], self.owned[j]))
            if group is None:
                return least
            if group not in self.owner:
                self.owner[group] = least
                self.owned[least] += 1
            mine = self.owner[group]
            return mine if self.queued[mine] - self.queued[least] <= AFFINITY_MARGIN else least

    def _done(self, i: int, handle) -> None:
        with self.lock:
            self.queued[i] -= 1
            self.handles.discard(handle)

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
            handles = list(self.handles)
        for handle in handles:
            handle.cancel()
        self.executor = None


AFFINITY_MARGIN = 2
_SOLO: list = []                  # this process's single-worker executors, reused across runs


def _new_executor():
    from joblib.externals.loky import ProcessPoolExecutor
    return ProcessPoolExecutor(max_workers=1, timeout=WORKER_IDLE_TIMEOUT_S,
                               initializer=_exit_with_driver, initargs=(os.getpid(),))


_SHARED: list = []                # loky's reusable executor, once this process started it


def stop_workers() -> None:
    """Stop this process's evaluation workers now, without letting them finish a task or tidy
    up (they hold only caches: every result they sent is already told), and wait until they
    are gone. Registered at exit (the interpreter is still whole then: dropped later, during
    its teardown, loky's clean-up reports an ignored exception); a later ``submit`` starts new
    workers."""
    for ex in _SOLO + _SHARED:
        ex.shutdown(wait=True, kill_workers=True)
    _SOLO.clear()
    _SHARED.clear()


def _register_stop() -> None:
    if not (_SOLO or _SHARED):
        import atexit
        from dse.lifetime import stop_first_at_exit
        atexit.unregister(stop_workers)
        atexit.register(stop_workers)
        stop_first_at_exit(stop_workers)


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
