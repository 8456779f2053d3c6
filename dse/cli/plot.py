"""`dse plot STUDY.toml [-o DIR] [--format png|svg|pdf] [--reference R]`: front(s) with the knee,
parallel coordinates."""
from __future__ import annotations

import argparse

from dse.cli.run import add_study_args, study_from_args


def register(sub) -> None:
    p = sub.add_parser("plot", help="plot a study: 2-D front or pairwise fronts with the knee, parallel coordinates",
                       description="Write the study's figures (default folder: results/<study>-plots beside the "
                                   "study file).")
    add_study_args(p)
    p.add_argument("-o", "--output", metavar="DIR", help="output folder")
    p.add_argument("--format", action="append", choices=("png", "svg", "pdf"), default=None,
                   help="image format (repeatable; default png)")
    p.add_argument("--reference", metavar="published|DESIGN.toml",
                   help="mark this design on the fronts (as `dse front --reference`)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dse.errors import ConfigError
    from dse.search.study.results import load_results
    from dse.viz.study_plots import plot_study
    cfg = study_from_args(args)
    res = load_results(cfg)
    from dse.cli.front import reference_of
    reference = reference_of(res, args.reference)
    out = args.output or (cfg.results_dir / f"{cfg.base_name}-plots")
    try:
        paths = plot_study(res, out, args.format or ["png"], reference)
    except OSError as exc:
        raise ConfigError(f"-o {out}: cannot write ({exc.strerror})") from None
    for p in paths:
        print(p)
    return 0
