"""Design points as columns: one numpy array per knob, the vectorised evaluator's input.

Integer knobs are int64 arrays, real knobs float64, string knobs integer codes into the knob's
choices (``categories``). A knob not given takes its default; the derived defaults are resolved
as ``DesignPoint`` resolves them (``batch``: the model's native batch; ``pe_groups_per_core``:
core_side^2). Knobs that only the trace-driven model reads (``TRACE_KNOBS``) are not kept: the
closed form ignores them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.spec import DesignPoint, default_pe_groups
from dse.spec.params import BY_NAME, PARAMS

# Knobs the closed-form model never reads (placement, scheduling, the trace itself); ``fetch`` and
# ``fetch_queue_depth`` are kept: load-aware fetch's staging buffers are die area.
TRACE_KNOBS = ("trace", "trace_seed", "trace_steps", "profile_steps", "placement", "layer_layout",
               "pooling")
KNOBS = tuple(p.name for p in PARAMS if p.name not in TRACE_KNOBS)


def categories(name: str) -> tuple[str, ...]:
    """The values a string knob's codes index."""
    return BY_NAME[name].choice_values()


@dataclass(frozen=True)
class Columns:
    """A table of ``n`` closed-form design points (see the module docstring)."""
    data: Mapping[str, np.ndarray]
    n: int

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]

    def is_(self, name: str, value: str) -> np.ndarray:
        """Rows whose string knob ``name`` equals ``value``."""
        return self.data[name] == categories(name).index(value)

    def value(self, name: str, i: int) -> Any:
        v = self.data[name][i].item()
        return categories(name)[v] if BY_NAME[name].kind == "str" else v

    def take(self, idx: np.ndarray | slice) -> Columns:
        data = {k: v[idx] for k, v in self.data.items()}
        return Columns(data, len(next(iter(data.values()))))

    def design(self, i: int) -> dict[str, Any]:
        """Row ``i`` as flat knobs (trace = 'catalog': the closed form)."""
        out = {k: self.value(k, i) for k in KNOBS}
        out["trace"] = "catalog"
        return out

    def point(self, i: int) -> DesignPoint:
        """Row ``i`` as a validated design point (the scalar path's input)."""
        return DesignPoint.from_dict(self.design(i), source=f"design table row {i}")

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_values(cls, values: Mapping[str, Any], n: int) -> Columns:
        """Build from knob -> array of n Python values (or one value for every row); knobs not
        given take their defaults. String knobs may be given as values or as codes."""
        for k in values:
            if k not in BY_NAME:
                raise ConfigError(f"design table: unknown knob {k!r} (see `dse params`)")
        data: dict[str, np.ndarray] = {}
        for name in KNOBS:
            p = BY_NAME[name]
            v = values.get(name, p.default)
            if v is None:
                continue
            data[name] = _column(name, v, n)
        model_names = categories("model")
        from dse.catalog import get_model
        native = np.array([get_model(m).native_batch for m in model_names], dtype=np.int64)
        if "batch" not in data:
            data["batch"] = native[data["model"]]
        if "pe_groups_per_core" not in data:
            data["pe_groups_per_core"] = data["core_side"] * data["core_side"]
        return cls(data, n)

    @classmethod
    def from_points(cls, points: Sequence[DesignPoint]) -> Columns:
        """Build from validated design points (their trace knobs are ignored)."""
        # = [p.to_dict(resolved=True)[k] for p in points] per knob, without copying every point
        return cls.from_knobs({k: [getattr(p, k) for p in points] for k in KNOBS}, len(points))

    @classmethod
    def from_knobs(cls, values: Mapping[str, Sequence[Any]], n: int) -> Columns:
        """Build from validated knob values, one list per knob of ``KNOBS`` over ``n`` rows (a
        design point's fields: ``pe_groups_per_core`` and ``batch`` may be None, resolved as
        ``DesignPoint.groups`` and ``run_batch`` resolve them; ``dse.spec.many.validate_flat``)."""
        values = {k: values[k] for k in KNOBS}
        values["pe_groups_per_core"] = [g if g is not None else default_pe_groups(s)
                                        for g, s in zip(values["pe_groups_per_core"], values["core_side"])]
        from dse.catalog import get_model
        native: dict[str, int] = {}             # = run_batch, the model looked up once per name
        values["batch"] = [b if b is not None else native.get(m) or
                           native.setdefault(m, get_model(m).native_batch)
                           for b, m in zip(values["batch"], values["model"])]
        return cls.from_values(values, n)


def _column(name: str, v: Any, n: int) -> np.ndarray:
    p = BY_NAME[name]
    scalar = isinstance(v, (str, int, float)) or np.ndim(v) == 0
    if p.kind == "str":
        cats = categories(name)
        if scalar:
            return _constant(_code(name, v, cats), np.int64, n)
        arr = np.asarray(v)
        if arr.dtype.kind in "iu":
            return arr.astype(np.int64)
        lut = {c: i for i, c in enumerate(cats)}
        try:
            return np.fromiter((lut[x] for x in arr.tolist()), dtype=np.int64, count=len(arr))
        except KeyError as exc:
            raise ConfigError(f"design table: {name} = {exc.args[0]!r}: must be one of {', '.join(cats)}") from None
    dtype = np.int64 if p.kind == "int" else np.float64
    if scalar:
        return _constant(v, dtype, n)
    return np.asarray(v, dtype=dtype)


def _code(name: str, v: Any, cats: tuple[str, ...]) -> int:
    if isinstance(v, (int, np.integer)):
        return int(v)
    if v not in cats:
        raise ConfigError(f"design table: {name} = {v!r}: must be one of {', '.join(cats)}")
    return cats.index(v)


def concat(parts: Iterable[Columns]) -> Columns:
    parts = list(parts)
    data = {k: np.concatenate([p.data[k] for p in parts]) for k in parts[0].data}
    return Columns(data, sum(p.n for p in parts))


def _constant(v: Any, dtype: Any, n: int) -> np.ndarray:
    """One value for every row: a read-only broadcast view (no n-element copy per knob)."""
    return np.broadcast_to(np.array(v, dtype=dtype), (n,))
