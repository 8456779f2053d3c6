"""Many flat designs validated at once: ``DesignPoint.from_dict``'s verdict and values, row by row,
from one pass per knob instead of one ``from_dict`` per design.

The guided sampler validates ~2,000 candidate designs per batch; ``from_dict`` costs ~25 us each
(a coercion per knob, the dataclass, the cross checks), ~20 % of a plan. ``validate_flat`` coerces
each knob's *distinct* values once (``params.coerce``: the same function, so the same verdicts and
converted values), checks a real knob's values given as Python floats on numpy (finite and in
range: what ``coerce`` checks of a float; the value is kept as it is, as ``float(x)`` would), and
the two cross-knob rules of ``DesignPoint._check_cross`` on numpy. ``tests/spec/test_many.py``
compares it with ``from_dict`` design by design, invalid values included.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, fields
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.spec.design import DesignPoint
from dse.spec.params import BY_NAME, PARAMS, Param, coerce

FIELD_DEFAULTS = {f.name: f.default for f in fields(DesignPoint) if f.default is not MISSING}
_BAD = object()                 # a value ``coerce`` refuses
_ABSENT = object()              # a knob a design does not give


def validate_flat(designs: Sequence[Mapping[str, Any]], extra: Mapping[str, Any] | None = None
                  ) -> tuple[np.ndarray, dict[str, list]] | None:
    """For each design (as ``{**design, **extra}``): whether ``DesignPoint.from_dict`` accepts it,
    and every knob's value over the designs as the design point would hold it (its default when
    not given); a refused design's values are meaningless. None when a design is not a flat table
    of known knobs (sections, unknown keys: ``from_dict`` alone words those errors)."""
    extra = dict(extra or {})
    given: set[str] = set(extra)
    for d in designs:
        if not isinstance(d, Mapping):
            return None
        given.update(d)
    if not given <= BY_NAME.keys():
        return None
    n = len(designs)
    ok = np.ones(n, dtype=bool)
    values: dict[str, list] = {}
    for p in PARAMS:
        if p.name in extra:
            v = _coerce_one(p, extra[p.name])
            ok &= v is not _BAD
            values[p.name] = [v] * n
        elif p.name not in given:
            values[p.name] = [FIELD_DEFAULTS[p.name]] * n
        else:
            try:
                col, bad = _knob(p, [d.get(p.name, _ABSENT) for d in designs])
            except TypeError:       # an unhashable value: from_dict words its error
                return None
            values[p.name] = col
            if bad is not None:
                ok &= ~bad
    ok &= _cross_ok(values, ok)
    return ok, values


def _coerce_one(p: Param, v: Any) -> Any:
    try:
        return coerce(p, v)
    except ConfigError:
        return _BAD


def _knob(p: Param, raw: list) -> tuple[list, np.ndarray | None]:
    """One knob's values over the designs (``_ABSENT``: the default) and the refused rows (None:
    none): a real knob's Python floats checked on numpy, every other value coerced once per
    distinct value."""
    if p.kind != "float":
        return _coerced(p, raw)
    is_f = [type(v) is float for v in raw]
    if all(is_f):
        return raw, _rows(_float_bad(p, np.array(raw, dtype=float)))
    if not any(is_f):
        return _coerced(p, raw)
    floats = [i for i, f in enumerate(is_f) if f]
    others = [i for i, f in enumerate(is_f) if not f]
    bad = np.zeros(len(raw), dtype=bool)
    bad[floats] = _float_bad(p, np.array([raw[i] for i in floats], dtype=float))
    col = list(raw)
    sub, sub_bad = _coerced(p, [raw[i] for i in others])
    for i, v in zip(others, sub):
        col[i] = v
    if sub_bad is not None:
        bad[others] = sub_bad
    return col, _rows(bad)


def _float_bad(p: Param, a: np.ndarray) -> np.ndarray:
    """What ``coerce`` refuses of a real knob's float values: not finite, or out of its range."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(a)
        if p.lo is not None:
            bad |= (a < p.lo) | ((a == p.lo) if p.lo_open else False)
        if p.hi is not None:
            bad |= a > p.hi
    return bad


def _rows(bad: np.ndarray) -> np.ndarray | None:
    return bad if bad.any() else None


def _coerced(p: Param, raw: list) -> tuple[list, np.ndarray | None]:
    """``coerce`` of each distinct value, once (``_ABSENT``: the knob's default)."""
    default = FIELD_DEFAULTS[p.name]
    types = set(map(type, raw))
    keyed = raw if len(types) == 1 else list(zip(map(type, raw), raw))   # 1, 1.0 and True apart
    table = {}
    for k, v in zip(keyed, raw):
        if k not in table:
            table[k] = default if v is _ABSENT else _coerce_one(p, v)
    col = list(map(table.__getitem__, keyed))
    if not any(v is _BAD for v in table.values()):
        return col, None
    return col, np.fromiter((v is _BAD for v in col), dtype=bool, count=len(col))


def _cross_ok(values: Mapping[str, list], ok: np.ndarray) -> np.ndarray:
    """``DesignPoint._check_cross`` on the rows still accepted (the others pass as they are)."""
    idx = np.flatnonzero(ok)
    out = np.ones(len(ok), dtype=bool)
    if not len(idx):
        return out
    rows = idx.tolist()

    def ints(name: str) -> np.ndarray:
        col = values[name]
        return np.array([col[i] for i in rows], dtype=np.int64)

    side = ints("core_side")
    g_raw = values["pe_groups_per_core"]
    groups = np.array([-1 if g_raw[i] is None else g_raw[i] for i in rows], dtype=np.int64)
    bad = groups > side ** 2
    bad |= side > np.maximum(ints("die_units_x"), ints("die_units_y"))
    out[idx] = ~bad
    return out
