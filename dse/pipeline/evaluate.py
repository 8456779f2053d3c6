"""The evaluation pipeline: one design point in, every metric out (a flat, JSON-able dict).

The stages run in the order of ``STAGES``; each is a function ``run(ctx) -> dict`` in
``dse.pipeline.stages`` that wires the design's knobs into the physics functions of
``dse.hardware``, ``dse.mapping`` and ``dse.performance`` and returns its metrics:

=============  ==============================================================================
structure      hierarchy per level, sharding, TP, D_used, pool dies
routing        U(B): catalog closed form, or trace-driven placement and scheduling
performance    t_layer, per-token latency, energy, GPU baselines, AF serving
network        per-level communication demand and provision, round stretch, effective MFU
delivered      schedule-aware per-token time and rate: peak x actual MFU / round stretch (Eq. 2)
scheduled      per-token time from the rounds of the schedule (busiest job per round, spec sec. 8)
area_power     die area (and the area budget), die and pool power
cost           dies per wafer, yield, pool cost, $ per million tokens
=============  ==============================================================================

An infeasible design is a result (``feasible = False`` and ``infeasible_reason``), never an
exception: stages that need a feasible mapping are skipped and their metrics are None.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dse.pipeline.context import Context
from dse.pipeline.stages import area_power, cost, delivered, network, performance, routing, scheduled, structure
from dse.spec import DesignPoint
from dse.workload.window import Workload


@dataclass(frozen=True)
class Stage:
    """One step of the pipeline: its function, whether it needs a feasible mapping, and the metric
    keys every result carries on its behalf (None when it did not run)."""
    name: str
    run: Callable[[Context], dict[str, Any]]
    needs_feasible: bool = True
    guaranteed: tuple[str, ...] = ()


STAGES: tuple[Stage, ...] = (
    Stage("structure", structure.run, needs_feasible=False, guaranteed=structure.GUARANTEED_KEYS),
    Stage("routing", routing.run, guaranteed=routing.GUARANTEED_KEYS),
    Stage("performance", performance.run, guaranteed=performance.GUARANTEED_KEYS),
    Stage("network", network.run, guaranteed=network.GUARANTEED_KEYS),
    Stage("delivered", delivered.run, guaranteed=delivered.GUARANTEED_KEYS),
    Stage("scheduled", scheduled.run, guaranteed=scheduled.GUARANTEED_KEYS),
    Stage("area_power", area_power.run, guaranteed=area_power.GUARANTEED_KEYS),
    Stage("cost", cost.run, guaranteed=cost.GUARANTEED_KEYS),
)

# The headline metrics, first in every result (in this order), then each stage's guaranteed keys:
# every result carries all of them (None when not computed), so JSON consumers and the DSE always
# find them.
HEADLINE_KEYS: tuple[str, ...] = (
    "feasible", "infeasible_reason", "dies", "tp_degree", "d_used_columns", "array_utilization",
    "t_layer_us", "ffn_latency_us_per_token", "weight_mb_per_token", "weight_energy_uj_per_token",
    "die_area_mm2", "die_power_w", "pool_power_w",
)
GUARANTEED_KEYS: tuple[str, ...] = tuple(dict.fromkeys(
    [*HEADLINE_KEYS, *(k for st in STAGES for k in st.guaranteed)]))


@dataclass
class Result:
    """A design point and every metric of it."""
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


# The stages before the arithmetic: they read the design's knobs and its workload, never a
# constant of ``POST_SCHEDULE_CONSTANTS``, so draws that move only those share them.
SCHEDULE_STAGES: tuple[str, ...] = ("structure", "routing")
POST_SCHEDULE_CONSTANTS: tuple[str, ...] = ("t_layer_fixed_us", "stretch_per_hop")


def _run(ctx: Context, stages: Sequence[Stage]) -> Context:
    for st in stages:
        if st.needs_feasible and not ctx.feasible:
            continue
        ctx.metrics.update(st.run(ctx))
    return ctx


def evaluate(point: DesignPoint, workload: Workload | None = None) -> Result:
    """Evaluate one design point (``workload``: a pre-loaded trace window for the routing stage)."""
    return _result(_run(Context(point, workload=workload), STAGES))


def evaluate_arithmetic_draws(point: DesignPoint, run_draw: Callable[[int, Callable[[], Result]], Any],
                              n: int) -> list[Any]:
    """``n`` evaluations of one design whose draws move only ``POST_SCHEDULE_CONSTANTS``: the
    placement and schedule (``SCHEDULE_STAGES``) once, then, inside ``run_draw(i, f)`` (which sets
    draw i's constants and calls ``f``), only the stages after them. Equal to ``evaluate(point)``
    under each draw (``tests/pipeline/test_evaluate.py``)."""
    head = [st for st in STAGES if st.name in SCHEDULE_STAGES]
    tail = [st for st in STAGES if st.name not in SCHEDULE_STAGES]
    if [st.name for st in STAGES[:len(head)]] != list(SCHEDULE_STAGES):
        raise AssertionError("SCHEDULE_STAGES must be the first stages of STAGES")
    base = _run(Context(point), head)

    def draw() -> Result:
        ctx = copy.copy(base)
        ctx.metrics, ctx.reasons, ctx.die_noc_loads = dict(base.metrics), list(base.reasons), {}
        return _result(_run(ctx, tail))
    return [run_draw(i, draw) for i in range(n)]


def _result(ctx: Context) -> Result:
    point, m = ctx.point, ctx.metrics
    m["feasible"] = ctx.feasible
    m["infeasible_reason"] = "; ".join(ctx.reasons)
    for k in GUARANTEED_KEYS:
        m.setdefault(k, None)
    for k, v in m.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ArithmeticError(f"metric {k} = {v} is not finite for {point}")  # a model bug
    return Result(point, m)
