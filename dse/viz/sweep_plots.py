"""Figures of `dse sweep` (matplotlib, Agg backend: no display needed).

* array depth: t_layer vs depth per model, and D2D demand per die vs depth with the provision line;
* core side: occupancy, round stretch, effective MFU and network mm2 per delivered occupancy
  (the two metrics its knee rule uses) vs core side;
* any other knob: the chosen metrics vs the knob, one panel each, in a grid of at most four
  columns; an integer knob gets integer ticks.
Infeasible points have no value: they are left out of the lines and marked with a red x along the
bottom edge of the panel (not at y = 0), with a legend entry.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = {
    "array_depth": [("t_layer_us", "layer time (us)"), ("d2d_demand_gbps_per_die", "D2D demand per die (GB/s)")],
    "core_side": [("occupancy", "occupancy"), ("round_stretch", "round stretch (x)"),
                  ("effective_mfu", "effective MFU (knee rule: max)"),
                  ("mm2_per_occupancy", "network mm2 per delivered occupancy (knee rule: min)")],
}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def plot_sweep(rows: list[dict[str, Any]], param: str, path: str | Path,
               metrics: Sequence[str] | None = None) -> Path:
    """Write the figure of a sweep to ``path`` (format from the suffix) and return the path."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or "png"
    if fmt not in ("png", "svg", "pdf"):
        raise ValueError(f"unsupported figure format {fmt!r} (png, svg, pdf)")
    fig = sweep_figure(rows, param, metrics)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=fmt, dpi=120)
    plt.close(fig)
    return path


def sweep_figure(rows: list[dict[str, Any]], param: str, metrics: Sequence[str] | None = None):
    """The sweep's figure: one panel per metric (the preset's for depth and side)."""
    if metrics:
        panels = [(m, m) for m in metrics if any(_num(r.get(m)) is not None for r in rows)]
    else:
        panels = PANELS.get(param, [("t_layer_us", "layer time (us)")])
    if not panels:
        raise ValueError("none of the metrics is numeric")
    models = list(dict.fromkeys(r["model"] for r in rows))
    ncols = min(4, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax, (key, label) in zip(axes.flat, panels):
        _panel(ax, rows, models, param, key, label)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles: dict[str, Any] = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    axes.flat[0].legend(list(handles.values()), list(handles), fontsize=7)
    fig.tight_layout()
    return fig


def _panel(ax, rows: list[dict[str, Any]], models: list[str], param: str, key: str, label: str) -> None:
    from matplotlib.ticker import MaxNLocator
    for i, model in enumerate(models):
        pts = [(r[param], _num(r.get(key))) for r in rows if r["model"] == model and r.get("feasible")]
        pts = [(x, y) for x, y in pts if y is not None]
        if pts:
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", color=f"C{i}", label=model)
        bad = [r[param] for r in rows if r["model"] == model and not r.get("feasible")]
        if bad:   # no value: along the bottom edge (axes coordinates), not at y = 0
            ax.plot(bad, [0.03] * len(bad), "x", color="red", ms=8, mew=2, clip_on=False,
                    transform=ax.get_xaxis_transform(), label="infeasible (no value)")
    if key == "d2d_demand_gbps_per_die":
        prov = next((_num(r.get("d2d_provision_gbps_per_die")) for r in rows
                     if _num(r.get("d2d_provision_gbps_per_die")) is not None), None)
        if prov is not None:
            ax.axhline(prov, color="black", linestyle="--", linewidth=1, label="provision")
    xs = [r[param] for r in rows]
    if param == "array_depth":
        ax.set_xscale("log", base=2)
    elif all(isinstance(x, int) and not isinstance(x, bool) for x in xs):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(param)
    ax.set_ylabel(label, fontsize=8)
    ax.grid(True, alpha=0.3)
