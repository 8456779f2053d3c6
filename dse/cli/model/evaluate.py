"""`dse evaluate [CONFIG.toml] [--model NAME] [--set KEY=VALUE ...] [--batch B]
[--trace PATH | --synthetic | --catalog-unions] [--seed N] [--steps S] [--json]`."""
from __future__ import annotations

import argparse
import sys

from dse.cli.run import _int_arg
from dse.pipeline.evaluate import evaluate
from dse.report import dumps, table
from dse.spec import DesignPoint

# Metric groups of the readable table, in reading order (other metrics follow under "more").
GROUPS = {
    "feasibility": ["feasible", "infeasible_reason", "comm_ok", "comm_violation"],
    "mapping": ["dies", "dies_packing_rule", "tp_degree", "chunk_columns", "chunks_per_unit", "d_used_columns",
                "array_utilization", "cores_per_die", "core_grid"],
    "hierarchy": ["unit_read_gbps", "unit_gflops", "core_read_gbps", "die_capacity_mib", "die_read_gbps",
                  "die_gflops", "pool_pflops", "pool_read_tbps", "balance_flop_per_byte", "roofline_cap"],
    "routing": ["union_experts", "union_source", "ideal_mfu", "occupancy", "actual_mfu", "rounds", "jobs_per_layer",
                "multicast_streams_mean", "multicast_streams_p99", "multicast_streams_peak",
                "readouts_per_layer_pooled", "readouts_per_layer_unpooled", "no_pooling_weight_mb_per_token"],
    "latency": ["t_layer_us", "ffn_latency_us_per_token", "read_bound", "delivered_pflops",
                "ffn_us_per_token_delivered", "delivered_tokens_per_s", "ffn_us_per_token_scheduled",
                "scheduled_tokens_per_s", "ffn_step_us_scheduled", "scheduled_round_stretch", "scheduled_mfu",
                "h20_us_per_token", "speedup_vs_h20", "h100_us_per_token", "speedup_vs_h100"],
    "energy": ["weight_mb_per_token", "weight_energy_uj_per_token", "h20_weight_energy_uj_per_token"],
    "serving": ["t_attn_us", "tpot_af_us", "tpot_gpu_only_us", "af_gain"],
    "communication": ["unit_io_gbps", "core_mesh_p99_gbps", "core_mesh_provision_gbps", "die_noc_busiest_link_gbps",
                      "die_noc_provision_gbps", "d2d_demand_gbps_per_die", "d2d_provision_gbps_per_die",
                      "node_demand_gbps", "node_provision_gbps", "round_stretch", "effective_mfu"],
    "area / power": ["die_area_mm2", "die_area_budget_mm2", "network_area_mm2", "mm2_per_occupancy", "die_power_w",
                     "pool_power_w"],
    "cost": ["die_cost_usd", "pool_cost_usd", "usd_per_mtok", "usd_per_mtok_delivered", "usd_per_mtok_scheduled",
             "h20_usd_per_mtok",
             "h100_usd_per_mtok"],
}


def add_point_args(p: argparse.ArgumentParser) -> None:
    """Arguments shared by every command that builds one design point."""
    p.add_argument("config", nargs="?", help="design TOML ([hardware] / [workload] / [mapping] or flat keys)")
    p.add_argument("--model", help="catalog model (see `dse models`)")
    p.add_argument("--batch", help="decode run-batch B")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a knob (repeatable), e.g. --set core_side=6 --set array_depth=16K")


def add_trace_args(p: argparse.ArgumentParser) -> None:
    """Routing-trace arguments (``trace``, ``trace_seed``, ``trace_steps`` knobs)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--trace", metavar="PATH",
                   help="routing trace (.npz from `dse trace convert`) or an unconverted router dump; model and "
                        "batch default to the trace's (without a CONFIG)")
    g.add_argument("--synthetic", action="store_true",
                   help="seeded synthetic trace of the model (the default), see --seed / --steps")
    g.add_argument("--catalog-unions", action="store_true",
                   help="no trace: closed-form U(B) from the catalog, no scheduling (trace = 'catalog')")
    p.add_argument("--seed", help="seed of the synthetic trace (trace_seed)")
    p.add_argument("--steps", help="decode steps of the synthetic trace (trace_steps)")


# Flags that set one knob each, checked under their own name (an error names --model, not --set).
KNOB_FLAGS = (("model", "model"), ("batch", "batch"), ("seed", "trace_seed"), ("steps", "trace_steps"))


def point_from_args(args: argparse.Namespace) -> DesignPoint:
    from dse.spec import BY_NAME, coerce
    overrides = list(args.overrides)
    for flag, knob in KNOB_FLAGS:
        value = getattr(args, flag, None)
        if value is not None:
            coerce(BY_NAME[knob], value, f"--{flag}", knob)
            overrides.append(f"{knob}={value}")
    trace = getattr(args, "trace", None)
    if trace:
        overrides.append(f"trace={trace}")
        if not args.config:  # model and batch follow the trace unless given
            from dse.workload.load import peek_meta
            meta = peek_meta(trace, args.model)
            if not args.model:
                overrides.append(f"model={meta.model}")
            if not args.batch:
                overrides.append(f"batch={meta.batch}")
    if getattr(args, "synthetic", False):
        overrides.append("trace=synthetic")
    if getattr(args, "catalog_unions", False):
        overrides.append("trace=catalog")
    if args.config:
        from dse.cli.filekind import refuse
        refuse(args.config, expected="design", command="evaluate")
        return DesignPoint.from_file(args.config, overrides=overrides)
    return DesignPoint.from_dict({}, overrides=overrides)


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate one design point (table or --json)",
                       description="Evaluate one design point: every closed-form metric "
                                   "(defaults: the published design on qwen3.5-35b-a3b).")
    add_point_args(p)
    add_trace_args(p)
    p.add_argument("--json", action="store_true", help="one flat JSON object (knobs + metrics)")
    p.add_argument("--uncertainty", type=int, default=0, metavar="N",
                   help="also draw the model's unknowns (dse/data/model_uncertainty.toml) N times by a seeded "
                        "Latin hypercube (--uncertainty-seed) and report p5 / p50 / p95 of every numeric metric "
                        "(JSON: \"uncertainty\": {metric: {p5, p50, p95}})")
    p.add_argument("--uncertainty-seed", type=int, default=0, metavar="S", help="seed of the draws (default 0)")
    p.add_argument("--jobs", "-j", type=_int_arg, default=1, metavar="N",
                   help="worker processes for --uncertainty's draws of a synthetic-trace design (default 1; each "
                        "draw generates its own trace)")
    p.set_defaults(func=run)



def windows_note(point, m: dict) -> str | None:
    """One line when a trace file's windows are not the requested ones (a short or one-step trace):
    the steps measured, and where placement was profiled."""
    if point.trace in ("catalog", "synthetic") or m.get("trace_steps_measured") is None:
        return None
    used, prof, where = m["trace_steps_measured"], m.get("profile_steps_used"), m.get("profile_window")
    if prof == point.profile_steps and where == "trace prefix":
        return None
    return (f"trace {point.trace}: measured {used} step{'s' * (used != 1)}; placement profiled on {prof} "
            f"step{'s' * (prof != 1)} ({where}) instead of the {point.profile_steps} requested (profile_steps; "
            f"a file trace is split into at most half profiling, half measured)")


def run(args: argparse.Namespace) -> int:
    point = point_from_args(args)
    if args.uncertainty < 0 or args.jobs < 1:
        from dse.errors import ConfigError
        bad = f"--uncertainty {args.uncertainty}: must be a whole number of draws >= 0" if args.uncertainty < 0 \
            else f"--jobs {args.jobs}: must be a whole number of worker processes >= 1"
        raise ConfigError(bad)
    result = evaluate(point)
    note = windows_note(point, result.metrics)
    if note:
        print(f"dse: warning: {note}", file=sys.stderr)
    bands = None
    if args.uncertainty:
        from dse.pipeline.uncertainty import point_bands
        from dse.search.execute.pool import run_many, workload_key
        bands = point_bands(point, args.uncertainty, args.uncertainty_seed, run_many(args.jobs, workload_key))
    if args.json:
        out = result.to_json()
        if bands is not None:
            out["uncertainty"] = bands
        print(dumps(out))
        return 0
    m = result.metrics
    print(f"design: model={point.model} B={point.run_batch} core_side={point.core_side} "
          f"tile_width={point.tile_width} array_depth={point.array_depth} "
          f"groups={point.groups} pooling={point.pooling} trace={point.trace}")
    shown: set[str] = set()
    rows = []
    for group, keys in GROUPS.items():
        for k in keys:
            if k in m:
                rows.append((group, k, m[k]))
                shown.add(k)
    for k, v in m.items():
        if k not in shown and k not in ("model", "batch"):
            rows.append(("more", k, v))
    if bands is None:
        print(table(rows, ["group", "metric", "value"], align="llr"))
    else:
        print(table([(g, k, v, *(bands.get(k, {}).get(q) for q in ("p5", "p50", "p95"))) for g, k, v in rows],
                    ["group", "metric", "value", "p5", "p50", "p95"], align="llrrrr"))
        print(f"\np5 / p50 / p95 over {args.uncertainty} draws of the model's unknowns "
              f"(dse/data/model_uncertainty.toml)")
    note = comm_note(m)
    if note:
        print(note)
    return 0


def comm_note(m: dict) -> str | None:
    """One line when the design maps and fits its die (``feasible``) but a communication level is
    over its provision: a study whose constraints hold ``comm_violation <= 0`` rejects it."""
    if m.get("feasible") and m.get("comm_ok") is False:
        from dse.pipeline.stages.network import LEVELS
        over = [lvl for lvl in LEVELS if m.get(f"{lvl}_over")]
        return (f"note: feasible means the design maps and fits its die; its communication is over the "
                f"provision ({', '.join(over) or 'comm_ok no'}: comm_violation {m.get('comm_violation', 0):.4g} > 0), "
                f"which a study's `comm_violation <= 0` constraint rejects")
    return None
