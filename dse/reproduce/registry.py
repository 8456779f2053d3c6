"""Registry of published figures and the comparison rules of `dse reproduce`.

Tolerance classes (from the reference file): ``exact`` within 1 %, ``model`` within 10 %,
``trace`` within 20 %. A published value is rounded, so a figure also passes when ours lies
within half a unit of the published value's last digit (``1.6`` H100 dies admits 1.617); such
rows say ``rounding``. A published 0 passes only when ours is 0 (to 1e-9).
"""
from __future__ import annotations

import importlib
import math
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any, Callable

from dse.data import load_toml

TOLERANCE = {"exact": 0.01, "model": 0.10, "trace": 0.20}
REFERENCE_FILE = ("reference", "rexpert-35b.toml")

# Modules holding @figure registrations, grouped by concern.
FIGURE_MODULES = (
    "dse.reproduce.figures_closed_form",
    "dse.reproduce.figures_schedule",
    "dse.reproduce.figures_network",
)

_FIGURES: dict[str, tuple[Callable[[], Any], str]] = {}


def figure(key: str, note: str = ""):
    """Register the function computing reference entry ``key`` ("section.name").

    It returns a number, a list (same length as the published list) or, for compound entries,
    a dict with the published sub-keys. ``note`` explains a known residual (printed)."""
    def deco(fn: Callable[[], Any]) -> Callable[[], Any]:
        _FIGURES[key] = (fn, note)
        return fn
    return deco


@dataclass
class Row:
    key: str
    published: float
    ours: float | None
    ratio: float | None
    cls: str
    unit: str
    status: str          # pass | rounding | miss | not modelled | error
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _half_ulp(x: float) -> float:
    """Half a unit in the last digit of the published decimal (1.6 -> 0.05; 1184 -> 0.5)."""
    if float(x).is_integer():
        return 0.5
    exp = Decimal(repr(float(x))).normalize().as_tuple().exponent
    return 0.5 * 10.0 ** int(exp)


def judge(published: float, ours: float | None, cls: str) -> tuple[float | None, str]:
    if ours is None:
        return None, "not modelled"
    if not math.isfinite(ours):
        return None, "error"
    if published == 0:
        return None, ("pass" if abs(ours) < 1e-9 else "miss")
    ratio = ours / published
    if abs(ratio - 1) <= TOLERANCE[cls] + 1e-12:
        return ratio, "pass"
    if abs(ours - published) <= _half_ulp(published) + 1e-12:
        return ratio, "rounding"
    return ratio, "miss"


def _expand(key: str, entry: dict[str, Any]) -> list[tuple[str, float, str, str]]:
    """(row key, published value, class, unit) for each published number of an entry."""
    cls, unit = entry.get("cls", "model"), entry.get("unit", "")
    if "value" in entry:
        v = entry["value"]
        if isinstance(v, list):
            return [(f"{key}[{i}]", float(x), cls, unit) for i, x in enumerate(v)]
        return [(key, float(v), cls, unit)]
    rows = []
    for sub, v in entry.items():
        if sub in ("cls", "unit"):
            continue
        if isinstance(v, list):
            rows += [(f"{key}.{sub}[{i}]", float(x), cls, unit) for i, x in enumerate(v)]
        else:
            rows.append((f"{key}.{sub}", float(v), cls, unit))
    return rows


def _lookup(value: Any, row_key: str, key: str) -> float | None:
    """Pick the number for one row out of what a figure function returned."""
    rest = row_key[len(key):]
    cur = value
    while rest:
        if rest.startswith("."):
            name = rest[1:].split("[", 1)[0].split(".", 1)[0]
            cur = cur.get(name) if isinstance(cur, dict) else None
            rest = rest[1 + len(name):]
        elif rest.startswith("["):
            idx, rest = rest[1:].split("]", 1)
            cur = cur[int(idx)] if isinstance(cur, (list, tuple)) and int(idx) < len(cur) else None
        if cur is None:
            return None
    return None if cur is None else float(cur)


def _load_modules() -> None:
    for mod in FIGURE_MODULES:
        importlib.import_module(mod)


def reproduce(only: str | None = None) -> list[Row]:
    """Every published number, compared with ours (not-modelled ones included)."""
    _load_modules()
    ref = load_toml(*REFERENCE_FILE)
    rows: list[Row] = []
    for section, entries in ref.items():
        for name, entry in entries.items():
            key = f"{section}.{name}"
            if only and not key.startswith(only):
                continue
            fn_note = _FIGURES.get(key)
            value: Any = None
            note = ""
            err = None
            if fn_note is not None:
                fn, note = fn_note
                try:
                    value = fn()
                except Exception as exc:  # a figure that crashes is reported, not hidden
                    err = f"{type(exc).__name__}: {exc}"
            for row_key, pub, cls, unit in _expand(key, entry):
                if err:
                    rows.append(Row(row_key, pub, None, None, cls, unit, "error", err))
                    continue
                ours = _lookup(value, row_key, key) if value is not None else None
                ratio, status = judge(pub, ours, cls)
                rows.append(Row(row_key, pub, ours, ratio, cls, unit, status, note))
    return rows


def registered() -> list[str]:
    _load_modules()
    return sorted(_FIGURES)
