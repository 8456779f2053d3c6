"""`dse grid` beyond memory: the space enumerated, evaluated and filtered chunk by chunk.

``stream_grid`` keeps only the running feasible front (its rows' knobs and objective values), the
running bounds of the feasible objective values (for the hypervolume's normalisation) and counts,
so memory does not grow with the space. Chunks are fixed: chunk ``k`` is rows
``[k * chunk, (k + 1) * chunk)`` in the grid sampler's order, so a checkpoint (`checkpoint`)
written after any chunk resumes to the same front, knee and hypervolume as an uninterrupted run.

The front is exact: a point dominated in the whole space is dominated by a point of the whole
front (domination is transitive), so filtering (running front + chunk) after every chunk keeps
what one filter over every point keeps, equal rows included, in ascending point order.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.search.front import pareto
from dse.search.front.ndsort import nondominated_fast
from dse.search.grid.checkpoint import Checkpoint, fingerprint
from dse.search.grid.grid import (
    FrontResult,
    GridColumns,
    check_closed_form,
    check_objectives,
    expand_dim,
    plan_dim,
    resolved,
    score_table,
    valid_rows,
)
from dse.search.space.objectives import ObjectiveSet
from dse.search.space.space import Space
from dse.vector import Columns, evaluate_columns
from dse.vector.evaluate import CHUNK


def enumerate_blocks(space: Space, base: Mapping[str, Any], limit: int = CHUNK) -> Iterator[GridColumns]:
    """``enumerate_space`` in consecutive blocks of at most ``limit`` rows (more only where one
    row of the knobs before the last takes more than ``limit`` values of the last)."""
    searched = [d.name for d in space.dims if d.searched]

    def rec(n: int, cols: dict, active: dict, j: int) -> Iterator[GridColumns]:
        if j == len(space.dims):
            yield GridColumns(n, cols, active, searched)
            return
        d = space.dims[j]
        plan = plan_dim(space, d, cols, base, n)
        counts = plan[2]
        if n > 1 and int(counts.sum()) > limit:
            for a, b in _pieces(counts, limit):
                yield from rec(b - a, {k: v[a:b] for k, v in cols.items()},
                               {k: v[a:b] for k, v in active.items()}, j)
            return
        yield from rec(*expand_dim(d, cols, active, plan), j + 1)

    yield from rec(1, {}, {}, 0)


def _pieces(counts: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Consecutive row ranges whose expanded totals stay within ``limit`` (a row alone if not)."""
    cum = np.cumsum(counts)
    out, a, done = [], 0, 0
    while a < len(counts):
        b = max(a + 1, int(np.searchsorted(cum, done + limit, side="right")))
        out.append((a, b))
        done, a = int(cum[b - 1]), b
    return out


def count_points(space: Space, base: Mapping[str, Any], limit: int = CHUNK) -> int:
    """The number of points of ``space`` over the flat knobs ``base``, without building the last
    knob's column (a space of trace-driven knobs is refused)."""
    check_closed_form(space)
    base = resolved(base)
    total = 0

    def rec(n: int, cols: dict, j: int) -> None:
        nonlocal total
        d = space.dims[j]
        plan = plan_dim(space, d, cols, base, n)
        counts = plan[2]
        if j == len(space.dims) - 1:
            total += int(counts.sum())
        elif n > 1 and int(counts.sum()) > limit:
            for a, b in _pieces(counts, limit):
                rec(b - a, {k: v[a:b] for k, v in cols.items()}, j)
        else:
            m, cols2, _ = expand_dim(d, cols, {}, plan)
            rec(m, cols2, j + 1)

    if space.dims:
        rec(1, {}, 0)
    return total if space.dims else 1


def chunks(blocks: Iterator[GridColumns], size: int) -> Iterator[GridColumns]:
    """Blocks regrouped into consecutive chunks of exactly ``size`` rows (the last one shorter)."""
    buf: list[GridColumns] = []
    held = 0
    for b in blocks:
        buf.append(b)
        held += b.n
        while held >= size:
            whole = _concat(buf)
            yield _rows(whole, 0, size)
            buf = [_rows(whole, size, whole.n)] if whole.n > size else []
            held -= size
    if held:
        yield _concat(buf)


def _concat(parts: list[GridColumns]) -> GridColumns:
    if len(parts) == 1:
        return parts[0]
    p0 = parts[0]
    return GridColumns(sum(p.n for p in parts), {k: np.concatenate([p.values[k] for p in parts]) for k in p0.values},
                       {k: np.concatenate([p.active[k] for p in parts]) for k in p0.active}, p0.searched)


def _rows(g: GridColumns, a: int, b: int) -> GridColumns:
    return GridColumns(b - a, {k: v[a:b] for k, v in g.values.items()},
                       {k: v[a:b] for k, v in g.active.items()}, g.searched)


def stream_grid(space: Space, objset: ObjectiveSet, base: Mapping[str, Any], chunk: int = CHUNK,
                checkpoint: str | None = None, checkpoint_every_s: float = 5.0,
                on_chunk: Callable[[int, GridColumns, Any, np.ndarray, np.ndarray], None] | None = None,
                progress: Callable[[int], None] | None = None) -> FrontResult:
    """Every point of ``space`` evaluated chunk by chunk, keeping only the running front (only the
    metrics the objectives read are computed, all of them when ``on_chunk`` sees the tables).
    ``checkpoint``: a file resumed from if it exists (and matches this run), written at most every
    ``checkpoint_every_s`` seconds and on an interrupt, removed when the run completes."""
    check_closed_form(space)
    check_objectives(objset, base)
    t0 = time.perf_counter()
    ck = Checkpoint(checkpoint, fingerprint(space, objset, base, chunk)) if checkpoint else None
    saved = ck.load() if ck is not None else None
    st = _State.from_arrays(saved) if saved is not None else _State.empty(len(objset.objectives))
    resumed = st.chunks
    last_save = time.monotonic()
    try:
        for k, g in enumerate(chunks(enumerate_blocks(space, resolved(base), chunk), chunk)):
            if k < resumed:
                continue
            start = k * chunk
            cols = Columns.from_values({**base, **g.values}, g.n)
            t = evaluate_columns(cols, need=None if on_chunk is not None else objset.metrics)
            v, f = score_table(t, objset, valid_rows(cols))
            st.add(start, g, v, f, objset.directions)
            if on_chunk is not None:
                on_chunk(start, g, t, v, f)
            if ck is not None and time.monotonic() - last_save >= checkpoint_every_s:
                ck.save(st.arrays())
                last_save = time.monotonic()
            if progress is not None:
                progress(g.n)
    except BaseException:
        if ck is not None and st.chunks > resumed:
            ck.save(st.arrays())
        raise
    if ck is not None:
        ck.remove()
    return st.result(base, objset, time.perf_counter() - t0, resumed)


@dataclass
class _State:
    """The running front and counts (what a checkpoint holds)."""
    chunks: int
    n: int
    n_feasible: int
    lo: np.ndarray                 # bounds of the feasible finite objective values (minimisation form)
    hi: np.ndarray
    index: np.ndarray
    F: np.ndarray                  # front, minimisation form
    values: np.ndarray             # front, own directions
    knobs: dict[str, np.ndarray]
    active: dict[str, np.ndarray]
    searched: list[str]

    @classmethod
    def empty(cls, m: int) -> _State:
        return cls(0, 0, 0, np.full(m, np.inf), np.full(m, -np.inf), np.zeros(0, dtype=np.int64),
                   np.zeros((0, m)), np.zeros((0, m)), {}, {}, [])

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"counts": np.array([self.chunks, self.n, self.n_feasible]), "lo": self.lo, "hi": self.hi,
               "index": self.index, "F": self.F, "values": self.values, "searched": np.array(self.searched, dtype=str)}
        out.update({f"knob.{k}": v for k, v in self.knobs.items()})
        out.update({f"active.{k}": v for k, v in self.active.items()})
        return out

    @classmethod
    def from_arrays(cls, a: Mapping[str, np.ndarray]) -> _State:
        chunks, n, n_feasible = (int(v) for v in a["counts"])
        knobs = {k[5:]: v for k, v in a.items() if k.startswith("knob.")}
        active = {k[7:]: v for k, v in a.items() if k.startswith("active.")}
        return cls(chunks, n, n_feasible, a["lo"], a["hi"], a["index"], a["F"], a["values"], knobs, active,
                   [str(s) for s in a["searched"]])

    def add(self, start: int, g: GridColumns, values: np.ndarray, feasible: np.ndarray, directions) -> None:
        self.chunks += 1
        self.n += g.n
        self.n_feasible += int(feasible.sum())
        self.searched = g.searched
        cand = np.flatnonzero(feasible & np.all(np.isfinite(values), axis=1))
        if not len(cand):
            return
        F = pareto.to_min(values[cand], directions)
        self.lo, self.hi = np.minimum(self.lo, F.min(axis=0)), np.maximum(self.hi, F.max(axis=0))
        allF = np.concatenate([self.F, F])
        keep = nondominated_fast(allF)
        old, new = keep[:len(self.F)], cand[keep[len(self.F):]]
        self.index = np.concatenate([self.index[old], start + new])
        self.F = allF[keep]
        self.values = np.concatenate([self.values[old], values[new]])
        self.knobs = {k: np.concatenate([self.knobs[k][old], v[new]]) if self.knobs else v[new]
                      for k, v in g.values.items()}
        self.active = {k: np.concatenate([self.active[k][old], v[new]]) if self.active else v[new]
                       for k, v in g.active.items()}

    def result(self, base: Mapping[str, Any], objset: ObjectiveSet, seconds: float, resumed: int) -> FrontResult:
        k = len(self.index)
        grid = GridColumns(k, self.knobs, self.active, self.searched)
        cols = Columns.from_values({**base, **self.knobs}, k)
        knee = int(self.index[pareto.knee_index(self.F)]) if k else None
        hv = None
        if k:
            span = np.where(self.hi > self.lo, self.hi - self.lo, 1.0)
            hv = pareto.hypervolume((self.F - self.lo) / span, np.full(self.F.shape[1], 1.1))
        return FrontResult(self.n, self.n_feasible, self.index, self.values, grid, cols, knee, seconds, hv, resumed)
