"""Plots of a study: fronts with the knee, pairwise fronts, parallel coordinates.

``plot_study(results, out_dir, formats)`` writes, for a study with m objectives:

* ``<name>-front.<fmt>``     m = 2: every feasible trial, infeasible ones, the front and the knee;
                              m >= 3: one panel per pair of objectives (pairwise fronts);
                              m = 1: the objective per trial with the best so far
* ``<name>-parallel.<fmt>``  parallel coordinates of the searched knobs and the objectives over the
                              feasible trials (front in colour, knee in bold)

Only matplotlib (Agg backend); no display needed.
"""
from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

FORMATS = ("png", "svg", "pdf")


def _plt():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def plot_study(res, out_dir: str | Path, formats: Sequence[str] = ("png",)) -> list[Path]:
    """Write the study's figures to ``out_dir``; return the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.\-]+", "_", res.cfg.name)
    written: list[Path] = []
    for name, fig in (("front", front_figure(res)), ("parallel", parallel_figure(res))):
        if fig is None:
            continue
        for fmt in formats:
            p = out / f"{stem}-{name}.{fmt}"
            fig.savefig(p, dpi=130, bbox_inches="tight", metadata=_metadata(fmt))
            written.append(p)
        _plt().close(fig)
    return written


def _metadata(fmt: str) -> dict[str, Any]:
    # No creation dates: the same study gives the same files.
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def _values(res, recs) -> np.ndarray:
    m = len(res.cfg.objectives.objectives)
    if not recs:
        return np.zeros((0, m))
    return np.array([[v if v is not None else np.nan for v in res.objective_values(r).values()] for r in recs],
                    dtype=float)


def front_figure(res):
    plt = _plt()
    objs = res.cfg.objectives.objectives
    m = len(objs)
    cand = res.candidates()
    front = res.front()
    knee = res.knee()
    infeas = [r for r in res.complete if not r.feasible and r.values is not None]
    V, Fv, Iv = _values(res, cand), _values(res, front), _values(res, infeas)
    labels = [f"{o.name} ({'min' if o.direction == 'minimize' else 'max'})" for o in objs]
    if m == 1:
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = [r.number for r in cand]
        ax.scatter(xs, V[:, 0], s=12, color="0.6", label="feasible trials")
        if len(V):
            best = np.minimum.accumulate(V[:, 0]) if objs[0].direction == "minimize" else np.maximum.accumulate(V[:, 0])
            ax.step(xs, best, where="post", color="C0", label="best so far")
        if knee is not None:
            ax.scatter([knee.number], [res.objective_values(knee)[objs[0].name]], marker="*", s=180, color="C3",
                       zorder=5, label=f"best: trial {knee.number}")
        ax.set_xlabel("trial")
        ax.set_ylabel(labels[0])
        ax.legend(fontsize=8)
        ax.set_title(res.cfg.name)
        return fig
    pairs = list(itertools.combinations(range(m), 2))
    n = len(pairs)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), squeeze=False)
    for ax, (i, j) in zip(axes.flat, pairs):
        if len(Iv):
            ax.scatter(Iv[:, i], Iv[:, j], s=10, marker="x", color="C3", alpha=0.35, label="infeasible")
        if len(V):
            ax.scatter(V[:, i], V[:, j], s=12, color="0.65", label="feasible")
        if len(Fv):
            order = np.argsort(Fv[:, i], kind="stable")
            style = "-o" if m == 2 else "o"
            ax.plot(Fv[order, i], Fv[order, j], style, color="C0", ms=4, lw=1.2, label="Pareto front")
        if knee is not None:
            kv = list(res.objective_values(knee).values())
            ax.scatter([kv[i]], [kv[j]], marker="*", s=220, color="C1", edgecolor="k", zorder=5,
                       label=f"knee: trial {knee.number}")
            if m == 2:
                txt = "\n".join(f"{k}={_short(v)}" for k, v in knee.params.items())
                ax.annotate(txt, (kv[i], kv[j]), textcoords="offset points", xytext=(10, 10), fontsize=7,
                            bbox={"boxstyle": "round", "fc": "w", "alpha": 0.8})
        ax.set_xlabel(labels[i])
        ax.set_ylabel(labels[j])
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{res.cfg.name}: {'Pareto front' if m == 2 else 'pairwise fronts'} "
                 f"({len(res.complete)} trials, {len(cand)} feasible designs)")
    fig.tight_layout()
    return fig


def parallel_figure(res):
    cand = res.candidates()
    if not cand:
        return None
    plt = _plt()
    pnames = res.cfg.space.searched_names
    onames = res.cfg.objectives.names
    axes_names = pnames + onames
    cols: list[np.ndarray] = []
    ticks: list[tuple[list[float], list[str]]] = []
    for k in pnames:
        raw = [r.params.get(k) for r in cand]
        col, tk = _encode(raw)
        cols.append(col)
        ticks.append(tk)
    V = _values(res, cand)
    for j in range(len(onames)):
        col, tk = _encode(list(V[:, j]))
        cols.append(col)
        ticks.append(tk)
    X = np.column_stack(cols)
    front_ids = {r.number for r in res.front()}
    knee = res.knee()
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(axes_names)), 4.5))
    xs = np.arange(len(axes_names))
    for r, row in zip(cand, X):
        if r.number in front_ids:
            continue
        ax.plot(xs, row, color="0.75", lw=0.6, alpha=0.6)
    for r, row in zip(cand, X):
        if r.number in front_ids and (knee is None or r.number != knee.number):
            ax.plot(xs, row, color="C0", lw=1.0, alpha=0.8)
    if knee is not None:
        row = X[[r.number for r in cand].index(knee.number)]
        ax.plot(xs, row, color="C1", lw=2.6, label=f"knee: trial {knee.number}")
    for x, (pos, lab) in zip(xs, ticks):
        ax.axvline(x, color="k", lw=0.6)
        for p, t in zip(pos, lab):
            ax.text(x + 0.03, p, t, fontsize=6, va="center")
    ax.set_xticks(xs, axes_names, rotation=20, ha="right", fontsize=8)
    ax.set_yticks([])
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(f"{res.cfg.name}: feasible designs (grey), front (blue), knee (orange)")
    if knee is not None:
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def _encode(raw: list[Any]) -> tuple[np.ndarray, tuple[list[float], list[str]]]:
    """Map a column to [0, 1]: numbers linearly, anything else by sorted category; with tick labels."""
    nums = [v for v in raw if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None
            and math.isfinite(v)]
    if len(nums) == len(raw) and raw:
        a = np.array(raw, dtype=float)
        lo, hi = a.min(), a.max()
        if hi > lo:
            col = (a - lo) / (hi - lo)
            return col, ([0.0, 1.0], [_short(lo), _short(hi)])
        return np.full(len(a), 0.5), ([0.5], [_short(lo)])
    cats = sorted({str(v) for v in raw})
    idx = {c: i for i, c in enumerate(cats)}
    n = max(1, len(cats) - 1)
    col = np.array([idx[str(v)] / n if len(cats) > 1 else 0.5 for v in raw])
    pos = [i / n if len(cats) > 1 else 0.5 for i in range(len(cats))]
    return col, (pos, cats)


def _short(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v.is_integer() and abs(v) < 1e9:
            return str(int(v))
        return f"{v:.4g}"
    return str(v)
