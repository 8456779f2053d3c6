"""The study report: one shareable document (`dse report STUDY -o report.html | --format md`).

``build_report(res, ...)`` gathers the sections as plain data (paragraphs, tables, PNG figures);
``dse.viz.report_render`` writes them as one self-contained HTML file (figures embedded as
base64 PNG, inline CSS, no script, no network) or as Markdown with the PNGs beside it.

Sections: summary; front table; knee and its five nearest alternatives; pairwise fronts;
parallel coordinates; the knee's area / power / energy breakdown; hypervolume against trials;
knob importance; infeasibility reasons; knee confidence (when re-evaluated); model version and
the `dse reproduce` summary.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dse.report import fmt
from dse.search.front import pareto
from dse.search.front.walls import study_walls
from dse.search.review import quality
from dse.viz import report_figures as rf
from dse.viz import study_plots as sp


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Any]]
    id: str = ""


@dataclass
class Figure:
    name: str          # file stem (Markdown) and anchor
    png: bytes
    alt: str


@dataclass
class Section:
    id: str
    title: str
    blocks: list[Any] = field(default_factory=list)   # str (paragraph) | Table | Figure


def build_report(res, *, robust=None, reproduce_rows=None, columns: Sequence[str] | None = None,
                 sort: str | None = None, candidates: int = 3, merged=None, model_uncertainty=None,
                 reference=None, reference_sections: Sequence[Section] = ()) -> list[Section]:
    """Every section of the report of the study ``res`` (StudyResults); ``candidates``: knee
    candidates shown; ``merged``: the knee agreement of pooled runs (``merge.agreement``);
    ``model_uncertainty``: ``dse front --robust --model-uncertainty``'s ``ModelUncertaintyKnees``;
    ``reference``: a design placed against the front (``reference.reference_json``), marked on the
    pairwise fronts, with ``reference_sections`` after the knee (``dse.viz.report_reference``)."""
    ref = quality.study_reference(res)
    out = [summary_section(res, ref), front_section(res, columns, sort), candidates_section(res, candidates, merged),
           knee_section(res)]
    out += list(reference_sections)
    fig = sp.front_figure(res, reference)
    out.append(Section("pairwise-fronts", "Pairwise fronts", [
        "Every feasible design (grey), infeasible trials (red x), the front (blue) and the knee (star, "
        "labelled)" + (", the reference design (black diamond, hollow if infeasible)" if reference else "")
        + ". An axis whose values span more than a decade is logarithmic.",
        Figure("front", rf.png_bytes(fig), "pairwise fronts with the knee")]))
    pfig = sp.parallel_figure(res)
    out.append(Section("parallel-coordinates", "Parallel coordinates", [
        "Only the knobs that vary on the front; numeric knobs on numeric axes.",
        *([Figure("parallel", rf.png_bytes(pfig), "parallel coordinates")] if pfig is not None
          else ["no feasible design"])]))
    out += [breakdown_section(res), hypervolume_section(res, ref), importance_section(res),
            infeasibility_section(res), robust_section(res, robust, model_uncertainty),
            version_section(res, reproduce_rows)]
    return out


def summary_section(res, ref) -> Section:
    cfg = res.cfg
    front, knee = res.front(), res.knee()
    settled = quality.knee_settledness(res)
    hv = quality.hypervolume_on(res, front, ref)
    rows = [["study", cfg.name], ["file", cfg.command_args()], ["description", cfg.description or "-"],
            ["sampler", f"{cfg.sampler} (seed {cfg.seed}, batch {cfg.batch})"],
            ["workloads", ", ".join(cfg.models)],
            ["objectives", "; ".join(sp.objective_label(o) for o in cfg.objectives.objectives)],
            ["constraints", "; ".join(c.name for c in cfg.objectives.constraints) or "-"],
            ["trials", sp.counts_title(res)],
            ["hypervolume", f"{fmt(hv)} on {ref.describe(cfg.objectives.names)}"],
            ["knee", "-" if knee is None else f"trial {knee.number}: {settled['verdict']} ({settled['reason']})"],
            ["at a bound", "; ".join(w.sentence() for w in study_walls(res, front))
             or "no knob: the front is inside its ranges"]]
    return Section("summary", "Study summary", [Table(["", ""], rows, "summary")])


def front_section(res, columns: Sequence[str] | None, sort: str | None) -> Section:
    front, knee = res.front(), res.knee()
    onames = res.cfg.objectives.names
    cols = list(columns) if columns else onames + sp.varying_knobs(res, front)
    key = sort or onames[0]
    desc = key.startswith("-") or (not sort and res.cfg.objectives.objectives[0].direction == "maximize")
    key = key.lstrip("-")

    def val(r, c):
        return res.objective_values(r).get(c) if c in onames else r.params.get(c, r.design.get(
            c, r.metrics.get(res.cfg.models[0], {}).get(c)))
    recs = sorted(front, key=lambda r: (val(r, key) is None, val(r, key) if isinstance(val(r, key), (int, float))
                                        else str(val(r, key))), reverse=desc)
    rows = [[r.number, "*" if knee is not None and r.number == knee.number else ""] + [val(r, c) for c in cols]
            for r in recs]
    text = f"{len(front)} designs, sorted by {key} ({'descending' if desc else 'ascending'}); * = knee."
    return Section("front", "Pareto front", [text, Table(["trial", "knee"] + cols, rows, "front-table")])


def candidates_section(res, n: int = 3, merged=None) -> Section:
    """The top ``n`` knee candidates (one per architecture) with score and margin, the verdict,
    and with ``merged`` the knee agreement of the pooled runs."""
    fr, kc = quality.knee_candidates(res)
    if not kc.candidates:
        return Section("knee-candidates", "Knee candidates", ["no feasible design"])
    onames = res.cfg.objectives.names
    rows = [[i, fr[c.index].number] + list(c.group) + [res.objective_values(fr[c.index])[o] for o in onames]
            + [c.score, "-" if c.margin is None else c.margin] for i, c in enumerate(kc.candidates[:n], 1)]
    blocks: list[Any] = [
        f"Every local maximum of the knee score inside the front ({quality.utility_words(kc)}), one per "
        f"architecture ({', '.join(kc.keys)}); margin: score minus the next candidate's. "
        f"{quality.study_verdict(res, fr, kc).line()}.",
        Table(["rank", "trial"] + list(kc.keys) + onames + ["score", "margin"], rows, "candidates-table")]
    archs = quality.architectures(res, kc, n)
    if archs:
        blocks += ["Best evaluated design per architecture, on the front or not, and how many designs of each the "
                   "study evaluated: an architecture with few designs is barely refined, its score is a floor "
                   "(merge several seeds to compare).",
                   Table(list(kc.keys) + ["best score", "trial", "designs"],
                         [list(a["architecture"].values()) + [a["best_score"], a["best_trial"], a["designs"]]
                          for a in archs], "architectures-table")]
    if merged is not None:
        blocks += [f"Knee agreement over {len(merged['runs'])} pooled runs: how many runs put each architecture "
                   f"first (the merged front's top candidate first).",
                   Table(list(kc.keys) + ["runs first", "runs"],
                         [list(a["architecture"].values()) + [a["first_in"], ", ".join(a["runs"])]
                          for a in merged["agreement"]], "agreement-table")]
    return Section("knee-candidates", "Knee candidates", blocks)


def nearest_alternatives(res, k: int = 5) -> list[tuple[Any, float]]:
    """The ``k`` feasible designs nearest to the knee (objectives normalised over the feasible
    designs), with their distance."""
    cand, knee = res.candidates(), res.knee()
    if knee is None or len(cand) < 2:
        return []
    N = pareto.normalise(res.F(cand))
    ki = [r.number for r in cand].index(knee.number)
    d = np.linalg.norm(N - N[ki], axis=1)
    order = [i for i in np.argsort(d, kind="stable") if i != ki][:k]
    return [(cand[i], float(d[i])) for i in order]


def knee_section(res) -> Section:
    knee = res.knee()
    if knee is None:
        return Section("knee", "Knee and nearest alternatives", ["no feasible design"])
    onames = res.cfg.objectives.names
    knobs = res.cfg.space.searched_names
    alts = nearest_alternatives(res)
    rows = [["knee", knee.number, 0.0] + [res.objective_values(knee)[o] for o in onames] + ["-"]]
    for i, (r, d) in enumerate(alts, 1):
        diff = [f"{k}={sp.short(r.params.get(k))}" for k in knobs if r.params.get(k) != knee.params.get(k)]
        rows.append([f"alternative {i}", r.number, d] + [res.objective_values(r)[o] for o in onames]
                    + [", ".join(diff) or "same knobs"])
    params = Table(["knob", "knee value"], [[k, knee.params.get(k)] for k in knobs], "knee-params")
    return Section("knee", "Knee and its five nearest alternatives", [
        "Distance: Euclidean, objectives normalised to [0, 1] over the feasible designs. The last column "
        "lists the knobs in which an alternative differs from the knee.",
        Table(["", "trial", "distance"] + onames + ["differs in"], rows, "knee-table"), params])


def breakdown_section(res) -> Section:
    knee = res.knee()
    if knee is None:
        return Section("breakdown", "Knee breakdown", ["no feasible design"])
    model = res.cfg.models[0]
    designs = [(f"knee ({knee.number})", knee.metrics.get(model, {}))]
    designs += [(f"trial {r.number}", r.metrics.get(model, {})) for r, _ in nearest_alternatives(res)]
    parts = rf.breakdown_rows(designs[0][1])
    rows = [[panel] + [fmt(v) for _, v in vals] + [fmt(sum(v for _, v in vals))] for panel, vals in parts.items()]
    heads = [""] + [lab for lab, _ in next(iter(parts.values()))] + ["total"]
    return Section("breakdown", "Knee breakdown: area, power, energy", [
        f"Per die on workload {model}; energy per token is the pool's (pool power x the scheduled time per "
        "token where the design was scheduled on a trace, else the closed form's), split by each component's "
        "share of die power.", Table(heads, rows, "breakdown-table"),
        Figure("breakdown", rf.png_bytes(rf.breakdown_figure(designs)), "component breakdown")])


def hypervolume_section(res, ref) -> Section:
    hist = quality.hypervolume_history(res, ref)
    text = ref.describe(res.cfg.objectives.names)
    return Section("hypervolume", "Hypervolume against trials", [
        f"Reference point: {text}.", Figure("hypervolume", rf.png_bytes(rf.hypervolume_figure(hist, text)),
                                            "hypervolume against trials")])


def importance_section(res) -> Section:
    imp = quality.knob_importance(res)
    if not imp or not any(imp.values()):
        return Section("importance", "Knob importance", ["fewer than two feasible designs: no importance"])
    knobs = sorted({k for v in imp.values() for k in v}, key=lambda k: -max(v.get(k, 0) for v in imp.values()))
    rows = [[k] + [imp[o].get(k) for o in imp] for k in knobs]
    return Section("importance", "Knob importance per objective", [
        "optuna's PED-ANOVA importance evaluator over the feasible designs: the share of each knob in "
        "reaching the best values of the objective.", Table(["knob"] + list(imp), rows, "importance-table"),
        Figure("importance", rf.png_bytes(rf.importance_figure(imp)), "knob importance")])


def infeasibility_section(res) -> Section:
    counts = quality.infeasibility_counts(res)
    n = sum(not r.feasible for r in res.complete)
    if not counts:
        return Section("infeasibility", "Why designs were infeasible", ["every finished trial is feasible"])
    return Section("infeasibility", "Why designs were infeasible", [
        f"{n} infeasible finished trials; a trial may have several reasons (numbers shown as #).",
        Table(["reason", "trials"], [list(c) for c in counts], "infeasibility-table")])


def robust_section(res, robust, model_uncertainty=None) -> Section:
    mu = [] if model_uncertainty is None else model_uncertainty_blocks(res, model_uncertainty)
    if robust is None:
        return Section("robust", "Knee confidence", [
            "not computed: `dse report ... --robust N` re-evaluates the designs around the front under N other "
            "trace seeds and counts how often each is the knee (`--model-uncertainty N`: under N draws of the "
            "model's unknowns)", *mu])
    freq = robust.frequency()
    recs = sorted(robust.designs, key=lambda r: (-freq[r.number], r.number))
    knobs = sp.varying_knobs(res, robust.designs)
    rows = [[r.number, freq[r.number], robust.counts.get(r.number, 0), sp.design_label(r, knobs)]
            for r in recs if freq[r.number] > 0]
    labels = [f"trial {r[0]}: {r[3]}"[:70] for r in rows]
    return Section("robust", "Knee confidence", [
        f"{len(robust.designs)} designs re-evaluated under {len(robust.variants)} variants "
        f"({', '.join(v.label for v in robust.variants[:4])}{', ...' if len(robust.variants) > 4 else ''}); "
        "front and knee recomputed each time.",
        Table(["trial", "knee frequency", "knee count", "design"], rows, "robust-table"),
        Figure("robust", rf.png_bytes(rf.robust_figure(labels, [r[1] for r in rows], len(robust.variants))),
               "knee frequency"), *mu])


def model_uncertainty_blocks(res, mu) -> list[Any]:
    """How often each design stays on the front and is the knee under N draws of the model's unknowns."""
    freq, front = mu.frequency(), mu.front_frequency()
    recs = sorted(mu.designs, key=lambda r: (-freq[r.number], -front[r.number], r.number))
    knobs = sp.varying_knobs(res, mu.designs)
    rows = [[r.number, freq[r.number], front[r.number], sp.design_label(r, knobs)]
            for r in recs if freq[r.number] > 0 or front[r.number] > 0]
    always = sum(front[r.number] == 1.0 for r in mu.designs)
    return [f"Under {len(mu.variants)} draws of the model's unknowns (`dse/data/model_uncertainty.toml`, "
            f"`dse front --robust --model-uncertainty N`): {len(mu.designs)} designs re-evaluated per draw, "
            f"{always} stay on the front in every draw.",
            Table(["trial", "knee frequency", "front frequency", "design"], rows, "model-uncertainty-table")]


def version_section(res, reproduce_rows) -> Section:
    from importlib import resources

    from dse import __version__

    def digest(name: str) -> str:
        data = resources.files("dse.data").joinpath(name).read_bytes()
        return hashlib.sha256(data).hexdigest()[:12]
    rows = [["rexpert-dse", __version__], ["study created by", str(res.study_attrs.get("dse", {}).get("version", "-"))],
            ["constants.toml sha256", digest("constants.toml")],
            ["reference figures sha256", digest("reference/rexpert-35b.toml")]]
    blocks: list[Any] = [Table(["", ""], rows, "version-table")]
    if reproduce_rows is not None:
        from dse.reproduce.registry import summary
        c = summary(reproduce_rows)
        blocks.append(f"`dse reproduce`: {c['figures']} published figures: {c['pass'] + c['rounding']} pass "
                      f"({c['rounding']} within published rounding), {c['miss']} miss, {c['not modelled']} not "
                      f"modelled, {c['error']} error; exact misses: {c['exact_misses']}.")
        blocks.append(Table(["evidence", "pass", "miss"], [[e, v["pass"], v["miss"]]
                                                            for e, v in c["by_evidence"].items()], "reproduce-table"))
    return Section("version", "Model version and reproduction", blocks)
