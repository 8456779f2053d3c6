"""What each scheduled round carries: the tokens of its busiest job, per (step, layer).

The scheduler (:mod:`dse.mapping.scheduler`) counts rounds; the scheduled time model
(:mod:`dse.performance.scheduled`) needs what runs in them. Rule (the *dense-first* order, stated
in ``docs/model/scheduled-time.md``): a scheduling resource x (a core when ``pooling = broadcast``,
a PE group when ``direct``) runs its jobs largest first, P_x per round (P_x its PE tiles); an
expert with n tokens issues floor(n / w) full jobs of w tokens and, when n mod w > 0, one job of
n mod w tokens. Rounds are synchronous over the layer's domain, so round r's busiest job is the
largest r-th lead over the resources, and

    K_n = max_x ceil(C_x(>= n) / P_x),   n = 1 .. w

(C_x(>= n): jobs of x with at least n tokens) is the number of rounds whose busiest job carries at
least n tokens. K_1 is the FIFO critical-path rounds. With load-aware fetch a step keeps its first
(densest) rho rounds: K_n -> min(K_n, rho) (``dse.performance.scheduled.step_layer_us``).

Design-independent given (layout, w, pooling, groups): kept in the layout's memo.
"""
from __future__ import annotations

import numpy as np

from dse.mapping.intops import ceil_div

BINCOUNT_MAX = 1 << 23          # histogram bins above this: count level by level instead


def _resource_index(sch) -> tuple[np.ndarray, np.ndarray]:
    """(resource of each in-core position [N, F], PE tiles of each resource [X])."""
    N, F = sch.N, sch.F
    starts = np.asarray(sch.group_starts)
    gid = np.searchsorted(starts, np.arange(F), side="right") - 1       # group of each position
    if sch.pooling == "broadcast":
        return np.repeat(np.arange(N)[:, None], F, axis=1), sch.core_units.astype(np.int64)
    Gc = len(starts)
    return np.arange(N)[:, None] * Gc + gid[None, :], sch.group_pes.astype(np.int64).ravel()


def lead_rounds(sch, ul: np.ndarray) -> np.ndarray:
    """K_n of every (step, layer) of the unit layout ``ul`` [s, L, N, F]: int64 [w, s, L] (row
    n - 1 holds K_n)."""
    w = sch.w
    s, L, N, F = ul.shape
    x_of, pes = _resource_index(sch)
    X = len(pes)
    rows = s * L
    flat = ul.reshape(rows, N * F)
    q, r = np.divmod(flat.astype(np.int64), w)
    xi = x_of.ravel()
    base = (np.arange(rows)[:, None] * X + xi[None, :])
    full = np.bincount(base.ravel(), weights=q.ravel(), minlength=rows * X).reshape(rows, X)
    if rows * X * w <= BINCOUNT_MAX:
        hist = np.bincount((base * w + r).ravel(), minlength=rows * X * w).reshape(rows, X, w)
        ge = np.cumsum(hist[:, :, ::-1], axis=2)[:, :, ::-1]           # ge[..., n] = #remainders >= n
        part = [ge[:, :, n] for n in range(1, w)]
    else:
        part = [np.bincount(base.ravel(), weights=(r >= n).ravel(), minlength=rows * X).reshape(rows, X)
                for n in range(1, w)]
    p = np.maximum(pes, 1)[None, :]
    alive = (pes > 0)[None, :]
    out = np.empty((w, rows), dtype=np.int64)
    for n in range(1, w + 1):
        c = full + part[n - 1] if n < w else full
        k = np.where(alive, ceil_div(np.rint(c).astype(np.int64), p), 0)
        out[n - 1] = k.max(axis=1)
    return out.reshape(w, s, L)


def streams_max(chunk) -> np.ndarray:
    """Most concurrent multicast streams of any core, per (step, layer) of a chunk's schedule."""
    st = np.asarray(chunk.streams)
    return st.max(axis=2).astype(np.int64) if st.ndim == 3 and st.shape[2] else np.zeros(st.shape[:2], np.int64)


def round_profile(sch, ul: np.ndarray, memo: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(K_n [w, s, L], most streams of a core [s, L]) of a chunk, memoised in ``memo``."""
    memo = {} if memo is None else memo
    key = ("leads", sch.w, sch.pooling, tuple(np.asarray(sch.group_starts).tolist()))
    if key not in memo:
        memo[key] = (lead_rounds(sch, ul), streams_max(sch._chunk(ul, memo)))
    return memo[key]


def workload_profile(wl, point, dom) -> tuple[np.ndarray, np.ndarray]:
    """``round_profile`` of a design's measured window (after ``trace_mapping.schedule_workload``
    scheduled it: its cached layout and memo are reused, and counted again against their bound)."""
    from dse.mapping import trace_mapping as tm
    from dse.mapping.scheduler import Scheduler
    p = point
    slot = tm.placement_for(wl, dom, p.placement)
    sch = Scheduler(dom, slot, p.tile_width, p.pooling, p.fetch, p.fetch_queue_depth)
    if wl.load is None:
        prof = [round_profile(sch, sch.layout(c)) for c in wl.chunks()]
        return np.concatenate([k for k, _ in prof], axis=1), np.concatenate([m for _, m in prof], axis=0)
    key = ("layout", wl.key, dom, p.placement)
    entry = tm.PLACEMENTS.get(key)
    if entry is None:                               # evicted since: this design's layout alone
        return round_profile(sch, sch.layout(wl.load))
    grew = ("leads", sch.w, sch.pooling, tuple(np.asarray(sch.group_starts).tolist())) not in entry[1]
    out = round_profile(sch, entry[0], entry[1])
    if grew:
        tm.PLACEMENTS.put(key, entry)
    return out
