"""Write the report's sections as one self-contained HTML file or as Markdown + PNGs.

HTML: inline CSS, figures as ``data:image/png;base64`` images, no script, no link to anything
outside the file (it opens from disk, offline, and can be mailed as one attachment). Numbers
carry their exact value in ``data-value`` so a test (or a script) can read them back.
"""
from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dse.report import fmt
from dse.viz.report import Figure, Section, Table

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1180px;
color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.15em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}td,th{border:1px solid #ddd;padding:.25em .5em}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.knee td{background:#fff3e0;font-weight:600}img{max-width:100%;height:auto;border:1px solid #eee}
nav a{margin-right:1em}code{background:#f6f6f6;padding:0 .2em}
"""


def _cell(v: Any) -> str:
    if isinstance(v, bool) or v is None or not isinstance(v, (int, float)):
        return f"<td>{html.escape(fmt(v))}</td>"
    exact = repr(float(v)) if isinstance(v, float) and math.isfinite(v) else str(v)
    return f'<td class="n" data-value="{html.escape(exact)}">{html.escape(fmt(v))}</td>'


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
    body = []
    for row in t.rows:
        cls = ' class="knee"' if len(row) > 1 and (row[1] == "*" or row[0] == "knee") else ""
        body.append(f"<tr{cls}>" + "".join(_cell(v) for v in row) + "</tr>")
    tid = f' id="{html.escape(t.id)}"' if t.id else ""
    thead = f"<thead><tr>{head}</tr></thead>" if any(t.headers) else ""
    return f"<table{tid}>{thead}<tbody>{''.join(body)}</tbody></table>"


def _inline_code(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def to_html(title: str, sections: Sequence[Section]) -> str:
    nav = " ".join(f'<a href="#{s.id}">{html.escape(s.title)}</a>' for s in sections)
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
             f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1><nav>{nav}</nav>"]
    for s in sections:
        parts.append(f'<section id="{html.escape(s.id)}"><h2>{html.escape(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Table):
                parts.append(_html_table(b))
            elif isinstance(b, Figure):
                data = base64.b64encode(b.png).decode("ascii")
                parts.append(f'<figure id="fig-{html.escape(b.name)}"><img alt="{html.escape(b.alt)}" '
                             f'src="data:image/png;base64,{data}"></figure>')
            else:
                parts.append(f"<p>{_inline_code(str(b))}</p>")
        parts.append("</section>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _md_cell(v: Any) -> str:
    return fmt(v).replace("|", "\\|").replace("\n", " ") or " "


def to_markdown(title: str, sections: Sequence[Section], out: Path) -> list[Path]:
    """Write ``out`` (Markdown) and its figures as ``<stem>-<figure>.png`` beside it."""
    written = []
    lines = [f"# {title}", ""]
    for s in sections:
        lines += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, Table):
                heads = [h or " " for h in b.headers]
                lines.append("| " + " | ".join(heads) + " |")
                lines.append("|" + "|".join("---" for _ in heads) + "|")
                lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in b.rows]
            elif isinstance(b, Figure):
                p = out.with_name(f"{out.stem}-{b.name}.png")
                p.write_bytes(b.png)
                written.append(p)
                lines.append(f"![{b.alt}]({p.name})")
            else:
                lines.append(str(b))
            lines.append("")
    out.write_text("\n".join(lines), encoding="utf-8")
    return [out] + written
