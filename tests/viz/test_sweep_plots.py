"""Sweep figures: a grid of panels, integer ticks for integer knobs, infeasible points along the
panel edge with a legend entry, and the side sweep's knee-rule metric."""
from __future__ import annotations

import matplotlib.pyplot as plt

from dse.viz.sweep_plots import sweep_figure


def test_sweep_figures_grid_integer_ticks_and_infeasible_legend():
    rows = [{"model": "m", "tile_width": w, "feasible": w < 8, "a": (w if w < 8 else None), "b": 1.0, "c": 2.0,
             "d": 3.0, "e": 4.0} for w in (1, 2, 4, 8, 16)]
    fig = sweep_figure(rows, "tile_width", ["a", "b", "c", "d", "e"])
    shown = [ax for ax in fig.axes if ax.axison]
    assert len(shown) == 5 and len(fig.axes) == 8                       # a 2 x 4 grid, not one row
    ticks = shown[0].get_xticks()
    assert all(float(t).is_integer() for t in ticks)                    # no 2.5 / 7.5 on an integer knob
    labels = shown[0].get_legend_handles_labels()[1]
    assert "infeasible (no value)" in labels
    bad = next(ln for ln in shown[0].lines if ln.get_label() == "infeasible (no value)")
    assert list(bad.get_ydata()) == [0.03, 0.03] and bad.get_transform() != shown[0].transData   # axes edge, not y = 0
    plt.close(fig)


def test_side_sweep_plots_the_metric_its_knee_rule_uses():
    side = sweep_figure([{"model": "m", "core_side": s, "feasible": True, "occupancy": 0.5, "round_stretch": 1.0,
                          "effective_mfu": 0.3, "mm2_per_occupancy": 80.0 + s} for s in (2, 4)], "core_side")
    assert "per delivered occupancy" in side.axes[3].get_ylabel()
    plt.close(side)
