"""`dse trace convert | stats | synth`: routing traces (format: dse/workload/trace.py)."""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from dse.errors import ConfigError
from dse.report import dumps, table

PER_STEP_ROWS = 64


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer >= 1") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer >= 1")
    return v


def _nonneg(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer >= 0") from None
    if not 0 <= v < 2 ** 32:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer in [0, 2^32)")
    return v


def register(sub) -> None:
    p = sub.add_parser("trace", help="routing traces: convert router dumps, statistics, synthetic traces",
                       description="Routing traces (.npz, format rexpert-trace/1) and router dumps "
                                   "(routes JSON or JSON lines).")
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION")
    tsub.required = True

    c = tsub.add_parser("convert", help="router dump(s) -> trace .npz",
                        description="Convert router dumps (routes JSON, JSON lines; several files are "
                                    "concatenated) into a validated trace, cutting tokens into decode steps.")
    c.add_argument("dumps", nargs="+", metavar="DUMP")
    c.add_argument("-o", "--output", required=True, metavar="TRACE.npz")
    _dump_args(c)
    c.set_defaults(func=_convert)

    s = tsub.add_parser("stats", help="routing statistics of a trace or dump (per layer, per step, averaged)")
    s.add_argument("trace", metavar="TRACE", help="trace .npz or router dump")
    _dump_args(s)
    s.add_argument("--json", action="store_true", help="one JSON object (models.toml key names)")
    s.add_argument("--no-coactivation", action="store_true", help="skip the pairwise co-activation summary")
    s.epilog = ("With --model, the averaged statistics are printed beside the catalog's routing targets of "
                "that model (achieved / target / ratio), as `dse trace synth` does.")
    s.set_defaults(func=_stats)

    g = tsub.add_parser("synth", help="seeded synthetic trace calibrated to a catalog model",
                        description="Generate a synthetic trace and print its statistics beside the catalog's "
                                    "targets (achieved / target / ratio).")
    g.add_argument("--model", default="qwen3.5-35b-a3b", help="catalog model (default qwen3.5-35b-a3b)")
    g.add_argument("--batch", type=_positive, help="run-batch B (default: the model's native batch)")
    g.add_argument("--steps", type=_positive, default=64, help="decode steps (default 64)")
    g.add_argument("--seed", type=_nonneg, default=0)
    g.add_argument("--profile", help="measured routing profile (popularity + co-activation); "
                                     "'none' for the calibrated parametric model. Default: the model's own")
    g.add_argument("-o", "--output", metavar="TRACE.npz", help="write the trace")
    g.add_argument("--json", action="store_true")
    g.add_argument("--calibrate", action="store_true",
                   help="fit the generator to the model's catalog statistics and print a synth.toml entry")
    g.set_defaults(func=_synth)


def _dump_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="catalog model (default: inferred from the dump's shape / the trace)")
    p.add_argument("--batch", type=_positive, help="decode run-batch B for cutting tokens into steps")
    p.add_argument("--phase", choices=("decode", "prefill", "all"), default="decode",
                   help="which dump records to keep (default decode)")


def _open(args):
    """(meta, chunk iterator factory) of a trace or dump, streaming archives."""
    from dse.workload.trace import TraceFile, check_model, is_dump, regroup
    path = Path(args.trace)
    if is_dump(path):
        from dse.workload.convert import convert
        tr = convert([path], model=args.model, batch=args.batch, phase=args.phase)
        return tr.meta, lambda: tr.chunks(16)
    tf = TraceFile(path)
    check_model(tf.meta, args.model)
    if args.batch and args.batch != tf.meta.batch:
        tr = regroup(tf.load(), args.batch)
        return tr.meta, lambda: tr.chunks(16)
    return tf.meta, lambda: tf.chunks(16)


def _convert(args) -> int:
    from dse.spec.params import BY_NAME
    from dse.workload.convert import convert_report, warnings
    from dse.workload.trace import save_trace
    _check_convert_paths(args.dumps, args.output)
    conv = convert_report(args.dumps, model=args.model, batch=args.batch, phase=args.phase)
    tr = conv.trace
    out = save_trace(tr, args.output)
    m = tr.meta
    print(f"wrote {out}: model {m.model}, {m.steps} steps x {m.layers} layers x B={m.batch} x top-{m.top_k} "
          f"({m.source})")
    for w in warnings(conv, int(BY_NAME["profile_steps"].default), int(BY_NAME["trace_steps"].default)):
        print(f"dse: warning: {w}", file=sys.stderr)
    return 0


def _check_convert_paths(dumps: list[str], output: str) -> None:
    """Refuse a dump given twice (its tokens would count twice) and an output that is one of the
    dumps (it would be overwritten)."""
    import os

    from dse.errors import TraceError
    seen: dict[str, str] = {}
    for d in dumps:
        key = os.path.realpath(d)
        if key in seen:
            raise TraceError(f"{d}: given twice (as {seen[key]!r}); list each router dump once")
        seen[key] = d
    if os.path.realpath(output) in seen:
        raise TraceError(f"-o {output}: is one of the input dumps; write the trace to another file")


def _stats(args) -> int:
    from dse.workload.stats import accumulate
    meta, chunks = _open(args)
    acc = accumulate(meta, chunks(), coactivation=not args.no_coactivation)
    summ = acc.summary()
    pl, ps = acc.per_layer(), acc.per_step()
    targets = _targets(args.model, meta.batch) if args.model else None
    if args.json:
        summ["per_layer"] = {k: [float(x) for x in v] for k, v in pl.items()}
        summ["per_step"] = {k: [float(x) for x in v] for k, v in ps.items()}
        if targets is not None:
            summ["targets"] = targets
        print(dumps(summ))
        return 0
    print(f"trace: model {meta.model}, {meta.steps} steps x {meta.layers} layers x B={meta.batch}, top-{meta.top_k} "
          f"of {meta.n_experts} experts ({meta.source})")
    print("\nper layer (statistics over the trace's steps):")
    rows = [(layer, pl["gini"][layer], pl["hottest_over_mean"][layer], pl["top8_slot_share"][layer],
             pl["top16_slot_share"][layer], pl["hot_set_persistence"][layer], pl["union"][layer])
            for layer in range(meta.layers)]
    print(table(rows, ["layer", "gini", "hottest/mean", "top8 share", "top16 share", "persistence",
                       f"U({meta.batch})"]))
    print("\nper step (averaged over layers):")
    n = min(meta.steps, PER_STEP_ROWS)
    rows = [(s, ps["hottest_over_mean"][s], ps["union"][s], ps["jobs_w4"][s]) for s in range(n)]
    print(table(rows, ["step", "hottest/mean", f"U({meta.batch})", "jobs (w=4)"]))
    if meta.steps > n:
        print(f"({meta.steps - n} more steps; --json lists all)")
    if targets is None:
        print("\naveraged:")
        print(table(_summary_rows(summ, None), ["statistic", "value", "uniform"]))
        return 0
    print(f"\naveraged, against the catalog's targets of {args.model}:")
    if not targets:
        print("(no routing statistics for this model in the catalog and no measured profile: nothing to compare with)")
    print(table(_summary_rows(summ, targets), ["statistic", "achieved", "target", "ratio"]))
    return 0


def _targets(model_name: str, batch: int) -> dict:
    """The catalog's routing targets of a model (its measured profile's, when it has none)."""
    from dse.catalog import get_model
    from dse.workload import synth
    return synth.targets(get_model(model_name), batch)


def _summary_rows(summ: dict, targets: dict | None):
    keys = [("gini", None), ("hottest_over_mean", None), ("global_peak_hottest_over_mean", None),
            ("hottest_tokens_per_step", None), ("top8_slot_share", summ.get("top8_uniform")),
            ("top16_slot_share", summ.get("top16_uniform")), ("hot_set_persistence", None),
            ("union_sliced_b8", None), ("jobs_per_layer_b64", None), ("jobs_per_layer_w4", None)]
    rows = []
    for k, uni in keys:
        if k not in summ:
            continue
        if targets is None:
            rows.append((k, summ[k], uni))
        else:
            t = targets.get(k)
            rows.append((k, summ[k], t, None if t is None else f"{summ[k] / t:.3f}"))
    for b, u in summ.get("union", {}).items():
        key = f"union_{b}"
        if targets is None:
            rows.append((f"union[{b}]", u, None))
        else:
            t = targets.get(key)
            rows.append((f"union[{b}]", u, t, None if t is None else f"{u / t:.3f}"))
    co = summ.get("coactivation")
    if co:
        for k, v in co.items():
            rows.append((f"coactivation.{k}", v, None) if targets is None else (f"coactivation.{k}", v, None, None))
    return rows


def _synth(args) -> int:
    from dse.catalog import get_model
    from dse.workload import synth
    from dse.workload.stats import trace_stats
    model = get_model(args.model)
    B = args.batch or model.native_batch
    if args.calibrate:
        best, ach, ls = synth.calibrate(model, batch=B, steps=args.steps, seed=args.seed,
                                        log=lambda msg: print(msg, file=sys.stderr))
        print(synth.calibration_toml(model, B, args.steps, args.seed, best, ach, ls))
        return 0
    if args.profile == "none":
        profile = None
    elif args.profile:
        from dse.workload import profiles
        if args.profile not in profiles.names():
            raise ConfigError(f"--profile {args.profile!r}: not shipped (allowed: none, {', '.join(profiles.names())})")
        profile = args.profile
    else:
        profile = synth.default_profile(model)
    params, origin = synth.params_for(model.name)
    tr = synth.generate(model, B, args.steps, args.seed, params, profile)
    if args.output:
        from dse.workload.trace import save_trace
        save_trace(tr, args.output)
    summ = trace_stats(tr)
    targets = synth.targets(model, B)
    if args.json:
        summ["targets"] = targets
        summ["params"] = asdict(params)
        summ["params_from"] = origin
        print(dumps(summ))
        return 0
    print(f"synthetic trace: model {model.name}, {args.steps} steps x {model.moe_layers} layers x B={B}, "
          f"seed {args.seed}, profile {profile or 'none'}, parameters of {origin}"
          + (f"; wrote {args.output}" if args.output else ""))
    if not targets:
        print("(no routing statistics for this model in the catalog and no measured profile: nothing to compare with)")
    elif not (model.routing or {}).get("gini"):
        print(f"(targets: aggregate statistics of the measured profile {profile}; U(B) assumes independent tokens)")
    print(table(_summary_rows(summ, targets), ["statistic", "achieved", "target", "ratio"]))
    return 0
