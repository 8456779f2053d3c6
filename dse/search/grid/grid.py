"""Exhaustive closed-form search of a discrete space (``dse grid``): every point, evaluated with
the vectorised closed form (`dse.vector`), scored against an objective set, and the exact
feasible Pareto front with its knee (`dse.search.front.pareto.knee_index`, the knee ``dse front`` picks).

The space is enumerated as columns, in the order of ``Space.grid`` (the grid sampler's), without
building one dict per point: each knob repeats the rows built so far once per value it can take
there (conditions and bounds that depend on earlier knobs are evaluated once per distinct
combination of the knobs they read).
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.search.front import pareto
from dse.search.front.ndsort import nondominated_fast
from dse.search.space.objectives import ObjectiveSet
from dse.search.space.space import MAX_GRID, Dim, Space
from dse.spec.params import BY_NAME
from dse.vector import Columns, evaluate_chunks
from dse.vector.columns import TRACE_KNOBS, categories
from dse.vector.groups import distinct


@dataclass
class GridColumns:
    """An enumerated space: knob columns (string knobs as codes) and, per searched knob, the
    rows where it is active (an inactive knob keeps its base value and is not a parameter)."""
    n: int
    values: dict[str, np.ndarray]
    active: dict[str, np.ndarray]
    searched: list[str]

    def params(self, i: int) -> dict[str, Any]:
        return {k: _value(k, self.values[k][i]) for k in self.searched if self.active[k][i]}


def _value(name: str, v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    return categories(name)[v] if BY_NAME[name].kind == "str" else v


def _encode(name: str, values: list[Any]) -> np.ndarray:
    if BY_NAME[name].kind == "str":
        cats = categories(name)
        return np.array([cats.index(v) for v in values], dtype=np.int64)
    return np.array(values, dtype=np.int64 if BY_NAME[name].kind == "int" else np.float64)


def check_closed_form(space: Space) -> None:
    """Refuse a space that varies knobs only the trace-driven model reads."""
    for d in space.dims:
        if d.name in TRACE_KNOBS:
            raise ConfigError(f"{space.source}: params.{d.name}: a trace-driven knob; `dse grid` evaluates the "
                              f"closed form only (use `dse run` with a study for trace-driven designs)")


def enumerate_space(space: Space, base: Mapping[str, Any]) -> GridColumns:
    """Every point of ``space`` over ``base`` (flat knobs, derived defaults resolved), as columns."""
    n = 1
    cols: dict[str, np.ndarray] = {}
    active: dict[str, np.ndarray] = {}
    for d in space.dims:
        plan = plan_dim(space, d, cols, base, n)
        if int(plan[2].sum()) > MAX_GRID:
            raise ConfigError(f"{space.source}: the grid has more than {MAX_GRID} points; use a sampler "
                              f"(nsga2, tpe, random) or coarser steps")
        n, cols, active = expand_dim(d, cols, active, plan)
    return GridColumns(n, cols, active, [d.name for d in space.dims if d.searched])


def plan_dim(space: Space, d: Dim, cols: dict, base: Mapping[str, Any], n: int) -> tuple:
    """How knob ``d`` expands the ``n`` rows built so far: (active rows, value lists, each row's
    list, each row's number of values); ``expand_dim`` applies it."""
    act = np.ones(n, dtype=bool)
    for k, vals in d.when:
        col = cols.get(k)
        act &= np.isin(col, _encode(k, list(vals))) if col is not None else (base.get(k) in vals)
    groups, gid = _value_groups(space, d, cols, base, act)
    lens = np.array([len(g) for g in groups], dtype=np.int64)
    return act, groups, lens[gid], gid, lens


def expand_dim(d: Dim, cols: dict, active: dict, plan: tuple) -> tuple[int, dict, dict]:
    """Each row repeated once per value knob ``d`` takes there (the grid sampler's order)."""
    act, groups, counts, gid, lens = plan
    n = len(act)
    total = int(counts.sum())
    parent = np.repeat(np.arange(n), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    offsets = np.cumsum(lens) - lens
    flat = np.concatenate([_encode(d.name, g) for g in groups])
    new = flat[offsets[gid][parent] + np.arange(total) - first]
    cols = {k: v[parent] for k, v in cols.items()}
    active = {k: v[parent] for k, v in active.items()}
    cols[d.name] = new
    active[d.name] = act[parent]
    return total, cols, active


def _value_groups(space: Space, d: Dim, cols: dict, base: Mapping[str, Any],
                  act: np.ndarray) -> tuple[list[list[Any]], np.ndarray]:
    """The value lists a knob takes (group 0: inactive rows keep the base value) and each row's group."""
    inactive = [base.get(d.name)]
    if d.type == "fixed":
        return [[d.value]], np.zeros(len(act), dtype=np.int64)
    if d.type == "categorical":
        return [inactive, list(d.choices)], act.astype(np.int64)
    refs = sorted(set().union(*(b.refs for b in (d.low, d.high, d.step) if b is not None)))
    if not refs:
        return [inactive, space._values(d, base)], act.astype(np.int64)
    keys = [cols[r] if r in cols else np.full(len(act), base[r]) for r in refs]
    tuples, inv = distinct(keys)
    groups = [inactive]
    for t in tuples:
        env = dict(base)
        env.update({r: _value(r, v) if r in cols else v for r, v in zip(refs, t)})
        groups.append(space._values(d, env))
    return groups, np.where(act, inv + 1, 0)


# ---- scoring and the front ---------------------------------------------------------------
def closed_form_metrics(base: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """(metrics the closed form computes, metrics only the trace-driven model computes)."""
    from dse.vector.evaluate import evaluate_columns, guaranteed_keys
    t = evaluate_columns(Columns.from_values(dict(base), 1))
    closed = {k for k, kind in t.kinds.items() if kind != "none"} | {"feasible"}
    return closed, (set(guaranteed_keys()) | set(t.kinds)) - closed


def check_objectives(objset: ObjectiveSet, base: Mapping[str, Any]) -> None:
    """Refuse objectives or constraints that read a trace-driven (or unknown) metric."""
    closed, traced = closed_form_metrics(base)
    objset.check_metrics(closed | traced)
    for m in objset.metrics:
        if m in traced:
            raise ConfigError(f"{objset.source}: metric {m!r} is trace-driven; `dse grid` evaluates the closed form "
                              f"only (use `dse run` with a study, or closed-form metrics)")


def score_table(t, objset: ObjectiveSet, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(objective values n x m in their own directions, feasible) as ``objectives.score`` gives
    them for a single workload: a missing objective is +-inf; a constraint whose metric is missing
    counts as met; a violated one or an infeasible design is infeasible."""
    vals = []
    for o in objset.objectives:
        col = t.column(o.metric) if o.metric in t.values else np.full(t.n, np.nan)
        vals.append(np.where(np.isnan(col), math.inf if o.direction == "minimize" else -math.inf, col))
    feasible = t.feasible & valid
    for c in objset.constraints:
        lhs = t.column(c.metric) if c.metric in t.values else np.full(t.n, np.nan)
        rhs = (t.column(c.rhs) if c.rhs in t.values else np.full(t.n, np.nan)) if isinstance(c.rhs, str) \
            else np.full(t.n, float(c.rhs))
        rhs = rhs * c.scale
        d = lhs - rhs if c.op == "le" else rhs - lhs
        with np.errstate(invalid="ignore"):
            viol = d / np.maximum(np.abs(rhs), 1e-12)
        feasible &= np.isnan(viol) | (viol <= 0)
    return np.stack(vals, axis=1), feasible


def resolved(base: Mapping[str, Any]) -> dict[str, Any]:
    """The flat knobs ``base`` with every default resolved (the environment a space is enumerated in)."""
    env = Columns.from_values(dict(base), 1)
    return {k: env.value(k, 0) for k in env.data}


def valid_rows(cols: Columns) -> np.ndarray:
    """Rows the design-point validation accepts (cross-knob checks of ``DesignPoint``)."""
    side = cols["core_side"]
    return (cols["pe_groups_per_core"] <= side * side) & (side <= np.maximum(cols["die_units_x"], cols["die_units_y"]))


@dataclass
class FrontResult:
    """What `dse grid` reports: the front's rows (their knobs in ``grid``, ``cols``), not every point."""
    n: int
    n_feasible: int
    front: np.ndarray              # point indices of the feasible front, ascending
    values: np.ndarray             # len(front) x m, objectives in their own directions
    grid: GridColumns              # the front's rows only
    cols: Columns                  # the front's rows only
    knee: int | None               # point index of the knee
    seconds: float
    hypervolume: float | None
    resumed_chunks: int = 0


@dataclass
class GridResult:
    grid: GridColumns
    cols: Columns
    values: np.ndarray             # n x m, objectives in their own directions
    feasible: np.ndarray
    front: np.ndarray              # row indices of the feasible front, ascending
    knee: int | None               # row index of the knee
    seconds: float
    hypervolume: float | None

    def front_result(self) -> FrontResult:
        """The front's rows only (what ``stream_grid`` returns)."""
        f = self.front
        grid = GridColumns(len(f), {k: v[f] for k, v in self.grid.values.items()},
                           {k: v[f] for k, v in self.grid.active.items()}, self.grid.searched)
        return FrontResult(self.grid.n, int(self.feasible.sum()), f, self.values[f], grid, self.cols.take(f),
                           self.knee, self.seconds, self.hypervolume)


def run_grid(space: Space, objset: ObjectiveSet, base: Mapping[str, Any], chunk: int | None = None) -> GridResult:
    """Evaluate every point of ``space`` (over the flat knobs ``base``) and find the exact front,
    keeping every point's objective values in memory (at most ``MAX_GRID`` points; the reference
    for ``dse.search.grid.stream.stream_grid``, which `dse grid` runs)."""
    from dse.vector.evaluate import CHUNK
    check_closed_form(space)
    check_objectives(objset, base)
    t0 = time.perf_counter()
    grid = enumerate_space(space, resolved(base))
    cols = Columns.from_values({**base, **grid.values}, grid.n)
    valid = valid_rows(cols)
    values = np.empty((grid.n, len(objset.objectives)))
    feasible = np.empty(grid.n, dtype=bool)
    for start, t in evaluate_chunks(cols, chunk or CHUNK):
        v, f = score_table(t, objset, valid[start:start + t.n])
        values[start:start + t.n], feasible[start:start + t.n] = v, f
    cand = np.flatnonzero(feasible & np.all(np.isfinite(values), axis=1))
    F = pareto.to_min(values[cand], objset.directions)
    mask = nondominated_fast(F)
    front = cand[mask]
    knee = int(front[pareto.knee_index(F[mask])]) if len(front) else None
    hv = None
    if len(cand):
        lo, hi = F.min(axis=0), F.max(axis=0)
        span = np.where(hi > lo, hi - lo, 1.0)
        hv = pareto.hypervolume((F[mask] - lo) / span, np.full(F.shape[1], 1.1))
    return GridResult(grid, cols, values, feasible, front, knee, time.perf_counter() - t0, hv)
