"""The B = 1 .. 256 table of the published design (35B, default synthetic trace): the published
(Table V) figure, the delivered (Eq. 2) and the scheduled per-token times, beside the study's
Tables V and X where they give a figure (``docs/model/scheduled-time.md``).

Table V publishes the per-token pool latency at B = 8 and 64 (a read-bound roofline: our
``ffn_latency_us_per_token`` redoes its arithmetic). Table X publishes the side-4 effective MFU at
B = 128; the per-token time it implies is the peak-compute time / that MFU (the study's Eq. 2 run
backwards), a trace figure our schedule predicts. Every other batch has no published figure.
"""
from __future__ import annotations

from typing import Any

from dse.pipeline.evaluate import evaluate
from dse.reproduce.registry import load_reference
from dse.spec import DesignPoint

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
COLUMNS = ("batch", "published_us", "table_v_us", "table_x_us", "delivered_us", "scheduled_us", "actual_mfu",
           "scheduled_mfu", "scheduled_round_stretch", "evidence")


def _published_figures() -> tuple[dict[int, float], dict[int, float]]:
    """(Table V us/token by batch, Table X effective MFU at side 4 by batch)."""
    ref = load_reference()
    lat = ref["latency_35b"]
    v = {8: float(lat["rexpert_us_b8"]["value"]), 64: float(lat["rexpert_us_b64"]["value"])}
    x = {128: float(ref["pooling_35b"]["effective_mfu"]["value"][1])}
    return v, x


def evidence(batch: int, v: dict[int, float], x: dict[int, float]) -> str:
    """The evidence class of a row's comparison (``dse.reproduce.registry.EVIDENCE``)."""
    if batch in v:
        return "arithmetic (Table V) / predicted (scheduled: no published figure)"
    if batch in x:
        return "predicted (Table X effective MFU, side 4)"
    return "predicted (no published figure)"


def row(batch: int, steps: int = 64, seed: int = 0, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    v, x = _published_figures()
    m = evaluate(DesignPoint.from_dict({"batch": batch, "trace_steps": steps, "trace_seed": seed,
                                        **(extra or {})})).metrics
    return {"batch": batch, "published_us": m["ffn_latency_us_per_token"], "table_v_us": v.get(batch),
            "table_x_us": m["ffn_compute_us_per_token"] / x[batch] if batch in x else None,
            "delivered_us": m["ffn_us_per_token_delivered"], "scheduled_us": m["ffn_us_per_token_scheduled"],
            "actual_mfu": m["actual_mfu"], "scheduled_mfu": m["scheduled_mfu"],
            "scheduled_round_stretch": m["scheduled_round_stretch"], "evidence": evidence(batch, v, x)}


def table(batches=BATCHES, steps: int = 64, seed: int = 0, band_draws: int = 0) -> list[dict[str, Any]]:
    """The rows; with ``band_draws`` > 0 each also carries the p5 / p95 of its scheduled time over
    that many draws of the model's unknowns (``dse.pipeline.uncertainty``)."""
    rows = [row(b, steps, seed) for b in batches]
    if band_draws:
        from dse.pipeline.uncertainty import point_bands
        for r in rows:
            b = point_bands(DesignPoint.from_dict({"batch": r["batch"], "trace_steps": steps, "trace_seed": seed}),
                            band_draws)["ffn_us_per_token_scheduled"]
            r["scheduled_p5"], r["scheduled_p95"] = b["p5"], b["p95"]
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table as Markdown (numbers to 4 significant digits; '-' where none)."""
    def fmt(v):
        return "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
    head = ("B", "published", "Table V", "Table X", "delivered", "scheduled", "actual MFU", "scheduled MFU",
            "stretch", "evidence")
    cols = list(COLUMNS)
    if rows and "scheduled_p5" in rows[0]:
        head = head[:6] + ("scheduled p5-p95",) + head[6:]
        cols = cols[:6] + ["band"] + cols[6:]
        rows = [{**r, "band": f"{r['scheduled_p5']:.4g}-{r['scheduled_p95']:.4g}"} for r in rows]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)
