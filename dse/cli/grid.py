"""`dse grid SPACE.toml [--objectives OBJ.toml] [--model M] [--batch B] [--json] [-o table.parquet]
[--checkpoint FILE]`: every point of a discrete space through the vectorised closed form, streamed
in chunks, the exact feasible front and its knee (the JSON of ``dse front --json``, plus points,
seconds, points_per_s); an interrupted run resumes from its checkpoint."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dse.report import dumps, fmt, table

# The default objectives (objectives/latency-silicon-closed-form.toml): per-token latency against pool power.
DEFAULT_OBJECTIVES = {
    "description": "Per-token FFN latency against pool power; die within its area budget.",
    "objectives": [{"metric": "ffn_latency_us_per_token", "direction": "minimize"},
                   {"metric": "pool_power_w", "direction": "minimize"}],
    "constraints": [{"metric": "die_area_mm2", "le": "die_area_budget_mm2"}],
}
SHOWN = 40


def register(sub) -> None:
    p = sub.add_parser("grid", help="evaluate every point of a discrete space (closed form, vectorised)",
                       description="Exhaustive closed-form search: every point of SPACE, the exact feasible "
                                   "Pareto front and its knee (knobs of the trace-driven model are refused).")
    p.add_argument("space", help="space TOML (spaces/*.toml) with closed-form knobs only")
    p.add_argument("--objectives", metavar="OBJ.toml",
                   help="objectives TOML (default: latency vs pool power, die within budget)")
    p.add_argument("--model", help="catalog model (default: the design default)")
    p.add_argument("--batch", type=int, help="decode batch (default: the model's native batch)")
    p.add_argument("--json", action="store_true", help="JSON: points, seconds, points_per_s, front, knee")
    p.add_argument("-o", "--output", metavar="TABLE.parquet", help="write every point's knobs and metrics")
    p.add_argument("--checkpoint", metavar="FILE.npz",
                   help="save the chunks done and the running front here (every 5 s and on Ctrl-C); "
                        "a later run with the same file resumes; removed when the grid completes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dse.cli.filekind import refuse
    from dse.errors import ConfigError
    from dse.search.grid.grid import check_objectives
    from dse.search.grid.grid_output import ParquetSink, front_json
    from dse.search.grid.stream import count_points, stream_grid
    from dse.search.space.objectives import load_objectives, objectives_from_dict
    from dse.search.space.space_file import load_space
    from dse.spec import DesignPoint
    refuse(args.space, "space", "grid")
    if args.objectives:
        refuse(args.objectives, "objectives", "grid --objectives")
    space = load_space(args.space)
    objset = load_objectives(args.objectives) if args.objectives else \
        objectives_from_dict(DEFAULT_OBJECTIVES, source="default objectives")
    overrides = {k: v for k, v in (("model", args.model), ("batch", args.batch)) if v is not None}
    point = DesignPoint.from_dict({**overrides, "trace": "catalog"}, source="--model/--batch")
    base = {"model": point.model, **({"batch": point.batch} if point.batch is not None else {})}
    if args.checkpoint and args.output:
        raise ConfigError("--checkpoint with -o: a parquet table cannot be resumed; give one of them")
    check_objectives(objset, base)
    sink = ParquetSink(args.output, objset) if args.output else None
    bar = None if args.no_progress else _bar(count_points(space, base))
    try:
        res = stream_grid(space, objset, base, checkpoint=args.checkpoint, on_chunk=sink,
                          progress=bar.update if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
        if sink is not None:
            sink.close()
    out = front_json(res, objset, base, Path(args.space).stem, point.model)
    if args.json:
        print(dumps(out))
        return 0
    _print(out, space, objset)
    return 0


def _bar(total: int):
    """tqdm on stderr; without a terminal, a line at most every 10 % of the points and 5 s."""
    from tqdm import tqdm
    if sys.stderr.isatty():
        return tqdm(total=total, unit="pt", unit_scale=True, file=sys.stderr, desc="dse grid")
    return tqdm(total=total, unit="pt", unit_scale=True, file=sys.stderr, desc="dse grid", mininterval=5.0,
                maxinterval=float("inf"), miniters=max(1, total // 10), delay=5.0, ascii=True)


def _print(out, space, objset) -> None:
    print(f"{out['study']}: {out['points']} points in {out['seconds']:.2f} s ({fmt(out['points_per_s'])} points/s), "
          f"{out['n_feasible']} feasible, front {len(out['front'])} designs, hypervolume {fmt(out['hypervolume'])} "
          f"(normalised, ref 1.1)")
    print("objectives: " + ", ".join(f"{o['name']} ({o['direction']})" for o in out["objectives"])
          + (f"; constraints: {', '.join(out['constraints'])}" if out["constraints"] else ""))
    if not out["front"]:
        print("no feasible design")
        return
    pnames = space.searched_names
    knee = out["knee"]["trial"] if out["knee"] else None
    rows = [[e["trial"], "*" if e["trial"] == knee else ""] + [e["params"].get(k) for k in pnames]
            + list(e["objectives"].values()) for e in out["front"][:SHOWN]]
    print(table(rows, ["point", "knee"] + pnames + objset.names, align="rl" + "r" * (len(pnames) + len(objset.names))))
    if len(out["front"]) > SHOWN:
        print(f"... {len(out['front']) - SHOWN} more front designs (--json or -o for all)")
    if knee is not None and all(e["trial"] != knee for e in out["front"][:SHOWN]):
        print(f"* knee: point {knee} {out['knee']['params']}")
