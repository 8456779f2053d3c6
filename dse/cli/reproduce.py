"""`dse reproduce [--json] [--only SECTION] [--misses]`: published vs ours vs ratio."""
from __future__ import annotations

import argparse
from collections import Counter

from dse.report import dumps, table
from dse.reproduce import reproduce
from dse.reproduce.registry import TOLERANCE


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="compare every published reference figure with the model",
                       description="Every entry of the reference study (dse/data/reference/rexpert-35b.toml): "
                                   "published, ours, ratio, class, pass/miss. Exits 1 when an `exact` entry "
                                   "misses by more than 1 %.")
    p.add_argument("--json", action="store_true", help="rows as a JSON list")
    p.add_argument("--only", metavar="PREFIX", help="only entries whose key starts with PREFIX (e.g. latency_35b)")
    p.add_argument("--misses", action="store_true", help="show only rows that do not pass")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rows = reproduce(args.only)
    exact_miss = [r for r in rows if r.cls == "exact" and r.status in ("miss", "error")]
    if args.json:
        print(dumps([r.to_dict() for r in rows]))
    else:
        shown = [r for r in rows if not args.misses or r.status not in ("pass", "rounding")]
        print(table([(r.key, r.published, r.ours, None if r.ratio is None else f"{r.ratio:.3f}", r.cls,
                      r.status, r.note) for r in shown],
                    ["entry", "published", "ours", "ratio", "class", "status", "note"], align="lrrrlll"))
        c = Counter(r.status for r in rows)
        tol = ", ".join(f"{k} {v:.0%}" for k, v in TOLERANCE.items())
        print(f"\n{len(rows)} figures: {c['pass']} pass, {c['rounding']} pass within published rounding, "
              f"{c['miss']} miss, {c['not modelled']} not modelled, {c['error']} error "
              f"(tolerance: {tol}); exact misses: {len(exact_miss)}")
    return 1 if exact_miss else 0
