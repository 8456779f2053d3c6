"""The design-point knobs: one declarative table, the single source for validation,
CLI overrides (``--set``), search-space bounds checking and the docs (``dse params``).

Every knob has a part (hardware / workload / mapping), a kind, a default, an allowed range or
set of choices, a unit and a one-line meaning. Defaults are the published design.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dse.errors import ConfigError, show_value, suggest, type_name, where

# Longest free-text knob value (a trace path, a model name): errors and files stay bounded.
MAX_STRING_CHARS = 4096

PARTS = ("hardware", "workload", "mapping")


@dataclass(frozen=True)
class Param:
    name: str
    part: str
    kind: str                      # "int" | "float" | "str"
    default: Any                   # None = derived (see `derived_default`)
    doc: str
    unit: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False          # (lo, hi] instead of [lo, hi]
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    multiple_of: int | None = None
    nullable: bool = False         # a derived default may be left unset
    aliases: tuple[str, ...] = field(default_factory=tuple)

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choice_values())
        if self.kind == "str":
            return "a non-empty string"
        kind = "an integer" if self.kind == "int" else "a number"
        lo_b = "(" if self.lo_open else "["
        rng = f" in {lo_b}{_fmt(self.lo)}, {_fmt(self.hi)}]"
        mult = f", a multiple of {self.multiple_of}" if self.multiple_of else ""
        return f"{kind}{rng}{mult}"

    def choice_values(self) -> tuple[str, ...]:
        c = self.choices
        return tuple(c()) if callable(c) else tuple(c or ())


def _fmt(x: float | None) -> str:
    if x is None:
        return "inf"
    return str(int(x)) if float(x).is_integer() else str(x)


def _model_names() -> tuple[str, ...]:
    from dse.catalog import model_names
    return tuple(model_names())


def _gpu_names() -> tuple[str, ...]:
    from dse.catalog import gpu_names
    return tuple(gpu_names())


P = Param
PARAMS: tuple[Param, ...] = (
    # ---- hardware -----------------------------------------------------------------------
    P("core_side", "hardware", "int", 4, "units per core side; a core is side x side units", "units", 1, 20),
    P("tile_width", "hardware", "int", 4,
      "tokens per PE tile (w); a job is up to w tokens of one expert", "tokens", 1, 64),
    P("array_depth", "hardware", "int", 32768,
      "columns per unit (128 B each); accepts 16K, 32K, ...", "columns", 256, 1 << 20),
    P("pe_groups_per_core", "hardware", "int", None,
      "independently scheduled PE groups per core (default core_side^2)", "groups", 1, 400, nullable=True),
    P("n_macros", "hardware", "int", 16, "ReRAM macros per unit", "macros", 1, 256),
    P("macro_width_bits", "hardware", "int", 128, "macro read width per cycle", "bit", 8, 4096, multiple_of=8),
    P("macro_mhz", "hardware", "float", 200.0, "macro read clock", "MHz", 1, 5000),
    P("pe_mhz", "hardware", "float", 400.0, "PE clock", "MHz", 1, 5000),
    P("core_mesh_link_bits", "hardware", "int", 512,
      "core-mesh link width (multicast weight read-outs)", "bit", 8, 8192, multiple_of=8),
    P("die_noc_link_bits", "hardware", "int", 512,
      "Die-NoC link width (activations and partial sums)", "bit", 8, 8192, multiple_of=8),
    P("noc_ghz", "hardware", "float", 1.0, "core-mesh and Die-NoC clock", "GHz", 0.05, 10),
    P("d2d_gbps_per_die", "hardware", "float", 96.0, "package D2D (UCIe) provision per die", "GB/s", 0, 10000),
    P("node_gbps", "hardware", "float", 34.0, "node-link provision per die (inter-package residual)", "GB/s", 0, 10000),
    P("read_bw_scale", "hardware", "float", 1.0,
      "multiplier on the ReRAM read bandwidth (sensitivity studies)", "x", 0, 16, lo_open=True),
    P("die_units_x", "hardware", "int", 16, "unit columns of the die's unit array", "units", 1, 64),
    P("die_units_y", "hardware", "int", 20, "unit rows of the die's unit array", "units", 1, 64),
    P("dies_per_package", "hardware", "int", 4, "dies per 2.5D package", "dies", 1, 64),
    P("packages_per_node", "hardware", "int", 8, "packages per node", "packages", 1, 256),
    P("core_remainder", "hardware", "str", "partial",
      "units left over when core_side does not tile the die: 'partial' edge cores or 'idle' (capacity lost)",
      choices=("partial", "idle")),
    # ---- workload -----------------------------------------------------------------------
    P("model", "workload", "str", "qwen3.5-35b-a3b", "MoE model from the catalog", choices=_model_names),
    P("batch", "workload", "int", None,
      "decode run-batch B (default: the model's native batch)", "tokens", 1, 1 << 20, nullable=True),
    P("context", "workload", "int", 4096, "context length for AF serving (attention KV reads)", "tokens", 1, 1 << 24),
    P("attn_gpu", "workload", "str", "h20", "GPU of the attention pool in AF serving", choices=_gpu_names),
    P("trace", "workload", "str", "synthetic",
      "routing: 'synthetic' (seeded trace calibrated to the model, scheduled), 'catalog' (closed-form U(B), "
      "no scheduling) or a trace path"),
    P("trace_seed", "workload", "int", 0, "seed of the synthetic trace", "", 0, 2**32 - 1),
    P("trace_steps", "workload", "int", 64, "decode steps of the synthetic trace", "steps", 1, 1 << 20),
    P("profile_steps", "workload", "int", 16,
      "placement profiling window: steps generated before a synthetic trace's measured window, or the first "
      "steps of a trace file (at most half); 0 = profile on the measured window", "steps", 0, 1 << 20),
    # ---- mapping ------------------------------------------------------------------------
    P("reduction_order", "mapping", "str", "ep_first",
      "expert-parallel-first or tensor-parallel-first reduction", choices=("ep_first", "tp_first")),
    P("placement", "mapping", "str", "lpt",
      "expert placement over PE groups", choices=("contiguous", "lpt", "coactivation")),
    P("layer_layout", "mapping", "str", "interleaved",
      "where a layer's experts sit: 'packed' into ceil(E / units per core) whole cores, one expert per unit "
      "(spec s3: a side-4 core holds 16 experts), or 'interleaved' over every core of the die (units of other "
      "layers in between act as pooling helpers)", choices=("packed", "interleaved")),
    P("pooling", "mapping", "str", "broadcast",
      "core-local multicast pooling ('broadcast') or none ('direct')", choices=("direct", "broadcast")),
    P("fetch", "mapping", "str", "fifo", "token fetch order", choices=("fifo", "load_aware")),
    P("fetch_queue_depth", "mapping", "int", 16,
      "load-aware fetch look-ahead, in multiples of the batch slot", "x", 1, 1024),
    P("die_count_rule", "mapping", "str", "capacity",
      "pool die count: 'capacity' = ceil(weights / die capacity) (the study's); 'packing' = whole chunks per unit",
      choices=("capacity", "packing")),
)

BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}


def names(part: str | None = None) -> list[str]:
    return [p.name for p in PARAMS if part is None or p.part == part]


_SUFFIX = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmM]i?)?\s*$")


def parse_int(text: str) -> int:
    """Parse '32768', '32K', '32k', '1M' (binary multiples: K = 1024)."""
    m = _SUFFIX.match(text)
    if not m:
        raise ValueError(text)
    num, suf = m.groups()
    mult = {None: 1, "k": 1024, "ki": 1024, "m": 1 << 20, "mi": 1 << 20}[suf.lower() if suf else None]
    val = float(num) * mult
    if not val.is_integer():
        raise ValueError(text)
    return int(val)


_ACCEPTED: dict[tuple, Any] = {}      # (knob name, type, value) -> the value it became (``coerce``)
MAX_ACCEPTED = 4096


def coerce(param: Param, value: Any, source: str | None = None, key: str | None = None) -> Any:
    """Validate and convert one value; raise ConfigError naming where and what is allowed.
    A str or int value a knob accepted before returns what it became then (a pure function of
    the knob and the value; a search validates the same few values many times), except for the
    knobs whose choices are read from the model / GPU catalogs: those are checked every time."""
    memo = type(value) in (str, int) and not callable(param.choices) and BY_NAME.get(param.name) is param
    if memo:
        hit = _ACCEPTED.get((param.name, type(value), value), _ACCEPTED)
        if hit is not _ACCEPTED:
            return hit
    out = _coerce(param, value, source, key)
    if memo:
        if len(_ACCEPTED) >= MAX_ACCEPTED:
            _ACCEPTED.clear()
        _ACCEPTED[(param.name, type(value), value)] = out
    return out


def _coerce(param: Param, value: Any, source: str | None, key: str | None) -> Any:
    loc = where(source, key or f"{param.part}.{param.name}")

    def bad(why: str = "") -> ConfigError:
        extra = f" ({why})" if why else ""
        return ConfigError(f"{loc} = {show_value(value)}: must be {param.allowed()}{extra}")

    if value is None:
        if param.nullable:
            return None
        raise bad()
    if param.kind == "str":
        return _coerce_str(param, value, loc, bad)
    if isinstance(value, bool):
        raise bad(f"got {type_name(value)}")
    if param.kind == "int":
        return _coerce_int(param, value, bad)
    return _coerce_float(param, value, bad)


def _coerce_str(param: Param, value: Any, loc: str, bad: Callable[..., ConfigError]) -> str:
    if not isinstance(value, str):
        if param.choices is None:
            raise ConfigError(f"{loc} = {show_value(value)}: must be a string (got {type_name(value)})")
        raise bad(f"got {type_name(value)}")
    if param.choices is not None and value not in param.choice_values():
        raise ConfigError(f"{loc} = {show_value(value)}: must be {param.allowed()}"
                          f"{suggest(value, [str(c) for c in param.choice_values()])}")
    if param.choices is None and (not value or len(value) > MAX_STRING_CHARS or "\x00" in value):
        raise ConfigError(f"{loc} = {show_value(value)}: must be a non-empty string of at most "
                          f"{MAX_STRING_CHARS} characters without NUL")
    return value


def _coerce_int(param: Param, value: Any, bad: Callable[..., ConfigError]) -> int:
    if isinstance(value, str):
        try:
            value_i = parse_int(value)
        except ValueError:
            raise bad() from None
    elif isinstance(value, int):
        value_i = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value_i = int(value)
    elif isinstance(value, float):
        raise bad("not finite" if not math.isfinite(value) else "not a whole number")
    else:
        raise bad(f"got {type_name(value)}")
    _check_range(param, value_i, bad)
    if param.multiple_of and value_i % param.multiple_of:
        raise bad()
    return value_i


def _coerce_float(param: Param, value: Any, bad: Callable[..., ConfigError]) -> float:
    if isinstance(value, str):
        try:
            value_f = float(value)
        except ValueError:
            raise bad() from None
    elif isinstance(value, (int, float)):
        try:
            value_f = float(value)
        except OverflowError:  # an integer beyond the float range
            raise bad() from None
    else:
        raise bad(f"got {type_name(value)}")
    if not math.isfinite(value_f):
        raise bad("not finite")
    _check_range(param, value_f, bad)
    return value_f


def _check_range(param: Param, v: float, bad) -> None:
    if param.lo is not None and (v < param.lo or (param.lo_open and v == param.lo)):
        raise bad()
    if param.hi is not None and v > param.hi:
        raise bad()
