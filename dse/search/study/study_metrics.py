"""A study's metrics checked before it runs (``StudyConfig.check_metrics``).

* Every objective and constraint metric must be one the evaluation produces
  (``check_study_metrics``, numeric where an objective needs a number).
* A study evaluated on the closed form only (``trace = "catalog"`` in its workload, not varied by
  its space) cannot optimise a metric that only the trace-driven model computes: the closed
  form leaves it empty, every feasible design then scores infinity and is stored as a failed
  trial (``non-finite objective``), and the run ends with "no feasible design yet" after saying
  how many designs were feasible. ``closed_form_only_objectives`` names those objectives and
  the study is refused with one line. Which metrics those are is what the vectorised closed form
  leaves empty (``dse.search.grid.grid.closed_form_metrics``: equal to the scalar path, tested there).
* Likewise a constraint that reads such a metric (either side, ``closed_form_only_constraints``):
  the closed form leaves it empty, and a constraint whose metric is missing counts as met
  (``objectives.score``: a missing metric otherwise means the design is already infeasible), so
  the study would run and silently ignore it. Refused with one line too.
"""
from __future__ import annotations

from typing import Any

from dse.errors import ConfigError
from dse.spec import DesignPoint
from dse.spec.params import BY_NAME


def check_study_metrics(cfg: Any) -> None:
    """Fail early on an objective / constraint metric the evaluation does not produce, then on
    objectives a closed-form-only study cannot compute (``closed_form_only_objectives``).

    Metric names come from evaluating the study's base design with catalog routing first
    (fast; every stage declares its keys with ``guarantee``) and only if a metric is still
    unknown, with the study's own routing (a trace-driven probe can take seconds)."""
    from dse.pipeline.evaluate import GUARANTEED_KEYS, evaluate
    known: set[str] = set(GUARANTEED_KEYS)
    numeric: dict[str, bool] = {}
    wl = {k: v for k, v in cfg.base.items() if BY_NAME[k].part == "workload"}
    probes = []
    for extra in ({"trace": "catalog"}, {}):
        try:
            probes.append(DesignPoint.from_dict({**cfg.base, "model": cfg.models[0], **extra}))
        except ConfigError:
            pass
    probes.append(DesignPoint.from_dict({**wl, "model": cfg.models[0]}))
    wanted = set(cfg.objectives.metrics)
    for pt in probes:
        r = evaluate(pt)
        for k, v in r.metrics.items():
            known.add(k)
            if v is not None:
                numeric[k] = isinstance(v, (int, float))
        if wanted <= known and r.feasible:
            break
    cfg.objectives.check_metrics(known, numeric)
    traced = _traced_only(cfg)
    bad = closed_form_only_objectives(cfg, traced)
    cons = closed_form_only_constraints(cfg, traced)
    if cons and not bad:
        shown = ", ".join(f"{c.name!r} ({m})" for c, m in cons)
        raise ConfigError(f"{cfg.objectives.source}: constraints {shown}: only the trace-driven evaluation computes "
                          f"{'this metric' if len(cons) == 1 else 'these metrics'}, and study {cfg.source} runs on "
                          f"trace = 'catalog' (the closed form), where the constraint would count as met; allowed: "
                          f"trace = 'synthetic' or a trace file in its [workload], or closed-form metrics")
    if bad:
        shown = ", ".join(o.name if o.name == o.metric else f"{o.name} ({o.metric})" for o in bad)
        raise ConfigError(f"{cfg.objectives.source}: objectives {shown}: only the trace-driven evaluation computes "
                          f"{'this metric' if len(bad) == 1 else 'these metrics'}, and study {cfg.source} runs on "
                          f"trace = 'catalog' (the closed form); allowed: trace = 'synthetic' or a trace file in "
                          f"its [workload], or closed-form metrics")


def closed_form_only_objectives(cfg: Any, traced: set[str] | None = None) -> list:
    """The objectives of a closed-form-only study whose metric the closed form leaves empty
    (none for a study whose workload or space routes on a trace); ``traced``: ``_traced_only(cfg)``
    if already known."""
    traced = _traced_only(cfg) if traced is None else traced
    return [o for o in cfg.objectives.objectives if o.metric in traced]


def closed_form_only_constraints(cfg: Any, traced: set[str] | None = None) -> list[tuple[Any, str]]:
    """(constraint, the metric it reads that the closed form leaves empty) of a closed-form-only
    study, the first such side of each constraint; ``traced`` as in ``closed_form_only_objectives``."""
    traced = _traced_only(cfg) if traced is None else traced
    out = []
    for c in cfg.objectives.constraints:
        sides = [c.metric] + ([c.rhs] if isinstance(c.rhs, str) else [])
        hit = next((m for m in sides if m in traced), None)
        if hit is not None:
            out.append((c, hit))
    return out


def _traced_only(cfg: Any) -> set[str]:
    """The metrics only the trace-driven evaluation computes, if the study runs on the closed form
    only (empty for a study whose workload or space routes on a trace)."""
    trace = cfg.base.get("trace", BY_NAME["trace"].default)
    if trace != "catalog" or any(d.name == "trace" for d in cfg.space.dims):
        return set()
    from dse.search.grid.grid import closed_form_metrics
    _, traced = closed_form_metrics({**cfg.base, "model": cfg.models[0]})
    return traced - {"infeasible_reason"}
