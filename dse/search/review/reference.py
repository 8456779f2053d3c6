"""A reference design against a study's front: `dse front STUDY --reference published | DESIGN.toml`.

A reference is a design from outside the study: ``published`` (the spec's default design point,
``dse.spec.DesignPoint()``: what `dse evaluate` with no ``--set`` evaluates) or a design file as
`dse export` writes it (read with ``DesignPoint.from_file``, the loader of `dse evaluate`). Its
hardware and mapping knobs are its own; its workload knobs (batch, trace, context, ...) are the
study's, so it is evaluated exactly as a trial of the study is: the study's evaluation function
(``dse.search.execute.evaluation.evaluate_design``) on every workload model, scored by the study's
objectives, aggregates and constraints (``dse.search.space.objectives.score``).

``place`` puts it against the feasible front (``dse.search.front.position``): the front designs
that dominate it, the additive epsilon indicator and the per-objective best improvement, and the
nearest front design, in objective space normalised by the front's range per objective.

``endpoint`` reads any of ``published``, ``knee``, a trial number or a design file as a design of
the study (`dse explain`'s ``--from`` and ``--to``).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.search.execute.evaluation import evaluate_design
from dse.search.front import pareto, position
from dse.search.space.objectives import score
from dse.spec import DesignPoint, default_pe_groups
from dse.spec.params import names

PUBLISHED = "published"


@dataclass
class Endpoint:
    """A design of the study: ``label`` as the user named it, ``design`` flat knobs without the
    model (the study's workload knobs), ``trial`` its trial number when it is one."""
    label: str
    design: dict[str, Any]
    trial: int | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Evaluated:
    """A design evaluated as the study evaluates a trial."""
    metrics: dict[str, dict[str, Any]]          # {model: metrics}
    values: list[float]                          # objective values (own directions; +-inf: missing)
    feasible: bool
    reason: str
    per_model: dict[str, tuple[bool, str]]       # model -> (feasible on it alone, why not)
    violated: dict[str, list[str]] = field(default_factory=dict)   # model -> constraints it violates


def reference_endpoint(cfg, spec: str, flag: str = "--reference") -> Endpoint:
    """``published`` or a design file, with the study's workload knobs (module docstring);
    ``flag`` names the option in errors."""
    if spec == PUBLISHED:
        point, label = DesignPoint(), "published design (the spec's defaults)"
    else:
        path = Path(spec)
        if not path.is_file():
            allowed = "'published', 'knee', a trial number" if flag != "--reference" else "'published'"
            raise ConfigError(f"{flag} {spec}: no such design file (give {allowed} or a design TOML as "
                              f"`dse export` writes it)")
        point, label = DesignPoint.from_file(path), f"design file {path.name}"
    return _with_study_workload(cfg, point.to_dict(), label)


def _with_study_workload(cfg, flat: Mapping[str, Any], label: str) -> Endpoint:
    """The design's hardware and mapping knobs with the study's workload knobs; a note for each
    workload knob of the design that the study sets otherwise."""
    from dse.spec.params import BY_NAME
    work = set(names("workload"))
    design = {k: v for k, v in flat.items() if k not in work}
    design.update({k: v for k, v in cfg.base.items() if k in work})
    notes = []
    for k in sorted(work - {"model"}):
        study_v = design.get(k, BY_NAME[k].default)
        if flat.get(k) is not None and flat[k] != study_v:
            shown = "unset: each model's native batch" if k == "batch" and study_v is None else repr(study_v)
            notes.append(f"{k} = {flat[k]!r} of the {label} replaced by the study's value ({shown})")
    return Endpoint(label, design, None, notes)


def endpoint(res, spec: str, flag: str = "--from") -> Endpoint:
    """``published``, ``knee``, a trial number or a design file as a design of the study ``res``."""
    if spec == PUBLISHED or not (spec == "knee" or spec.isdigit()):
        return reference_endpoint(res.cfg, spec, flag)
    from dse.search.review.export import pick
    r = pick(res, knee=True) if spec == "knee" else pick(res, trial=int(spec))
    label = f"knee (trial {r.number})" if spec == "knee" else f"trial {r.number}"
    return Endpoint(label, dict(r.design), r.number)


def resolved(cfg, design: Mapping[str, Any]) -> dict[str, Any]:
    """Every hardware and mapping knob of ``design`` (derived PE groups filled): the values that
    two designs are compared on. Raises ConfigError for an invalid combination."""
    d = DesignPoint.from_dict({**design, "model": cfg.models[0]}).to_dict()
    if d["pe_groups_per_core"] is None:
        d["pe_groups_per_core"] = default_pe_groups(d["core_side"])
    work = set(names("workload"))
    return {k: v for k, v in d.items() if k not in work}


def evaluate_as_study(cfg, design: Mapping[str, Any],
                      evaluator: Callable[[Mapping[str, Any], Sequence[str]], dict] = evaluate_design) -> Evaluated:
    """Evaluate ``design`` on the study's models and score it as a trial of ``cfg`` is scored."""
    return scored(cfg, evaluator(dict(design), cfg.models))


def scored(cfg, metrics: dict[str, dict[str, Any]]) -> Evaluated:
    """An evaluation's ``{model: metrics}`` scored by the study's objectives, and per model."""
    sc = score(metrics, cfg.objectives)
    per, violated = {}, {}
    for m in cfg.models:
        one = score({m: metrics[m]}, cfg.objectives)
        per[m] = (one.feasible, one.reason)
        own = re.sub(r"\s*\([^)]*\)", "", str(metrics[m].get("infeasible_reason") or "infeasible"))
        own = re.sub(r"\b\d+(\.\d+)?\b", "x", own)         # one name for every hybrid (numbers vary)
        cnames = [f"model: {own}"] + [c.name for c in cfg.objectives.constraints]
        violated[m] = [n for n, v in zip(cnames, one.constraints) if v > 0]
    return Evaluated(metrics, list(sc.values), sc.feasible, sc.reason, per, violated)


def place(res, ev: Evaluated) -> dict[str, Any]:
    """The reference's position against the study's feasible front (module docstring), as JSON:
    ``dominated_by`` (trial numbers), ``epsilon`` and ``nearest``. Objective space is compared as
    minimisation; a reference whose objectives are not all finite is dominated by every front
    design and has no epsilon or nearest design."""
    cfg = res.cfg
    names_ = cfg.objectives.names
    front = res.front()
    out: dict[str, Any] = {"dominated_by": [], "epsilon": None, "nearest": None}
    if not front:
        return out
    F = res.F(front)
    r = pareto.to_min(np.array([ev.values], dtype=float), cfg.objectives.directions)[0]
    if not np.all(np.isfinite(r)):
        out["dominated_by"] = [x.number for x in front]
        return out
    out["dominated_by"] = [x.number for x, k in zip(front, position.dominators(F, r)) if k]
    s = position.front_scale(F)
    eps, i = position.additive_epsilon(F, r, s)
    gain, rows = position.best_improvement(F, r)
    per = {}
    for j, o in enumerate(cfg.objectives.objectives):
        ref_v = ev.values[j]
        per[o.name] = {"improvement": float(gain[j]),
                       "relative": float(gain[j] / abs(ref_v)) if ref_v else None,
                       "trial": front[int(rows[j])].number}
    out["epsilon"] = {
        "additive": eps, "trial": front[i].number,
        "normalisation": "each objective divided by its range over the front (max - min; |value| where constant)",
        "scale": dict(zip(names_, map(float, s))),
        "per_objective": per}
    k, dist = position.nearest(F, r, s)
    out["nearest"] = {"trial": front[k].number, "distance": dist,
                      "objectives": res.objective_values(front[k])}
    return out


def reference_json(res, ep: Endpoint, ev: Evaluated) -> dict[str, Any]:
    """`dse front --json`'s ``reference``: the design, its objectives, feasibility and position."""
    objs = {n: (v if math.isfinite(v) else None) for n, v in zip(res.cfg.objectives.names, ev.values)}
    return {"label": ep.label, "design": resolved(res.cfg, ep.design), "objectives": objs,
            "feasible": ev.feasible, "reason": ev.reason,
            "per_model": {m: {"feasible": f, "reason": why} for m, (f, why) in ev.per_model.items()},
            **place(res, ev), **({"notes": ep.notes} if ep.notes else {})}


def describe(res, ref: Mapping[str, Any]) -> list[str]:
    """Plain lines for `dse front` and the report: the reference's objectives, feasibility per
    model, the front designs dominating it, epsilon and the nearest design."""
    from dse.report import fmt
    objs = ", ".join(f"{k}={fmt(v)}" for k, v in ref["objectives"].items())
    lines = [f"reference: {ref['label']}: {objs}; "
             + ("feasible" if ref["feasible"] else "infeasible (" + ref["reason"] + ")")]
    dom = ref["dominated_by"]
    lines.append(f"dominated by {len(dom)} of {len(res.front())} front designs"
                 + (f" (trials {', '.join(map(str, dom))})" if dom else ""))
    e = ref.get("epsilon")
    if e is not None:
        gains = "; ".join(f"{n} by {fmt(p['improvement'])}"
                          + (f" ({100 * p['relative']:+.1f} %, trial {p['trial']})"
                             if p["relative"] is not None else "")
                          for n, p in e["per_objective"].items())
        a = e["additive"]
        word = (f"some front design (trial {e['trial']}) is better by at least {fmt(-a)} front ranges in every "
                f"objective" if a < 0 else
                f"some front design (trial {e['trial']}) is at least as good in every objective" if a == 0 else
                f"no front design is as good in every objective (the closest, trial {e['trial']}, is worse by "
                f"{fmt(a)} front ranges in one)")
        lines.append(f"additive epsilon {fmt(e['additive'])}: {word}; best improvement per objective: {gains}")
        n = ref["nearest"]
        lines.append(f"nearest front design: trial {n['trial']} (distance {fmt(n['distance'])} in front ranges)")
    for note in ref.get("notes", []):
        lines.append(f"note: {note}")
    return lines
