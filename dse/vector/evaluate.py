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

import functools
from collections.abc import Collection, Iterator

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


# Parts of the evaluation that no other part reads, skipped when none of their metrics is needed
# (the GPU baselines are read by AF serving and the cost stage).
OPTIONAL = ("gpu", "serving", "cost")


def evaluate_columns(cols: Columns, need: Collection[str] | None = None) -> Table:
    """Every closed-form metric of every row of ``cols`` (one table; see ``evaluate_chunks``).
    ``need``: the metrics the caller reads; the ``OPTIONAL`` parts producing none of them are
    skipped (their metrics are then absent from the table). None: every metric."""
    return _evaluate_skipping(cols, skipped(need))


def _evaluate_skipping(cols: Columns, skip: frozenset[str]) -> Table:
    M = structure.Models.current()
    t = Table(cols.n, guaranteed=guaranteed_keys())
    x: dict = {}
    with np.errstate(all="ignore"), cached_factorization():   # unreached rows may divide by zero
        structure.structure(cols, M, t, x)
        ran = t.feasible.copy()
        structure.routing(cols, M, t, x, ran)
        structure.performance(cols, M, t, x, ran)
        if "gpu" not in skip:
            structure.gpu_baselines(cols, M, t, x, ran)
        if "serving" not in skip:
            structure.af_serving(cols, M, t, x, ran)
        comm.network_stage(cols, M, t, x, ran)
        comm.delivered_stage(t, ran)
        costed = comm.area_power(cols, M, t, x, ran)
        if "cost" not in skip:
            comm.cost_stage(cols, M, t, x, costed)
    return t


def skipped(need: Collection[str] | None) -> frozenset[str]:
    """The ``OPTIONAL`` parts none of whose metrics (nor a part reading them) is in ``need``."""
    if need is None:
        return frozenset()
    made = optional_metrics()
    used = {p for p in OPTIONAL if made[p] & set(need)}
    if used & {"serving", "cost"}:
        used.add("gpu")
    return frozenset(OPTIONAL) - used


@functools.lru_cache(maxsize=1)
def optional_metrics() -> dict[str, frozenset[str]]:
    """The metrics each ``OPTIONAL`` part adds (found by evaluating one default design with and
    without it)."""
    cols = Columns.from_values({}, 1)
    every = set(evaluate_columns(cols).values)
    out = {}
    for p in OPTIONAL:
        without = {p, "serving", "cost"} if p == "gpu" else {p}
        out[p] = frozenset(every - set(_evaluate_skipping(cols, frozenset(without)).values))
    return out


def evaluate_chunks(cols: Columns, chunk: int = CHUNK) -> Iterator[tuple[int, Table]]:
    """(first row, table) for consecutive chunks of ``chunk`` rows."""
    for start in range(0, cols.n, chunk):
        yield start, evaluate_columns(cols.take(slice(start, min(cols.n, start + chunk))))
