"""`dse explain STUDY.toml --from A --to B [--json]`: each objective's change from design A to design
B split into per-knob contributions (Shapley values over the knobs that differ)."""
from __future__ import annotations

import argparse
import textwrap

from dse.cli.run import _int_arg, add_study_args, study_from_args
from dse.report import dumps, fmt, table, terminal_width
from dse.search.review.explain import contribution_table, feasibility_table, flip_lines, short


def register(sub) -> None:
    p = sub.add_parser("explain", help="split the change of each objective from design A to B into per-knob "
                                       "contributions (Shapley values)",
                       description="Which knobs make B better (or worse) than A, and by how much: every hybrid "
                                   "of A and B is evaluated as the study evaluates a trial, and each objective's "
                                   "change is split into Shapley values over the knobs that differ (exact up to "
                                   "--exact-max knobs, else sampled orders with standard errors). Also which "
                                   "knobs make a design feasible or infeasible, on which model "
                                   "(docs/guide/explain.md).")
    add_study_args(p)
    p.add_argument("--from", dest="from_", required=True, metavar="A",
                   help="'published', 'knee', a trial number or a design TOML (as `dse export` writes it)")
    p.add_argument("--to", required=True, metavar="B", help="as --from")
    p.add_argument("--scale", choices=("auto", "log", "linear"), default="auto",
                   help="log: contributions of ln(objective) that add up to ln(B/A); auto (default): log when "
                        "every objective of A and B is positive, else linear")
    p.add_argument("--exact-max", type=_int_arg, default=10, metavar="N",
                   help="exact Shapley values (2^n hybrids) up to N differing knobs (default 10), else sampled")
    p.add_argument("--orders", type=_int_arg, default=64, metavar="K", help="sampled orders (default 64)")
    p.add_argument("--order-seed", type=_int_arg, default=0, metavar="S", help="seed of the sampled orders")
    p.add_argument("--nonfinite", choices=("worst", "skip"), default="worst",
                   help="a hybrid whose objective is not finite (cannot be mapped, priced or built): worst "
                        "(default) takes the worst finite value of the hybrids, skip leaves the objective "
                        "unattributed")
    p.add_argument("--jobs", "-j", type=_int_arg, default=1, help="worker processes for the hybrids (default 1)")
    p.add_argument("--json", action="store_true", help="JSON: scale, from, to, total, contributions, feasibility")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dse.errors import ConfigError
    from dse.search.review.reference import endpoint
    from dse.search.study.results import load_results
    if args.orders < 1 or args.exact_max < 0 or args.jobs == 0:
        raise ConfigError("--orders >= 1, --exact-max >= 0 and --jobs != 0")
    cfg = study_from_args(args)
    res = load_results(cfg)
    a, b = endpoint(res, args.from_, "--from"), endpoint(res, args.to, "--to")
    from dse.search.review.explain import explain
    out = explain(res, a, b, scale=args.scale, exact_max=args.exact_max, orders=args.orders,
                     seed=args.order_seed, jobs=args.jobs, nonfinite=args.nonfinite)
    if args.json:
        print(dumps(out))
        return 0
    print("\n".join(describe(out)))
    return 0


def describe(out) -> list[str]:
    """The explanation as text: the two designs, the contribution table, feasibility, the rules."""
    w = terminal_width()
    lines = []
    for end in ("from", "to"):
        e = out[end]
        objs = ", ".join(f"{k}={fmt(v)}" for k, v in e["objectives"].items())
        lines.append(textwrap.fill(f"{end} {e['label']}: {objs}; "
                                   + ("feasible" if e["feasible"] else f"infeasible ({e['reason']})"), w,
                                   subsequent_indent="  "))
    headers, rows = contribution_table(out)
    lines.append(table(rows, headers, align="l" + "r" * (len(headers) - 1), max_width=w))
    for k, why in out.get("not_attributable", {}).items():
        lines.append(textwrap.fill(f"{k}: not attributable (the hybrid switching {', '.join(why['switched'])} has no "
                                   f"finite value: {short(why['reason'])})", w, subsequent_indent="  "))
    for k, why in out.get("nonfinite", {}).items():
        ex = why["example"]
        lines.append(textwrap.fill(f"{k}: {why['hybrids']} hybrid(s) without a finite value took {why['value']} "
                                   f"(e.g. switching {', '.join(ex['switched'])}: {short(ex['reason'])})", w,
                                   subsequent_indent="  "))
    headers, rows = feasibility_table(out)
    if rows:
        lines.append(textwrap.fill("feasibility: each knob's share of feasible(B) - feasible(A) (Shapley values of "
                                   "feasible = 1), overall and per model, and the switches that flip it:", w))
        lines.append(table(rows, headers, align="l" + "r" * (len(headers) - 1), max_width=w))
        lines += [textwrap.fill(s, w, subsequent_indent="  ") for s in flip_lines(out)]
    else:
        lines.append("feasibility: no knob switch changes feasibility on any model")
    lines += [textwrap.fill("rule: " + r, w, subsequent_indent="  ") for r in out["rules"]]
    return lines
