"""Plain-text tables and number formatting for the CLI (no terminal dependencies)."""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any


def fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v == 0:
            return "0"
        a = abs(v)
        if a >= 1e6 or a < 1e-3:
            return f"{v:.{digits - 1}e}"
        return f"{v:.{digits}g}" if a < 10 ** digits else f"{v:.0f}"
    return str(v)


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str], align: str | None = None,
          max_width: int | None = None) -> str:
    """Fixed-width table; ``align`` is one char per column ('l' or 'r'), numbers right by default.
    With ``max_width``, a left-aligned last column is wrapped onto continuation lines so no line
    is wider than ``max_width`` (the other columns are never cut)."""
    cells = [[fmt(c) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]
    al = align or "".join("l" if i == 0 else "r" for i in range(len(headers)))
    wrap_at = None
    if max_width is not None and widths and al[len(widths) - 1] == "l":
        lead = sum(widths[:-1]) + 2 * (len(widths) - 1)
        if lead + widths[-1] > max_width:
            wrap_at = max(20, max_width - lead)
            widths[-1] = min(widths[-1], wrap_at)

    def line(cs: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cs, widths, al)).rstrip()

    def lines(cs: Sequence[str]) -> list[str]:
        if wrap_at is None or len(cs[-1]) <= wrap_at:
            return [line(cs)]
        import textwrap
        parts = textwrap.wrap(cs[-1], wrap_at) or [""]
        blank = [""] * (len(cs) - 1)
        return [line([*cs[:-1], parts[0]])] + [line([*blank, p]) for p in parts[1:]]

    out = [line(headers), line(["-" * w for w in widths])]
    for r in cells:
        out += lines(r)
    return "\n".join(out)


def fit_columns(rows: Sequence[Sequence[Any]], headers: Sequence[str], max_width: int, fixed: int) -> int:
    """How many leading columns of a table fit in ``max_width`` characters (at least ``fixed``)."""
    widths = [len(h) for h in headers]
    for r in rows:
        widths = [max(w, len(fmt(c))) for w, c in zip(widths, r)]
    total, n = -2, 0
    for w in widths:
        if total + 2 + w > max_width and n >= fixed:
            break
        total += 2 + w
        n += 1
    return n


def terminal_width(default: int = 100) -> int:
    """Columns of the terminal on stdout, else ``COLUMNS``, else ``default``; at least 40 (a
    terminal that reports no size, 0 columns under ``script`` or some ``docker exec -t``
    sessions, falls through to ``COLUMNS``)."""
    import os
    import sys
    try:
        if sys.stdout.isatty():
            cols = os.get_terminal_size(sys.stdout.fileno()).columns
            if cols > 0:
                return max(40, cols)
    except (OSError, ValueError, AttributeError):
        pass
    try:
        return max(40, int(os.environ.get("COLUMNS", default)))
    except ValueError:
        return default


def dumps(obj: Any) -> str:
    """JSON with non-finite floats as null (strict JSON consumers choke on NaN)."""
    def clean(o: Any) -> Any:
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        if hasattr(o, "item") and callable(o.item):  # numpy scalars
            return clean(o.item())
        return o
    return json.dumps(clean(obj), indent=2, allow_nan=False)
