"""Pipeline stage 20, ``routing``: U(B) and the MFU cascade from a routing trace.

``trace = 'catalog'``: the closed-form U(B) of the catalog (no scheduling; fast path of the DSE).
``trace = 'synthetic'``: a seeded synthetic trace of the design's model at its run-batch
(``trace_seed``, ``trace_steps``) and, for placement, a profiling run of ``profile_steps`` steps on
other requests (an independent synthetic trace, seed ``profile_seed(trace_seed)``), both generated
once per process. Profiling on the measured requests themselves would let a "semi-static"
placement see the future: the requests of a decode batch persist across steps. A path: a ``.npz`` trace or an unconverted router dump (JSON / JSON lines),
re-cut into decode steps of the design's batch when that differs; its first ``profile_steps``
steps (at most half) form the profiling window.

The stage places the experts (``placement``) from the profiling window, schedules the measured
window (:mod:`dse.mapping.scheduler`) and publishes the cascade metrics, the trace-measured
U(B) in ``ctx.extra['union']`` (used by the performance stage for latency and weight energy)
and the :class:`~dse.mapping.scheduler.Schedule` in ``ctx.extra['schedule']`` (per (step, layer)
arrays and per-core multicast streams for the network stage).

Traces whose load array would exceed ``STREAM_BYTES`` are scheduled chunk by chunk straight from
the file (bounded memory); smaller ones are cached in-process with their loads.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from dse.constants import C
from dse.errors import TraceError
from dse.mapping import placement as pl
from dse.mapping.scheduler import Scheduler
from dse.model.evaluate import Context, guarantee, stage
from dse.workload.trace import TraceFile, TraceMeta, check_model, is_dump, load_cached, loads
from dse.workload.union import union_closed_form

STREAM_BYTES = 32 << 20           # traces whose load array exceeds this are streamed, not cached
CHUNK_STEPS = 64                  # steps per streamed chunk

SCHEDULE_KEYS = ("ideal_mfu", "occupancy", "actual_mfu", "rounds", "jobs_per_layer",
                 "multicast_streams_mean", "multicast_streams_p99", "multicast_streams_peak",
                 "readouts_per_layer_pooled", "readouts_per_layer_unpooled",
                 "no_pooling_weight_mb_per_token", "no_pooling_weight_energy_uj_per_token",
                 "schedule_cores", "schedule_pe_tiles", "trace_steps_measured")
guarantee("union_experts", "union_source", *SCHEDULE_KEYS)


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
    _coact: np.ndarray | None = field(default=None, repr=False)

    def chunks(self) -> Iterator[np.ndarray]:
        """Load chunks [steps, layers, E] of consecutive measured steps."""
        if self.load is not None:
            yield self.load
            return
        for ids in self.reader.chunks(CHUNK_STEPS, start=self.start):
            yield loads(ids, self.meta.n_experts)

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


_LOCK = threading.Lock()
_WORKLOADS: OrderedDict[tuple, Workload] = OrderedDict()
_PLACEMENTS: OrderedDict[tuple, np.ndarray] = OrderedDict()
MAX_WORKLOADS, MAX_PLACEMENTS = 6, 32   # placements hold ~2 MB unit layouts each: ~70 MB at most


def _remember(cache: OrderedDict, key, value, limit: int):
    with _LOCK:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > limit:
            cache.popitem(last=False)
    return value


def _profile_of(ids: np.ndarray, n_experts: int) -> np.ndarray:
    return loads(ids, n_experts).mean(axis=0, dtype=np.float64)


PROFILE_SEED_MIX = 0x9E3779B9     # golden-ratio constant: decorrelates the profiling run's seed


def profile_seed(trace_seed: int) -> int:
    """Seed of the synthetic profiling run that goes with measured trace ``trace_seed``."""
    return (trace_seed ^ PROFILE_SEED_MIX) & 0xFFFFFFFF


def workload(point, model) -> Workload:
    """The (cached) workload of a design point whose ``trace`` is 'synthetic' or a path."""
    B = point.run_batch
    if point.trace == "synthetic":
        key = ("synthetic", model.name, B, point.trace_steps, point.trace_seed, point.profile_steps)
        hit = _WORKLOADS.get(key)
        if hit is not None:
            return hit
        from dse.workload import synth
        tr, _ = synth.cached(model.name, B, point.trace_steps, point.trace_seed, "auto", 0)
        if point.profile_steps:
            # The profiling run serves OTHER requests than the measured window (an independent
            # trace of the same model): semi-static placement cannot know which requests come.
            prof, _ = synth.cached(model.name, B, point.profile_steps, profile_seed(point.trace_seed), "auto", 0)
            prof_ids = prof.experts
        else:
            prof_ids = tr.experts
        w = Workload(key, tr.meta, "synthetic", _profile_of(prof_ids, model.experts), prof_ids,
                     load=loads(tr.experts, model.experts))
        return _remember(_WORKLOADS, key, w, MAX_WORKLOADS)
    path = Path(point.trace)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TraceError(f"trace {point.trace}: no such file (trace = 'catalog', 'synthetic', a .npz trace "
                         f"or a router dump)") from None
    except OSError as exc:
        raise TraceError(f"trace {point.trace}: cannot read ({exc.strerror or exc})") from None
    key = ("file", str(path.resolve()), st.st_mtime_ns, st.st_size, model.name, B, point.profile_steps)
    hit = _WORKLOADS.get(key)
    if hit is not None:
        return hit
    if not is_dump(path):
        tf = TraceFile(path)
        check_model(tf.meta, model.name)
        m = tf.meta
        big = m.steps * m.layers * m.n_experts * 4 > STREAM_BYTES
        if big and B == m.batch:
            n_prof = min(point.profile_steps, m.steps // 2)
            prof_ids = tf.load(0, n_prof).experts if n_prof else tf.load(0, min(m.steps, 16)).experts
            meas = TraceMeta(m.model, m.batch, m.steps - n_prof, m.layers, m.top_k, m.n_experts, m.source, m.path)
            w = Workload(key, meas, "trace", _profile_of(prof_ids, m.n_experts), prof_ids, reader=tf, start=n_prof)
            return _remember(_WORKLOADS, key, w, MAX_WORKLOADS)
    tr = load_cached(path, model=model.name, batch=B)
    n_prof = min(point.profile_steps, tr.meta.steps // 2)
    meas = tr.window(n_prof) if n_prof else tr
    prof_ids = tr.experts[:n_prof] if n_prof else tr.experts
    w = Workload(key, meas.meta, "trace", _profile_of(prof_ids, model.experts), prof_ids,
                 load=loads(meas.experts, model.experts))
    return _remember(_WORKLOADS, key, w, MAX_WORKLOADS)


def warm(point) -> None:
    """Generate (or load) the synthetic traces a design point will schedule, filling the in-process
    and on-disk caches: the DSE driver calls it before fanning out, so its worker processes load
    the traces instead of each generating them."""
    if point.trace != "synthetic":
        return
    from dse.workload import synth
    from dse.workload.catalog import get_model
    model = get_model(point.model)
    synth.cached(model.name, point.run_batch, point.trace_steps, point.trace_seed, "auto", 0)
    if point.profile_steps:
        synth.cached(model.name, point.run_batch, point.profile_steps, profile_seed(point.trace_seed), "auto", 0)


def placement_for(wl: Workload, dom: pl.Domain, policy: str) -> np.ndarray:
    key = (wl.key, dom, policy)
    hit = _PLACEMENTS.get(key)
    if hit is not None:
        return hit
    coact = wl.coact() if policy == "coactivation" else None
    slot = pl.place(policy, dom, wl.profile_load, coact)
    return _remember(_PLACEMENTS, key, slot, MAX_PLACEMENTS)


@stage("routing", 20)
def routing(ctx: Context) -> dict[str, Any]:
    p, model = ctx.point, ctx.extra["model"]
    if p.trace == "catalog":
        u, src = union_closed_form(model, p.run_batch)
        ctx.extra["union"] = u
        return {"union_experts": u, "union_source": src}
    wl = ctx.extra.get("workload") or workload(p, model)
    dom = pl.domain(model.experts, p.core_side, p.groups, p.die_units_x, p.die_units_y, p.core_remainder,
                    p.layer_layout)
    slot = placement_for(wl, dom, p.placement)
    sch = Scheduler(dom, slot, p.tile_width, p.pooling, p.fetch, p.fetch_queue_depth)
    if wl.load is not None:
        key = ("layout", wl.key, dom, p.placement)
        hit = _PLACEMENTS.get(key)
        if hit is None:
            hit = _remember(_PLACEMENTS, key, (sch.layout(wl.load), {}), MAX_PLACEMENTS)
        ul, memo = hit
        sched = sch.run_layout([ul], memo)
    else:
        sched = sch.run(wl.chunks())
    ctx.extra["schedule"] = sched
    ctx.extra["workload"] = wl
    union = sched.union_mean
    ctx.extra["union"] = union
    s = sched.summary()
    B = wl.meta.batch
    mb_nopool = model.moe_layers * (s["jobs_per_layer"] * model.expert_bytes + model.router_bytes) / B / 1e6
    out = {k: s[k] for k in ("ideal_mfu", "occupancy", "actual_mfu", "rounds", "jobs_per_layer",
                             "multicast_streams_mean", "multicast_streams_p99", "multicast_streams_peak",
                             "readouts_per_layer_pooled", "readouts_per_layer_unpooled")}
    out.update(union_experts=union, union_source=wl.source,
               no_pooling_weight_mb_per_token=mb_nopool,
               no_pooling_weight_energy_uj_per_token=mb_nopool * 1e6 * C.reram_pj_per_byte * 1e-6,
               schedule_cores=dom.n_cores, schedule_pe_tiles=dom.units,
               trace_steps_measured=int(sched.samples // max(1, wl.meta.layers)))
    return out
