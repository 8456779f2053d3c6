"""One-knob sweeps and the two published ones (spec sections 7, 10).

``sweep(param, values, models, base)`` evaluates the base design with ``param`` set to each value
for each model and returns one flat row per (model, value). Two presets reproduce the study's
tables and find their knees from the metrics (nothing hard-coded):

* ``depth`` -- array depth 8K ... 64K on the three reference catalog models at B = 128 (the batch
  of the study's communication analysis: the only one that fits its GLM-5.2 figures). A depth is
  *acceptable* when every model maps and every communication level is within provision
  (``comm_ok``); the knee is the acceptable depth with the smallest worst-case layer time,
  ties broken by the fewest total dies (32K: it keeps the 16K-versus-32K exchange -- layer time
  halves at 16K but D2D opens, the default model needs 49 dies instead of 25 and GLM-5.2 cannot
  map -- and beats 24K, same layer time, more dies, and 64K, longer layers).
* ``side`` -- core side 2 / 4 / 6 / 8 with trace-driven scheduling at each model's native batch, in
  the layout of the study's Table X: ideal MFU, occupancy with broadcast pooling and with direct
  scheduling (each side is evaluated a second time with ``pooling = direct``), actual MFU, round
  stretch, effective MFU. Default model: the default catalog model; ``--model`` takes any (the
  three reference models: ``REFERENCE_MODELS``). The knee maximises effective MFU (actual MFU /
  round stretch) and, separately, minimises network mm2 per delivered occupancy.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dse.errors import ConfigError
from dse.pipeline.evaluate import evaluate
from dse.spec import DesignPoint
from dse.spec.params import BY_NAME

REFERENCE_MODELS = ("qwen3.5-35b-a3b", "qwen3.5-397b-a17b", "glm-5.2")

GENERIC_METRICS = ("feasible", "t_layer_us", "dies", "effective_mfu", "round_stretch", "network_area_mm2",
                   "die_area_mm2", "die_power_w", "d2d_demand_gbps_per_die", "comm_violation", "usd_per_mtok",
                   "infeasible_reason")


@dataclass(frozen=True)
class Preset:
    name: str
    param: str
    values: tuple[str, ...]
    models: tuple[str, ...]
    metrics: tuple[str, ...]
    base: dict[str, Any] = field(default_factory=dict)
    doc: str = ""


PRESETS: dict[str, Preset] = {
    "depth": Preset(
        "depth", "array_depth", ("8K", "16K", "24K", "32K", "64K"), REFERENCE_MODELS,
        ("feasible", "tp_degree", "chunks_per_unit", "array_utilization", "dies", "t_layer_us",
         "ffn_latency_us_per_token", "d2d_demand_gbps_per_die", "d2d_provision_gbps_per_die",
         "node_demand_gbps", "die_noc_busiest_link_gbps", "comm_ok", "infeasible_reason"),
        {"trace": "catalog", "batch": 128},
        "array depth vs layer time, TP, dies and D2D on the reference catalog models at B = 128"),
    "side": Preset(
        "side", "core_side", ("2", "4", "6", "8"), ("qwen3.5-35b-a3b",),
        ("batch", "ideal_mfu", "occupancy", "occupancy_direct", "actual_mfu", "round_stretch", "effective_mfu",
         "multicast_streams_p99", "network_area_mm2", "mm2_per_occupancy"),
        {"trace": "synthetic"},
        "core side vs the MFU cascade (Table X: broadcast and direct occupancy), round stretch, effective MFU "
        "and network area (trace-driven, native batch)"),
}


def resolve(param: str, values: Iterable[str]) -> tuple[str, list[str], Preset | None]:
    """(knob name, values, preset) for ``dse sweep PARAM [VALUES...]``: a preset name takes its
    knob and default values; an explicit value list always wins."""
    values = list(values)
    preset = PRESETS.get(param)
    if preset is not None:
        return preset.param, values or list(preset.values), preset
    if param not in BY_NAME:
        raise ConfigError(f"sweep PARAM {param!r}: must be a preset ({', '.join(PRESETS)}) or a knob "
                          f"(see `dse params`)")
    if not values:
        raise ConfigError(f"sweep {param}: give at least one value (e.g. `dse sweep {param} V1 V2`)")
    return param, values, None


def sweep(param: str, values: list[str], models: Iterable[str], base: dict[str, Any],
          overrides: list[str] | None = None, source: str | None = None) -> list[dict[str, Any]]:
    """Evaluate every (model, value); one row per pair with the knob value and every metric."""
    rows = []
    for model in models:
        for v in values:
            point = DesignPoint.from_dict({**base, "model": model},
                                          overrides=[*(overrides or []), f"{param}={v}"], source=source)
            r = evaluate(point)
            row = {"model": model, "batch": point.run_batch, param: getattr(point, param)}   # run batch (Table X)
            row.update({k: v for k, v in r.metrics.items() if k not in row})   # the swept knob wins
            rows.append(row)
    return rows


# Metrics of the direct-scheduling companion run of the ``side`` preset, renamed with this suffix.
DIRECT_COMPANION = ("occupancy", "actual_mfu", "rounds")


def with_direct(rows: list[dict[str, Any]], direct_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table X rows: every broadcast row gains ``occupancy_direct`` (and ``actual_mfu_direct``,
    ``rounds_direct``) from the same design evaluated with ``pooling = direct``."""
    out = []
    for r, d in zip(rows, direct_rows, strict=True):
        out.append({**r, **{f"{k}_direct": d.get(k) for k in DIRECT_COMPANION}})
    return out


def depth_knee(rows: list[dict[str, Any]], param: str = "array_depth") -> dict[str, Any]:
    """Per depth: all models mapped and within provision, worst t_layer, total dies; the knee."""
    by: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r[param], []).append(r)
    summary = []
    for v, rs in by.items():
        ok = all(r["feasible"] and r.get("comm_ok") for r in rs)
        summary.append({
            param: v, "acceptable": ok,
            "worst_t_layer_us": max((r["t_layer_us"] for r in rs if r["t_layer_us"] is not None), default=None),
            "total_dies": sum(r["dies"] or 0 for r in rs) if ok else None,
            "why_not": "; ".join(f"{r['model']}: {r['infeasible_reason'] or _over(r)}" for r in rs
                                 if not (r["feasible"] and r.get("comm_ok"))),
        })
    good = [s for s in summary if s["acceptable"]]
    knee = min(good, key=lambda s: (round(s["worst_t_layer_us"], 6), s["total_dies"]))[param] if good else None
    return {"summary": summary, "knee": knee}


def _over(r: dict[str, Any]) -> str:
    lv = [k[:-5] for k, v in r.items() if k.endswith("_over") and v is True]
    return "over provision at " + ", ".join(lv) if lv else "not acceptable"


def side_knee(rows: list[dict[str, Any]], param: str = "core_side") -> dict[str, Any]:
    """The side with the highest effective MFU and the one with the least network mm2 per
    delivered occupancy (None when the scheduler did not run)."""
    eff = [r for r in rows if r.get("effective_mfu") is not None and r["feasible"]]
    mm2 = [r for r in rows if r.get("mm2_per_occupancy") is not None and r["feasible"]]
    return {"max_effective_mfu": max(eff, key=lambda r: r["effective_mfu"])[param] if eff else None,
            "min_mm2_per_occupancy": min(mm2, key=lambda r: r["mm2_per_occupancy"])[param] if mm2 else None}
