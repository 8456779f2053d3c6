"""Registry of published figures and the comparison rules of `dse reproduce`.

Tolerance classes (from the reference file): ``exact`` within 1 %, ``model`` within 10 %,
``trace`` within 20 %. A published value is rounded, so a figure also passes when ours lies
within half a unit of the last digit *as published* (the reference file is read with its
number texts kept: "1.6" H100 dies admits 1.617, "1.000" admits only 0.9995 .. 1.0005); such
rows say ``rounding``. A published 0 passes only when ours is 0 (to 1e-9).

Every figure carries an evidence class, the honest weight of a pass:
``arithmetic`` (the study's own arithmetic redone from its stated inputs), ``input`` (a design
input echoed back), ``calibrated`` (a named constant or input was fitted on this figure; the
constant names it in ``fitted_on``) and ``predicted`` (model output nothing was fitted on).
"""
from __future__ import annotations

import importlib
import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any, NamedTuple

from dse.data import path as data_path

TOLERANCE = {"exact": 0.01, "model": 0.10, "trace": 0.20}
EVIDENCE = ("arithmetic", "input", "calibrated", "predicted")
REFERENCE_FILE = ("reference", "rexpert-35b.toml")

# Modules holding @figure registrations, grouped by concern.
FIGURE_MODULES = (
    "dse.reproduce.figures_closed_form",
    "dse.reproduce.figures_schedule",
    "dse.reproduce.figures_network",
)


class Figure(NamedTuple):
    fn: Callable[[], Any]
    note: str
    evidence: str | Mapping[str, str]


_FIGURES: dict[str, Figure] = {}


def figure(key: str, evidence: str | Mapping[str, str], note: str = ""):
    """Register the function computing reference entry ``key`` ("section.name").

    It returns a number, a list (same length as the published list) or, for compound entries,
    a dict with the published sub-keys. ``evidence`` is one of EVIDENCE, or a mapping from a row
    suffix ("[1]", ".t_attn_us", ".ideal_mfu[1]") to a class with "*" as the default.
    ``note`` explains a known residual or a calibration (printed)."""
    classes = [evidence] if isinstance(evidence, str) else list(evidence.values())
    bad = [c for c in classes if c not in EVIDENCE]
    if bad or (not isinstance(evidence, str) and "*" not in evidence):
        raise ValueError(f"figure {key!r}: evidence must be one of {EVIDENCE} (a mapping needs '*'), got {evidence!r}")

    def deco(fn: Callable[[], Any]) -> Callable[[], Any]:
        _FIGURES[key] = Figure(fn, note, evidence)
        return fn
    return deco


def evidence_of(evidence: str | Mapping[str, str], suffix: str) -> str:
    """The class of one row: an exact suffix match, then its sub-key (".name"), then "*"."""
    if isinstance(evidence, str):
        return evidence
    if suffix in evidence:
        return evidence[suffix]
    sub = suffix.split("[", 1)[0]
    return evidence.get(sub, evidence["*"])


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
    evidence: str | None = None       # one of EVIDENCE; None when the figure is not modelled
    published_text: str = ""           # the number as published (its last digit sets the rounding window)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def half_unit_of_last_digit(published: Decimal | int | float | str) -> float:
    """Half a unit in the last digit of the published number *as written* ("1.6" -> 0.05,
    "1.000" -> 0.0005, 1184 -> 0.5). A float has lost its trailing zeros, so only a Decimal, an
    int or the text itself gives the published precision."""
    if isinstance(published, int):
        return 0.5
    if isinstance(published, float):
        if published.is_integer():
            return 0.5
        published = Decimal(repr(published)).normalize()
    exp = Decimal(str(published)).as_tuple().exponent
    return 0.5 * 10.0 ** int(exp)


def judge(published: Decimal | int | float | str, ours: float | None, cls: str) -> tuple[float | None, str]:
    """(ratio, status) of ours against a published number (pass its text for its precision)."""
    if ours is None:
        return None, "not modelled"
    if not math.isfinite(ours):
        return None, "error"
    pub = float(published)
    if pub == 0:
        return None, ("pass" if abs(ours) < 1e-9 else "miss")
    ratio = ours / pub
    if abs(ratio - 1) <= TOLERANCE[cls] + 1e-12:
        return ratio, "pass"
    if abs(ours - pub) <= half_unit_of_last_digit(published) + 1e-12:
        return ratio, "rounding"
    return ratio, "miss"


def load_reference() -> dict[str, Any]:
    """The reference figures with every float kept as its published text (a Decimal)."""
    with data_path(*REFERENCE_FILE).open("rb") as fh:
        return tomllib.load(fh, parse_float=Decimal)


def _expand(key: str, entry: dict[str, Any]) -> list[tuple[str, Decimal | int, str, str]]:
    """(row key, published number, class, unit) for each published number of an entry."""
    cls, unit = entry.get("cls", "model"), entry.get("unit", "")
    if "value" in entry:
        v = entry["value"]
        if isinstance(v, list):
            return [(f"{key}[{i}]", x, cls, unit) for i, x in enumerate(v)]
        return [(key, v, cls, unit)]
    rows = []
    for sub, v in entry.items():
        if sub in ("cls", "unit"):
            continue
        if isinstance(v, list):
            rows += [(f"{key}.{sub}[{i}]", x, cls, unit) for i, x in enumerate(v)]
        else:
            rows.append((f"{key}.{sub}", v, cls, unit))
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


def _rows_of(key: str, entry: dict[str, Any], fig: Figure | None) -> list[Row]:
    value: Any = None
    err = None
    if fig is not None:
        try:
            value = fig.fn()
        except Exception as exc:  # a figure that crashes is reported, not hidden
            err = f"{type(exc).__name__}: {exc}"
    rows = []
    for row_key, pub, cls, unit in _expand(key, entry):
        evidence = None if fig is None else evidence_of(fig.evidence, row_key[len(key):])
        text = str(pub)
        if err:
            rows.append(Row(row_key, float(pub), None, None, cls, unit, "error", err, evidence, text))
            continue
        ours = _lookup(value, row_key, key) if value is not None else None
        ratio, status = judge(pub, ours, cls)
        rows.append(Row(row_key, float(pub), ours, ratio, cls, unit, status,
                        fig.note if fig else "", evidence, text))
    return rows


def reproduce(only: str | None = None) -> list[Row]:
    """Every published number, compared with ours (not-modelled ones included)."""
    _load_modules()
    rows: list[Row] = []
    for section, entries in load_reference().items():
        for name, entry in entries.items():
            key = f"{section}.{name}"
            if only and not key.startswith(only):
                continue
            rows += _rows_of(key, entry, _FIGURES.get(key))
    return rows


def summary(rows: list[Row]) -> dict[str, Any]:
    """Counts of the rows by status, and pass / miss per evidence class (a rounding pass is a pass)."""
    status = {s: sum(r.status == s for r in rows) for s in ("pass", "rounding", "miss", "not modelled", "error")}
    by_evidence = {e: {"pass": sum(r.evidence == e and r.status in ("pass", "rounding") for r in rows),
                       "miss": sum(r.evidence == e and r.status in ("miss", "error") for r in rows)}
                   for e in EVIDENCE}
    exact_misses = sum(r.cls == "exact" and r.status in ("miss", "error") for r in rows)
    return {"figures": len(rows), **status, "exact_misses": exact_misses, "by_evidence": by_evidence}


def registered() -> list[str]:
    _load_modules()
    return sorted(_FIGURES)
