"""Load-aware fetch (spec section 5): an idle core pulls queued jobs of its resident experts.

The bounded prefetch recurrence of :mod:`dse.mapping.scheduler` (``fetch = 'load_aware'``), per
scheduling resource x (core when pooling is broadcast, group when direct), step by step:
pending_x(s) = J_x(s) minus the credit of jobs already pulled; rounds(s) = max_x ceil(pending_x /
P_x); then the idle slots rounds(s) P_x - pending_x pull up to the not yet pulled jobs of steps
s+1..s+Q (Q = ``fetch_queue_depth``), ahead of FIFO order.
"""
from __future__ import annotations

import numpy as np

SMALL_INT = 1 << 14              # the recurrence runs in int16 while its values stay below this


class Prefetch:
    """Load-aware fetch: the bounded prefetch recurrence over steps, streamed chunk by chunk
    (vectorised over layers and resources x; at most Q + BATCH steps are buffered)."""

    BATCH = 256

    def __init__(self, depth: int, pes: np.ndarray):
        self.Q = depth
        real = pes > 0                                  # resources with PE tiles (the rest: layout padding)
        self.unit = bool((pes[real] == 1).all())        # one tile each: ceil(p / 1) = p
        # with one tile each, padding (no PE, never any job) changes no max and pulls nothing: kept
        self.cols = None if self.unit or real.all() else np.flatnonzero(real)
        self.pes = (pes if self.cols is None else pes[self.cols]).astype(np.int32)
        self.buf: np.ndarray | None = None
        self.credit: np.ndarray | None = None
        self.out: list[np.ndarray] = []

    def push(self, jx: np.ndarray) -> None:
        jx = (jx if self.cols is None else np.take(jx, self.cols, axis=2)).astype(np.int32, copy=False)
        self.buf = jx if self.buf is None else np.concatenate([self.buf, jx], axis=0)
        if self.buf.shape[0] >= 4 * self.Q + self.BATCH:  # process in batches; the rest waits for finish()
            self._run(final=False)

    def finish(self) -> np.ndarray:
        self._run(final=True)
        return np.concatenate(self.out, axis=0).astype(np.float64)

    def _run(self, final: bool) -> None:
        buf = self.buf
        n = buf.shape[0]
        upto = n if final else n - self.Q               # steps whose look-ahead is complete
        if upto <= 0:
            return
        if self.credit is None:
            self.credit = np.zeros(buf.shape[1:], dtype=np.int32)
        # every value below stays within [-(sum + credit), sum + credit + P] (sum: the buffered
        # jobs of a resource): int16 when that fits
        small = _buffered_max(buf) + int(self.credit.max(initial=0)) + int(self.pes.max(initial=0)) < SMALL_INT
        dt = np.int16 if small else np.int32
        jobs = buf.astype(dt)
        credit, pes = self.credit.astype(dt), self.pes.astype(dt)
        zero = np.zeros_like(credit)
        pending, idle, future = (np.empty_like(credit) for _ in range(3))
        ahead = jobs[1:self.Q + 1].sum(axis=0, dtype=dt)  # queued in the look-ahead of step 0: s+1..s+Q
        rounds = np.empty((upto, buf.shape[1]), dtype=dt)
        for i in range(upto):
            np.subtract(jobs[i], credit, out=future)                        # jobs minus credit ...
            np.maximum(future, zero, out=pending)                           # ... the pending ones
            np.subtract(pending, future, out=credit)                        # credit left: max(0, credit - jobs)
            rho = rounds[i]
            if self.unit:
                np.maximum.reduce(pending, axis=1, out=rho)                 # [L]
                np.subtract(rho[:, None], pending, out=idle)
            else:
                rho[:] = (-(-pending // pes)).max(axis=1)
                np.multiply(rho[:, None], pes, out=idle)
                idle -= pending
            np.subtract(ahead, credit, out=future)                          # queued, not yet pulled
            np.maximum(future, zero, out=future)
            np.minimum(idle, future, out=future)
            credit += future
            if i + 1 < upto:                                                # slide the look-ahead window
                ahead -= jobs[i + 1]
                if i + 1 + self.Q < n:
                    ahead += jobs[i + 1 + self.Q]
        self.credit = credit.astype(np.int32)
        self.out.append(rounds.astype(np.int32))
        self.buf = buf[upto:]


def _buffered_max(buf: np.ndarray) -> int:
    """The most jobs buffered for one resource (summed over the steps of ``buf`` [n, L, X]), or a
    bound of it at least ``SMALL_INT`` when the exact figure is not needed: n times the largest
    entry decides most calls (one pass over ``buf``; the exact sum in int64 took 0.4 ms of the
    recurrence's 2.9 ms per design on ``bench_search.py``'s study); else the sum, in int32 when
    that cannot overflow (3.8x faster than in int64)."""
    peak = int(buf.max(initial=0))
    if buf.shape[0] * peak < SMALL_INT:
        return buf.shape[0] * peak
    wide = np.int32 if buf.shape[0] * peak < np.iinfo(np.int32).max else np.int64
    return int(buf.sum(axis=0, dtype=wide).max(initial=0))
