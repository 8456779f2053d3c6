"""Figures of the study report and of `dse compare`: the knee's breakdown, hypervolume against
trials, knob importance, knee frequency, and several studies' fronts on one figure."""
from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from dse.viz.study_plots import _plt, log_axis, metadata, objective_label, spans_decades

# (metric, label) of each component, bottom to top of the stacked bars
AREA_PARTS = [("reram_area_mm2", "ReRAM arrays"), ("pe_area_mm2", "PEs"), ("core_mesh_area_mm2", "core mesh"),
              ("die_noc_area_mm2", "die NoC"), ("d2d_io_area_mm2", "D2D / IO")]
POWER_PARTS = [(a.replace("_area_mm2", "_power_w"), lab) for a, lab in AREA_PARTS]


def png_bytes(fig, dpi: int = 110) -> bytes:
    """The figure as PNG bytes (closed afterwards)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata=metadata("png"))
    _plt().close(fig)
    return buf.getvalue()


def save_figure(fig, path) -> None:
    """Write ``fig`` to ``path`` (format from the suffix, no creation date) and close it."""
    fmt = str(path).rsplit(".", 1)[-1].lower()
    try:
        fig.savefig(path, dpi=130, bbox_inches="tight", metadata=metadata(fmt))
    finally:
        _plt().close(fig)


def energy_uj_per_token(metrics: dict[str, Any]) -> tuple[float, str]:
    """(the pool's energy per token in uJ, on what time it is): pool power (W) x the scheduled time
    per token (us) where the design was scheduled on a trace, the time the study's latency objective
    measures; else the closed form's ``pool_energy_uj_per_token`` (pool power x the closed-form
    time per token, which leaves out the rounds' stretch: 7x less on the quickstart's knee)."""
    p_w, t_us = metrics.get("pool_power_w"), metrics.get("ffn_us_per_token_scheduled")
    if p_w is not None and t_us is not None:
        return float(p_w) * float(t_us), "on the schedule"
    return float(metrics.get("pool_energy_uj_per_token") or 0.0), "closed form"


def breakdown_rows(metrics: dict[str, Any]) -> dict[str, list[tuple[str, float]]]:
    """Per-component die area (mm2), die power (W) and pool energy per token (uJ; the pool's
    energy, ``energy_uj_per_token``, split by each component's share of die power)."""
    area = [(lab, float(metrics.get(k) or 0.0)) for k, lab in AREA_PARTS]
    power = [(lab, float(metrics.get(k) or 0.0)) for k, lab in POWER_PARTS]
    total_p = sum(v for _, v in power)
    e, basis = energy_uj_per_token(metrics)
    energy = [(lab, e * v / total_p if total_p > 0 else 0.0) for lab, v in power]
    return {"die area (mm2)": area, "die power (W)": power, f"pool energy per token, {basis} (uJ)": energy}


def breakdown_figure(designs: Sequence[tuple[str, dict[str, Any]]]):
    """Stacked bars (one bar per design, one panel per quantity) of the component breakdown."""
    plt = _plt()
    rows = [(name, breakdown_rows(m)) for name, m in designs]
    panels = list(rows[0][1])
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        bottoms = np.zeros(len(rows))
        for ci, (lab, _) in enumerate(rows[0][1][panel]):
            vals = np.array([r[panel][ci][1] for _, r in rows])
            ax.bar(range(len(rows)), vals, bottom=bottoms, color=f"C{ci}", label=lab, width=0.6)
            bottoms += vals
        ax.set_xticks(range(len(rows)), [n for n, _ in rows], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(panel, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles[::-1], labels[::-1], fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle("knee (first bar) and its nearest alternatives: component breakdown", fontsize=9)
    fig.tight_layout()
    return fig


def hypervolume_figure(history: Sequence[tuple[int, float]], ref_text: str):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    if history:
        xs, ys = zip(*history)
        ax.step(xs, ys, where="post", color="C0")
        ax.plot(xs, ys, "o", ms=3, color="C0")
    ax.set_xlabel("finished trials")
    ax.set_ylabel("hypervolume (objective units)")
    ax.set_title(f"hypervolume against trials\nreference: {ref_text}", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def importance_figure(importance: dict[str, dict[str, float]]):
    """Horizontal bars: one panel per objective, knobs by importance."""
    plt = _plt()
    objs = list(importance)
    knobs = sorted({k for v in importance.values() for k in v},
                   key=lambda k: -max(importance[o].get(k, 0.0) for o in objs))[:12]
    fig, axes = plt.subplots(1, len(objs), figsize=(3.8 * len(objs), 0.32 * len(knobs) + 1.4), squeeze=False,
                             sharey=True)
    for ax, o in zip(axes[0], objs):
        vals = [importance[o].get(k, 0.0) for k in knobs]
        ax.barh(range(len(knobs)), vals, color="C0")
        ax.set_yticks(range(len(knobs)), knobs, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(o, fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("knob importance per objective (optuna PED-ANOVA, feasible designs)", fontsize=9)
    fig.tight_layout()
    return fig


def robust_figure(labels: Sequence[str], freqs: Sequence[float], n_variants: int):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(labels) + 1.4))
    ax.barh(range(len(labels)), freqs, color="C1")
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of {n_variants} re-evaluations in which the design is the knee")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def compare_figure(results: Sequence, names: Sequence[str]):
    """Every run's feasible front on one figure (one panel per pair of objectives), knees starred."""
    import itertools
    plt = _plt()
    objs = results[0].cfg.objectives.objectives
    pairs = list(itertools.combinations(range(len(objs)), 2)) or [(0, 0)]
    fig, axes = plt.subplots(1, len(pairs), figsize=(5.4 * len(pairs), 4.4), squeeze=False)
    for ax, (i, j) in zip(axes[0], pairs):
        allx, ally = [], []
        for c, (res, name) in enumerate(zip(results, names)):
            fr, knee = res.front(), res.knee()
            if not fr:
                continue
            V = np.array([[v for v in res.objective_values(r).values()] for r in fr], dtype=float)
            order = np.argsort(V[:, i], kind="stable")
            ax.plot(V[order, i], V[order, j], "-o", ms=4, lw=1, color=f"C{c}", label=f"{name} ({len(fr)})")
            kv = list(res.objective_values(knee).values())
            ax.scatter([kv[i]], [kv[j]], marker="*", s=220, color=f"C{c}", edgecolor="k", zorder=5)
            allx += list(V[:, i])
            ally += list(V[:, j])
        if spans_decades(np.array(allx)):
            log_axis(ax, ax.xaxis)
        if spans_decades(np.array(ally)):
            log_axis(ax, ax.yaxis)
        ax.set_xlabel(objective_label(objs[i]), fontsize=8)
        ax.set_ylabel(objective_label(objs[j]), fontsize=8)
        ax.grid(alpha=0.3, which="both")
    axes[0, 0].legend(fontsize=7, title="run (front size); * knee", title_fontsize=7)
    fig.tight_layout()
    return fig
