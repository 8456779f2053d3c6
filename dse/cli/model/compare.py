"""`dse compare A.toml B.toml ... [-o cmp.png] [--json]`: several studies of one question on one
reference: fronts on one figure, hypervolume on a common reference point, knees knob by knob."""
from __future__ import annotations

import argparse
import sys

from dse.cli.run import _int_arg
from dse.errors import ConfigError
from dse.report import dumps, fmt, table, terminal_width


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare the fronts and knees of several studies (models, samplers, seeds)",
                       description="Each STUDY is a study file, optionally followed by overrides "
                                   "(FILE@seed=1, FILE@model=NAME, FILE@storage=URL). The runs share one "
                                   "reference front (the union of their fronts) and one reference point.")
    p.add_argument("studies", nargs="+", metavar="STUDY", help="study TOML[@seed=S][@model=M][@storage=URL]")
    p.add_argument("--storage", metavar="URL",
                   help="storage of every study without its own @storage (default: $DSE_STORAGE)")
    p.add_argument("-o", "--output", metavar="FILE.png", help="figure with every run's front (png, svg, pdf)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run)


def parse_ref(text: str, storage: str | None) -> tuple[str, dict]:
    """``STUDY.toml[@seed=S][@model=M][@storage=URL]`` -> (path, overrides); an '@' inside a
    storage URL (``user:pw@host``) stays in the URL."""
    import re
    path, *parts = text.split("@")
    ovs: list[str] = []
    for part in parts:
        if ovs and ovs[-1].startswith("storage=") and not re.match(r"^[A-Za-z_]+=", part):
            ovs[-1] += "@" + part
        else:
            ovs.append(part)
    kw: dict = {"storage": storage}
    for ov in ovs:
        k, sep, v = ov.partition("=")
        if not sep or k not in ("seed", "model", "storage"):
            raise ConfigError(f"{text!r}: override {ov!r}: expected seed=S, model=NAME or storage=URL")
        try:
            kw[k] = _int_arg(v) if k == "seed" else v
        except (argparse.ArgumentTypeError, ValueError):
            raise ConfigError(f"{text!r}: override {ov!r}: the seed must be an integer") from None
    return path, kw


def run(args: argparse.Namespace) -> int:
    from dse.cli.credentials import hide_secrets, storage_url
    from dse.cli.filekind import refuse
    from dse.search.review import quality
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    if len(args.studies) < 2:
        raise ConfigError("compare needs at least two studies")
    refs = [(text, *parse_ref(text, storage_url(args.storage))) for text in args.studies]
    for _, path, _ in refs:             # every file a study, before any storage is opened
        refuse(path, "study", "compare")
    results, names = [], []
    for text, path, kw in refs:
        cfg = load_study(path, **kw)
        results.append(load_results(cfg))
        names.append(cfg.name if cfg.name not in names else hide_secrets(text, [kw.get("storage")]))
    cmp = quality.compare(results, names)
    if args.output:
        from dse.viz.report_figures import compare_figure, save_figure
        try:
            save_figure(compare_figure(results, names), args.output)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"-o {args.output}: cannot write ({exc})") from None
    if args.json:
        print(dumps(cmp.to_json()))
        return 0
    _print(cmp, args.output)
    return 0


def _print(cmp, output) -> None:
    w = terminal_width()
    print(f"reference point: {cmp.reference.describe(cmp.objectives)}")
    rows = [[n, cmp.front_sizes[i], cmp.share_of_union[i], cmp.hypervolume[i]]
            + [fmt(cmp.coverage[i][j]) for j in range(len(cmp.names))] for i, n in enumerate(cmp.names)]
    heads = ["run", "front", "on union front", "hypervolume"] + [f"covers {j + 1}" for j in range(len(cmp.names))]
    print(table(rows, heads, align="l" + "r" * (len(heads) - 1), max_width=w))
    print("covers j: share of run j's front weakly dominated by this run's front")
    print("dominant run: " + (cmp.dominant or "none (no run's front covers every other front)"))
    knobs = list(cmp.knob_agreement)
    krows = [[k] + [fmt(kn.get("params", {}).get(k)) for kn in cmp.knees] + ["yes" if cmp.knob_agreement[k] else "NO"]
             for k in knobs]
    print("\nknees, knob by knob:")
    print(table(krows, ["knob"] + [f"{i + 1}: trial {kn.get('trial', '-')}" for i, kn in enumerate(cmp.knees)]
                + ["agree"], align="l" + "r" * (len(cmp.knees)) + "l"))
    n_dis = sum(not v for v in cmp.knob_agreement.values())
    print(f"knees agree on {len(knobs) - n_dis} of {len(knobs)} knobs" if knobs else "no knee in any run")
    if output:
        print(f"wrote {output}", file=sys.stderr)
