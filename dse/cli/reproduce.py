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
    if args.json:
        print(dumps({"summary": s, "rows": [r.to_dict() for r in rows]}))
    else:
        shown = [r for r in rows if not args.misses or r.status in ("miss", "error")]
        print(table([(r.key, r.published_text, r.ours, None if r.ratio is None else f"{r.ratio:.3f}", r.cls,
                      r.evidence or "-", r.status, r.note) for r in shown],
                    ["entry", "published", "ours", "ratio", "class", "evidence", "status", "note"],
                    align="lrrrllll", max_width=terminal_width(120)))
        print("\n" + summary_line(s))
    return 1 if s["exact_misses"] else 0
