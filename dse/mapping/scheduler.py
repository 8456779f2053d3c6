"""The trace-driven MFU-cascade scheduler (spec section 5), vectorised over steps and layers.

Input: per (step, layer) expert loads n_e (tokens routed to expert e), a placement (unit of every
expert, :mod:`dse.mapping.placement`) and the knobs ``tile_width`` w, ``pooling``, ``fetch``,
``fetch_queue_depth``. Definitions (the plain-Python oracle in ``tests/oracle_scheduler.py``
implements the same rules job by job):

* A job is up to w tokens of one expert: expert e issues ceil(n_e / w) jobs; T = sum n_e token-expert
  pairs, J = sum of jobs. A round is one pass of every busy PE tile over its expert's weights.
* Fetch: ``fifo`` schedules every (step, layer) on its own (tokens are served in arrival order,
  so a core idles until the step's critical core finishes). ``load_aware`` lets a core that is
  idle in step s pull jobs of its resident experts from the next Q = ``fetch_queue_depth`` queued
  batch slots (decode steps of the same layer) into its idle slots, ahead of FIFO order. Per core
  (per group when ``direct``) x, step by step: pending_x(s) = J_x(s) minus the credit of jobs
  already pulled; rounds(s) = max_x ceil(pending_x / P_x); then the idle slots
  rounds(s) P_x - pending_x pull up to the not yet pulled jobs of steps s+1..s+Q. The look-ahead is
  bounded (and truncated at the end of the trace), so the gain is bounded too. Multicast streams
  and read-outs are those of each step's own two-stage schedule.
* ``pooling = 'direct'``: a group runs only its own experts' jobs, on its u PE tiles:
  rounds_g = ceil(O_g / u_g) (O_g = jobs of the group's experts); the layer takes the maximum.
* ``pooling = 'broadcast'`` (two-stage, core-local): owners first keep up to R_c u_g of their own
  jobs, R_c = ceil(J_c / P_c) (J_c = jobs of the core, P_c = its PE tiles); the overflow
  X_g = O_g - R_c u_g of hot experts then runs on idle tiles of the same core, fed by a multicast
  of the owner's read-out; the core finishes in exactly R_c rounds (unit jobs, any tile of the
  core may run any of its jobs). The layer takes max_c R_c.
* Concurrent multicast streams of a core = experts whose jobs run outside their owner group:
  per group, the fewest hottest experts whose jobs cover X_g (all overflow runs concurrently in
  stage two). Each stream is one unit read-out (51.2 GB/s) on the core mesh.
* Read-outs per layer: without pooling one per job (J); with pooling an expert is read once per
  round it runs in, owners running it every round until their share is done and helpers sharing
  that multicast: sum_e min(jobs_e, R_c).
* Cascade (ratio of sums over all steps and layers, so actual = ideal x occupancy exactly):
  ideal MFU = T / (w J), occupancy = J / (P rounds), actual MFU = T / (w P rounds), with P the
  PE tiles of the layer's scheduling domain (:func:`dse.mapping.placement.domain`).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from dse.mapping.fetch import Prefetch
from dse.mapping.intops import FLOAT32_EXACT, ceil_div, ceil_div_float, ceil_div_pos, count_last, max_last, sum_last
from dse.mapping.placement import Domain

# Keep per-(step, layer, core) stream counts when at most this many (else the histogram only).
KEEP_STREAMS_MAX = 4_000_000
INT16_LOADS = 32_000             # loads below this fit the int16 unit layout (int16 max 32767)
UINT8_LOADS = 256                # loads below this fit the uint8 unit layout (layout_dtype)


def layout_dtype(max_load: int) -> type:
    """The unit layout's integer type for loads up to ``max_load``: uint8, int16 or int32. The
    layout and its job counts per tile width (ceil(n / w) <= n) are the bulk of a cached entry
    (``trace_mapping``); decode batches route at most a few hundred tokens to an expert."""
    if max_load < UINT8_LOADS:
        return np.uint8
    return np.int16 if max_load < INT16_LOADS else np.int32


def core_jobs_dtype(jobs: np.dtype, units_per_core: int) -> type:
    """The type of the jobs per core (a core's ``units_per_core`` units' jobs summed): int16 when
    uint8 jobs (<= 255 each) cannot sum past 32767, else int32."""
    return np.int16 if jobs == np.uint8 and 255 * units_per_core <= np.iinfo(np.int16).max else np.int32


def streams_dtype(units_per_core: int) -> type:
    """The type of a core's concurrent multicast streams (at most one per unit of the core)."""
    return np.uint8 if units_per_core <= np.iinfo(np.uint8).max else np.int16


class ChunkResult(NamedTuple):
    """The schedule of one chunk of consecutive steps ([s, L] arrays unless noted)."""
    tokens: np.ndarray              # token-expert pairs T
    jobs: np.ndarray                # jobs J
    union: np.ndarray               # active experts U
    rounds: np.ndarray              # critical-path rounds (FIFO; load-aware fetch replaces them)
    readouts_pooled: np.ndarray
    streams_hist: np.ndarray        # count of busy-core samples with s concurrent multicast streams
    streams: np.ndarray             # [s, L, N] streams per core (``streams_dtype``; direct: a read-only view of 0)
    overflow: float                 # jobs run outside their owner group
    per_resource_jobs: np.ndarray | None   # [s, L, X] jobs per scheduling resource (cores or groups);
    #                                 None for one-unit groups: the per-unit jobs (``Scheduler._per_x``)


@dataclass
class Schedule:
    """Per-(step, layer) outcome of scheduling a trace, plus the multicast stream distribution."""
    tile_width: int
    pooling: str
    fetch: str
    queue_depth: int                # load-aware look-ahead in steps (0 = fifo)
    pes: int                        # PE tiles of the scheduling domain (N G for one-unit groups)
    n_cores: int
    core_units: tuple[int, ...]
    tokens: np.ndarray              # [steps, layers] token-expert pairs T
    jobs: np.ndarray                # [steps, layers] jobs J
    union: np.ndarray               # [steps, layers] active experts U
    rounds: np.ndarray              # [steps, layers] critical-path rounds
    readouts_pooled: np.ndarray     # [steps, layers]
    readouts_unpooled: np.ndarray   # [steps, layers]
    streams_hist: np.ndarray        # count of (step, layer, busy core) samples with s streams
    streams: np.ndarray | None = field(default=None, repr=False)  # [steps, layers, cores] or None
    overflow_jobs: float = 0.0      # jobs run outside their owner group (broadcast)

    # -- summaries ------------------------------------------------------------------------------
    @property
    def samples(self) -> int:
        return int(self.tokens.size)

    @property
    def ideal_mfu(self) -> float:
        return float(self.tokens.sum()) / (self.tile_width * max(1.0, float(self.jobs.sum())))

    @property
    def occupancy(self) -> float:
        r = float(self.rounds.sum())
        return float(self.jobs.sum()) / (self.pes * r) if r else 0.0

    @property
    def actual_mfu(self) -> float:
        r = float(self.rounds.sum())
        return float(self.tokens.sum()) / (self.tile_width * self.pes * r) if r else 0.0

    @property
    def rounds_mean(self) -> float:
        return float(self.rounds.mean())

    @property
    def jobs_per_layer(self) -> float:
        return float(self.jobs.mean())

    @property
    def union_mean(self) -> float:
        return float(self.union.mean())

    def streams_quantile(self, q: float) -> float:
        """Quantile of the concurrent multicast streams per active core (from the histogram)."""
        h = self.streams_hist
        n = int(h.sum())
        if n == 0:
            return 0.0
        cdf = np.cumsum(h)
        return float(np.searchsorted(cdf, q * n - 1e-9, side="left"))

    @property
    def streams_mean(self) -> float:
        h = self.streams_hist
        n = h.sum()
        return float((np.arange(h.size) * h).sum() / n) if n else 0.0

    @property
    def streams_p99(self) -> float:
        return self.streams_quantile(0.99)

    @property
    def streams_peak(self) -> float:
        nz = np.nonzero(self.streams_hist)[0]
        return float(nz[-1]) if nz.size else 0.0

    def summary(self) -> dict[str, float]:
        return {
            "ideal_mfu": self.ideal_mfu, "occupancy": self.occupancy, "actual_mfu": self.actual_mfu,
            "rounds": self.rounds_mean, "jobs_per_layer": self.jobs_per_layer, "union_experts": self.union_mean,
            "multicast_streams_mean": self.streams_mean, "multicast_streams_p99": self.streams_p99,
            "multicast_streams_peak": self.streams_peak,
            "readouts_per_layer_pooled": float(self.readouts_pooled.mean()),
            "readouts_per_layer_unpooled": float(self.readouts_unpooled.mean()),
        }


class Scheduler:
    """Schedules load chunks for one placement and domain.

    Loads are first gathered into a padded per-core unit layout [steps, layers, cores, side^2]
    (unit i of core c at [..., c, i]; padding and empty units hold 0), so every reduction over a
    core or group is over a contiguous last axis. :meth:`run` takes [steps, layers, E] load chunks
    of consecutive steps; :meth:`run_layout` takes chunks already in the layout (cached by the
    routing stage per placement)."""

    def __init__(self, dom: Domain, slot: np.ndarray, tile_width: int, pooling: str = "broadcast",
                 fetch: str = "fifo", queue_depth: int = 16):
        if pooling not in ("direct", "broadcast"):
            raise ValueError(f"pooling {pooling!r}: allowed direct, broadcast")
        if fetch not in ("fifo", "load_aware"):
            raise ValueError(f"fetch {fetch!r}: allowed fifo, load_aware")
        self.dom = dom
        self.w = int(tile_width)
        self.pooling, self.fetch = pooling, fetch
        self.depth = 0 if fetch == "fifo" else max(1, int(queue_depth))
        L, E = slot.shape
        self.L, self.E = L, E
        self.N, self.F = dom.n_cores, dom.full
        self.slot, self._take = slot, None               # unit -> expert index, built by the first layout
        self.core_units = np.array(dom.core_units, dtype=np.int32)
        starts, per_core = dom.group_layout
        self.group_starts, self.group_pes = starts, per_core.astype(np.int32)   # [Gc], [N, Gc]
        self.simple = len(starts) == self.F                                 # one-unit groups
        if not self.simple:
            sizes = np.diff(np.r_[starts, self.F])
            mem = np.full((len(starts), int(sizes.max())), self.F, dtype=np.intp)   # padded with F (no unit)
            for g, (st, n) in enumerate(zip(starts, sizes)):
                mem[g, :n] = np.arange(st, st + n)
            self.group_members = mem

    def layout(self, loads: np.ndarray) -> np.ndarray:
        """Loads [s, layers, E] -> the padded unit layout [s, layers, cores, side^2] (``layout_dtype``)."""
        if loads.ndim != 3 or loads.shape[1:] != (self.L, self.E):
            raise ValueError(f"loads chunk shape {loads.shape}, expected [steps, {self.L}, {self.E}]")
        if self._take is None:
            inv = np.full((self.L, self.N * self.F), self.E, dtype=np.intp)    # expert of every unit (E: none)
            inv[np.arange(self.L)[:, None], self.dom.unit_pos[self.slot]] = np.arange(self.E)[None, :]
            self._take = (np.arange(self.L)[:, None] * (self.E + 1) + inv).ravel()  # into [layers * (E + 1)]
        s = loads.shape[0]
        pad = np.zeros((s, self.L, self.E + 1), dtype=layout_dtype(int(loads.max(initial=0))))
        pad[:, :, :self.E] = loads
        return np.take(pad.reshape(s, -1), self._take, axis=1).reshape(s, self.L, self.N, self.F)

    # -- one chunk ------------------------------------------------------------------------------
    def _memo(self, ul: np.ndarray, memo: dict) -> None:
        """Fill ``memo`` with the design-independent parts of a chunk: tokens, union and, per tile
        width, the jobs per unit, per (step, layer) and per core, the broadcast rounds per core and
        the pooled read-outs (the float copy of the jobs they come from is not kept)."""
        w, s = self.w, ul.shape[0]
        if "tokens" not in memo:
            memo["tokens"] = ul.sum(axis=(2, 3), dtype=np.int64)
            memo["union"] = np.count_nonzero(ul.reshape(s, self.L, -1), axis=2)
            # BLAS sums in float32 are exact below 2^24 per (step, layer)
            memo["ft"] = np.float32 if int(memo["tokens"].max(initial=0)) < FLOAT32_EXACT else np.float64
        ft = memo["ft"]
        if ("jc", w) not in memo:
            jobs = ceil_div_pos(ul, w)
            jf = jobs.astype(ft)
            jcf = np.rint(jf @ np.ones(self.F, ft))                          # jobs per core, exact
            rcf = ceil_div_float(jcf, self.core_units.astype(ft))           # broadcast rounds per core
            jc, rc = jcf.astype(core_jobs_dtype(jobs.dtype, self.F)), rcf.astype(jobs.dtype)
            # one read-out per round an expert runs in: sum_u min(j_u, R_c) (float32 sums are exact here)
            ro = np.minimum(jf, rcf[..., None], out=jf).reshape(s, self.L, -1)
            memo[("ro", w)] = np.rint(ro @ np.ones(ro.shape[2], ft)).astype(np.int64)
            memo[("jobs", w)], memo[("jc", w)], memo[("rc", w)] = jobs, jc, rc
            memo[("jsum", w)] = jc.sum(axis=2, dtype=np.int64)              # = jobs summed over units
            memo[("jmax", w)] = jobs.max(axis=(2, 3))

    def _chunk(self, ul: np.ndarray, memo: dict | None = None) -> ChunkResult:
        """The schedule of one chunk before load-aware fetch (which only the fetch knobs change):
        a function of the layout, tile width and pooling, kept in ``memo`` (read-only arrays)."""
        memo = {} if memo is None else memo
        key = ("chunk", self.w, self.pooling)
        if key not in memo:
            self._memo(ul, memo)
            memo[key] = self._schedule_chunk(ul.shape[0], memo)
            for v in memo[key]:
                if isinstance(v, np.ndarray):
                    v.flags.writeable = False
            if all(("chunk", self.w, p) in memo for p in ("direct", "broadcast")):
                # both poolings' chunks kept: the per-unit jobs of this tile width (and their group
                # sums) serve nothing more (``_per_x`` computes them again for load-aware fetch);
                # with it, bench_search.py's 128-step study keeps 336 MiB of layouts, not 531
                memo.pop(("jobs", self.w), None)
                memo.pop(("groups", self.w, tuple(self.group_starts)), None)
        return memo[key]

    def _schedule_chunk(self, s: int, memo: dict) -> ChunkResult:
        w = self.w
        jw, jc, rc, ro_pooled = memo[("jobs", w)], memo[("jc", w)], memo[("rc", w)], memo[("ro", w)]
        if self.pooling == "direct":
            if self.simple:
                rho, per_x = memo[("jmax", w)], None        # one-unit groups: the per-unit jobs
            else:
                og, _ = self._groups(jw, memo, hottest=False)
                rho = ceil_div(og, np.maximum(self.group_pes, 1)).max(axis=(2, 3))
                per_x = og.reshape(s, self.L, -1)
        else:
            rho, per_x = rc.max(axis=2), jc
        if self.pooling == "broadcast":
            streams, overflow = self._streams(jw, jc, rc, ro_pooled, memo)
            hist = np.bincount(streams.ravel(), minlength=1)    # over busy cores: an idle core has 0 streams
            hist[0] -= jc.size - np.count_nonzero(jc)
            streams = streams.astype(streams_dtype(self.F))
        else:                                                   # no multicast: every busy core has 0 streams
            streams, overflow = np.broadcast_to(streams_dtype(self.F)(0), jc.shape), 0.0
            hist = np.array([np.count_nonzero(jc)], dtype=np.int64)
        return ChunkResult(memo["tokens"], memo[("jsum", w)], memo["union"], rho.astype(np.float64),
                           ro_pooled.astype(np.float64), hist, streams, overflow, per_x)

    def _streams(self, jw, jc, rc, ro_pooled, memo) -> tuple[np.ndarray, float]:
        """(concurrent multicast streams per core [s, L, N], overflow jobs) of the broadcast stage."""
        rcx = rc[..., None]
        if self.simple:
            return count_last(jw > rcx), float(jc.sum(dtype=np.int64) - ro_pooled.sum())  # sum max(0, j - R_c)
        og, gmax = self._groups(jw, memo)
        xg = np.maximum(og - rcx.astype(np.int32) * self.group_pes, 0)     # [s, L, N, Gc]
        sg = (xg > 0).astype(np.int32)             # the hottest expert alone covers X_g ...
        need = np.nonzero(xg > gmax)               # ... except in these (rare) groups
        if need[0].size:
            members = self.group_members[need[3]]                            # padded with F (no unit)
            rows = jw[need[0][:, None], need[1][:, None], need[2][:, None],
                      np.minimum(members, self.F - 1)].astype(np.int32)    # negated below: signed
            rows[members == self.F] = 0                                     # padding: no jobs
            mem = -np.sort(-rows, axis=1)                                   # hottest first
            excl = np.cumsum(mem, axis=1) - mem
            sg[need] = ((excl < xg[need][:, None]) & (mem > 0)).sum(axis=1)
        return sum_last(sg), float(xg.sum())

    def _groups(self, jw: np.ndarray, memo: dict, hottest: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """(jobs, hottest expert's jobs: only if ``hottest``) of every group [s, L, N, Gc], memoised
        per tile width."""
        key = ("groups", self.w, tuple(self.group_starts))
        if key not in memo or (hottest and memo[key][1] is None):
            s, L, N, F = jw.shape
            sizes = np.diff(np.r_[self.group_starts, F])
            if (sizes == sizes[0]).all():                                   # equal groups: a reshape
                g = jw.reshape(s, L, N, len(sizes), sizes[0])
            else:
                g = jw[..., np.minimum(self.group_members, F - 1)]          # members padded with F ...
                g[..., self.group_members == F] = 0                         # ... which hold no jobs
            og = memo[key][0] if key in memo else sum_last(g)
            memo[key] = (og, max_last(g).astype(np.int32) if hottest else None)
        return memo[key]

    def _per_x(self, ul: np.ndarray) -> np.ndarray:
        """Jobs per unit [s, L, N * F]: a one-unit group's jobs for load-aware fetch (computed again
        when asked for, not kept with the chunk: the per-unit jobs of every tile width were most
        of a cached layout's memory)."""
        return ceil_div_pos(ul, self.w).reshape(ul.shape[0], self.L, -1)

    def _x_pes(self) -> np.ndarray:
        """PE tiles of every scheduling resource x: cores (broadcast) or groups (direct)."""
        if self.pooling == "broadcast":
            return self.core_units.astype(np.int64)
        if self.simple:
            idx = np.arange(self.F)[None, :]
            return (idx < self.core_units[:, None]).astype(np.int64).ravel()
        return self.group_pes.astype(np.int64).ravel()

    def run(self, chunks: Iterable[np.ndarray]) -> Schedule:
        """Schedule [steps, layers, E] load chunks (consecutive steps)."""
        return self.run_layout(self.layout(c) for c in chunks)

    def run_layout(self, unit_chunks: Iterable[np.ndarray], memo: dict | None = None) -> Schedule:
        """Schedule chunks in the unit layout. ``memo`` (a dict kept with a cached single-chunk
        layout) remembers the design-independent parts: tokens, union and jobs per tile width."""
        parts: list[tuple] = []
        hist = np.zeros(1, dtype=np.int64)
        keep: list[np.ndarray] | None = []
        kept = 0
        overflow = 0.0
        pf = Prefetch(self.depth, self._x_pes()) if self.depth else None
        for ul in unit_chunks:
            c = self._chunk(ul, memo)
            if pf is not None:
                pf.push(self._per_x(ul) if c.per_resource_jobs is None else c.per_resource_jobs)
            parts.append((c.tokens, c.jobs, c.union, c.rounds, c.readouts_pooled))
            h = c.streams_hist
            if h.size > hist.size:
                hist = np.pad(hist, (0, h.size - hist.size))
            hist[:h.size] += h
            overflow += c.overflow
            if keep is not None:
                kept += c.streams.size
                if kept <= KEEP_STREAMS_MAX:
                    keep.append(c.streams.astype(np.int16))
                else:
                    keep = None
        if not parts:
            raise ValueError("no steps to schedule")
        cat = [p[0] if len(parts) == 1 else np.concatenate(p, axis=0) for p in zip(*parts)]
        if pf is not None:
            cat[3] = pf.finish()
        return Schedule(
            tile_width=self.w, pooling=self.pooling, fetch=self.fetch, queue_depth=self.depth,
            pes=self.dom.units, n_cores=self.dom.n_cores, core_units=self.dom.core_units,
            tokens=cat[0], jobs=cat[1], union=cat[2], rounds=cat[3], readouts_pooled=cat[4],
            readouts_unpooled=cat[1].astype(np.float64), streams_hist=hist,
            streams=(keep[0] if len(keep) == 1 else np.concatenate(keep, axis=0)) if keep else None,
            overflow_jobs=overflow)


def schedule(loads: np.ndarray | Iterable[np.ndarray], dom: Domain, slot: np.ndarray, tile_width: int,
             pooling: str = "broadcast", fetch: str = "fifo", queue_depth: int = 16) -> Schedule:
    """Schedule a load array [steps, layers, E] (or an iterable of such chunks)."""
    sch = Scheduler(dom, slot, tile_width, pooling, fetch, queue_depth)
    chunks = [loads] if isinstance(loads, np.ndarray) else loads
    return sch.run(chunks)
