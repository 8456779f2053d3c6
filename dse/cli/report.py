"""`dse report STUDY.toml -o report.html [--format html|md] [--robust N] [--reference R]`: one shareable
report."""
from __future__ import annotations

import argparse
from pathlib import Path

from dse.cli.front import add_study_args, load
from dse.cli.run import _int_arg
from dse.errors import ConfigError


def register(sub) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML (or Markdown) report of a study",
                       description="One file to share: summary, front table, knee and nearest alternatives, "
                                   "pairwise fronts, parallel coordinates, the knee's area / power / energy "
                                   "breakdown, hypervolume against trials, knob importance, infeasibility "
                                   "reasons, knee confidence (--robust) and the model version with its "
                                   "`dse reproduce` summary. HTML embeds its figures and needs no network.")
    add_study_args(p, pooled=True)
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="report file (.html or .md; another extension needs --format)")
    p.add_argument("--format", choices=("html", "md"),
                   help="default: from the -o extension (.html, .htm, .md, .markdown)")
    p.add_argument("--columns", metavar="A,B,...", help="columns of the front table (default: objectives and "
                                                        "the knobs that vary on the front)")
    p.add_argument("--sort", metavar="NAME", help="sort the front table by this column (--sort=-NAME: descending)")
    p.add_argument("--robust", type=_int_arg, metavar="N",
                   help="also re-evaluate the designs around the front under N other trace seeds (knee confidence)")
    p.add_argument("--model-uncertainty", type=_int_arg, metavar="N",
                   help="also re-evaluate the designs around the front under N draws of the model's unknowns "
                        "(dse/data/model_uncertainty.toml): how often each stays on the front and is the knee")
    p.add_argument("--jobs", "-j", type=_int_arg, default=1, help="worker processes for --robust")
    p.add_argument("--no-reproduce", action="store_true", help="skip the `dse reproduce` summary")
    p.add_argument("--candidates", type=_int_arg, default=3, metavar="N", help="knee candidates shown (default 3)")
    p.add_argument("--reference", default="published", metavar="published|DESIGN.toml",
                   help="the reference design placed against the front and the knee explained against it "
                        "(default: published, the spec's default design)")
    p.add_argument("--no-reference", action="store_true", help="no reference design sections")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dse.cli.front import check_columns
    from dse.viz.report import build_report
    from dse.viz.report_render import to_html, to_markdown
    out = Path(args.output)
    fmt = args.format or report_format(out)
    cfg, res, merged = load(args)
    if merged is not None and args.robust is not None:
        raise ConfigError("--robust: re-evaluate one run (one --storage), not pooled runs")
    robust = None
    if args.robust is not None:
        if args.robust < 1:
            raise ConfigError(f"--robust {args.robust}: must be a positive number of trace seeds")
        from dse.search.execute.pool import run_many, workload_key
        from dse.search.execute.runner import evaluate_design
        from dse.search.front import robust as rb
        if res.candidates():
            robust = rb.robust_knees(res, rb.seed_variants(cfg, args.robust), evaluate_design,
                                     run_many=run_many(args.jobs, workload_key))
    mu = None
    if args.model_uncertainty is not None:
        if merged is not None or args.model_uncertainty < 1:
            raise ConfigError(f"--model-uncertainty {args.model_uncertainty}: a positive number of draws, on one run")
        from dse.search.execute.pool import run_many, workload_key
        from dse.search.execute.runner import evaluate_design
        from dse.search.front import model_uncertainty as mun
        if res.candidates():
            mu = mun.model_uncertainty_knees(res, args.model_uncertainty, evaluate_design,
                                             run_many=run_many(args.jobs, workload_key))
    rows = None
    if not args.no_reproduce:
        from dse.reproduce import reproduce
        rows = reproduce()
    cols = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    check_columns(res, res.front(), cols, args.sort)
    reference, explanation = _reference(args, res)
    extra = []
    if reference is not None:
        from dse.viz.report_reference import explain_section, reference_section
        extra = [reference_section(res, reference)] + ([explain_section(res, explanation)] if explanation else [])
    sections = build_report(res, robust=robust, reproduce_rows=rows, columns=cols, sort=args.sort,
                            candidates=args.candidates, merged=merged, model_uncertainty=mu,
                            reference=reference, reference_sections=extra)
    title = f"rexpert-dse study report: {cfg.name}"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "html":
            out.write_text(to_html(title, sections), encoding="utf-8")
            written = [out]
        else:
            written = to_markdown(title, sections, out)
    except OSError as exc:
        raise ConfigError(f"-o {out}: cannot write ({exc.strerror})") from None
    extra = f" and {len(written) - 1} figures beside it" if len(written) > 1 else ""
    print(f"wrote {out} ({len(sections)} sections{extra})")
    return 0


FORMATS = {".html": "html", ".htm": "html", ".md": "md", ".markdown": "md"}


def report_format(out: Path) -> str:
    """The report's format from the ``-o`` file's extension (one of ``FORMATS``); any other
    extension is refused (a ``report.pdf`` written as HTML would mislead), unless ``--format``
    says which."""
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise ConfigError(f"-o {out}: unknown report extension {out.suffix or '(none)'!r} "
                          f"(allowed: {', '.join(FORMATS)}; or name the format with --format html|md)")
    return fmt


def _reference(args: argparse.Namespace, res):
    """The reference placed against the front and the knee explained against it (None, None with
    --no-reference; no explanation without a knee)."""
    if args.no_reference:
        return None, None
    from dse.cli.front import reference_of
    from dse.search.review.explain import explain
    from dse.search.review.reference import endpoint
    reference = reference_of(res, args.reference)
    if res.knee() is None:
        return reference, None
    return reference, explain(res, endpoint(res, args.reference, "--reference"), endpoint(res, "knee"), jobs=args.jobs)
