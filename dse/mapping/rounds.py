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


def lead_rounds(sch, ul: np.ndarray) -> np.ndarray:
    """K_n of every (step, layer) of the unit layout ``ul`` [s, L, N, F]: int64 [w, s, L] (row
    n - 1 holds K_n).

    Per resource x, C_x(>= n) = (full jobs of x) + (its experts whose n mod w remainder is >= n),
    summed over the core (broadcast) or each group (direct; a one-unit group is its unit). The
    rows are done from n = 1 up, and a row leaves the loop once K_n falls to K_w (no remainder
    counts any more), since K_n never rises with n: at 512 steps a table takes 0.02-0.5 s instead of
    0.15-17 s (the plain bincount form it replaced, kept as the test's reference)."""
    w = sch.w
    s, L, N, F = ul.shape
    rows = s * L
    a = ul.reshape(rows, N, F)
    starts = np.asarray(sch.group_starts, dtype=np.intp)
    if sch.pooling == "broadcast":
        pes = sch.core_units.astype(np.int64)
        def per_x(v):
            return v.sum(axis=2, dtype=np.int32)
    elif len(starts) == F:
        pes = sch.group_pes.astype(np.int64).ravel()
        def per_x(v):
            return v.reshape(len(v), -1).astype(np.int32)
    else:
        pes = sch.group_pes.astype(np.int64).ravel()
        def per_x(v):
            return np.add.reduceat(v, starts, axis=2, dtype=np.int32).reshape(len(v), -1)
    small = a.dtype if a.dtype.itemsize <= 2 else np.int32
    q, r = np.divmod(a.astype(small, copy=False), np.array(w, dtype=small))
    full = per_x(q)
    p = np.maximum(pes, 1).astype(np.int32)[None, :]
    alive = (pes > 0)[None, :]
    unit, every = bool(np.all(p == 1)), bool(np.all(alive))

    def rounds(c):                        # max over resources of ceil(c / P_x), dead ones left out
        k = c if unit else ceil_div(c, p)
        return (k if every else np.where(alive, k, 0)).max(axis=1).astype(np.int64)

    base = rounds(full)
    out = np.repeat(base[None, :], w, axis=0)
    idx = np.arange(rows)
    for n in range(1, w):
        if not len(idx):
            break
        c = full[idx] + per_x(r[idx] >= n)
        k = rounds(c)
        out[n - 1, idx] = k
        idx = idx[k > base[idx]]          # K_n is non-increasing in n and never below K_w = base
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
