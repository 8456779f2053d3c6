"""`dse reproduce [--json] [--only SECTION] [--misses] [--notes]`: published vs ours vs ratio, with evidence.

The table fits the terminal (``shutil.get_terminal_size``: COLUMNS, else the terminal, else 120):
one block per section, each figure on one line, its note (and, with ``--uncertainty``, its band)
after it when the line has room, else on a second line; either shortened with "..." to the width.
``--notes`` prints every note in full; ``--json`` keeps every field. At 80 columns the table was
1,107 lines, the longest 269 characters (issue 45); now one or two lines per figure."""
from __future__ import annotations

import argparse
import shutil
import textwrap

from dse.report import dumps, fmt
from dse.reproduce import reproduce
from dse.reproduce.registry import EVIDENCE, TOLERANCE, summary


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="compare every published reference figure with the model",
                       description="Every entry of the reference study (dse/data/reference/rexpert-35b.toml): "
                                   "published (as written), ours, ratio, tolerance class, evidence class "
                                   "(arithmetic | input | calibrated | predicted), pass/miss. Exits 1 when an "
                                   "`exact` entry misses by more than 1 %.")
    p.add_argument("--json", action="store_true", help="{summary, rows} as JSON")
    p.add_argument("--only", metavar="PREFIX", help="only entries whose key starts with PREFIX (e.g. latency_35b)")
    p.add_argument("--misses", action="store_true",
                   help="show only misses (and errors); a pass within published rounding is a pass")
    p.add_argument("--notes", action="store_true",
                   help="each figure's note in full on the lines below it (by default a note is shortened "
                        "to fit the terminal; --json has every field)")
    p.add_argument("--uncertainty", type=int, default=0, metavar="N",
                   help="recompute every figure under N Latin-hypercube draws of the model's unknowns "
                        "(dse/data/model_uncertainty.toml): each predicted row's p5-p95 band, whether the "
                        "published value is inside it, and the class of each miss (inside band / definition "
                        "not built / structural), with counts")
    p.add_argument("--uncertainty-seed", type=int, default=0, metavar="S", help="seed of the draws (default 0)")
    p.set_defaults(func=run)


def summary_line(s: dict) -> str:
    """One line: totals, then pass / miss per evidence class."""
    tol = ", ".join(f"{k} {v:.0%}" for k, v in TOLERANCE.items())
    per = "; ".join(f"{e} {s['by_evidence'][e]['pass']} pass / {s['by_evidence'][e]['miss']} miss" for e in EVIDENCE)
    return (f"{s['figures']} figures: {s['pass'] + s['rounding']} pass ({s['rounding']} within published "
            f"rounding), {s['miss']} miss, {s['not modelled']} not modelled, {s['error']} error; by evidence: "
            f"{per} (tolerance: {tol}); exact misses: {s['exact_misses']}")


def run(args: argparse.Namespace) -> int:
    rows = reproduce(args.only)
    if args.only is not None and not rows:
        from dse.data import load_toml
        from dse.errors import ConfigError
        from dse.reproduce.registry import REFERENCE_FILE
        sections = ", ".join(load_toml(*REFERENCE_FILE))
        raise ConfigError(f"--only {args.only!r}: no reference entry starts with it (sections: {sections})")
    s = summary(rows)
    if args.uncertainty < 0:
        from dse.errors import ConfigError
        raise ConfigError(f"--uncertainty {args.uncertainty}: must be a whole number of draws >= 0")
    judged, us = ({}, None) if not args.uncertainty else uncertainty(rows, args)
    if args.json:
        out = {"summary": s, "rows": [{**r.to_dict(), **judged.get(r.key, {})} for r in rows]}
        if us is not None:
            out["uncertainty"] = us
        print(dumps(out))
    else:
        shown = [r for r in rows if not args.misses or r.status in ("miss", "error")]
        width = shutil.get_terminal_size((120, 24)).columns
        width = max(40, width)
        print("\n".join(figure_lines(shown, judged, width, full_notes=args.notes)))
        print("\n" + textwrap.fill(summary_line(s), width))
        if us is not None:
            print(textwrap.fill(band_line(us, args.uncertainty), width))
    return 1 if s["exact_misses"] else 0


def uncertainty(rows, args) -> tuple[dict, dict]:
    from dse.reproduce.bands import band_summary, judge_bands, row_bands
    judged = judge_bands(rows, row_bands(args.uncertainty, args.uncertainty_seed, args.only))
    return judged, {"draws": args.uncertainty, "seed": args.uncertainty_seed, **band_summary(rows, judged)}


def band_cells(j: dict | None) -> tuple:
    """(p5-p95, in band, miss class) of a predicted row; blanks elsewhere."""
    if j is None:
        return "", "", ""
    b = j["band"]
    return ("-" if b is None else f"{b['p5']:.4g}-{b['p95']:.4g}", "yes" if j["in_band"] else "no",
            j["miss_class"] or "")


def band_line(u: dict, n: int) -> str:
    c = u["miss_classes"]
    w = u["median_relative_half_width"]
    return (f"model-uncertainty bands ({n} draws): predicted {u['predicted']}: {u['pass']} pass "
            f"({u['pass_in_band']} with the published value inside its p5-p95 band, {u['pass_in_band_by_rounding']} of "
            f"them within its published rounding), {u['miss']} miss: "
            + ", ".join(f"{v} {k}" for k, v in c.items())
            + f"; median relative half-width {'-' if w is None else f'{w:.2%}'}")


MAIN_HEADERS = ("entry", "published", "ours", "ratio", "class", "evidence", "status")
BAND_HEADERS = ("p5-p95", "in band", "miss class")
MIN_NOTE = 40          # a note column narrower than this goes to the line below instead


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: cut at the end with '...'."""
    return text if len(text) <= width else text[:max(0, width - 3)].rstrip() + "..."


def shorten_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle replaced by '..' (keeps the index at the end)."""
    if len(text) <= width:
        return text
    tail = (width - 2) // 2
    return text[:width - 2 - tail] + ".." + text[len(text) - tail:]


def figure_lines(rows, judged: dict, width: int, full_notes: bool = False) -> list[str]:
    """The table of ``dse reproduce``: a header, then per section its name and its figures (the
    entry without the section), each on one line of at most ``width`` characters; the note (and
    the band cells) on the same line when at least MIN_NOTE characters are left, else on the line
    below; shortened unless ``full_notes`` (then wrapped in full below the figure)."""
    bands = bool(judged)
    cells = [[r.key.split(".", 1)[-1], r.published_text, fmt(r.ours),
              "-" if r.ratio is None else f"{r.ratio:.3f}", r.cls, r.evidence or "-", r.status] for r in rows]
    band = [list(band_cells(judged.get(r.key))) for r in rows] if bands else [[] for _ in rows]
    headers = list(MAIN_HEADERS)
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    indent = 2
    lead = indent + sum(widths) + 2 * (len(widths) - 1)
    bw = [max([len(h)] + [len(b[i]) for b in band]) for i, h in enumerate(BAND_HEADERS)] if bands else []
    if bands and lead + sum(bw) + 2 * len(bw) + 2 + MIN_NOTE <= width:
        headers += BAND_HEADERS
        widths += bw
        cells = [c + b for c, b in zip(cells, band)]
        lead += sum(bw) + 2 * len(bw)
        band = [[] for _ in rows]
    if lead > width:                      # the entry names give way (their middle), down to 12 characters
        widths[0] = max(12, widths[0] - (lead - width))
        lead = indent + sum(widths) + 2 * (len(widths) - 1)
    inline = not full_notes and lead + 2 + MIN_NOTE <= width
    note_w = width - lead - 2 if inline else width - 2 * indent
    al = "lrrrlll" + "l" * (len(widths) - 7)

    def line(cs) -> str:
        cs = [shorten_middle(cs[0], widths[0]), *cs[1:]]
        cols = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cs, widths, al)]
        return (" " * indent + "  ".join(cols + cs[len(widths):])).rstrip()       # + the note, if any

    out = [line(headers + (["note"] if inline else [])), line(["-" * w for w in widths])]
    section = None
    for r, c, b in zip(rows, cells, band):
        if r.key.split(".", 1)[0] != section:
            section = r.key.split(".", 1)[0]
            out.append(section)
        tail = "; ".join(x for x in (", ".join(f"{h} {v}" for h, v in zip(BAND_HEADERS, b) if v), r.note) if x)
        if inline:
            out.append(line(c + [shorten(tail, note_w)]) if tail else line(c))
            continue
        out.append(line(c))
        if tail and full_notes:
            out += textwrap.wrap(tail, width, initial_indent=" " * 2 * indent, subsequent_indent=" " * 2 * indent)
        elif tail:
            out.append(" " * 2 * indent + shorten(tail, note_w))
    return out
