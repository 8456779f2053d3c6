"""`dse reproduce [--json] [--only SECTION] [--misses]`: published vs ours vs ratio, with evidence."""
from __future__ import annotations

import argparse

from dse.report import dumps, table, terminal_width
from dse.reproduce import reproduce
from dse.reproduce.registry import EVIDENCE, TOLERANCE, summary


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="compare every published reference figure with the model",
                       description="Every entry of the reference study (dse/data/reference/rexpert-35b.toml): "
                                   "published (as written), ours, ratio, tolerance class, evidence class "
                                   "(arithmetic | input | calibrated | predicted), pass/miss. Exits 1 when an "
                                   "`exact` entry misses by more than 1 %.")
    p.add_argument("--json", action="store_true", help="{summary, rows} as JSON")
    p.add_argument("--only", metavar="PREFIX", help="only entries whose key starts with PREFIX (e.g. latency_35b)")
    p.add_argument("--misses", action="store_true",
                   help="show only misses (and errors); a pass within published rounding is a pass")
    p.add_argument("--uncertainty", type=int, default=0, metavar="N",
                   help="recompute every figure under N Latin-hypercube draws of the model's unknowns "
                        "(dse/data/model_uncertainty.toml): each predicted row's p5-p95 band, whether the "
                        "published value is inside it, and the class of each miss (inside band / definition "
                        "not built / structural), with counts")
    p.add_argument("--uncertainty-seed", type=int, default=0, metavar="S", help="seed of the draws (default 0)")
    p.set_defaults(func=run)


def summary_line(s: dict) -> str:
    """One line: totals, then pass / miss per evidence class."""
    tol = ", ".join(f"{k} {v:.0%}" for k, v in TOLERANCE.items())
    per = "; ".join(f"{e} {s['by_evidence'][e]['pass']} pass / {s['by_evidence'][e]['miss']} miss" for e in EVIDENCE)
    return (f"{s['figures']} figures: {s['pass'] + s['rounding']} pass ({s['rounding']} within published "
            f"rounding), {s['miss']} miss, {s['not modelled']} not modelled, {s['error']} error; by evidence: "
            f"{per} (tolerance: {tol}); exact misses: {s['exact_misses']}")


def run(args: argparse.Namespace) -> int:
    rows = reproduce(args.only)
    if args.only is not None and not rows:
        from dse.data import load_toml
        from dse.errors import ConfigError
        from dse.reproduce.registry import REFERENCE_FILE
        sections = ", ".join(load_toml(*REFERENCE_FILE))
        raise ConfigError(f"--only {args.only!r}: no reference entry starts with it (sections: {sections})")
    s = summary(rows)
    if args.uncertainty < 0:
        from dse.errors import ConfigError
        raise ConfigError(f"--uncertainty {args.uncertainty}: must be a whole number of draws >= 0")
    judged, us = ({}, None) if not args.uncertainty else uncertainty(rows, args)
    if args.json:
        out = {"summary": s, "rows": [{**r.to_dict(), **judged.get(r.key, {})} for r in rows]}
        if us is not None:
            out["uncertainty"] = us
        print(dumps(out))
    else:
        shown = [r for r in rows if not args.misses or r.status in ("miss", "error")]
        if judged:
            print(table([(r.key, r.published_text, r.ours, None if r.ratio is None else f"{r.ratio:.3f}", r.cls,
                          r.evidence or "-", r.status, *band_cells(judged.get(r.key)), r.note) for r in shown],
                        ["entry", "published", "ours", "ratio", "class", "evidence", "status", "p5-p95", "in band",
                         "miss class", "note"], align="lrrrllllllll", max_width=terminal_width(120)))
        else:
            print(table([(r.key, r.published_text, r.ours, None if r.ratio is None else f"{r.ratio:.3f}", r.cls,
                          r.evidence or "-", r.status, r.note) for r in shown],
                        ["entry", "published", "ours", "ratio", "class", "evidence", "status", "note"],
                        align="lrrrllll", max_width=terminal_width(120)))
        print("\n" + summary_line(s))
        if us is not None:
            print(band_line(us, args.uncertainty))
    return 1 if s["exact_misses"] else 0


def uncertainty(rows, args) -> tuple[dict, dict]:
    from dse.reproduce.bands import band_summary, judge_bands, row_bands
    judged = judge_bands(rows, row_bands(args.uncertainty, args.uncertainty_seed, args.only))
    return judged, {"draws": args.uncertainty, "seed": args.uncertainty_seed, **band_summary(rows, judged)}


def band_cells(j: dict | None) -> tuple:
    """(p5-p95, in band, miss class) of a predicted row; blanks elsewhere."""
    if j is None:
        return "", "", ""
    b = j["band"]
    return ("-" if b is None else f"{b['p5']:.4g}-{b['p95']:.4g}", "yes" if j["in_band"] else "no",
            j["miss_class"] or "")


def band_line(u: dict, n: int) -> str:
    c = u["miss_classes"]
    w = u["median_relative_half_width"]
    return (f"model-uncertainty bands ({n} draws): predicted {u['predicted']}: {u['pass']} pass "
            f"({u['pass_in_band']} with the published value inside its p5-p95 band, {u['pass_in_band_by_rounding']} of "
            f"them within its published rounding), {u['miss']} miss: "
            + ", ".join(f"{v} {k}" for k, v in c.items())
            + f"; median relative half-width {'-' if w is None else f'{w:.2%}'}")
