"""`dse front STUDY.toml [--csv | --json] [--all] [--columns ...] [--sort ...] [--robust N ...] [--reference R]`:
the feasible Pareto front with the knee marked, hypervolume on a stated reference point."""
from __future__ import annotations

import argparse
import csv
import io
import sys
import textwrap

from dse.cli.run import MODEL_HELP, SEED_HELP, _int_arg, study_from_args, wall_lines
from dse.cli.run import add_study_args as _study_args
from dse.errors import ConfigError
from dse.report import dumps, fit_columns, fmt, table, terminal_width


def register(sub) -> None:
    p = sub.add_parser("front", help="print a study's feasible Pareto front with the knee marked",
                       description="The feasible Pareto front of a study (distinct designs), its knee "
                                   "(marked *) and its hypervolume on a stated reference point. --robust N "
                                   "re-evaluates the designs around the front under N other trace seeds and "
                                   "reports how often each is the knee.")
    add_study_args(p, pooled=True)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--csv", action="store_true", help="CSV: trial, knee, params, objectives (every column)")
    g.add_argument("--json", action="store_true", help="JSON object with front, knee, hypervolume")
    p.add_argument("--all", action="store_true", help="list every finished trial (with its infeasibility reason)")
    p.add_argument("--columns", metavar="A,B,...",
                   help="columns to show: knob, objective or metric names (default: objectives, then the "
                        "knobs that vary, as many as fit the terminal)")
    p.add_argument("--sort", metavar="NAME", help="sort rows by this column (--sort=-NAME: descending; "
                                                  "default: the first objective, best first)")
    p.add_argument("--reference", metavar="published|DESIGN.toml",
                   help="also place this design against the front: 'published' (the spec's default design) or a "
                        "design file as `dse export` writes it, evaluated as the study evaluates a trial: its "
                        "objectives, feasibility per model, the front designs dominating it, the additive epsilon "
                        "and the nearest front design (docs/guide/fronts.md)")
    p.add_argument("--candidates", type=_int_arg, default=3, metavar="N",
                   help="knee candidates to show: the top N local knees, one per architecture (default 3)")
    r = p.add_argument_group("knee confidence")
    r.add_argument("--robust", type=_int_arg, metavar="N",
                   help="re-evaluate the designs around the front under N other synthetic-trace seeds")
    r.add_argument("--seeds", metavar="S,S,...", help="these trace seeds instead of N others")
    r.add_argument("--models", metavar="M,M,...", help="these catalog models instead of trace seeds")
    r.add_argument("--trace", metavar="FILE", help="this trace file instead of trace seeds")
    r.add_argument("--jobs", "-j", type=_int_arg, default=1, help="worker processes for --robust (default 1)")
    r.add_argument("--model-uncertainty", type=_int_arg, metavar="N",
                   help="with --robust: re-evaluate under N draws of the model's unknowns (dse/data/"
                        "model_uncertainty.toml) instead of trace seeds: how often each design stays on the "
                        "front and is the knee")
    p.set_defaults(func=run)


def add_study_args(p: argparse.ArgumentParser, pooled: bool = False) -> None:
    """The study arguments; ``pooled``: ``--storage`` repeatable (several runs of one study)."""
    if not pooled:
        _study_args(p)
        return
    p.add_argument("study", help="study TOML (studies/*.toml)")
    p.add_argument("--storage", metavar="URL", action="append",
                   help="optuna storage URL (default: $DSE_STORAGE, else SQLite under results/ beside the study "
                        "file); repeat it to pool the runs of the study in several storages into one front and one "
                        "knee")
    p.add_argument("--model", metavar="NAME", help=MODEL_HELP)
    p.add_argument("--seed", type=_int_arg, metavar="S", help=SEED_HELP)


def load(args: argparse.Namespace):
    """``(cfg, results, agreement)``: one run, or with several ``--storage`` every run of the study
    in them pooled (``dse.search.review.merge``; ``agreement`` None for one storage)."""
    from dataclasses import replace

    from dse.cli.credentials import storage_url
    from dse.search.study.results import load_results
    urls = args.storage or [u for u in [storage_url(None)] if u]
    args.storage = urls[0] if len(urls) == 1 else None
    check_candidates(getattr(args, "candidates", 3))
    cfg = study_from_args(args)
    if len(urls) <= 1:
        return cfg, load_results(cfg), None
    from dse.search.review import merge
    runs = merge.runs_in(cfg, urls)
    res, origin = merge.pool(runs)
    res = replace(res, cfg=replace(res.cfg, storage=urls[0]))
    agree = merge.agreement(runs, res)
    agree["origin"] = {str(k): list(v) for k, v in origin.items()}
    return cfg, res, agree


def run(args: argparse.Namespace) -> int:
    from dse.search.front.walls import study_walls
    from dse.search.review import quality
    cfg, res, agree = load(args)
    if agree is not None and (args.robust is not None or args.seeds or args.models or args.trace):
        raise ConfigError("--robust, --seeds, --models, --trace: re-evaluate one run (one --storage), not pooled runs")
    front, knee = res.front(), res.knee()
    _, kc = quality.knee_candidates(res)
    ref = quality.study_reference(res)
    hv = quality.hypervolume_on(res, front, ref)
    if args.csv and args.reference:
        raise ConfigError("--reference: with the table or --json, not --csv (the CSV has one row per trial)")
    robust = _robust(args, res)
    reference = reference_of(res, args.reference)
    moved = quality.knee_settledness(res)          # the one verdict on the knee (a run's or a pool's)
    shown = res.complete if args.all else front
    if args.json:
        out = {
            "study": cfg.name,
            "objectives": [{"name": o.name, "metric": o.metric, "direction": o.direction, "aggregate": o.aggregate}
                           for o in cfg.objectives.objectives],
            "constraints": [c.name for c in cfg.objectives.constraints],
            "workloads": list(cfg.models),
            "n_trials": len(res.complete),
            "n_feasible": sum(r.feasible for r in res.complete),
            "hypervolume": hv,
            "hypervolume_reference": dict(zip(cfg.objectives.names, ref.values)),
            "hypervolume_reference_source": ref.source,
            "knee_settled": moved["settled"], "knee_verdict": moved["verdict"],
            "knee_settled_reason": moved["reason"],
            "front": [res.to_json(r) for r in front],
            "knee": res.to_json(knee) if knee is not None else None,
            "knee_candidates": quality.candidates_json(res, front, kc, args.candidates),
            "at_bounds": [w.to_json() for w in study_walls(res, front)],
            **({"runs": agree["runs"], "knee_agreement": {k: v for k, v in agree.items() if k != "origin"},
                "pooled_trials": {str(r.number): agree["origin"][str(r.number)] for r in front}}
               if agree is not None else {}),
            **({"trials": [res.to_json(r) for r in shown]} if args.all else {}),
        }
        if reference is not None:
            out["reference"] = reference
        if robust is not None:
            out["robust"] = robust.to_json(res)
            out["knee_frequency"] = {str(k): v for k, v in robust.frequency().items()}
        print(dumps(out))
        return 0
    headers, rows = _rows(args, res, shown, front, knee)
    if args.csv:
        w = csv.writer(buf := io.StringIO(), lineterminator="\n")
        w.writerow(headers)
        for row in rows:
            w.writerow(["" if v is None else v for v in row])
        print(buf.getvalue(), end="")
        return 0
    _print_text(args, res, headers, rows, front, knee, hv, ref, moved, robust)
    _print_candidates(args, res, front, kc, agree)
    if reference is not None:
        from dse.search.review.reference import describe
        print("\n".join(describe(res, reference)))
    return 0


def reference_of(res, spec: str | None):
    """``--reference``: the design placed against the front (``reference_json``), or None."""
    if not spec:
        return None
    from dse.search.review import reference as rf
    ep = rf.reference_endpoint(res.cfg, spec)
    return rf.reference_json(res, ep, rf.evaluate_as_study(res.cfg, ep.design))


def settle_hint(ref_args: str, finished: int) -> str:
    """What to do when the knee is not settled: twice the trials (on the catalog study that refined the
    knee on 15 of 20 seeds: benchmarks/HISTORY.md), or several seeds pooled."""
    return (f"to settle the knee: run more trials (`dse run {ref_args} --trials {2 * max(1, finished)}` resumes it "
            f"to twice the trials it has) or pool several seeds (`dse front ... --storage S1 --storage S2`)")


def check_candidates(n: int) -> None:
    """``--candidates N``: a positive count (``dse front`` and ``dse report``)."""
    if n < 1:
        raise ConfigError(f"--candidates {n}: must be a positive number of knee candidates")


def _print_candidates(args, res, front, kc, agree) -> None:
    """The top knee candidates and, for pooled runs, the knee agreement."""
    import textwrap

    from dse.search.review import merge, quality
    if front:
        print(textwrap.fill(f"knee candidates (top {min(args.candidates, len(kc.candidates))} of {len(kc.candidates)} "
                            f"local knees, one per architecture: {', '.join(kc.keys)}; "
                            f"{quality.utility_words(kc)}):", terminal_width()))
        for line in quality.describe_candidates(res, front, kc, args.candidates):
            print(textwrap.fill(line, terminal_width(), initial_indent="  ", subsequent_indent="     "))
        archs = quality.architectures(res, kc, args.candidates)
        if archs:
            print(textwrap.fill(quality.describe_architectures(archs), terminal_width(), subsequent_indent="  "))
    if agree is not None:
        print(f"pooled {len(agree['runs'])} runs: {', '.join(agree['runs'])} (trials renumbered in run order; "
              f"--json gives each front design's run and trial)")
        print("\n".join(merge.describe(agree)))


def _robust(args: argparse.Namespace, res):
    if args.robust is None and not (args.seeds or args.models or args.trace or args.model_uncertainty):
        return None
    from dse.search.execute.pool import run_many, workload_key
    from dse.search.execute.runner import evaluate_design
    from dse.search.front import robust as rb
    if args.model_uncertainty:
        from dse.search.front import model_uncertainty as mu
        if not res.candidates():
            raise ConfigError(f"{res.cfg.source}: no feasible design to re-evaluate")
        return mu.model_uncertainty_knees(res, args.model_uncertainty, evaluate_design,
                                          run_many=run_many(args.jobs, workload_key))
    if args.models:
        variants = rb.model_variants(_names(args.models, "--models", res))
    elif args.trace:
        variants = rb.trace_variant(args.trace)
    else:
        seeds = None
        if args.seeds:
            try:
                seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
            except ValueError:
                raise ConfigError(f"--seeds {args.seeds!r}: must be comma-separated integers") from None
        n = args.robust or 0
        if seeds is None and n < 1:
            raise ConfigError(f"--robust {args.robust}: must be a positive number of trace seeds")
        variants = rb.seed_variants(res.cfg, n, seeds)
    if not res.candidates():
        raise ConfigError(f"{res.cfg.source}: no feasible design to re-evaluate")
    return rb.robust_knees(res, variants, evaluate_design, run_many=run_many(args.jobs, workload_key))


def _names(text: str, flag: str, res) -> list[str]:
    from dse.spec.params import BY_NAME, coerce
    return [coerce(BY_NAME["model"], s.strip(), flag, "model") for s in text.split(",") if s.strip()]


def check_columns(res, shown, cols, sort: str | None) -> None:
    """Refuse a ``--columns`` or ``--sort`` name that is no objective, knob or metric of the study
    (nothing to check when no trial is shown)."""
    cfg = res.cfg
    known = set(cfg.objectives.names) | set(cfg.space.searched_names) | {k for r in shown for k in r.design} | \
        {k for r in shown for k in r.metrics.get(cfg.models[0], {})}
    named = [("--columns", c) for c in cols or ()] + ([("--sort", sort.removeprefix("-"))] if sort else [])
    for opt, c in named:
        if c not in known and shown:
            raise ConfigError(f"{opt} {c!r}: not an objective, knob or metric of this study{_closest(cfg, c, known)}")


def _closest(cfg, name: str, known: set[str]) -> str:
    """The study's own names first (an objective or searched knob that contains ``name``, or is
    close to it), then any metric; else where the names are listed."""
    from dse.errors import suggest
    own = list(cfg.objectives.names) + list(cfg.space.searched_names)
    holding = [k for k in own if name.lower() in k.lower()]
    if holding:
        return f"; did you mean {holding[0]!r}?"
    hint = suggest(name, own) or suggest(name, known)
    return hint or (f"; the objectives are {', '.join(cfg.objectives.names)}, the knobs those of `dse params`, "
                    f"the metrics those of `dse evaluate --json`")


def _rows(args, res, shown, front, knee):
    """Headers and rows (sorted) of the table: trial, knee, [status], then the chosen columns."""
    cfg = res.cfg
    onames = cfg.objectives.names
    pnames = cfg.space.searched_names
    if args.columns:
        cols = [c.strip() for c in args.columns.split(",") if c.strip()]
    else:
        varying = [k for k in pnames if len({repr(r.params.get(k)) for r in shown}) > 1]
        cols = onames + varying + [k for k in pnames if k not in varying]
    front_ids = {r.number for r in front}

    def value(r, c):
        if c in onames:
            return res.objective_values(r)[c]
        if c in r.params:
            return r.params[c]
        if c in r.design:
            return r.design[c]
        return r.metrics.get(cfg.models[0], {}).get(c)

    check_columns(res, shown, cols, args.sort)
    rows = []
    ordered = shown if args.csv and not args.sort else _sorted(args, res, shown, value)  # CSV: trial order
    for r in ordered:
        row = [r.number, "*" if knee is not None and r.number == knee.number else ""]
        if args.all:
            row.append("front" if r.number in front_ids else ("yes" if r.feasible else "no"))
        rows.append(row + [value(r, c) for c in cols] + ([r.reason or r.error] if args.all else []))
    headers = ["trial", "knee"] + (["feasible"] if args.all else []) + cols + (["reason"] if args.all else [])
    return headers, rows


def _sorted(args, res, recs, value):
    objs = res.cfg.objectives.objectives
    key, desc = (args.sort or objs[0].name), False
    if args.sort and key.startswith("-"):
        key, desc = key[1:], True
    elif not args.sort and objs[0].direction == "maximize":
        desc = True

    def k(r):
        v = value(r, key)
        missing = v is None or (isinstance(v, float) and v != v)
        return (missing, (str(v) if not isinstance(v, (int, float)) else 0), v if isinstance(v, (int, float)) else 0)
    out = sorted(recs, key=k, reverse=desc)
    if desc:  # keep missing values last
        out = [r for r in out if k(r)[0] is False] + [r for r in out if k(r)[0] is True]
    return out


def distinct_columns(rows: list[list], which: list[bool], most: int = 8) -> list[list]:
    """``rows`` with each column of ``which`` formatted (``fmt``) with the fewest significant digits,
    4 to ``most``, that print its distinct values distinctly: two front designs at 4.59378 and
    4.59418 both read 4.594, and one looked dominated by the other."""
    out = [list(r) for r in rows]
    for j, on in enumerate(which):
        vals = {r[j] for r in rows if isinstance(r[j], float)}
        if not on or len(vals) < 2:
            continue
        digits = next((d for d in range(4, most + 1) if len({fmt(v, d) for v in vals}) == len(vals)), most)
        if digits > 4:
            for r in out:
                r[j] = fmt(r[j], digits) if isinstance(r[j], float) else r[j]
    return out


def _print_text(args, res, headers, rows, front, knee, hv, ref, moved, robust) -> None:
    from dse.search.front.walls import study_walls
    cfg = res.cfg
    n_feas = sum(r.feasible for r in res.complete)
    print(f"study {cfg.name}: {len(res.complete)} finished trials, {n_feas} feasible, front {len(front)} designs, "
          f"hypervolume {fmt(hv)}")
    print(f"hypervolume reference: {ref.describe(cfg.objectives.names)}")
    print("objectives: " + ", ".join(f"{o.name} ({o.direction})" for o in cfg.objectives.objectives)
          + (f"; constraints: {', '.join(c.name for c in cfg.objectives.constraints)}"
             if cfg.objectives.constraints else ""))
    if not rows:
        print("no feasible design yet")
        return
    width = terminal_width()
    body = headers[:-1] if args.all else headers          # --all: the reason column always comes last
    fixed = 2 + bool(args.all) + len(cfg.objectives.names)
    n = len(body) if args.columns else fit_columns(rows, body, width - (40 if args.all else 0), fixed)
    cols = list(range(n)) + ([len(headers) - 1] if args.all else [])
    hs = [headers[i] for i in cols]
    align = "".join("l" if h in ("knee", "feasible", "reason") else "r" for h in hs)
    shown = distinct_columns([[r[i] for i in cols] for r in rows], [h in cfg.objectives.names for h in hs])
    print(table(shown, hs, align=align, max_width=width if args.all else None))
    if n < len(body):
        print(f"({len(body) - n} more columns: {', '.join(body[n:])}; choose with --columns, all with --csv)")
    ref_args = cfg.command_args()
    if knee is not None:
        print(f"* knee: trial {knee.number} (the top knee candidate below: the best local maximum of the "
              f"knee score inside the front; export with `dse export {ref_args} --knee -o design.toml`)")
    for line in wall_lines(study_walls(res, front), len(front)):
        print(textwrap.fill(line, width=width, subsequent_indent="  "))
    if moved["verdict"] == "not settled":      # the verdict itself is the last line of the candidates
        print(settle_hint(ref_args, len(res.complete)), file=sys.stderr)
    if robust is not None:
        _print_robust(res, robust)


def _print_robust(res, robust) -> None:
    freq = robust.frequency()
    print(f"\nknee frequency over {len(robust.variants)} re-evaluations ({robust.variants[0].label}, ...) of "
          f"{len(robust.designs)} designs:")
    rows = [(r.number, fmt(freq[r.number]), robust.counts.get(r.number, 0),
             ", ".join(f"{k}={fmt(v)}" for k, v in r.params.items()))
            for r in sorted(robust.designs, key=lambda r: (-freq[r.number], r.number)) if freq[r.number] > 0]
    none = sum(k is None for k in robust.knees)
    print(table(rows, ["trial", "frequency", "knees", "params"], align="rrrl", max_width=terminal_width()))
    if none:
        print(f"({none} re-evaluations had no feasible design)")
