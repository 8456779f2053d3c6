"""Evaluating designs: the evaluation itself, the design key, and what a worker process sets.

``evaluate_design`` runs in worker processes; it returns ``{model: metrics}`` (JSON-able). A
model bug does not stop a study: ``safe_evaluate`` turns the exception into a failed
``Outcome`` carrying the error line.

The pool of worker processes that runs them is ``dse.search.execute.pool``.

loky restarts a worker whose memory grew by more than 300 MB since its first task (when psutil
is installed), taking the growth for a leak. The model's per-process caches (synthetic traces,
placements, per-placement unit layouts) are deliberate and bounded, and a restart rebuilds them
(it never changes a result, only costs time: enough to make ``--jobs 2`` no faster than
``--jobs 1``). Each worker therefore raises that threshold to ``WORKER_MEMORY_GROWTH_MAX`` when it
starts (``keep_worker_caches``: loky offers no public setting, so its module constant is set
there and only there; ``tests/search/execute/test_evaluation.py`` fails if loky drops it).
"""
from __future__ import annotations

import hashlib
import json
import math
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dse.errors import ConfigError

if TYPE_CHECKING:
    from dse.search.study.study import StudyConfig

Evaluator = Callable[[Mapping[str, Any], Sequence[str]], dict[str, dict[str, Any]]]
WORKER_MEMORY_GROWTH_MAX = 4 << 30  # a loky worker growing more than this is replaced (a leak)


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
        t = type(v)
        if t is float:                          # most metrics: the checks below, decided at once
            out[k] = v if math.isfinite(v) else None
            continue
        if v is None or t is int or t is bool or t is str:
            out[k] = v
            continue
        if hasattr(v, "item") and callable(v.item):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        if isinstance(v, (list, tuple)):
            v = [x.item() if hasattr(x, "item") else x for x in v]
        if v is None or isinstance(v, (bool, int, float, str, list, dict)):
            out[k] = v
    return out


def design_key(cfg: StudyConfig, design: Mapping[str, Any]) -> str:
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


def keep_worker_caches(max_growth_bytes: int = WORKER_MEMORY_GROWTH_MAX) -> bool:
    """In a loky worker: let its memory grow by ``max_growth_bytes`` past its first task before
    loky takes the growth for a leak and replaces the worker (loky's own threshold, 300 MB, is
    below what the model's bounded per-process caches legitimately hold, so workers were replaced
    every few dozen evaluations and each replacement reloaded its traces and recomputed its
    placements: the --jobs 2 run was no faster than --jobs 1). loky has no public setting for it;
    its module constant is set here, in the worker, and nowhere else. False if loky has no such
    constant (then its default stays)."""
    from loky import process_executor
    if not isinstance(getattr(process_executor, "_MAX_MEMORY_LEAK_SIZE", None), int):
        return False
    process_executor._MAX_MEMORY_LEAK_SIZE = int(max_growth_bytes)
    return True
