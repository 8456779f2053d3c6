"""Objective sets: ``objectives/*.toml`` loader, validator and scorer.

::

    description = "latency against silicon"

    [[objectives]]
    metric = "ffn_latency_us_per_token"
    direction = "minimize"          # or "maximize"
    aggregate = "worst"             # over the study's workloads: worst (default) | mean | sum | max | min
    reference = 5.0                 # optional: hypervolume reference value (set on every objective)

    [[constraints]]                  # optional; a design violating one is recorded as infeasible
    metric = "die_area_mm2"
    le = "die_area_budget_mm2"       # a metric name or a number; or ge = ...
    scale = 1.0                      # optional multiplier of the right-hand side

Scoring (``score``) turns the per-workload metric dicts of one design into optuna values and
constraint values (<= 0 means satisfied). The first constraint value is the design's own
feasibility (number of workloads on which the model marks it infeasible); then one value per
constraint, the relative violation ``(lhs - rhs) / |rhs|`` (worst over workloads). An objective
whose metric is missing (the design cannot be mapped) scores the worst possible value (+-inf).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.errors import ConfigError, check_top_level
from dse.errors import suggest as _suggest
from dse.tomlfile import read_toml

DIRECTIONS = ("minimize", "maximize")
AGGREGATES = ("worst", "mean", "sum", "max", "min")
TOP_KEYS = ("description", "objectives", "constraints")
OBJ_KEYS = ("metric", "direction", "aggregate", "label", "reference")
CON_KEYS = ("metric", "le", "ge", "scale", "label")


@dataclass(frozen=True)
class Objective:
    metric: str
    direction: str = "minimize"
    aggregate: str = "worst"
    label: str = ""
    reference: float | None = None     # hypervolume reference value (objective's unit), optional

    @property
    def name(self) -> str:
        return self.label or self.metric

    @property
    def sign(self) -> float:
        """+1 to minimise, -1 to maximise (multiply to get a minimisation value)."""
        return 1.0 if self.direction == "minimize" else -1.0


@dataclass(frozen=True)
class Constraint:
    metric: str
    op: str                     # "le" | "ge"
    rhs: float | str            # number or metric name
    scale: float = 1.0
    label: str = ""

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        sym = "<=" if self.op == "le" else ">="
        rhs = self.rhs if isinstance(self.rhs, str) else f"{self.rhs:g}"
        return f"{self.metric} {sym} {'' if self.scale == 1 else f'{self.scale:g} x '}{rhs}"

    def rhs_value(self, m: Mapping[str, Any]) -> float | None:
        v = m.get(self.rhs) if isinstance(self.rhs, str) else self.rhs
        return None if v is None else float(v) * self.scale

    def violation(self, m: Mapping[str, Any]) -> float | None:
        """Violation (> 0 violated, <= 0 satisfied): relative to the limit, or in the metric's own
        units when the limit is 0 (``comm_violation <= 0``: a load 37 % over provision is 0.37, not
        0.37 / 1e-12); None when a metric is missing."""
        lhs, rhs = m.get(self.metric), self.rhs_value(m)
        if lhs is None or rhs is None:
            return None
        lhs = float(lhs)
        d = lhs - rhs if self.op == "le" else rhs - lhs
        return d / abs(rhs) if rhs != 0 else d


@dataclass(frozen=True)
class ObjectiveSet:
    source: str
    objectives: tuple[Objective, ...]
    constraints: tuple[Constraint, ...] = ()
    description: str = ""

    @property
    def directions(self) -> list[str]:
        return [o.direction for o in self.objectives]

    @property
    def names(self) -> list[str]:
        return [o.name for o in self.objectives]

    @property
    def metrics(self) -> list[str]:
        """Every metric the set reads (objectives, constraint sides)."""
        out = [o.metric for o in self.objectives]
        for c in self.constraints:
            out.append(c.metric)
            if isinstance(c.rhs, str):
                out.append(c.rhs)
        return list(dict.fromkeys(out))

    def check_metrics(self, known: Iterable[str], numeric: Mapping[str, bool] | None = None) -> None:
        """Raise ConfigError for a metric the evaluation does not produce."""
        known = set(known)
        for i, o in enumerate(self.objectives):
            _check_metric(self.source, f"objectives[{i}].metric", o.metric, known, numeric)
        for i, c in enumerate(self.constraints):
            _check_metric(self.source, f"constraints[{i}].metric", c.metric, known, numeric)
            if isinstance(c.rhs, str):
                _check_metric(self.source, f"constraints[{i}].{c.op}", c.rhs, known, numeric)

    def canonical(self) -> dict[str, Any]:
        return {"objectives": [[o.metric, o.direction, o.aggregate] for o in self.objectives],
                "constraints": [[c.metric, c.op, c.rhs, c.scale] for c in self.constraints]}


@dataclass(frozen=True)
class Score:
    values: list[float]          # one per objective, in the objective's own direction
    constraints: list[float]     # [infeasible workloads] + one relative violation per constraint
    feasible: bool
    reason: str


def score(per_model: Mapping[str, Mapping[str, Any]], objset: ObjectiveSet) -> Score:
    """Score one design evaluated on every workload (``{model: metrics}``)."""
    reasons: list[str] = []
    n_infeasible = 0
    multi = len(per_model) > 1
    for model, m in per_model.items():
        if not m.get("feasible", False):
            n_infeasible += 1
            reasons.append((f"{model}: " if multi else "") + (m.get("infeasible_reason") or "infeasible"))
    values = [_aggregate(o, [m.get(o.metric) for m in per_model.values()]) for o in objset.objectives]
    cons = [float(n_infeasible)]
    for c in objset.constraints:
        worst = None
        worst_model = ""
        for model, m in per_model.items():
            v = c.violation(m)
            if v is not None and (worst is None or v > worst):
                worst, worst_model = v, model
        if worst is None:
            worst = 0.0  # metrics absent: the design is already infeasible (first value)
        elif worst > 0:
            m = per_model[worst_model]
            rhs = c.rhs_value(m)
            reasons.append((f"{worst_model}: " if multi else "")
                           + f"constraint {c.name} violated ({_num(m.get(c.metric))} vs {_num(rhs)})")
        cons.append(float(worst))
    feasible = all(v <= 0 for v in cons)
    return Score(values, cons, feasible, "; ".join(reasons))


def _num(v: Any) -> str:
    return "-" if v is None else f"{float(v):.4g}"


def _aggregate(o: Objective, vals: Sequence[Any]) -> float:
    if any(v is None for v in vals) or not vals:
        return math.inf if o.direction == "minimize" else -math.inf
    xs = [float(v) for v in vals]
    agg = o.aggregate
    if agg == "worst":
        agg = "max" if o.direction == "minimize" else "min"
    if agg == "max":
        return max(xs)
    if agg == "min":
        return min(xs)
    if agg == "sum":
        return math.fsum(xs)
    return math.fsum(xs) / len(xs)


# ---- loading ---------------------------------------------------------------------------
def load_objectives(path: str | Path) -> ObjectiveSet:
    p = Path(path)
    return objectives_from_dict(read_toml(p), source=str(p))


def objectives_from_dict(data: Mapping[str, Any], source: str = "objectives") -> ObjectiveSet:
    desc = check_top_level(data, TOP_KEYS, source)
    objs = data.get("objectives")
    if not isinstance(objs, list) or not objs or not all(isinstance(o, Mapping) for o in objs):
        raise ConfigError(f"{source}: objectives: missing or empty; expected [[objectives]] tables with "
                          f"metric and direction")
    out_o = []
    for i, o in enumerate(objs):
        key = f"objectives[{i}]"
        _keys(o, OBJ_KEYS, source, key)
        metric = _metric(o.get("metric"), source, f"{key}.metric")
        d = o.get("direction", "minimize")
        if d not in DIRECTIONS:
            raise ConfigError(f"{source}: {key}.direction = {d!r}: must be one of {', '.join(DIRECTIONS)}")
        a = o.get("aggregate", "worst")
        if a not in AGGREGATES:
            raise ConfigError(f"{source}: {key}.aggregate = {a!r}: must be one of {', '.join(AGGREGATES)}")
        lab = _label(o.get("label", ""), source, f"{key}.label")
        ref = o.get("reference")
        if ref is not None and (isinstance(ref, bool) or not isinstance(ref, (int, float)) or not math.isfinite(ref)):
            raise ConfigError(f"{source}: {key}.reference = {ref!r}: must be a finite number (the hypervolume "
                              f"reference value of this objective)")
        out_o.append(Objective(metric, d, a, lab, None if ref is None else float(ref)))
    names = [o.name for o in out_o]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{source}: objectives: {dup[0]!r} appears twice (give each objective a distinct "
                          f"metric or label)")
    cons = data.get("constraints", [])
    if not isinstance(cons, list) or not all(isinstance(c, Mapping) for c in cons):
        raise ConfigError(f"{source}: constraints: expected [[constraints]] tables with metric and le or ge")
    out_c = []
    for i, c in enumerate(cons):
        key = f"constraints[{i}]"
        _keys(c, CON_KEYS, source, key)
        metric = _metric(c.get("metric"), source, f"{key}.metric")
        ops = [k for k in ("le", "ge") if k in c]
        if len(ops) != 1:
            raise ConfigError(f"{source}: {key}: needs exactly one of le (metric <= rhs) or ge (metric >= rhs)")
        op = ops[0]
        rhs = c[op]
        if isinstance(rhs, str):
            rhs = _metric(rhs, source, f"{key}.{op}")
        elif isinstance(rhs, bool) or not isinstance(rhs, (int, float)) or not math.isfinite(rhs):
            raise ConfigError(f"{source}: {key}.{op} = {rhs!r}: must be a finite number or a metric name")
        else:
            rhs = float(rhs)
        scale = c.get("scale", 1.0)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
            raise ConfigError(f"{source}: {key}.scale = {scale!r}: must be a positive number")
        out_c.append(Constraint(metric, op, rhs, float(scale), _label(c.get("label", ""), source, f"{key}.label")))
    return ObjectiveSet(source, tuple(out_o), tuple(out_c), desc)


def _keys(tbl: Mapping[str, Any], allowed: Sequence[str], source: str, key: str) -> None:
    for k in tbl:
        if k not in allowed:
            raise ConfigError(f"{source}: {key}.{k}: unknown key (allowed: {', '.join(allowed)}){_suggest(k, allowed)}")


def _metric(v: Any, source: str, key: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ConfigError(f"{source}: {key} = {v!r}: must be a metric name (see `dse evaluate --json`)")
    return v.strip()


def _label(v: Any, source: str, key: str) -> str:
    if not isinstance(v, str) or len(v) > 80:
        raise ConfigError(f"{source}: {key}: must be a string of at most 80 characters")
    return v


def _check_metric(source: str, key: str, metric: str, known: set[str], numeric: Mapping[str, bool] | None) -> None:
    if metric not in known:
        raise ConfigError(f"{source}: {key} = {metric!r}: unknown metric (see `dse evaluate --json` for the "
                          f"metrics of a design){_suggest(metric, known)}")
    if numeric is not None and not numeric.get(metric, True):
        raise ConfigError(f"{source}: {key} = {metric!r}: not a numeric metric")


