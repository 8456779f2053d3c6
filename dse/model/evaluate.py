"""The evaluation pipeline: one design point in, every metric out (a flat, JSON-able dict).

Stages run in ``order``; each is a small function ``stage(ctx) -> dict`` registered with
``@stage(name, order)`` in the module that owns the physics:

====  =========================  ==============================================================
 10   structure                  hierarchy per level, sharding, TP, D_used, pool dies (here)
 20   routing                    U(B): catalog closed form, or trace-driven scheduling
 30   performance                t_layer, per-token latency, energy, GPU baselines, AF serving
 40+  network, area_power, cost  per-level demand / provision, area, power, cost
====  =========================  ==============================================================

An infeasible design is a result (``feasible = False`` and ``infeasible_reason``), never an
exception: stages that need a feasible mapping are skipped and their metrics are absent.
"""
from __future__ import annotations

import importlib
import sys
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from dse.spec import DesignPoint

StageFn = Callable[["Context"], dict[str, Any]]

# Keys every result carries (None when a stage could not run, e.g. for an infeasible design),
# so JSON consumers and the DSE always find them. Stages append their own with `guarantee()`.
GUARANTEED_KEYS: list[str] = [
    "feasible", "infeasible_reason", "dies", "tp_degree", "d_used_columns", "array_utilization",
    "t_layer_us", "ffn_latency_us_per_token", "weight_mb_per_token", "weight_energy_uj_per_token",
    "die_area_mm2", "die_power_w", "pool_power_w",
]


def guarantee(*keys: str) -> None:
    """Declare metric keys that must be present in every result (None when not computed)."""
    for k in keys:
        if k not in GUARANTEED_KEYS:
            GUARANTEED_KEYS.append(k)


@dataclass(order=True)
class _Stage:
    order: int
    name: str
    fn: StageFn = field(compare=False)
    needs_feasible: bool = field(default=True, compare=False)


_STAGES: dict[str, _Stage] = {}

# Modules that register stages; imported lazily on the first evaluation.
STAGE_MODULES = (
    "dse.model.stages",
    "dse.mapping.routing_stage",     # U(B): catalog closed form or trace-driven scheduling
    "dse.model.network_stage",
)


def stage(name: str, order: int, *, needs_feasible: bool = True):
    """Register ``fn`` as pipeline stage ``name`` (re-registering a name replaces it)."""
    def deco(fn: StageFn) -> StageFn:
        _STAGES[name] = _Stage(order, name, fn, needs_feasible)
        return fn
    return deco


@dataclass
class Context:
    """What stages share: the point, the resolved model, and earlier stages' objects/metrics."""
    point: DesignPoint
    metrics: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)   # non-metric objects (hierarchy, trace, ...)

    def infeasible(self, reason: str) -> None:
        self.reasons.append(reason)

    @property
    def feasible(self) -> bool:
        return not self.reasons


@dataclass
class Result:
    point: DesignPoint
    metrics: dict[str, Any]

    @property
    def feasible(self) -> bool:
        return bool(self.metrics["feasible"])

    @property
    def reason(self) -> str:
        return self.metrics["infeasible_reason"]

    def to_json(self) -> dict[str, Any]:
        """Flat JSON object: the design's knobs (resolved) and every metric."""
        out = {k: v for k, v in self.point.to_dict(resolved=True).items()}
        out.update(self.metrics)
        return out


def _stages() -> list[_Stage]:
    # Import every stage module once (not "when nothing is registered": a stage module imported
    # directly, e.g. by a test, must not hide the others).
    for mod in STAGE_MODULES:
        if mod not in sys.modules:
            importlib.import_module(mod)
    return sorted(_STAGES.values())


def evaluate(point: DesignPoint, **extra: Any) -> Result:
    """Evaluate one design point. ``extra`` objects (e.g. a pre-loaded ``trace``) are made
    available to stages through ``ctx.extra``."""
    ctx = Context(point, extra=dict(extra))
    for st in _stages():
        if st.needs_feasible and not ctx.feasible:
            continue
        ctx.metrics.update(st.fn(ctx))
    m = ctx.metrics
    m["feasible"] = ctx.feasible
    m["infeasible_reason"] = "; ".join(ctx.reasons)
    for k in GUARANTEED_KEYS:
        m.setdefault(k, None)
    for k, v in m.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ArithmeticError(f"metric {k} = {v} is not finite for {point}")  # a model bug
    return Result(point, m)
