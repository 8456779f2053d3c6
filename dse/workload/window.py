"""Routing workloads ready for scheduling: the measured window of a trace and the profiling
window placement is computed from, with their in-process caches.

``trace = 'synthetic'``: a seeded synthetic trace of the design's model at its run-batch
(``trace_seed``, ``trace_steps``) and, for placement, a profiling run of ``profile_steps`` steps on
other requests (an independent synthetic trace, seed ``profile_seed(trace_seed)``), both generated
once per process. Profiling on the measured requests themselves would let a "semi-static"
placement see the future: the requests of a decode batch persist across steps.

A path: a ``.npz`` trace or an unconverted router dump (JSON / JSON lines), re-cut into decode
steps of the design's batch when that differs; its first ``profile_steps`` steps (at most half)
form the profiling window. Traces whose load array would exceed ``STREAM_BYTES`` are read chunk
by chunk straight from the file (bounded memory); smaller ones are cached in-process with their
loads.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from dse.catalog import MoEModel, get_model
from dse.errors import TraceError
from dse.units import MIB
from dse.workload.load import load_cached
from dse.workload.trace import TraceFile, TraceMeta, check_model, is_dump, loads

STREAM_BYTES = 32 * MIB           # traces whose load array exceeds this are streamed, not cached
CHUNK_STEPS = 64                  # steps per streamed chunk
LOAD_BYTES_PER_COUNT = 4          # the [steps, layers, E] load array holds int32 / float32 counts
SMALL_PROFILE_STEPS = 16          # profiling window of a streamed trace without profile_steps
MAX_WORKLOADS = 64                # workloads kept per process (an 8-model study needs 8 and more) ...
WORKLOAD_CACHE_BYTES = 512 * MIB  # ... within this many bytes of load and id arrays
PROFILE_SEED_MIX = 0x9E3779B9     # golden-ratio constant: decorrelates the profiling run's seed
SEED_MASK = 0xFFFFFFFF            # seeds are 32-bit

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A thread-safe LRU map holding at most ``limit`` entries and, with ``nbytes``, at most
    ``max_bytes`` of them (the newest entry is always kept)."""

    def __init__(self, limit: int, max_bytes: int | None = None, nbytes: Callable[[V], int] | None = None):
        self.limit, self.max_bytes, self._nbytes = limit, max_bytes, nbytes
        self._lock = threading.Lock()
        self._items: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    @property
    def bytes(self) -> int:
        return sum(self._sizes.values())

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            self._sizes[key] = int(self._nbytes(value)) if self._nbytes else 0
            while len(self._items) > self.limit or (
                    self.max_bytes is not None and len(self._items) > 1 and self.bytes > self.max_bytes):
                old, _ = self._items.popitem(last=False)
                self._sizes.pop(old, None)
        return value

    def touch(self, key: K) -> None:
        """Mark ``key`` the most recently used, as ``put`` would, without counting it again (its
        value has not changed)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._sizes.clear()

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        hit = self.get(key)
        return hit if hit is not None else self.put(key, make())


@dataclass
class Workload:
    """A routing workload ready for scheduling: measured loads and the profiling window."""
    key: tuple
    meta: TraceMeta                          # of the measured window
    source: str                              # 'synthetic' | 'trace'
    profile_load: np.ndarray                 # [L, E] mean tokens per step in the profiling window
    profile_ids: Any = field(repr=False)     # ids of the profiling window (for coactivation), or None
    load: np.ndarray | None = field(default=None, repr=False)   # [S, L, E] (None when streamed)
    reader: TraceFile | None = None          # streamed measured window
    start: int = 0                           # first measured step in the file (streamed)
    profile_steps_used: int = 0              # steps of the profiling window really used
    profile_window: str = "independent run"  # 'independent run' | 'trace prefix' | 'measured window'
    _coact: np.ndarray | None = field(default=None, repr=False)
    _profile_corr: float | None = field(default=None, repr=False)

    def chunks(self) -> Iterator[np.ndarray]:
        """Load chunks [steps, layers, E] of consecutive measured steps."""
        if self.load is not None:
            yield self.load
            return
        for ids in self.reader.chunks(CHUNK_STEPS, start=self.start):
            yield loads(ids, self.meta.n_experts)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays this workload keeps in memory (streamed windows: the profile only)."""
        arrays = (self.load, self.profile_ids, self.profile_load)
        return sum(int(a.nbytes) for a in arrays if isinstance(a, np.ndarray))

    def profile_correlation(self) -> float:
        """``profile_load_correlation`` of this workload: profiling-window mean loads against the
        measured window's mean loads (:func:`dse.workload.stats.load_correlation`), computed once."""
        if self._profile_corr is None:
            from dse.workload.stats import load_correlation
            total, steps = None, 0
            for c in self.chunks():
                part = c.sum(axis=0, dtype=np.float64)
                total = part if total is None else total + part
                steps += len(c)
            self._profile_corr = 0.0 if total is None else load_correlation(self.profile_load, total / steps)
        return self._profile_corr

    def coact(self) -> np.ndarray:
        """Mean co-firing tokens per step of every expert pair [L, E, E] (profiling window)."""
        if self._coact is None:
            ids = self.profile_ids
            s, L, B, k = ids.shape
            E = self.meta.n_experts
            i, j = np.triu_indices(k, 1)
            a, b = ids[..., i].astype(np.int64), ids[..., j].astype(np.int64)
            off = (np.arange(L, dtype=np.int64) * E * E)[None, :, None, None]
            c = np.bincount((a * E + b + off).ravel(), minlength=L * E * E).reshape(L, E, E).astype(np.float32)
            self._coact = (c + c.transpose(0, 2, 1)) / max(1, s)
        return self._coact


WORKLOADS: BoundedCache[tuple, Workload] = BoundedCache(MAX_WORKLOADS, WORKLOAD_CACHE_BYTES, lambda w: w.nbytes)


def _profile_of(ids: np.ndarray, n_experts: int) -> np.ndarray:
    return loads(ids, n_experts).mean(axis=0, dtype=np.float64)


def profile_seed(trace_seed: int) -> int:
    """Seed of the synthetic profiling run that goes with measured trace ``trace_seed``."""
    return (trace_seed ^ PROFILE_SEED_MIX) & SEED_MASK


def workload(point, model: MoEModel) -> Workload:
    """The (cached) workload of a design point whose ``trace`` is 'synthetic' or a path."""
    if point.trace == "synthetic":
        key = ("synthetic", model.name, point.run_batch, point.trace_steps, point.trace_seed, point.profile_steps)
        key += _drawn(model)
        return WORKLOADS.get_or_make(key, lambda: _synthetic(point, model, key))
    path = Path(point.trace)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TraceError(f"trace {point.trace}: no such file (trace = 'catalog', 'synthetic', a .npz trace "
                         f"or a router dump)") from None
    except OSError as exc:
        raise TraceError(f"trace {point.trace}: cannot read ({exc.strerror or exc})") from None
    key = ("file", str(path.resolve()), st.st_mtime_ns, st.st_size, model.name, point.run_batch, point.profile_steps)
    return WORKLOADS.get_or_make(key, lambda: _from_file(path, point, model, key))


def _drawn(model: MoEModel) -> tuple:
    """The model-uncertainty draw's workload terms (``dse.workload.campaign``): () at the nominal."""
    from dse.constants import C
    from dse.workload.campaign import skew_scale
    s, r = skew_scale(model), float(C.profile_load_correlation)
    return () if (s, r) == (1.0, 0.0) else (("skew_scale", s), ("profile_load_correlation", r))


def _synthetic(point, model: MoEModel, key: tuple) -> Workload:
    from dse.workload.campaign import mixed_profile, synthetic_trace
    B = point.run_batch
    drawn = dict(key[6:])
    scale = drawn.get("skew_scale", 1.0)
    tr = synthetic_trace(model, B, point.trace_steps, point.trace_seed, scale)
    if point.profile_steps:
        # The profiling run serves OTHER requests than the measured window (an independent
        # trace of the same model): semi-static placement cannot know which requests come.
        prof_ids = synthetic_trace(model, B, point.profile_steps, profile_seed(point.trace_seed), scale).experts
    else:
        prof_ids = tr.experts
    load = loads(tr.experts, model.experts)
    prof_load = _profile_of(prof_ids, model.experts)
    if drawn.get("profile_load_correlation", 0.0) > 0 and point.profile_steps:
        prof_load, _ = mixed_profile(prof_load, load.mean(axis=0, dtype=np.float64), drawn["profile_load_correlation"])
    return Workload(key, tr.meta, "synthetic", prof_load, prof_ids,
                    load=load, profile_steps_used=len(prof_ids),
                    profile_window="independent run" if point.profile_steps else "measured window")


def _from_file(path: Path, point, model: MoEModel, key: tuple) -> Workload:
    B = point.run_batch
    if not is_dump(path):
        tf = TraceFile(path)
        check_model(tf.meta, model.name)
        m = tf.meta
        big = m.steps * m.layers * m.n_experts * LOAD_BYTES_PER_COUNT > STREAM_BYTES
        if big and B == m.batch:
            n_prof = min(point.profile_steps, m.steps // 2)
            prof_ids = tf.load(0, n_prof).experts if n_prof else tf.load(0, min(m.steps, SMALL_PROFILE_STEPS)).experts
            meas = TraceMeta(m.model, m.batch, m.steps - n_prof, m.layers, m.top_k, m.n_experts, m.source, m.path)
            return Workload(key, meas, "trace", _profile_of(prof_ids, m.n_experts), prof_ids, reader=tf, start=n_prof,
                            profile_steps_used=len(prof_ids), profile_window=_window_name(n_prof))
    tr = load_cached(path, model=model.name, batch=B)
    n_prof = min(point.profile_steps, tr.meta.steps // 2)
    meas = tr.window(n_prof) if n_prof else tr
    prof_ids = tr.experts[:n_prof] if n_prof else tr.experts
    return Workload(key, meas.meta, "trace", _profile_of(prof_ids, model.experts), prof_ids,
                    load=loads(meas.experts, model.experts), profile_steps_used=len(prof_ids),
                    profile_window=_window_name(n_prof))


def _window_name(n_prof: int) -> str:
    """A file trace profiles on its first steps, or (too short to split) on the measured ones."""
    return "trace prefix" if n_prof else "measured window"


def warm(point, windows: tuple[str, ...] = ("measured", "profile")) -> None:
    """Generate (or load) the synthetic traces a design point will schedule (its measured and
    profiling windows, or those of ``windows``), filling the in-process and on-disk caches: the
    DSE has them generated before fanning out, so its worker processes load the traces instead
    of each generating them."""
    if point.trace != "synthetic":
        return
    from dse.workload import synth_cache as synth
    model = get_model(point.model)
    if "measured" in windows:
        synth.cached(model.name, point.run_batch, point.trace_steps, point.trace_seed, "auto", 0)
    if point.profile_steps and "profile" in windows:
        synth.cached(model.name, point.run_batch, point.profile_steps, profile_seed(point.trace_seed), "auto", 0)
