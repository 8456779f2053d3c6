"""Model-uncertainty bands of the reproduced figures (``dse reproduce --uncertainty N``).

Every figure is computed again under N Latin-hypercube draws of the model's unknowns
(``dse.pipeline.uncertainty``: constants set, the synthetic trace's seed drawn); a row's band is the
5th-95th percentile of its values. Each ``predicted`` row is then judged: a pass with the published
value inside or outside its band (the published value known to half a unit of its last digit,
as in ``registry.judge``); a miss inside its band ("inside band": an input the model could
not know), or else classed by ``dse/data/reference/miss_classes.toml`` ("definition not built" or
"structural", with its reason).
"""
from __future__ import annotations

import importlib
import statistics
from typing import Any

from dse.data import load_toml
from dse.pipeline.uncertainty import applied, draws, quantiles
from dse.reproduce import figures_schedule
from dse.reproduce.registry import FIGURE_MODULES, Row, half_unit_of_last_digit, reproduce

MISS_CLASSES = ("inside band", "definition not built", "structural")


def _clear_figure_caches() -> None:
    for name in FIGURE_MODULES:
        for obj in vars(importlib.import_module(name)).values():
            if callable(getattr(obj, "cache_clear", None)):
                obj.cache_clear()


def row_bands(n: int, seed: int = 0, only: str | None = None) -> dict[str, dict[str, float]]:
    """{row key: {p5, p50, p95}} over N draws (rows with a number in every draw)."""
    samples = []
    for d in draws(n, seed):
        with applied(d) as knobs:
            figures_schedule.DRAW.update(knobs)
            _clear_figure_caches()
            try:
                samples.append({r.key: r.ours for r in reproduce(only)})
            finally:
                figures_schedule.DRAW.clear()
                _clear_figure_caches()
    return quantiles(samples) if samples else {}


def miss_class(key: str) -> tuple[str, str]:
    """(class, reason) of a miss outside its band: the longest matching prefix of the table."""
    table = load_toml("reference", "miss_classes.toml")
    hits = [p for p in table if key.startswith(p)]
    if not hits:
        return "structural", "not classified yet (dse/data/reference/miss_classes.toml)"
    e = table[max(hits, key=len)]
    return e["class"], e["reason"]


def in_band(r: Row, b: dict[str, float] | None) -> tuple[bool, bool]:
    """(inside, only by rounding): the published value, known to half a unit of its last digit as
    published (the rounding rule of ``registry.judge``), overlaps the band."""
    if b is None:
        return False, False
    exact = b["p5"] <= r.published <= b["p95"]
    h = half_unit_of_last_digit(r.published_text or r.published)
    inside = exact or b["p5"] - h <= r.published <= b["p95"] + h
    return inside, inside and not exact


def judge_bands(rows: list[Row], bands: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
    """{row key: {band, in_band, in_band_by_rounding, miss_class, miss_reason}} of the ``predicted`` rows."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r.evidence != "predicted":
            continue
        b = bands.get(r.key)
        inside, by_rounding = in_band(r, b)
        entry: dict[str, Any] = {"band": b, "in_band": inside, "in_band_by_rounding": by_rounding,
                                 "miss_class": None, "miss_reason": None}
        if r.status in ("miss", "error"):
            entry["miss_class"], entry["miss_reason"] = ("inside band", "") if inside else miss_class(r.key)
        out[r.key] = entry
    return out


def band_summary(rows: list[Row], judged: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Counts: predicted passes inside their band, misses per class, median relative half-width."""
    passes = [r for r in rows if r.key in judged and r.status in ("pass", "rounding")]
    misses = [r for r in rows if r.key in judged and r.status in ("miss", "error")]
    widths = [(b["p95"] - b["p5"]) / 2 / abs(b["p50"]) for j in judged.values()
              if (b := j["band"]) is not None and b["p50"]]
    return {"predicted": len(judged), "pass": len(passes),
            "pass_in_band": sum(judged[r.key]["in_band"] for r in passes),
            "pass_in_band_by_rounding": sum(judged[r.key]["in_band_by_rounding"] for r in passes),
            "miss": len(misses),
            "miss_classes": {c: sum(judged[r.key]["miss_class"] == c for r in misses) for c in MISS_CLASSES},
            "median_relative_half_width": statistics.median(widths) if widths else None}
