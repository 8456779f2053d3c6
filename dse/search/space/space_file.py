"""Search spaces: the ``spaces/*.toml`` loader and validator (the model: ``dse.search.space.space``).

A space lists the knobs a study varies, in order (later bounds may refer to earlier knobs)::

    description = "core side and pooling"

    [params]
    core_side = { type = "int", low = 2, high = 8, step = 2 }
    tile_width = { type = "categorical", choices = [1, 2, 4] }
    array_depth = { type = "categorical", choices = ["16K", "24K", "32K"] }
    macro_mhz = { type = "log", low = 100, high = 400 }            # float (or int) on a log scale
    pe_groups_per_core = { type = "int", low = 1, high = "core_side**2" }   # conditional bound
    fetch_queue_depth = { type = "int", low = 4, high = 32, step = 4, when = { fetch = "load_aware" } }
    noc_ghz = { type = "float", low = 0.5, high = 2.0, step = 0.25 }
    pooling = { type = "fixed", value = "broadcast" }

Types: ``int``, ``float`` (``log = true`` for a log scale, ``step`` for a grid), ``log`` (= the
knob's own kind on a log scale), ``categorical`` (``choices``) and ``fixed`` (``value``; not a search
dimension). ``when`` activates a knob only when earlier knobs take the given value(s); an inactive
knob keeps its base value. Every value and constant bound is checked against the knob's range in
``dse.spec.params.PARAMS`` (a space may not allow what the knob does not); expression bounds are
checked when evaluated. Errors name the file, the key path and what is allowed.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dse.errors import ConfigError, check_top_level
from dse.errors import suggest as _suggest
from dse.search.space import expr
from dse.search.space.space import Bound, Dim, Space
from dse.spec.params import BY_NAME, Param, coerce, names
from dse.tomlfile import read_toml

TYPES = ("int", "float", "log", "categorical", "fixed")
DIM_KEYS = {
    "int": {"type", "low", "high", "step", "log", "when", "doc"},
    "float": {"type", "low", "high", "step", "log", "when", "doc"},
    "log": {"type", "low", "high", "when", "doc"},
    "categorical": {"type", "choices", "when", "doc"},
    "fixed": {"type", "value", "doc"},
}
TOP_KEYS = ("description", "params")
# Knobs a space may not vary: the study's [workload] chooses the model(s).
NOT_IN_SPACE = {"model": "the model is chosen by the study's [workload] models, not by the space"}

def load_space(path: str | Path) -> Space:
    """Read and validate a space file; every error is one line naming file and key path."""
    p = Path(path)
    return space_from_dict(read_toml(p), source=str(p))


def space_from_dict(data: Mapping[str, Any], source: str = "space") -> Space:
    desc = check_top_level(data, TOP_KEYS, source)
    params = data.get("params")
    if not isinstance(params, Mapping) or not params:
        raise ConfigError(f"{source}: params: missing or empty; expected a table of knobs, e.g. "
                          f"core_side = {{ type = \"int\", low = 2, high = 8, step = 2 }}")
    dims: list[Dim] = []
    seen: list[str] = []
    for name, spec in params.items():
        dims.append(_dim(name, spec, source, seen))
        seen.append(name)
    order = {d.name: i for i, d in enumerate(dims)}
    for i, d in enumerate(dims):
        for nm in ("low", "high", "step"):
            b = getattr(d, nm)
            for r in sorted(b.refs if b is not None else ()):
                if order.get(r, -1) > i:
                    raise ConfigError(f"{source}: params.{d.name}.{nm} = {b.text!r}: refers to {r!r}, which the "
                                      f"space lists later; list {r} before {d.name}")
    if not any(d.searched for d in dims):
        raise ConfigError(f"{source}: params: every knob is fixed; a space needs at least one searched knob")
    return Space(source, tuple(dims), desc)


def _dim(name: str, spec: Any, source: str, earlier: list[str]) -> Dim:
    key = f"params.{name}"
    if name not in BY_NAME:
        raise ConfigError(f"{source}: {key}: unknown knob (see `dse params`){_suggest(name, names())}")
    if name in NOT_IN_SPACE:
        raise ConfigError(f"{source}: {key}: not allowed in a space ({NOT_IN_SPACE[name]})")
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{source}: {key}: must be a table, e.g. {{ type = \"int\", low = 1, high = 8 }}")
    p = BY_NAME[name]
    typ = spec.get("type")
    if typ not in TYPES:
        raise ConfigError(f"{source}: {key}.type = {typ!r}: must be one of {', '.join(TYPES)}")
    allowed = DIM_KEYS[typ]
    for k in spec:
        if k not in allowed:
            raise ConfigError(f"{source}: {key}.{k}: unknown key for type {typ!r} (allowed: "
                              f"{', '.join(sorted(allowed))}){_suggest(k, allowed)}")
    when = _when(spec.get("when"), source, key, earlier)
    if typ == "fixed":
        if "value" not in spec:
            raise ConfigError(f"{source}: {key}.value: missing (a fixed knob needs a value, {p.allowed()})")
        return Dim(name, "fixed", value=coerce(p, spec["value"], source, f"{key}.value"))
    if typ == "categorical":
        return _categorical_dim(p, spec, source, key, when)
    return _numeric_dim(p, typ, spec, source, key, earlier, when)


def _categorical_dim(p: Param, spec: Mapping[str, Any], source: str, key: str, when: Any) -> Dim:
    """A ``type = "categorical"`` knob: a non-empty list of distinct, valid values."""
    ch = spec.get("choices")
    if not isinstance(ch, list) or not ch:
        raise ConfigError(f"{source}: {key}.choices: must be a non-empty list of values ({p.allowed()})")
    vals = tuple(coerce(p, c, source, f"{key}.choices[{i}]") for i, c in enumerate(ch))
    if len(set(vals)) != len(vals):
        raise ConfigError(f"{source}: {key}.choices: duplicate values {list(vals)}")
    if any(v is None for v in vals):
        raise ConfigError(f"{source}: {key}.choices: values must not be empty")
    return Dim(p.name, "categorical", choices=vals, when=when)


def _numeric_dim(p: Param, typ: str, spec: Mapping[str, Any], source: str, key: str, earlier: list[str],
                 when: Any) -> Dim:
    """An ``int`` / ``float`` / ``log`` knob: bounds (constants or expressions of earlier knobs), step."""
    name = p.name
    if p.kind == "str":
        raise ConfigError(f"{source}: {key}.type = {typ!r}: {name} is a categorical knob; use type = "
                          f"\"categorical\" or \"fixed\" ({p.allowed()})")
    kind = "int" if p.kind == "int" else "float"
    if typ in ("int", "float") and typ != kind:
        raise ConfigError(f"{source}: {key}.type = {typ!r}: {name} is {'an integer' if kind == 'int' else 'a real'} "
                          f"knob; use type = \"{kind}\", \"log\", \"categorical\" or \"fixed\"")
    log = typ == "log" or spec.get("log", False)
    if not isinstance(log, bool):
        raise ConfigError(f"{source}: {key}.log = {log!r}: must be true or false")
    for req in ("low", "high"):
        if req not in spec:
            raise ConfigError(f"{source}: {key}.{req}: missing ({p.allowed()})")
    low = _bound(p, spec["low"], source, f"{key}.low", earlier)
    high = _bound(p, spec["high"], source, f"{key}.high", earlier)
    step = None
    if "step" in spec:
        if log:
            raise ConfigError(f"{source}: {key}.step: not allowed with a log scale (remove step or log)")
        step = _step(p, spec["step"], source, f"{key}.step", earlier)
    if low.tree is None and high.tree is None and low.const > high.const:  # type: ignore[operator]
        raise ConfigError(f"{source}: {key}: low {low.const} > high {high.const}: must be low <= high")
    if log and low.tree is None and low.const <= 0:  # type: ignore[operator]
        raise ConfigError(f"{source}: {key}.low = {low.const}: a log scale needs low > 0")
    if p.multiple_of:
        m = p.multiple_of
        if step is None or step.tree is not None or step.const % m:
            raise ConfigError(f"{source}: {key}.step: {name} must stay a multiple of {m}; give a constant step "
                              f"that is a multiple of {m} (or use categorical choices)")
    return Dim(name, kind, log=log, low=low, high=high, step=step, when=when)


def _bound(p: Param, v: Any, source: str, key: str, earlier: list[str]) -> Bound:
    if isinstance(v, str):
        try:  # a constant with a unit suffix ("16K")?
            return Bound(v, const=coerce(p, v, source, key))
        except ConfigError:
            pass
        return _expr_bound(v, source, key, earlier)
    return Bound(repr(v), const=coerce(p, v, source, key))


def _step(p: Param, v: Any, source: str, key: str, earlier: list[str]) -> Bound:
    if isinstance(v, str):
        try:
            from dse.spec.params import parse_int
            c = parse_int(v) if p.kind == "int" else float(v)
        except ValueError:
            return _expr_bound(v, source, key, earlier)
        v = c
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0 or (
            p.kind == "int" and not float(v).is_integer()):
        what = "a positive integer" if p.kind == "int" else "a positive number"
        raise ConfigError(f"{source}: {key} = {v!r}: must be {what}")
    return Bound(repr(v), const=int(v) if p.kind == "int" else float(v))


def _expr_bound(text: str, source: str, key: str, earlier: list[str]) -> Bound:
    try:
        tree = expr.parse(text)
    except expr.ExprError as exc:
        raise ConfigError(f"{source}: {key} = {text!r}: {exc}") from None
    for n in sorted(expr.names(tree)):
        if n not in BY_NAME:
            raise ConfigError(f"{source}: {key} = {text!r}: unknown name {n!r} (allowed: knobs listed earlier in "
                              f"the space or any knob of the base design){_suggest(n, names())}")
        if n == key.split(".")[1]:
            raise ConfigError(f"{source}: {key} = {text!r}: a bound may not refer to its own knob")
    return Bound(text, tree=tree)


def _when(spec: Any, source: str, key: str, earlier: list[str]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if spec is None:
        return ()
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError(f"{source}: {key}.when: must be a table of earlier knobs and values, "
                          f"e.g. when = {{ fetch = \"load_aware\" }}")
    out = []
    for k, v in spec.items():
        if k not in earlier:
            allowed = ", ".join(earlier) or "none"
            raise ConfigError(f"{source}: {key}.when.{k}: must name a knob listed earlier in the space "
                              f"(earlier: {allowed})")
        vals = v if isinstance(v, list) else [v]
        out.append((k, tuple(coerce(BY_NAME[k], x, source, f"{key}.when.{k}") for x in vals)))
    return tuple(out)



