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

import hashlib
import json
import math
import os
import sys
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
    try:
        return Outcome(metrics=fn(design, models))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # a model bug: the trial fails with the error recorded, the study goes on
        return Outcome(error=traceback.format_exception_only(type(exc), exc)[-1].strip())


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
    """Process workers (joblib's loky executor, reused across batches); ``jobs == 1`` evaluates
    in this process, lazily, when the result is asked for. ``jobs == -1``: every core."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.executor = None

    def submit(self, fn: Evaluator, design: Mapping[str, Any], models: Sequence[str]):
        """Start evaluating a design; returns a handle for ``result``."""
        if self.jobs == 1:
            return (fn, design, models)
        if self.executor is None:
            from joblib.externals.loky import get_reusable_executor
            n = self.jobs if self.jobs > 0 else None
            self.executor = get_reusable_executor(max_workers=n, timeout=WORKER_IDLE_TIMEOUT_S,
                                                  initializer=_exit_with_driver, initargs=(os.getpid(),))
        return self.executor.submit(safe_evaluate, fn, dict(design), tuple(models))

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
        self.executor = None   # the reusable executor stays warm for the next run in this process


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


def make_pool(jobs: int, backend: str = "loky", scheduler: str | None = None):
    """The evaluation pool of a run: loky processes (``EvaluationPool``) or a dask.distributed
    cluster (``dask_pool.DaskPool``, same interface)."""
    if backend == "dask":
        from dse.search.dask_pool import DaskPool
        return DaskPool(safe_evaluate, scheduler=scheduler, workers=jobs)
    return EvaluationPool(jobs)
