"""What the stages of one evaluation share: the design point, one typed field per object a stage
hands to a later one, the metrics so far and the reasons a design is infeasible.

Fields are filled in pipeline order (the stage that sets each one is named beside it); a stage
reads only fields set by the stages before it in ``dse.pipeline.evaluate.STAGES``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dse.catalog import MoEModel
from dse.hardware.die import Link
from dse.hardware.hierarchy import Hierarchy
from dse.mapping.placement import Domain
from dse.mapping.scheduler import Schedule
from dse.mapping.sharding import Sharding
from dse.spec import DesignPoint
from dse.workload.window import Workload


@dataclass
class Context:
    """The state of one evaluation (see the module docstring)."""
    point: DesignPoint
    workload: Workload | None = None         # the caller's pre-loaded window, or routing's
    metrics: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    model: MoEModel | None = None            # structure: the design's catalog model
    hierarchy: Hierarchy | None = None       # structure: capacity / bandwidth / FLOPS per level
    sharding: Sharding | None = None         # structure: chunks, TP degree, D_used
    dies: int | None = None                  # structure: pool dies (feasible mappings only)
    union: float | None = None               # routing: U(B), experts a decode step touches
    schedule: Schedule | None = None         # routing: the trace-driven schedule (None on 'catalog')
    domain: Domain | None = None             # routing: the layer's scheduling domain (None on 'catalog')
    die_noc_loads: dict[Link, float] = field(default_factory=dict)   # network: bytes per layer per link

    def infeasible(self, reason: str) -> None:
        """Record why the design cannot be built; later stages that need a mapping are skipped."""
        self.reasons.append(reason)

    @property
    def feasible(self) -> bool:
        return not self.reasons

    def number(self, key: str) -> float | None:
        """Metric ``key`` as a float, or None when it is absent, None or a flag."""
        v = self.metrics.get(key)
        return None if v is None or isinstance(v, bool) else float(v)
