"""The report's reference sections: where a reference design (``published`` by default) sits
against the front, and the knee explained against it (`dse explain`'s contribution table)."""
from __future__ import annotations

from typing import Any

from dse.search.review import explain as ex
from dse.search.review.reference import describe
from dse.viz.report import Section, Table


def reference_section(res, reference: dict[str, Any]) -> Section:
    """Its objectives beside the knee's, feasibility per model, the front designs dominating it,
    the additive epsilon and the nearest front design (`dse front --reference`)."""
    names = res.cfg.objectives.names
    knee = res.knee()
    rows = [["reference"] + [reference["objectives"][n] for n in names]
            + ["yes" if reference["feasible"] else "no: " + reference["reason"]]]
    if knee is not None:
        kv = res.objective_values(knee)
        rows.append([f"knee (trial {knee.number})"] + [kv[n] for n in names] + ["yes"])
    n = reference.get("nearest")
    if n is not None:
        rows.append([f"nearest front design (trial {n['trial']})"] + [n["objectives"][k] for k in names] + ["yes"])
    blocks: list[Any] = [
        f"The {reference['label']}, evaluated as the study evaluates a trial (its workloads, aggregates, "
        f"objectives and constraints), and marked with a black diamond on the pairwise fronts (hollow: infeasible).",
        Table(["design"] + names + ["feasible"], rows, "reference-table"),
        *describe(res, reference)[1:]]
    return Section("reference", "Reference design", blocks)


def explain_section(res, out: dict[str, Any]) -> Section:
    """The knee against the reference: per-knob contributions to each objective's change (Shapley
    values), the feasibility shares and the rules followed."""
    headers, rows = ex.contribution_table(out)
    blocks: list[Any] = [
        f"From the {out['from']['label']} to the {out['to']['label']}: each objective's change split into "
        f"per-knob contributions, Shapley values over the knobs that differ ({len(out['players'])} players, "
        f"{out['method']['evaluations']} hybrids evaluated; `dse explain`, docs/guide/explain.md). "
        + ("Contributions of ln(objective): they add up to ln(B/A)." if out["scale"] == "log" else
           "Contributions in the objectives' units: they add up to B - A."),
        Table(headers, rows, "explain-table")]
    for k, why in out.get("nonfinite", {}).items():
        blocks.append(f"{k}: {why['hybrids']} hybrid(s) without a finite value took {why['value']}.")
    fh, fr = ex.feasibility_table(out)
    if fr:
        blocks += ["Each knob's share of the change of feasibility (Shapley values of feasible = 1), overall and "
                   "per model:", Table(fh, fr, "explain-feasibility"), *ex.flip_lines(out)]
    blocks += ["Rules: " + "; ".join(out["rules"]) + "."]
    return Section("explain", "The knee against the reference design", blocks)

