"""Axis labels a person can read: the quantity and its unit, from a metric's name.

Metric names carry their unit as a suffix (``t_layer_us``, ``pool_power_w``,
``usd_per_mtok_delivered``, ``d2d_demand_gbps_per_die``): ``metric_unit`` reads it back, and
``metric_label`` puts a short quantity name in front ("delivered latency (us/token)"). A name
with no known unit suffix keeps its raw name and gets no unit, rather than a wrong one.
"""
from __future__ import annotations

import re

# Quantity names of the metrics that studies use as objectives; every other metric is labelled by
# its own name with underscores turned into spaces.
QUANTITIES: dict[str, str] = {
    "ffn_us_per_token_delivered": "delivered latency",
    "ffn_us_per_token_scheduled": "scheduled latency",
    "ffn_latency_us_per_token": "read-bound latency",
    "ffn_read_us_per_token": "weight-read time",
    "ffn_compute_us_per_token": "compute time",
    "usd_per_mtok_delivered": "delivered cost",
    "usd_per_mtok_scheduled": "scheduled cost",
    "usd_per_mtok": "cost",
    "effective_mfu": "effective MFU",
    "actual_mfu": "actual MFU",
    "ideal_mfu": "ideal MFU",
    "pool_power_w": "pool power",
    "die_power_w": "die power",
    "die_area_mm2": "die area",
    "network_area_mm2": "network area",
    "mm2_per_occupancy": "network area per delivered occupancy",
    "t_layer_us": "layer time",
    "tpot_af_us": "TPOT (AF serving)",
    "dies": "dies",
    "pool_cost_usd": "pool cost",
    "pool_energy_uj_per_token": "pool energy",
    "d2d_demand_gbps_per_die": "D2D demand",
}

# (pattern on the metric name, unit); the first match wins, so longer suffixes come first.
_UNITS: tuple[tuple[str, str], ...] = (
    (r"_us_per_token(_\w+)?$", "us/token"),
    (r"^usd_per_mtok(_\w+)?$|_usd_per_mtok$", "$/Mtok"),
    (r"_uj_per_token$", "uJ/token"),
    (r"_mb_per_token$", "MB/token"),
    (r"_gbps(_per_die)?$", "GB/s"),
    (r"_tbps$", "TB/s"),
    (r"_mm2_per_occupancy$|^mm2_per_occupancy$", "mm2"),
    (r"_mm2$", "mm2"),
    (r"_usd$", "$"),
    (r"_us$", "us"),
    (r"_ns$", "ns"),
    (r"_w$", "W"),
    (r"_mhz$", "MHz"),
    (r"_ghz$", "GHz"),
    (r"_pflops$", "PFLOP/s"),
    (r"_gflops$", "GFLOP/s"),
    (r"_mib$", "MiB"),
    (r"_gib$", "GiB"),
    (r"(^|_)mfu$|_occupancy$|^occupancy$|_utilization$|_load$", "fraction"),
)


def metric_unit(name: str) -> str:
    """The unit a metric's name states, or "" when it states none."""
    for pattern, unit in _UNITS:
        if re.search(pattern, name):
            return unit
    return ""


def metric_label(name: str) -> str:
    """``quantity (unit)``, e.g. ``delivered latency (us/token)``; a unitless metric has no brackets."""
    quantity = QUANTITIES.get(name, name.replace("_", " "))
    unit = metric_unit(name)
    return f"{quantity} ({unit})" if unit else quantity


def objective_label(o) -> str:
    """An objective's axis label: quantity, unit and the better direction (never "min", which reads
    as minutes)."""
    arrow = "lower is better ↓" if o.direction == "minimize" else "higher is better ↑"
    metric = getattr(o, "metric", "") or o.name
    text = metric_label(metric)
    if o.name != metric:                      # a label the study gave the objective comes first
        text = f"{o.name}: {text}"
    return f"{text}, {arrow}"
