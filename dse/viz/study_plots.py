"""Plots of a study: fronts with the knee, pairwise fronts, parallel coordinates.

``plot_study(results, out_dir, formats)`` writes, for a study with m objectives:

* ``<name>-front.<fmt>``     m = 2: every feasible design, infeasible trials, the front and the knee;
                              m >= 3: one panel per pair of objectives (pairwise fronts);
                              m = 1: the objective per trial with the best so far
* ``<name>-parallel.<fmt>``  parallel coordinates of the knobs that vary on the front and the
                              objectives (front in colour, knee in bold; the other feasible designs
                              in grey)

An axis whose values span more than a decade (all positive) is logarithmic; the knee is marked
and labelled in every panel; axis labels say "minimise" / "maximise" with an arrow toward the
better side. Only matplotlib (Agg backend); no display needed.
"""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dse.viz.labels import objective_label

FORMATS = ("png", "svg", "pdf")


def _plt():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def plot_study(res, out_dir: str | Path, formats: Sequence[str] = ("png",), reference=None) -> list[Path]:
    """Write the study's figures to ``out_dir``; return the paths written. ``reference``: a design
    placed against the front (``dse.search.review.reference.reference_json``), marked on the fronts."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.\-]+", "_", res.cfg.name)
    written: list[Path] = []
    for name, fig in (("front", front_figure(res, reference)), ("parallel", parallel_figure(res))):
        if fig is None:
            continue
        for fmt in formats:
            p = out / f"{stem}-{name}.{fmt}"
            fig.savefig(p, dpi=130, bbox_inches="tight", metadata=metadata(fmt))
            written.append(p)
        _plt().close(fig)
    return written


def metadata(fmt: str) -> dict[str, Any]:
    """Figure metadata without creation dates: the same study gives the same files."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def counts_title(res) -> str:
    """Trial counts worded as `dse run` / `dse front` print them."""
    n_feas = sum(r.feasible for r in res.complete)
    return (f"{len(res.complete)} finished trials, {n_feas} feasible "
            f"({len(res.candidates())} distinct feasible designs), front {len(res.front())}")


def spans_decades(values: np.ndarray) -> bool:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return len(v) > 1 and bool(np.all(v > 0)) and v.max() / v.min() > 10


def log_axis(ax, axis) -> None:
    """Logarithmic axis with plain, non-overlapping tick labels: 1, 2, 5 x 10^k over a short span,
    fewer per decade over a long one (at most about seven labels), and 10^k written as a power
    outside 0.001-9999 so that a narrow panel never runs two labels together."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log")
    lo, hi = sorted(abs(v) for v in axis.get_view_interval())
    decades = math.log10(hi / lo) if lo > 0 and hi > 0 else 1.0
    axis.set_major_locator(LogLocator(base=10, subs=log_subs(decades)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: tick_text(v)))
    axis.set_minor_formatter(NullFormatter())


def log_subs(decades: float) -> tuple[float, ...]:
    """Tick mantissas per decade so that a log axis spanning ``decades`` has at most ~7 labels."""
    if decades <= 2.2:
        return (1.0, 2.0, 5.0)
    if decades <= 3.5:
        return (1.0, 3.0)
    return (1.0,)


def tick_text(v: float) -> str:
    """``0.5``, ``20``, ``5e-05`` -> ``5×10⁻⁵``: short labels on either side of 1."""
    if v == 0 or 1e-3 <= abs(v) < 1e4:
        return f"{v:g}"
    exp = math.floor(math.log10(abs(v)) + 1e-9)
    mant = v / 10 ** exp
    power = f"10^{{{exp}}}"
    return f"${power}$" if abs(mant - 1) < 1e-9 else f"${mant:g}\\times{power}$"


def _values(res, recs) -> np.ndarray:
    m = len(res.cfg.objectives.objectives)
    if not recs:
        return np.zeros((0, m))
    return np.array([[v if v is not None else np.nan for v in res.objective_values(r).values()] for r in recs],
                    dtype=float)


def varying_knobs(res, recs) -> list[str]:
    """Searched knobs whose value differs among ``recs``."""
    return [k for k in res.cfg.space.searched_names if len({repr(r.params.get(k)) for r in recs}) > 1]


def design_label(r, knobs: Sequence[str]) -> str:
    return ", ".join(f"{k}={short(r.params.get(k))}" for k in knobs) or f"trial {r.number}"


def front_figure(res, reference=None):
    """The front (two objectives) or the pairwise fronts, knee starred; ``reference`` (a
    ``reference_json``) marked with a black diamond."""
    plt = _plt()
    objs = res.cfg.objectives.objectives
    if len(objs) == 1:
        return _single_objective(res, plt)
    pairs = list(itertools.combinations(range(len(objs)), 2))
    cols = min(3, len(pairs))
    rows = math.ceil(len(pairs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 4.6 * rows), squeeze=False)
    for ax, (i, j) in zip(axes.flat, pairs):
        _pair_panel(res, ax, i, j)
        if reference is not None:
            mark_reference(ax, reference, i, j)
    for ax in list(axes.flat)[len(pairs):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    kind = "Pareto front" if len(objs) == 2 else "pairwise fronts"
    fig.suptitle(f"{res.cfg.name}: {kind} ({counts_title(res)})", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def _pair_panel(res, ax, i: int, j: int) -> None:
    objs = res.cfg.objectives.objectives
    cand, front, knee = res.candidates(), res.front(), res.knee()
    infeas = [r for r in res.complete if not r.feasible and r.values is not None]
    V, Fv, Iv = _values(res, cand), _values(res, front), _values(res, infeas)
    Iv = Iv[np.all(np.isfinite(Iv), axis=1)] if len(Iv) else Iv
    if len(Iv):
        ax.scatter(Iv[:, i], Iv[:, j], s=10, marker="x", color="C3", alpha=0.35, label="infeasible trial")
    if len(V):
        ax.scatter(V[:, i], V[:, j], s=12, color="0.65", label="feasible design")
    if len(Fv):
        ax.scatter(Fv[:, i], Fv[:, j], s=26, color="C0", zorder=3, label="Pareto front")
        if len(objs) == 2 and len(Fv) > 1:
            order = np.argsort(Fv[:, i], kind="stable")
            ax.plot(Fv[order, i], Fv[order, j], "-", color="C0", lw=1.0, zorder=2)
    knobs = varying_knobs(res, cand)
    if len(cand) <= 20 and knobs:
        ax.text(0.99, 0.99, "points: " + ", ".join(knobs), transform=ax.transAxes, ha="right", va="top",
                fontsize=6, color="0.35")
        for n, (r, (x, y)) in enumerate(zip(cand, V[:, [i, j]])):
            if knee is None or r.number != knee.number:
                ax.annotate(",".join(short(r.params.get(k)) for k in knobs), (x, y), textcoords="offset points",
                            xytext=(5, -8 if n % 2 else 3), fontsize=6, color="0.35")
    for k, axis in ((i, ax.xaxis), (j, ax.yaxis)):
        allv = np.concatenate([V[:, k], Iv[:, k]]) if len(Iv) else V[:, k]
        if spans_decades(allv):
            log_axis(ax, axis)
    if knee is not None:
        _mark_knee(res, ax, knee, i, j, knobs if len(objs) == 2 else varying_knobs(res, front))
    ax.set_xlabel(objective_label(objs[i]), fontsize=8)
    ax.set_ylabel(objective_label(objs[j]), fontsize=8)
    ax.grid(alpha=0.3, which="both")


def mark_reference(ax, reference, i: int, j: int) -> None:
    """The reference design on panel (i, j): a black diamond, hollow when it is infeasible."""
    v = list(reference["objectives"].values())
    if v[i] is None or v[j] is None:
        return
    word = "" if reference["feasible"] else ", infeasible"
    ax.scatter([v[i]], [v[j]], marker="D", s=70, facecolor="k" if reference["feasible"] else "none",
               edgecolor="k", linewidth=1.5, zorder=6, label=f"reference: {reference['label']}{word}")


def _mark_knee(res, ax, knee, i: int, j: int, knobs: Sequence[str]) -> None:
    kv = list(res.objective_values(knee).values())
    ax.scatter([kv[i]], [kv[j]], marker="*", s=240, color="C1", edgecolor="k", zorder=5,
               label=f"knee: trial {knee.number}")
    shown = list(knobs)[:6]
    txt = f"knee: trial {knee.number}\n" + "\n".join(f"{k}={short(knee.params.get(k))}" for k in shown)
    # place the box toward the middle of the panel so it never leaves the axes
    def mid(lim, scale):
        return math.sqrt(lim[0] * lim[1]) if scale == "log" else 0.5 * (lim[0] + lim[1])
    xmid, ymid = mid(ax.get_xlim(), ax.get_xscale()), mid(ax.get_ylim(), ax.get_yscale())
    dx = 30 if kv[i] <= xmid else -30
    dy = 25 if kv[j] <= ymid else -25
    ax.annotate(txt, (kv[i], kv[j]), textcoords="offset points", xytext=(dx, dy), fontsize=7,
                ha="left" if dx > 0 else "right", va="bottom" if dy > 0 else "top",
                bbox={"boxstyle": "round", "fc": "w", "alpha": 0.9}, arrowprops={"arrowstyle": "-", "lw": 0.8},
                zorder=6)


def _single_objective(res, plt):
    o = res.cfg.objectives.objectives[0]
    cand, knee = res.candidates(), res.knee()
    V = _values(res, cand)
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [r.number for r in cand]
    ax.scatter(xs, V[:, 0], s=12, color="0.6", label="feasible design")
    if len(V):
        best = np.minimum.accumulate(V[:, 0]) if o.direction == "minimize" else np.maximum.accumulate(V[:, 0])
        ax.step(xs, best, where="post", color="C0", label="best so far")
        if spans_decades(V[:, 0]):
            log_axis(ax, ax.yaxis)
    if knee is not None:
        ax.scatter([knee.number], [res.objective_values(knee)[o.name]], marker="*", s=180, color="C3",
                   zorder=5, label=f"best: trial {knee.number}")
    ax.set_xlabel("trial")
    ax.set_ylabel(objective_label(o))
    ax.legend(fontsize=8)
    ax.set_title(f"{res.cfg.name} ({counts_title(res)})", fontsize=9)
    return fig


def parallel_figure(res, per_row: int = 9):
    """Parallel coordinates of the knobs that vary on the front, then the objectives; more than
    ``per_row`` knobs are split over several rows, each ending with the objectives."""
    cand, front = res.candidates(), res.front()
    if not cand:
        return None
    plt = _plt()
    knobs = varying_knobs(res, front) if len(front) > 1 else varying_knobs(res, cand)[:per_row]
    chunks = [knobs[i:i + per_row] for i in range(0, len(knobs), per_row)] or [[]]
    width = min(16, max(6, 1.3 * (len(chunks[0]) + len(res.cfg.objectives.names)) + 1))
    fig, axes = plt.subplots(len(chunks), 1, figsize=(width, 3.9 * len(chunks)), squeeze=False)
    for ax, chunk in zip(axes[:, 0], chunks):
        _parallel_panel(res, ax, chunk)
    axes[0, 0].set_title(f"{res.cfg.name}: the {len(knobs)} knobs that vary on the front; feasible designs "
                         f"(grey), front (blue), knee (orange)", fontsize=9)
    fig.tight_layout()
    return fig


def _parallel_panel(res, ax, knobs: Sequence[str]) -> None:
    cand, front, knee = res.candidates(), res.front(), res.knee()
    cols, ticks = [], []
    for k in knobs:
        col, tk = encode_axis([r.params.get(k) for r in cand])
        cols.append(col)
        ticks.append(tk)
    V = _values(res, cand)
    for j in range(V.shape[1]):
        col, tk = encode_axis(list(V[:, j]), log=spans_decades(V[:, j]))
        cols.append(col)
        ticks.append(tk)
    X = np.column_stack(cols)
    front_ids = {r.number for r in front}
    xs = np.arange(X.shape[1])
    for r, row in zip(cand, X):
        if r.number not in front_ids:
            ax.plot(xs, row, color="0.8", lw=0.5, alpha=0.5)
    for r, row in zip(cand, X):
        if r.number in front_ids and (knee is None or r.number != knee.number):
            ax.plot(xs, row, color="C0", lw=1.0, alpha=0.85)
    if knee is not None:
        ax.plot(xs, X[[r.number for r in cand].index(knee.number)], color="C1", lw=2.8,
                label=f"knee: trial {knee.number}")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    for x, (pos, lab) in zip(xs, ticks):
        ax.axvline(x, color="k", lw=0.6)
        for p, t in zip(pos, lab):
            ax.text(x + 0.04, p, t, fontsize=7, va="center")
    labels = list(knobs) + [objective_label(o).replace("  (", "\n(") for o in res.cfg.objectives.objectives]
    ax.set_xticks(xs, labels, rotation=20, ha="right", fontsize=8)
    ax.set_yticks([])
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlim(-0.2, len(xs) - 0.4)


def encode_axis(raw: list[Any], log: bool = False) -> tuple[np.ndarray, tuple[list[float], list[str]]]:
    """Map a column to [0, 1] with tick labels. Numbers keep their numeric order (a linear or,
    with ``log``, logarithmic scale); a column mixing numbers and None puts None first; text
    columns are ordered by their sorted categories."""
    def is_num(v):
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)
    vals = [v for v in raw if v is not None]
    if vals and all(is_num(v) for v in vals):
        distinct = sorted({float(v) for v in vals})
        if len(distinct) <= 8 or all(float(v).is_integer() for v in distinct) and len(distinct) <= 12:
            cats = ([None] if len(vals) < len(raw) else []) + distinct
            return _categorical(raw, cats, lambda v: None if v is None else float(v))
        a = np.array([np.nan if v is None else float(v) for v in raw])
        t = np.log10(a) if log else a
        lo, hi = np.nanmin(t), np.nanmax(t)
        col = np.where(np.isnan(t), 0.0, (t - lo) / (hi - lo) if hi > lo else 0.5)
        grid = np.linspace(lo, hi, 5)
        pos = list((grid - lo) / (hi - lo)) if hi > lo else [0.5]
        labs = [short(10 ** g if log else g) for g in (grid if hi > lo else [lo])]
        return col, (pos, labs)
    cats = sorted({str(v) for v in raw})
    return _categorical(raw, cats, str)


def _categorical(raw, cats, key):
    idx = {c: i for i, c in enumerate(cats)}
    n = max(1, len(cats) - 1)
    col = np.array([idx[key(v)] / n if len(cats) > 1 else 0.5 for v in raw])
    pos = [i / n if len(cats) > 1 else 0.5 for i in range(len(cats))]
    return col, (pos, [short(c) if c is not None else "None" for c in cats])


def short(v: Any) -> str:
    """A knob or tick value as short text (integral floats without the .0)."""
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v.is_integer() and abs(v) < 1e9:
            return str(int(v))
        return f"{v:.4g}"
    return str(v)
