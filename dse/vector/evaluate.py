"""The vectorised closed-form evaluator: a table of design points in, every metric out.

``evaluate_columns(cols)`` computes, for every row, what ``dse.pipeline.evaluate.evaluate`` computes
for that design point with ``trace = 'catalog'`` (closed-form unions, no scheduling): mapping,
dies, TP, t_layer, read / peak latency, energy, per-level network demand and provision, area,
power and cost, feasibility and the infeasible reason. Stages skipped by the scalar path for an
infeasible design are absent from that row (``Table.row`` rebuilds the scalar dict). The scalar
path stays the reference; `tests/vector/test_evaluate.py` checks equality over random designs.

``evaluate_chunks`` bounds memory: it yields one table per ``chunk`` rows.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from dse.vector import comm, structure
from dse.vector.columns import Columns
from dse.vector.groups import cached_factorization
from dse.vector.table import Table

CHUNK = 1 << 16


def guaranteed_keys() -> tuple[str, ...]:
    """The keys every scalar result carries (stage modules register theirs on import)."""
    from dse.pipeline.evaluate import GUARANTEED_KEYS
    return tuple(GUARANTEED_KEYS)


def evaluate_columns(cols: Columns) -> Table:
    """Every closed-form metric of every row of ``cols`` (one table; see ``evaluate_chunks``)."""
    M = structure.Models.current()
    t = Table(cols.n, guaranteed=guaranteed_keys())
    x: dict = {}
    with np.errstate(all="ignore"), cached_factorization():   # unreached rows may divide by zero
        structure.structure(cols, M, t, x)
        ran = t.feasible.copy()
        structure.routing(cols, M, t, x, ran)
        structure.performance(cols, M, t, x, ran)
        comm.network_stage(cols, M, t, x, ran)
        comm.delivered_stage(t, ran)
        costed = comm.area_power(cols, M, t, x, ran)
        comm.cost_stage(cols, M, t, x, costed)
    return t


def evaluate_chunks(cols: Columns, chunk: int = CHUNK) -> Iterator[tuple[int, Table]]:
    """(first row, table) for consecutive chunks of ``chunk`` rows."""
    for start in range(0, cols.n, chunk):
        yield start, evaluate_columns(cols.take(slice(start, min(cols.n, start + chunk))))
