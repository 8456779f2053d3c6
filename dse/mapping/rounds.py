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

The fast form (``lead_rounds``). With F_x = sum of floor(n / w) over x's units (its full jobs)
and Z_x its units with a remainder, C_x(>= 1) = J_x = F_x + Z_x and C_x(>= w) = F_x. In a
scheduler's layout every padding position holds 0, so Z_x <= P_x and J_x <= F_x + P_x: each
resource's K_n falls by at most one round from n = 1 to n = w, hence so does their maximum, and

    K_n = K_1 - 1 + [n <= n*]     (n* >= w when K_w = K_1)

Only the resources that reach K_1 (J_x > (K_1 - 1) P_x, few per row) can keep a row at K_1 past
n = 1. For such an x, K_x(n) = K_1 while C_x(>= n) > (K_1 - 1) P_x, i.e. while at least
j = (K_1 - 1) P_x + 1 - F_x of its remainders are >= n: its n* is its j-th largest remainder
(w when j <= 0). Rows with K_1 <= 1 need no resource: n* is the row's largest load. With one-unit
groups (``direct``, every P_x = 1) the closed form is K_n = ceil(max(m - n + 1, 0) / w), m the
row's largest load. K_1 and J_x are the scheduler's (its chunk's FIFO rounds and per-resource
jobs). A layout with load in a padding position (not one ``Scheduler.layout`` builds) takes the
row-by-row count (``_lead_rounds_rows``); ``tests/mapping/test_rounds.py`` holds both equal to the
plain bincount form on random layouts.
"""
from __future__ import annotations

import numpy as np

from dse.mapping.intops import ceil_div, ceil_div_pos, count_last, max_last, sum_last

FACTS_KEY = ("lead-facts",)          # memo key of a layout's (largest load per row, padding empty)
SWAR = 8                             # remainders are counted eight bytes at a time (intops.count_last)


def layout_facts(sch, ul: np.ndarray) -> tuple[np.ndarray, bool]:
    """(largest load of every (step, layer) int64 [s * L], no load in a padding position) of a
    unit layout: what ``lead_rounds`` needs of it whatever the tile width and pooling."""
    s, L, N, F = ul.shape
    cu = np.asarray(sch.core_units)
    a = ul.reshape(s * L, N, F)
    empty = not any(np.count_nonzero(a[:, c, cu[c]:]) for c in np.flatnonzero(cu < F))
    return ul.reshape(s * L, N * F).max(axis=1, initial=0).astype(np.int64), empty


def lead_rounds(sch, ul: np.ndarray, chunk=None, facts: tuple | None = None) -> np.ndarray:
    """K_n of every (step, layer) of the unit layout ``ul`` [s, L, N, F]: int64 [w, s, L] (row
    n - 1 holds K_n). ``chunk``: the scheduler's ``ChunkResult`` of this layout, tile width and
    pooling (its FIFO rounds and per-resource jobs; computed here when None); ``facts``:
    ``layout_facts`` of the layout (likewise)."""
    w = sch.w
    s, L, _, F = ul.shape
    rowmax, empty = layout_facts(sch, ul) if facts is None else facts
    if not empty:
        return _lead_rounds_rows(sch, ul)
    n = np.arange(1, w + 1, dtype=np.int64)[:, None]
    if sch.pooling == "direct" and len(sch.group_starts) == F:          # one-unit groups
        return ((np.maximum(rowmax[None, :] - n + 1, 0) + (w - 1)) // w).reshape(w, s, L)
    jobs, k1 = _jobs_and_rounds(sch, ul, chunk)
    if w == 1:
        return k1.reshape(1, s, L)
    nstar = _last_full(sch, ul, jobs, k1, rowmax)
    return np.maximum(k1[None, :] - 1 + (nstar[None, :] >= n), 0).reshape(w, s, L)


def _pes(sch) -> np.ndarray:
    """PE tiles of every scheduling resource (cores, or the groups of every core) int64 [X]."""
    return (sch.group_pes if sch.pooling == "direct" else sch.core_units).astype(np.int64).ravel()


def _jobs_and_rounds(sch, ul: np.ndarray, chunk) -> tuple[np.ndarray, np.ndarray]:
    """(jobs J_x of every resource [rows, X], K_1 = max_x ceil(J_x / P_x) int64 [rows])."""
    s, L = ul.shape[:2]
    pes = _pes(sch)
    # the chunk's rounds are K_1 (a broadcast core without PE tiles, if any, would divide by 0)
    if chunk is not None and chunk.per_resource_jobs is not None and (sch.pooling == "direct" or pes.all()):
        return chunk.per_resource_jobs.reshape(s * L, -1), chunk.rounds.reshape(-1).astype(np.int64)
    j = ceil_div_pos(ul, sch.w).astype(np.int32)
    if sch.pooling == "broadcast":
        jobs = j.sum(axis=3)
    else:
        jobs = np.add.reduceat(j, np.asarray(sch.group_starts, dtype=np.intp), axis=3)
    jobs = jobs.reshape(s * L, -1)
    k = np.where(pes > 0, ceil_div(jobs.astype(np.int64), np.maximum(pes, 1)), 0)
    return jobs, k.max(axis=1, initial=0)


def _last_full(sch, ul: np.ndarray, jobs: np.ndarray, k1: np.ndarray, rowmax: np.ndarray) -> np.ndarray:
    """n* of every row [rows]: the last n with K_n = K_1 (w: all of them; module docstring)."""
    w = sch.w
    pes = _pes(sch)
    nstar = rowmax.copy()                                   # rows with K_1 <= 1: their largest load
    km = np.where(k1 >= 2, k1 - 1, np.iinfo(np.int32).max // max(1, int(pes.max(initial=1))))
    if not (k1 >= 2).any():
        return nstar
    if (pes == pes[0]).all():
        thr = (km * pes[0])[:, None]
    else:                                                   # int32 unless the products could pass it
        dt = np.int32 if int(k1.max()) * int(pes.max()) < np.iinfo(np.int32).max else np.int64
        thr = km.astype(dt)[:, None] * pes.astype(dt)[None, :]
    row, x = np.divmod(np.flatnonzero(jobs > thr), jobs.shape[1])   # resources at K_1, row by row
    r = _remainders(sch, ul, row, x)
    z, top = _count(r > 0), _max(r)
    kk = km[row] * pes[x]
    j = kk + 1 - (jobs[row, x].astype(np.int64) - z)        # F_x = J_x - Z_x
    t = np.where(j <= 0, w, np.where(j == 1, top, 0))
    first = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    best = np.repeat(np.maximum.reduceat(t, first), np.diff(np.r_[first, len(row)]))
    # j > z: fewer than j remainders at all; top <= best: its j-th largest cannot pass the row's best
    need = np.flatnonzero((j >= 2) & (j <= z) & (top > best))
    if len(need):
        t[need] = _jth_largest(r[need], j[need], w)
    nstar[row[first]] = np.maximum.reduceat(t, first)
    return nstar


def _jth_largest(r: np.ndarray, j: np.ndarray, w: int) -> np.ndarray:
    """The j-th largest value of every row of ``r`` (values < w, at least j of them >= 1): a
    bisection over 1 .. w - 1 on the count of values >= the midpoint."""
    lo = np.ones(len(r), dtype=np.int64)
    hi = np.full(len(r), w - 1, dtype=np.int64)
    for _ in range(int(w - 2).bit_length()):
        mid = (lo + hi + 1) // 2
        ok = _count(r >= mid[:, None].astype(r.dtype)) >= j
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid - 1)
    return lo


def _remainders(sch, ul: np.ndarray, row: np.ndarray, x: np.ndarray) -> np.ndarray:
    """n mod w of the units of resource x of (step, layer) ``row``, one row per pair, zero-padded
    to a multiple of ``SWAR`` units when wider than it (a group's missing units hold 0)."""
    s, L, N, F = ul.shape
    ul2 = ul.reshape(s * L * N, F)
    if sch.pooling == "broadcast":
        width, src = F, ul2[row * N + x]
    else:
        Gc = len(sch.group_starts)
        if F % Gc == 0:                                     # equal groups: rows of F / Gc units
            width, src = F // Gc, ul2.reshape(-1, F // Gc)[row * (N * Gc) + x]
        else:
            c, g = np.divmod(x, Gc)
            mem = sch.group_members[g]                      # padded with F (no unit)
            width, src = mem.shape[1], ul2[(row * N + c)[:, None], np.minimum(mem, F - 1)]
            src[mem == F] = 0
    if width > SWAR and width % SWAR:
        pad = np.zeros((len(row), width + SWAR - width % SWAR), dtype=ul.dtype)
        pad[:, :width] = src
        src = pad
    w = sch.w
    return src & (w - 1) if w & (w - 1) == 0 else src % w


def _count(b: np.ndarray) -> np.ndarray:
    """True values of every row of a bool [pairs, width] (``_remainders``' widths)."""
    return sum_last(b, np.int32) if b.shape[1] <= SWAR else count_last(b)


def _max(r: np.ndarray) -> np.ndarray:
    return (max_last(r) if r.shape[1] <= 16 else r.max(axis=1)).astype(np.int64)


def _lead_rounds_rows(sch, ul: np.ndarray) -> np.ndarray:
    """``lead_rounds`` for any layout (padding positions may hold load), row block by row block:
    per resource x, C_x(>= n) = (full jobs of x) + (its experts whose n mod w remainder is >= n),
    summed over the core (broadcast) or each group (direct; a one-unit group is its unit). The
    rows are done from n = 1 up, and a row leaves the loop once K_n falls to K_w (no remainder
    counts any more), since K_n never rises with n."""
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


def leads_key(w: int, pooling: str, group_starts) -> tuple:
    """The memo key of a layout's lead table (``round_profile``)."""
    return ("leads", int(w), pooling, tuple(np.asarray(group_starts).tolist()))


def round_profile(sch, ul: np.ndarray, memo: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(K_n [w, s, L], most streams of a core [s, L]) of a chunk, memoised in ``memo`` (with the
    layout's ``layout_facts``, shared by its tile widths and poolings)."""
    memo = {} if memo is None else memo
    key = leads_key(sch.w, sch.pooling, sch.group_starts)
    if key not in memo:
        if FACTS_KEY not in memo:
            memo[FACTS_KEY] = layout_facts(sch, ul)
        chunk = sch._chunk(ul, memo)
        memo[key] = (lead_rounds(sch, ul, chunk, memo[FACTS_KEY]), streams_max(chunk))
    return memo[key]


def workload_profile(wl, point, dom) -> tuple[np.ndarray, np.ndarray]:
    """``round_profile`` of a design's measured window (after ``trace_mapping.schedule_workload``
    scheduled it: its cached layout and memo are reused, and counted again against their bound).
    A table already in the memo is returned without building the design's placement or scheduler."""
    from dse.mapping import trace_mapping as tm
    from dse.mapping.scheduler import Scheduler
    p = point
    key = ("layout", wl.key, dom, p.placement)
    entry = tm.PLACEMENTS.get(key) if wl.load is not None else None
    leads = leads_key(p.tile_width, p.pooling, dom.group_layout[0])
    if entry is not None and leads in entry[1]:         # most designs: the table is kept
        return entry[1][leads]
    slot = tm.placement_for(wl, dom, p.placement)
    sch = Scheduler(dom, slot, p.tile_width, p.pooling, p.fetch, p.fetch_queue_depth)
    if wl.load is None:
        prof = [round_profile(sch, sch.layout(c)) for c in wl.chunks()]
        return np.concatenate([k for k, _ in prof], axis=1), np.concatenate([m for _, m in prof], axis=0)
    if entry is None:                               # evicted since: this design's layout alone
        return round_profile(sch, sch.layout(wl.load))
    out = round_profile(sch, entry[0], entry[1])
    tm.PLACEMENTS.put(key, entry)                   # its memo grew: counted again against the bound
    return out
