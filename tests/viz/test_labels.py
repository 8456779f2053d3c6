"""Axis labels with quantity and unit, and log-axis ticks that do not run together."""
from __future__ import annotations

import pytest

from dse.search.space.objectives import Objective
from dse.viz.labels import metric_label, metric_unit, objective_label
from dse.viz.study_plots import log_subs, tick_text


@pytest.mark.parametrize("metric, unit", [
    ("ffn_us_per_token_delivered", "us/token"), ("ffn_us_per_token_scheduled", "us/token"),
    ("usd_per_mtok_delivered", "$/Mtok"), ("usd_per_mtok", "$/Mtok"), ("pool_power_w", "W"),
    ("die_area_mm2", "mm2"), ("t_layer_us", "us"), ("d2d_demand_gbps_per_die", "GB/s"),
    ("effective_mfu", "fraction"), ("pool_energy_uj_per_token", "uJ/token"), ("dies", ""),
    ("pool_cost_usd", "$"), ("macro_mhz", "MHz"),
])
def test_metric_units_come_from_the_name(metric, unit):
    assert metric_unit(metric) == unit


def test_labels_name_the_quantity_and_unit():
    assert metric_label("ffn_us_per_token_delivered") == "delivered latency (us/token)"
    assert metric_label("dies") == "dies"
    assert metric_label("core_mesh_p99_gbps") == "core mesh p99 gbps (GB/s)"
    assert objective_label(Objective("pool_power_w")) == "pool power (W), lower is better ↓"
    assert objective_label(Objective("effective_mfu", "maximize")).endswith("higher is better ↑")
    assert objective_label(Objective("pool_power_w", label="power")).startswith("power: pool power (W)")


def test_log_ticks_thin_out_over_many_decades():
    assert log_subs(1.0) == (1.0, 2.0, 5.0) and log_subs(3.0) == (1.0, 3.0) and log_subs(5.0) == (1.0,)
    assert tick_text(0.5) == "0.5" and tick_text(20) == "20"
    assert tick_text(5e-5) == r"$5\times10^{-5}$" and tick_text(1e-4) == "$10^{-4}$"


def test_three_objective_panels_have_no_overlapping_tick_labels(tmp_path):
    """The third panel of a three-objective front spans 1e-4 .. 5e-2 on x: its tick labels, drawn,
    must not overlap (they did: '5e-050.0001')."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dse.viz.study_plots import log_axis
    fig, ax = plt.subplots(figsize=(5.4, 4.4))
    ax.scatter([4.5e-5, 1e-4, 2e-4, 5e-3, 0.05], [0.3, 0.5, 0.2, 0.1, 0.05])
    log_axis(ax, ax.xaxis)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    lo, hi = ax.get_xlim()
    boxes = sorted((t.get_window_extent(r) for t in ax.get_xticklabels()
                    if t.get_text() and lo <= t.get_position()[0] <= hi), key=lambda b: b.x0)
    assert len(boxes) >= 3
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:])), [(b.x0, b.x1) for b in boxes]
    plt.close(fig)
