"""The validated design point: one object composed of hardware / workload / mapping parts.

A design point is immutable and hashable (it keys caches and de-duplicates DSE trials).
Build it from a dict (flat keys or ``[hardware]`` / ``[workload]`` / ``[mapping]`` sections),
from a TOML file, or with ``--set KEY=VALUE`` overrides; every value is checked against
``dse.spec.params.PARAMS`` and every error names the file, the key and what is allowed.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from dse.errors import ConfigError, show_value, where
from dse.errors import suggest as _suggest
from dse.spec.params import BY_NAME, PARAMS, PARTS, coerce, names
from dse.tomlfile import read_toml

# Sections a design file may carry besides the three parts: written by `dse export`,
# informational on input (re-evaluation recomputes the metrics).
INFO_SECTIONS = ("metrics", "provenance")


def default_pe_groups(core_side: int) -> int:
    """PE groups per core when ``pe_groups_per_core`` is not set: one per unit, core_side^2."""
    return core_side ** 2


EITHER = "either"            # a knob shown so where no metric can depend on its value


def pooling_matters(groups_per_core: int) -> bool:
    """Whether ``pooling`` can change a schedule: core-local pooling (``broadcast``) runs a job in
    another PE group of its expert's core; with one group per core there is none, and ``direct``
    and ``broadcast`` schedule, move and cost alike (``tests/spec/test_design.py`` evaluates both)."""
    return groups_per_core > 1


def architecture_view(flat: Mapping[str, Any]) -> dict[str, Any]:
    """A flat design with every knob that no metric can depend on, given the others, shown as
    ``EITHER`` (``pooling`` at one PE group per core): two designs that differ only there are one
    architecture (the knee candidates group by it, ``dse.search.front.knee``)."""
    out = dict(flat)
    side = out.get("core_side")
    groups = out.get("pe_groups_per_core")
    if groups is None and isinstance(side, int):
        groups = default_pe_groups(side)
    if "pooling" in out and isinstance(groups, int) and not pooling_matters(groups):
        out["pooling"] = EITHER
    return out


@dataclass(frozen=True)
class DesignPoint:
    # hardware
    core_side: int = 4
    tile_width: int = 4
    array_depth: int = 32768
    pe_groups_per_core: int | None = None
    n_macros: int = 16
    macro_width_bits: int = 128
    macro_mhz: float = 200.0
    pe_mhz: float = 400.0
    core_mesh_link_bits: int = 512
    die_noc_link_bits: int = 512
    noc_ghz: float = 1.0
    d2d_gbps_per_die: float = 96.0
    node_gbps: float = 34.0
    read_bw_scale: float = 1.0
    die_units_x: int = 16
    die_units_y: int = 20
    dies_per_package: int = 4
    packages_per_node: int = 8
    core_remainder: str = "partial"
    # workload
    model: str = "qwen3.5-35b-a3b"
    batch: int | None = None
    context: int = 4096
    attn_gpu: str = "h20"
    trace: str = "synthetic"
    trace_seed: int = 0
    trace_steps: int = 64
    profile_steps: int = 16
    # mapping
    reduction_order: str = "ep_first"
    placement: str = "lpt"
    layer_layout: str = "interleaved"
    pooling: str = "broadcast"
    fetch: str = "fifo"
    fetch_queue_depth: int = 16
    die_count_rule: str = "capacity"

    # -- derived defaults --------------------------------------------------------------
    @property
    def groups(self) -> int:
        """PE groups per core (default: one per unit, ``default_pe_groups(core_side)``)."""
        return self.pe_groups_per_core if self.pe_groups_per_core is not None else default_pe_groups(self.core_side)

    @property
    def run_batch(self) -> int:
        """Decode batch B (default: the model's native batch)."""
        if self.batch is not None:
            return self.batch
        from dse.catalog import get_model
        return get_model(self.model).native_batch

    # -- views -------------------------------------------------------------------------
    def part(self, name: str) -> dict[str, Any]:
        return {k: getattr(self, k) for k in names(name)}

    @property
    def hardware(self) -> dict[str, Any]:
        return self.part("hardware")

    @property
    def workload(self) -> dict[str, Any]:
        return self.part("workload")

    @property
    def mapping(self) -> dict[str, Any]:
        return self.part("mapping")

    def _flat(self) -> dict[str, Any]:
        """``dataclasses.asdict(self)`` without its recursive deep copy: every field is a scalar
        (int, float, str or None: ``params.coerce``), so a shallow dict is the same (8x faster;
        a search builds one per trial asked)."""
        return {name: getattr(self, name) for name in _FIELD_NAMES}

    def to_dict(self, *, sections: bool = False, resolved: bool = False) -> dict[str, Any]:
        """Flat (default) or sectioned dict. ``resolved`` fills derived defaults
        (groups, batch) so the dict re-creates exactly this point on any catalog."""
        flat = self._flat()
        if resolved:
            flat["pe_groups_per_core"] = self.groups
            flat["batch"] = self.run_batch
        if not sections:
            return flat
        out: dict[str, dict[str, Any]] = {p: {} for p in PARTS}
        for k, v in flat.items():
            if v is not None:
                out[BY_NAME[k].part][k] = v
        return out

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None = None, *, source: str | None = None,
                  overrides: Iterable[str] = (), base: DesignPoint | None = None) -> DesignPoint:
        """Validate ``data`` (flat or sectioned), then apply ``KEY=VALUE`` overrides."""
        values = base._flat() if base is not None else {}
        for key, val, keypath in _flatten(data or {}, source):
            values[key] = coerce(BY_NAME[key], val, source, keypath)
        for item in overrides:
            key, val, keypath = _parse_override(item)
            values[key] = coerce(BY_NAME[key], val, "--set", keypath)
        point = cls(**values)
        point._check_cross(source)
        return point

    @classmethod
    def from_file(cls, path: str | Path, *, overrides: Iterable[str] = ()) -> DesignPoint:
        p = Path(path)
        data = read_toml(p, allow_empty=False)
        point = cls.from_dict(data, source=str(p), overrides=overrides)
        # A trace path in a file is relative to that file, never to the working directory.
        if point.trace not in ("catalog", "synthetic") and not Path(point.trace).is_absolute() and not any(
                o.split("=", 1)[0].strip().endswith("trace") for o in overrides):
            point = replace(point, trace=str((p.parent / point.trace).resolve()))
        return point

    def with_(self, **changes: Any) -> DesignPoint:
        """A validated copy with some knobs changed."""
        return DesignPoint.from_dict(changes, base=self, source="with_()")

    def _check_cross(self, source: str | None) -> None:
        g = self.pe_groups_per_core
        if g is not None and g > self.core_side ** 2:
            raise ConfigError(f"{where(source, 'hardware.pe_groups_per_core')} = {g}: must be an integer "
                              f"in [1, {self.core_side ** 2}] (core_side^2 with core_side = {self.core_side})")
        side_max = max(self.die_units_x, self.die_units_y)
        if self.core_side > side_max:
            raise ConfigError(f"{where(source, 'hardware.core_side')} = {self.core_side}: must be an integer "
                              f"in [1, {side_max}] (the die is {self.die_units_x} x {self.die_units_y} units)")


_FIELD_NAMES = tuple(f.name for f in fields(DesignPoint))


def _key(key: Any) -> str:
    """A user-supplied key, cut short for a one-line message."""
    return show_value(key, 40)[1:-1] if isinstance(key, str) and len(key) > 40 else str(key)




def _flatten(data: Mapping[str, Any], source: str | None):
    """Yield (flat key, value, key path) from flat or sectioned input, rejecting unknowns."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source or 'design'}: expected a table of knobs")
    for key, val in data.items():
        if key in PARTS:
            if not isinstance(val, Mapping):
                raise ConfigError(f"{where(source, key)}: must be a table ([{key}])")
            allowed = names(key)
            for sub, subval in val.items():
                if sub not in allowed:
                    raise ConfigError(f"{where(source, f'{key}.{_key(sub)}')}: unknown key (allowed in [{key}]: "
                                      f"{', '.join(allowed)}){_suggest(sub, allowed)}")
                yield sub, subval, f"{key}.{sub}"
        elif key in INFO_SECTIONS:
            if not isinstance(val, Mapping):
                raise ConfigError(f"{where(source, key)}: must be a table ([{key}])")
            continue
        elif key in BY_NAME:
            yield key, val, key
        else:
            allowed = list(PARTS) + list(INFO_SECTIONS) + names()
            raise ConfigError(f"{where(source, _key(key))}: unknown key (allowed: sections "
                              f"{', '.join(PARTS + INFO_SECTIONS)} or a knob, see `dse params`)"
                              f"{_suggest(key, allowed)}")


def _parse_override(item: str) -> tuple[str, str, str]:
    shown = show_value(item)
    if "=" not in item:
        raise ConfigError(f"--set {shown}: expected KEY=VALUE, e.g. --set core_side=4")
    key, val = (s.strip() for s in item.split("=", 1))
    keypath = key
    if "." in key:
        part, key = key.split(".", 1)
        if part not in PARTS:
            raise ConfigError(f"--set {shown}: unknown section {_key(part)!r} (allowed: {', '.join(PARTS)})")
        if key not in names(part):
            raise ConfigError(f"--set {shown}: unknown key {_key(key)!r} in [{part}] (allowed: "
                              f"{', '.join(names(part))}){_suggest(key, names(part))}")
    elif key not in BY_NAME:
        raise ConfigError(f"--set {shown}: unknown key (allowed: {', '.join(names())})"
                          f"{_suggest(key, names())}")
    if val.lower() in ("none", "null", "") and BY_NAME[key].nullable:
        return key, None, keypath  # type: ignore[return-value]
    return key, val, keypath


# Keep the dataclass and the param table in step (a bug, not a user error, if they drift).
assert [f.name for f in fields(DesignPoint)] == [p.name for p in PARAMS], "DesignPoint and PARAMS differ"
assert all(getattr(DesignPoint, p.name) == p.default for p in PARAMS), "defaults differ"
