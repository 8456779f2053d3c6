"""Plain-text tables and number formatting for the CLI (no terminal dependencies)."""
from __future__ import annotations

import json
import math
from typing import Any, Iterable, Sequence


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


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str], align: str | None = None) -> str:
    """Fixed-width table; ``align`` is one char per column ('l' or 'r'), numbers right by default."""
    cells = [[fmt(c) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]
    al = align or "".join("l" if i == 0 else "r" for i in range(len(headers)))

    def line(cs: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cs, widths, al)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


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
