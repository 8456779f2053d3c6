"""`dse front STUDY.toml [--csv | --json] [--all]`: the feasible Pareto front with the knee marked."""
from __future__ import annotations

import argparse
import csv
import io

from dse.cli.run import add_study_args, study_from_args
from dse.report import dumps, fmt, table


def register(sub) -> None:
    p = sub.add_parser("front", help="print a study's feasible Pareto front with the knee marked",
                       description="The feasible Pareto front of a study (distinct designs), its knee "
                                   "(marked *) and normalised hypervolume.")
    add_study_args(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--csv", action="store_true", help="CSV: trial, knee, params, objectives")
    g.add_argument("--json", action="store_true", help="JSON object with front, knee, hypervolume")
    p.add_argument("--all", action="store_true", help="list every finished trial, not only the front")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dse.search.results import load_results
    cfg = study_from_args(args)
    res = load_results(cfg)
    front = res.front()
    knee = res.knee()
    shown = res.complete if args.all else front
    front_ids = {r.number for r in front}
    if args.json:
        print(dumps({
            "study": cfg.name,
            "objectives": [{"name": o.name, "metric": o.metric, "direction": o.direction, "aggregate": o.aggregate}
                           for o in cfg.objectives.objectives],
            "constraints": [c.name for c in cfg.objectives.constraints],
            "workloads": list(cfg.models),
            "n_trials": len(res.complete),
            "n_feasible": sum(r.feasible for r in res.complete),
            "hypervolume": res.hypervolume(),
            "front": [res.to_json(r) for r in front],
            "knee": res.to_json(knee) if knee is not None else None,
            **({"trials": [res.to_json(r) for r in shown]} if args.all else {}),
        }))
        return 0
    pnames = cfg.space.searched_names
    onames = cfg.objectives.names
    rows = []
    for r in shown:
        mark = "*" if knee is not None and r.number == knee.number else ""
        row = [r.number, mark]
        if args.all:
            row.append("front" if r.number in front_ids else ("yes" if r.feasible else "no"))
        row += [r.params.get(k) for k in pnames]
        row += list(res.objective_values(r).values())
        rows.append(row)
    headers = ["trial", "knee"] + (["feasible"] if args.all else []) + pnames + onames
    if args.csv:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(headers)
        for row in rows:
            w.writerow(["" if v is None else v for v in row])
        print(buf.getvalue(), end="")
        return 0
    hv = res.hypervolume()
    print(f"study {cfg.name}: {len(res.complete)} finished trials, {sum(r.feasible for r in res.complete)} feasible, "
          f"front {len(front)} designs, hypervolume {fmt(hv)} (normalised, ref 1.1)")
    print("objectives: " + ", ".join(f"{o.name} ({o.direction})" for o in cfg.objectives.objectives)
          + (f"; constraints: {', '.join(c.name for c in cfg.objectives.constraints)}"
             if cfg.objectives.constraints else ""))
    if not rows:
        print("no feasible design yet")
        return 0
    print(table(rows, headers, align="rl" + "r" * (len(headers) - 2)))
    if knee is not None:
        print(f"* knee: trial {knee.number} (normalised distance to the line/hyperplane through the extremes; "
              f"export with `dse export {args.study} --knee -o design.toml`)")
    return 0
