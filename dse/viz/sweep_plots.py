"""Figures of `dse sweep` (matplotlib, Agg backend: no display needed).

* array depth: t_layer vs depth per model, and D2D demand per die vs depth with the provision line;
* core side: occupancy, round stretch, effective MFU and network mm2 vs core side;
* any other knob: the chosen metrics vs the knob, one panel each.
Infeasible points are left out of the lines (and marked on the x axis).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = {
    "array_depth": [("t_layer_us", "layer time (us)"), ("d2d_demand_gbps_per_die", "D2D demand per die (GB/s)")],
    "core_side": [("occupancy", "occupancy"), ("round_stretch", "round stretch (x)"),
                  ("effective_mfu", "effective MFU"), ("network_area_mm2", "network area (mm2)")],
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
    if metrics:
        panels = [(m, m) for m in metrics if any(_num(r.get(m)) is not None for r in rows)]
    else:
        panels = PANELS.get(param, [("t_layer_us", "layer time (us)")])
    if not panels:
        raise ValueError("none of the metrics is numeric")
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (key, label) in zip(axes[0], panels):
        for model in models:
            pts = [(r[param], _num(r.get(key))) for r in rows if r["model"] == model and r.get("feasible")]
            pts = [(x, y) for x, y in pts if y is not None]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=model)
            bad = [r[param] for r in rows if r["model"] == model and not r.get("feasible")]
            if bad:
                ax.plot(bad, [0] * len(bad), "x", color="red", clip_on=False)
        if key == "d2d_demand_gbps_per_die":
            prov = next((_num(r.get("d2d_provision_gbps_per_die")) for r in rows
                         if _num(r.get("d2d_provision_gbps_per_die")) is not None), None)
            if prov is not None:
                ax.axhline(prov, color="black", linestyle="--", linewidth=1, label="provision")
        if param == "array_depth":
            ax.set_xscale("log", base=2)
        ax.set_xlabel(param)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=fmt, dpi=120)
    plt.close(fig)
    return path
