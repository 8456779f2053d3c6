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
        self.cols = np.flatnonzero(pes > 0)             # resources with PE tiles (drop layout padding)
        self.pes = pes[self.cols].astype(np.int32)
        self.unit = bool((self.pes == 1).all())         # one tile each: ceil(p / 1) = p
        self.buf: np.ndarray | None = None
        self.credit: np.ndarray | None = None
        self.out: list[np.ndarray] = []

    def push(self, jx: np.ndarray) -> None:
        jx = jx[:, :, self.cols].astype(np.int32)
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
        cs = np.cumsum(buf[:min(n, upto + self.Q)], axis=0, dtype=np.int32)
        # every value below stays within [-(cs + credit), cs + credit + P]: int16 when that fits
        small = int(cs[-1].max(initial=0)) + int(self.credit.max(initial=0)) + int(self.pes.max(initial=0)) < SMALL_INT
        dt = np.int16 if small else np.int32
        ahead = (cs[np.minimum(np.arange(upto) + self.Q, len(cs) - 1)] - cs[:upto]).astype(dt)  # queued in each look-ahead
        jobs = buf[:upto].astype(dt)
        credit, pes = self.credit.astype(dt), self.pes.astype(dt)
        pending, idle, future = (np.empty_like(credit) for _ in range(3))
        rounds = np.empty((upto, buf.shape[1]), dtype=np.int32)
        for i in range(upto):
            np.subtract(jobs[i], credit, out=future)                        # jobs minus credit ...
            np.maximum(future, 0, out=pending)                              # ... the pending ones
            np.subtract(pending, future, out=credit)                        # credit left: max(0, credit - jobs)
            if self.unit:
                rho = pending.max(axis=1)                                   # [L]
                np.subtract(rho[:, None], pending, out=idle)
            else:
                rho = (-(-pending // pes)).max(axis=1)
                np.multiply(rho[:, None], pes, out=idle)
                idle -= pending
            np.subtract(ahead[i], credit, out=future)                       # queued, not yet pulled
            np.maximum(future, 0, out=future)
            np.minimum(idle, future, out=future)
            credit += future
            rounds[i] = rho
        self.credit = credit.astype(np.int32)
        self.out.append(rounds)
        self.buf = buf[upto:]
