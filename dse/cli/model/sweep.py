"""`dse sweep PARAM [VALUES...] [--model M ...] [--set K=V ...] [--csv F] [--plot F.png] [--json]`.

PARAM is a knob (see `dse params`) or a preset: `depth` (array depth on the reference catalog
models) or `side` (core side on the default model, trace-driven). The physics and the knee rules
are in `dse.pipeline.sweep`; the figures in `dse.viz.sweep_plots`.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

from dse.errors import ConfigError, suggest
from dse.report import dumps, table


def register(sub) -> None:
    p = sub.add_parser(
        "sweep", help="sweep one knob (or the presets `depth`, `side`): table, CSV, figure",
        description="Evaluate a design with one knob swept over VALUES, per model. Presets: "
                    "`dse sweep depth` (array depth 8K..64K on the three reference models: layer time, TP, "
                    "dies, D2D vs provision; the feasible knee) and `dse sweep side` (core side 2..8 on the "
                    "default model, or each --model, with trace-driven scheduling at the native batch: the "
                    "Table X cascade -- ideal MFU, broadcast and direct occupancy, actual MFU, round stretch, "
                    "effective MFU -- and network mm2; the knee).")
    p.add_argument("param", help="knob name or preset (depth, side)")
    p.add_argument("values", nargs="*", help="values (default: the preset's); e.g. 16K 32K")
    p.add_argument("--model", action="append", default=[], help="catalog model (repeatable; default: the preset's "
                                                                 "models, else the design's)")
    p.add_argument("--config", metavar="FILE", help="base design TOML")
    p.add_argument("--batch", help="decode run-batch B")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a knob of the base design (repeatable)")
    p.add_argument("--metrics", help="comma-separated metrics to show (default: the preset's)")
    p.add_argument("--csv", metavar="FILE", help="write every metric of every point as CSV")
    p.add_argument("--plot", metavar="FILE.png", help="write the sweep figure (png, svg or pdf)")
    p.add_argument("--json", action="store_true", help="print rows and knee as JSON instead of a table")
    p.set_defaults(func=run)


def _base(args: argparse.Namespace, preset_base: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Preset defaults, then the config file's explicit keys, then --batch."""
    from dse.spec import DesignPoint
    from dse.tomlfile import read_toml
    base = dict(preset_base)
    source = None
    if args.config:
        source = args.config
        raw = read_toml(Path(args.config), allow_empty=False)
        explicit = {k for sec in raw.values() if isinstance(sec, dict) for k in sec} | set(raw)
        point = DesignPoint.from_file(args.config)
        base.update({k: v for k, v in point.to_dict().items() if k in explicit or k not in preset_base})
    if args.batch:
        base["batch"] = args.batch
    return base, source


def _metrics(args: argparse.Namespace, default: tuple[str, ...], rows: list[dict[str, Any]]) -> list[str]:
    if not args.metrics:
        return list(default)
    names = [s.strip() for s in args.metrics.split(",") if s.strip()]
    known = set().union(*(r.keys() for r in rows)) if rows else set()
    bad = [n for n in names if n not in known]
    if bad:
        raise ConfigError(f"--metrics {bad[0]!r}: not a metric of these results (see `dse evaluate --json`)"
                          f"{suggest(bad[0], known)}")
    return names


def run(args: argparse.Namespace) -> int:
    from dse.pipeline import sweep as sw
    from dse.spec import BY_NAME
    if args.param not in sw.PRESETS and args.param not in BY_NAME:     # resolve's refusal, with a suggestion
        raise ConfigError(f"sweep PARAM {args.param!r}: must be a preset ({', '.join(sw.PRESETS)}) or a knob "
                          f"(see `dse params`){suggest(args.param, [*sw.PRESETS, *BY_NAME])}")
    param, values, preset = sw.resolve(args.param, args.values)
    base, source = _base(args, preset.base if preset else {})
    if args.model:
        models = args.model
    elif preset:
        models = list(preset.models)
    else:
        from dse.spec import DesignPoint
        models = [DesignPoint.from_dict(base, overrides=args.overrides, source=source).model]
    rows = sw.sweep(param, values, models, base, args.overrides, source)
    if preset is not None and preset.name == "side":
        direct = sw.sweep(param, values, models, base, [*args.overrides, "pooling=direct"], source)
        rows = sw.with_direct(rows, direct)
    shown = _metrics(args, preset.metrics if preset else sw.GENERIC_METRICS, rows)
    knee: dict[str, Any] = {}
    if param == "array_depth":
        knee = sw.depth_knee(rows, param)
    elif param == "core_side":
        knee = sw.side_knee(rows, param)

    if args.csv:
        _write_csv(args.csv, rows, ["model", param])
    if args.plot:
        from dse.viz.sweep_plots import plot_sweep
        try:
            plot_sweep(rows, param, args.plot, metrics=None if preset else shown)
        except OSError as exc:
            raise ConfigError(f"--plot {args.plot}: cannot write ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise ConfigError(f"--plot {args.plot}: {exc}") from None
    if args.json:
        print(dumps({"param": param, "rows": rows, "knee": knee}))
        return 0
    cols = ["model", param] + [k for k in shown if k not in ("model", param)]
    print(table([[r.get(c) for c in cols] for r in rows], cols, align="l" + "r" * (len(cols) - 1)))
    _print_knee(param, knee)
    return 0


def _write_csv(path: str, rows: list[dict[str, Any]], first: list[str]) -> None:
    cols = list(first)
    for r in rows:
        cols += [k for k in r if k not in cols]
    try:
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
    except OSError as exc:
        raise ConfigError(f"--csv {path}: cannot write ({exc.strerror or exc})") from None


def _print_knee(param: str, knee: dict[str, Any]) -> None:
    if param == "array_depth" and knee:
        print()
        print(table([[s[param], s["acceptable"], s["worst_t_layer_us"], s["total_dies"], s["why_not"]]
                     for s in knee["summary"]],
                    [param, "all models ok", "worst t_layer_us", "total dies", "why not"], align="rrrrl"))
        print(f"knee: {param} = {knee['knee']} (every model maps and stays within provision at every level; "
              f"smallest worst-case layer time, then fewest dies)" if knee["knee"] is not None
              else "knee: none (no depth is acceptable for every model)")
    elif param == "core_side" and knee:
        e, a = knee["max_effective_mfu"], knee["min_mm2_per_occupancy"]
        if e is None:
            print("knee: effective MFU needs trace-driven scheduling (--set trace=synthetic or a trace file)",
                  file=sys.stderr)
        else:
            print(f"knee: max effective MFU at core_side = {e}; min network mm2 per delivered occupancy at "
                  f"core_side = {a}")
