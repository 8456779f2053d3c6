"""Multi-fidelity search (``[search] fidelity = "multi"``): screen each proposal with the closed form.

A study with ``fidelity = "multi"`` evaluates every proposed design first with the vectorised
closed form (``dse.vector``, microseconds) and turns it into *bounds* of its trace-driven
metrics (``dse.search.propose.bound.metrics``: each bound is provably no better than the trace-driven value,
under the assumption stated there). The trace-driven evaluation (milliseconds to seconds) is
spent only on designs that can still enter the feasible front of the trials before the batch:

* a design whose bounds already violate a constraint (or that cannot be mapped) is infeasible
  whatever the schedule: screened, ``"infeasible under the closed-form bound: <reason>"``;
* a design whose objective bounds are weakly dominated by (or equal to) a point of the current
  front cannot improve it: screened, ``"dominated by trial N under the closed-form bound"``.

An objective or constraint whose metric has no bound in the right direction (``bounds.KINDS``)
is never screened on: the objective's bound is then the best possible value, the constraint
counts as met.

A screened trial is recorded, never dropped: told to the sampler (COMPLETE) with its bound values
(the worst value for an objective without one) and constraints from the bounds, with the user
attribute ``screened`` = the reason and ``dse = {design, screened, bound, feasible: false,
reason}``; stored PRUNED like an infeasible trial (``dse.search.storage.stored``, ``dse_outcome`` =
``screened: <reason>``), so no front, optuna's or the dashboard's, takes it; it
carries no metrics, so it is never on the front, never in the design cache and a later proposal
of the same design is screened again. The screen sees only the trials before the batch, so the
decisions (and the study) do not depend on ``--jobs`` and a resumed study replays them exactly.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.search.front import pareto
from dse.search.propose.bound import metrics as bounds
from dse.search.space.objectives import Constraint, Objective, ObjectiveSet, score
from dse.search.space.objectives import _aggregate as aggregate
from dse.search.storage.stored import OUTCOME_ATTR

FIDELITIES = ("single", "multi")


@dataclass(frozen=True)
class Screened:
    """A design the screen spares a trace-driven evaluation."""
    reason: str
    values: list[float]                 # told to the sampler (objective directions)
    constraints: list[float]            # optuna constraint values (<= 0 satisfied)
    bound: dict[str, float | None]      # objective name -> its bound (None: no bound)


def screen_for(cfg: Any, finished: Sequence, cache: Any) -> Screen | None:
    """The screen of the next batch (None for a single-fidelity study)."""
    return Screen(cfg, finished, cache) if cfg.fidelity == "multi" else None


def check_fidelity(value: Any, src: str, trace: Any) -> str:
    """``search.fidelity`` checked: one of ``FIDELITIES``; multi needs trace-driven workloads."""
    if value not in FIDELITIES:
        raise ConfigError(f"{src}: search.fidelity = {value!r}: must be one of {', '.join(FIDELITIES)}")
    if value == "multi" and trace == "catalog":
        raise ConfigError(f"{src}: search.fidelity = 'multi': the workload's trace = 'catalog' is the closed form "
                          f"already (allowed: single; or a trace-driven workload, trace = 'synthetic' or a file)")
    return value


class Screen:
    """Screens designs against the feasible front of ``finished`` (see the module docstring)."""

    def __init__(self, cfg: Any, finished: Sequence, cache: Any):
        self.cfg = cfg
        self.objs: ObjectiveSet = cfg.objectives
        self.numbers, self.front = current_front(cfg, finished, cache)

    def __call__(self, design: Mapping[str, Any]) -> Screened | None:
        try:
            points = self.cfg.points(design)
        except ConfigError:
            return None                         # the evaluation records an invalid design
        if any(p.trace == "catalog" for p in points.values()):
            return None
        bound, sc = design_bound(self.objs, closed_form_bounds(points))
        values = [(b if b is not None else (math.inf if o.direction == "minimize" else -math.inf))
                  for o, b in zip(self.objs.objectives, bound)]
        named = {o.name: b for o, b in zip(self.objs.objectives, bound)}
        if not sc.feasible:
            return Screened(f"infeasible under the closed-form bound: {sc.reason}", values, sc.constraints, named)
        n = self.dominated_by(bound)
        if n is None:
            return None
        return Screened(f"dominated by trial {n} under the closed-form bound", values, sc.constraints, named)

    def dominated_by(self, bound: list[float | None]) -> int | None:
        """The first front trial that weakly dominates the bound vector (None: none does)."""
        if not len(self.front) or any(b is None or not math.isfinite(b) for b in bound):
            return None
        v = pareto.to_min(np.array([bound], dtype=float), self.objs.directions)[0]
        hit = np.flatnonzero((self.front <= v).all(axis=1))
        return int(self.numbers[hit[0]]) if hit.size else None


def current_front(cfg: Any, finished: Sequence, cache: Any) -> tuple[list[int], np.ndarray]:
    """(trial numbers, minimisation array) of the feasible front of the finished trials; a
    repeated design is cited by its first trial."""
    nums, rows = [], []
    for t in finished:
        rec = t.user_attrs.get("dse", {})
        if t.state.name != "COMPLETE" or not rec.get("feasible") or rec.get("screened") or t.values is None:
            continue
        if not all(math.isfinite(v) for v in t.values):
            continue
        hit = cache.get(t.user_attrs.get("design_key", ""))
        nums.append(hit.trial if hit is not None else t.number)
        rows.append(list(t.values))
    if not rows:
        return [], np.zeros((0, len(cfg.objectives.objectives)))
    F = pareto.to_min(np.array(rows, dtype=float), cfg.objectives.directions)
    keep = pareto.nondominated(F)
    order = sorted(np.flatnonzero(keep), key=lambda i: nums[i])
    return [nums[i] for i in order], F[order]


def closed_form_bounds(points: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{model: bound metrics}`` of one design on every workload: the vectorised closed form of
    all its workloads in one table, then ``bounds.bound_metrics`` per workload."""
    return closed_form_bounds_many([points])[0]


def closed_form_bounds_many(designs: Sequence[Mapping[str, Any]]) -> list[dict[str, dict[str, Any]]]:
    """``closed_form_bounds`` of many designs (``{model: point}`` each), with the closed form of
    all of them in one vectorised table. A point with ``trace = 'catalog'`` gets its closed-form
    metrics themselves (they are its values, not bounds). Equal to
    ``closed_form_bounds_reference``, with the table's rows converted column by column and what
    does not depend on the design (model, workload statistics, domain extent) looked up once."""
    from dse.catalog import get_model
    from dse.vector import Columns, evaluate_columns
    flat = [(k, name, p) for k, points in enumerate(designs) for name, p in points.items()]
    if not flat:
        return []
    rows = evaluate_columns(Columns.from_points([p for _, _, p in flat])).rows()
    out: list[dict[str, dict[str, Any]]] = [{} for _ in designs]
    stats: dict[tuple, Any] = {}                    # per workload and tile width, within this call
    for row, (k, name, p) in zip(rows, flat):
        if p.trace == "catalog":
            out[k][name] = row
            continue
        model = get_model(p.model)
        key = (p.model, p.trace, p.batch, p.trace_steps, p.trace_seed, p.profile_steps, p.tile_width)
        st = stats.get(key) or stats.setdefault(key, bounds.trace_stats(p, model))
        ext = bounds.domain_extent(model.experts, p.core_side, p.groups, p.die_units_x, p.die_units_y,
                                   p.core_remainder, p.layer_layout)
        out[k][name] = bounds.bound_metrics(row, p, model, st, ext)
    return out


def closed_form_bounds_reference(designs: Sequence[Mapping[str, Any]]) -> list[dict[str, dict[str, Any]]]:
    """``closed_form_bounds_many`` the slow, plain way (the oracle of its tests and benchmark): the
    table read row by row, every design's workload statistics and scheduling domain built anew."""
    from dse.catalog import get_model
    from dse.mapping.placement import domain
    from dse.vector import Columns, evaluate_columns
    from dse.vector.columns import KNOBS
    flat = [(k, name, p) for k, points in enumerate(designs) for name, p in points.items()]
    if not flat:
        return []
    dicts = [p.to_dict(resolved=True) for _, _, p in flat]
    table = evaluate_columns(Columns.from_values({k: [d[k] for d in dicts] for k in KNOBS}, len(dicts)))
    out: list[dict[str, dict[str, Any]]] = [{} for _ in designs]
    for i, (k, name, p) in enumerate(flat):
        if p.trace == "catalog":
            out[k][name] = table.row(i)
            continue
        model = get_model(p.model)
        dom = domain(model.experts, p.core_side, p.groups, p.die_units_x, p.die_units_y,
                     p.core_remainder, p.layer_layout)
        out[k][name] = bounds.bound_metrics(table.row(i), p, model, bounds.trace_stats(p, model),
                                            bounds.DomainExtent.of(dom))
    return out


def design_bound(objs: ObjectiveSet, per_model: Mapping[str, Mapping[str, Any]]) -> tuple[list[float | None], Any]:
    """(the objectives' bounds, None where there is none; the ``Score`` of the constraints under
    the bounds) of one design from its ``closed_form_bounds``."""
    valid, keep = _screened_on(objs)          # = bound_value and constraint_view, set up once
    vals = [[m.get(o.metric) for m in per_model.values()] for o in objs.objectives]
    bound = [aggregate(o, v) if ok and v and all(x is not None for x in v) else None
             for o, ok, v in zip(objs.objectives, valid, vals)]
    return bound, score({k: {n: m[n] for n in keep if n in m} for k, m in per_model.items()}, objs)


_SCREENED_ON: dict[int, tuple[ObjectiveSet, tuple[bool, ...], tuple[str, ...]]] = {}


def _screened_on(objs: ObjectiveSet) -> tuple[tuple[bool, ...], tuple[str, ...]]:
    """(``valid_for_objective`` of each objective, the metrics ``constraint_view`` keeps) of
    ``objs``, computed once per objective set (``design_bound`` runs once per candidate)."""
    hit = _SCREENED_ON.get(id(objs))
    if hit is None or hit[0] is not objs:
        keep = constraint_metrics(objs)
        if len(_SCREENED_ON) >= 8:
            _SCREENED_ON.clear()
        hit = _SCREENED_ON[id(objs)] = (objs, tuple(valid_for_objective(o) for o in objs.objectives),
                                        tuple(sorted(keep)))
    return hit[1], hit[2]


def valid_for_objective(o: Objective) -> bool:
    """Whether ``o``'s metric has a bound that is never better than its value."""
    kind = bounds.KINDS.get(o.metric)
    return kind == bounds.EXACT or kind == (bounds.LOWER if o.direction == "minimize" else bounds.UPPER)


def valid_for_constraint(c: Constraint) -> bool:
    """Whether a bound can prove ``c`` violated: the left side bounded toward satisfying it (a
    lower bound for ``le``, an upper one for ``ge``) and the right side exact."""
    kind = bounds.KINDS.get(c.metric)
    lhs = kind == bounds.EXACT or kind == (bounds.LOWER if c.op == "le" else bounds.UPPER)
    return lhs and (not isinstance(c.rhs, str) or bounds.KINDS.get(c.rhs) == bounds.EXACT)


def bound_value(o: Objective, vals: Sequence[Any]) -> float | None:
    """The objective's bound over the workloads (its aggregate is monotone in each workload's
    value, so the aggregate of bounds bounds the aggregate); None without a valid bound."""
    if not valid_for_objective(o) or not vals or any(v is None for v in vals):
        return None
    return aggregate(o, vals)


def constraint_view(objs: ObjectiveSet, m: Mapping[str, Any]) -> dict[str, Any]:
    """The bound metrics a constraint may be judged on (the others are left out: met)."""
    keep = constraint_metrics(objs)
    return {k: v for k, v in m.items() if k in keep}


def constraint_metrics(objs: ObjectiveSet) -> set[str]:
    """The metrics ``constraint_view`` keeps: the verdict, and both sides of every constraint a
    bound can judge (``valid_for_constraint``)."""
    keep = {"feasible", "infeasible_reason"}
    for c in objs.constraints:
        if valid_for_constraint(c):
            keep.add(c.metric)
            if isinstance(c.rhs, str):
                keep.add(c.rhs)
    return keep


def record_screened(trial, key: str, design: Mapping[str, Any], s: Screened, constraint_keys: Sequence[str]
                    ) -> list[float]:
    """Set a screened trial's user attributes and constraints (named ``constraint_keys``);
    return the values to tell."""
    trial.set_user_attr("design_key", key)
    trial.set_user_attr("screened", s.reason)
    trial.set_user_attr(OUTCOME_ATTR, f"screened: {s.reason}")      # stored PRUNED (dse.search.storage.stored)
    trial.set_user_attr("dse", {"design": dict(design), "screened": s.reason, "bound": dict(s.bound),
                                "feasible": False, "reason": f"screened: {s.reason}"})
    for name, v in zip(constraint_keys, s.constraints):
        trial.set_constraint(name, v)
    return list(s.values)
