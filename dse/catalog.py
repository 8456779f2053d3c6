"""The MoE model catalog and the GPU baselines (package data, extendable by TOML).

Built-in models live in ``dse/data/models.toml``. To add models without touching the package,
point ``DSE_CATALOG`` (``os.pathsep``-separated) or ``dse --catalog FILE`` at a TOML file with
tables of the same form; a table whose ``name`` matches a built-in replaces it.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dse.data import load_toml
from dse.errors import ConfigError
from dse.units import GIB

MAX_TABLE_INT = 1 << 24           # largest integer a catalog table may hold (shapes, batches)
MAX_TABLE_STRING = 200            # longest string value of a catalog table
# Without a native_batch, a model's batch is the one at which each expert is read by about this
# many tokens per step on average: B = round(4 E / k).
NATIVE_BATCH_EXPERT_READS = 4
WEIGHT_SIZE_TOLERANCE = 0.01      # a table's ffn_weights_gib must match its shape within 1 %

MAX_EXPERTS = 1 << 16   # routing traces store expert ids as uint16 (dse.workload.trace.id_dtype)

_REQUIRED = {"name": str, "experts": int, "top_k": int, "moe_layers": int, "hidden": int,
             "expert_intermediate": int}
_OPTIONAL = {"shared_experts": int, "native_batch": int, "ffn_weights_gib": float, "source": str,
             "router_bytes_per_layer": int, "routing_profile": str, "routing": dict, "attention": dict}


@dataclass(frozen=True)
class MoEModel:
    name: str
    experts: int
    top_k: int
    moe_layers: int
    hidden: int
    expert_intermediate: int
    shared_experts: int = 0
    native_batch: int = 0
    ffn_weights_gib: float | None = None
    source: str = ""
    router_bytes_per_layer: int | None = None
    routing_profile: str | None = None
    routing: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    attention: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    # -- shape ---------------------------------------------------------------------------
    @property
    def expert_bytes(self) -> int:
        """FP8 bytes of one expert: gate + up (d x d_ff) and down (d_ff x d)."""
        return 3 * self.hidden * self.expert_intermediate

    @property
    def router_bytes(self) -> int:
        """Router (gate) weights read per layer per step; FP8 d x E unless the table says otherwise."""
        return self.router_bytes_per_layer if self.router_bytes_per_layer is not None else self.hidden * self.experts

    @property
    def experts_per_token(self) -> int:
        """Experts one token runs per layer: its top-k routed experts and the shared ones."""
        return self.top_k + self.shared_experts

    @property
    def experts_per_layer(self) -> int:
        """Experts of one layer: routed and shared."""
        return self.experts + self.shared_experts

    @property
    def expert_instances(self) -> int:
        """Experts the pool holds: layers x (routed + shared)."""
        return self.moe_layers * (self.experts + self.shared_experts)

    @property
    def ffn_weight_bytes(self) -> int:
        """FFN weights of the whole model: layers x (routed + shared) x expert bytes."""
        return self.moe_layers * (self.experts + self.shared_experts) * self.expert_bytes

    @property
    def experts_over_k(self) -> float:
        return self.experts / self.top_k

    @property
    def union_table(self) -> dict[int, float]:
        """Measured U(B) points {B: U}; U(1) = k is implied when absent."""
        raw = self.routing.get("union", {}) if self.routing else {}
        table = {int(b): float(u) for b, u in raw.items()}
        if table:
            table.setdefault(1, float(self.top_k))
        return dict(sorted(table.items()))


def _builtin_tables() -> dict[str, dict]:
    return load_toml("models.toml")


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", dict: "a table"}
_ATTENTION = ("kv_bytes_per_ctx_token", "non_expert_bytes")


def _show(v: Any) -> str:
    from dse.errors import show_value
    return show_value(v)


def _finite_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _validate_routing(tkey: str, routing: dict, experts: int, source: str) -> None:
    """The measured unions feed U(B): batch keys are integers >= 1, values in (0, experts]."""
    if "union" not in routing:
        return
    union = routing["union"]
    loc = f"{source}: {tkey}.routing.union"
    if not isinstance(union, dict):
        raise ConfigError(f"{loc} = {_show(union)}: must be a table {{ B = U(B), ... }}")
    for b, u in union.items():
        try:
            b_int = int(b)
        except ValueError:
            b_int = 0
        if not 1 <= b_int <= (1 << 24):
            raise ConfigError(f"{loc}.{str(b)[:40]}: batch key must be an integer in [1, {1 << 24}]")
        if not _finite_number(u) or not 0 < u <= experts:
            raise ConfigError(f"{loc}.{b} = {_show(u)}: must be a number in (0, {experts}] (experts)")


def _validate_attention(tkey: str, att: dict, source: str) -> None:
    """AF-serving attention shape: exactly the two byte counts, finite and >= 0."""
    loc = f"{source}: {tkey}.attention"
    for k, v in att.items():
        if k not in _ATTENTION:
            raise ConfigError(f"{loc}.{k}: unknown key (allowed: {', '.join(_ATTENTION)})")
        if not _finite_number(v) or v < 0:
            raise ConfigError(f"{loc}.{k} = {_show(v)}: must be a finite number >= 0 (bytes)")
    for k in _ATTENTION:
        if att and k not in att:
            raise ConfigError(f"{loc}.{k}: missing (required in [attention]: {', '.join(_ATTENTION)})")


def _validate_table(tkey: str, t: Any, source: str) -> MoEModel:
    if not isinstance(t, dict):
        raise ConfigError(f"{source}: {tkey} = {_show(t)}: must be a table ([{tkey}]) describing a model")
    for k in _REQUIRED:
        if k not in t:
            raise ConfigError(f"{source}: {tkey}.{k}: missing (required: {', '.join(_REQUIRED)})")
    kwargs: dict[str, Any] = {}
    for k, v in t.items():
        typ = _REQUIRED.get(k) or _OPTIONAL.get(k)
        if typ is None:
            raise ConfigError(f"{source}: {tkey}.{k}: unknown key (allowed: "
                              f"{', '.join(list(_REQUIRED) + list(_OPTIONAL))})")
        if typ is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if not isinstance(v, typ) or isinstance(v, bool):
            raise ConfigError(f"{source}: {tkey}.{k} = {_show(v)}: must be of type {typ.__name__} "
                              f"({_TYPE_NAMES[typ]})")
        if typ is int and not (0 <= v <= MAX_TABLE_INT):
            raise ConfigError(f"{source}: {tkey}.{k} = {_show(v)}: must be an integer in [0, {MAX_TABLE_INT}]")
        if typ is float and not math.isfinite(v):
            raise ConfigError(f"{source}: {tkey}.{k} = {_show(v)}: must be finite")
        if typ is str and k != "source" and (not v.strip() or len(v) > MAX_TABLE_STRING or "\x00" in v):
            raise ConfigError(f"{source}: {tkey}.{k} = {_show(v)}: must be a non-empty string of at most "
                              f"{MAX_TABLE_STRING} characters")
        kwargs[k] = v
    for k in ("experts", "top_k", "moe_layers", "hidden", "expert_intermediate"):
        if kwargs[k] < 1:
            raise ConfigError(f"{source}: {tkey}.{k} = {kwargs[k]}: must be an integer >= 1")
    if kwargs["experts"] > MAX_EXPERTS:
        raise ConfigError(f"{source}: {tkey}.experts = {kwargs['experts']}: must be <= {MAX_EXPERTS} (expert ids "
                          f"are stored as uint16)")
    if kwargs["top_k"] > kwargs["experts"]:
        raise ConfigError(f"{source}: {tkey}.top_k = {kwargs['top_k']}: must be <= experts ({kwargs['experts']})")
    if "routing" in kwargs:
        _validate_routing(tkey, kwargs["routing"], kwargs["experts"], source)
    if "attention" in kwargs:
        _validate_attention(tkey, kwargs["attention"], source)
    model = MoEModel(**kwargs)
    if model.native_batch == 0:
        object.__setattr__(model, "native_batch",
                           max(1, round(NATIVE_BATCH_EXPERT_READS * model.experts / model.top_k)))
    if model.ffn_weights_gib is not None:
        got = model.ffn_weight_bytes / GIB
        if abs(got / model.ffn_weights_gib - 1) > WEIGHT_SIZE_TOLERANCE:
            raise ConfigError(f"{source}: {tkey}.ffn_weights_gib = {model.ffn_weights_gib}: the shape gives "
                              f"{got:.2f} GiB (layers x (experts + shared) x 3 d d_ff); fix one of them")
    return model


def _user_files() -> list[str]:
    env = os.environ.get("DSE_CATALOG", "")
    return [p for p in env.split(os.pathsep) if p]


@functools.cache
def _catalog(user_files: tuple[str, ...]) -> dict[str, MoEModel]:
    models: dict[str, MoEModel] = {}
    for tkey, t in _builtin_tables().items():
        m = _validate_table(tkey, t, "dse/data/models.toml")
        models[m.name] = m
    for f in user_files:
        from dse.tomlfile import read_toml
        data = read_toml(Path(f))
        if not data:
            raise ConfigError(f"{f}: empty catalog (expected [name] tables with: {', '.join(_REQUIRED)})")
        for tkey, t in data.items():
            m = _validate_table(tkey, t, f)
            models[m.name] = m
    return models


def catalog() -> dict[str, MoEModel]:
    return _catalog(tuple(_user_files()))


def model_names() -> list[str]:
    return list(catalog())


def get_model(name: str) -> MoEModel:
    models = catalog()
    try:
        return models[name]
    except KeyError:
        raise ConfigError(f"model {name!r}: not in the catalog (allowed: {', '.join(models)})") from None


# -- GPUs ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GPU:
    key: str
    name: str
    read_tbps: float
    fp8_tflops: float
    capacity_gib: float
    board_power_w: float
    hbm_pj_per_byte: float

    @property
    def read_bps(self) -> float:
        return self.read_tbps * 1e12

    @property
    def flops(self) -> float:
        return self.fp8_tflops * 1e12


@functools.cache
def gpus() -> dict[str, GPU]:
    return {k: GPU(key=k, **v) for k, v in load_toml("gpus.toml").items()}


def gpu_names() -> list[str]:
    return list(gpus())


def get_gpu(key: str) -> GPU:
    try:
        return gpus()[key]
    except KeyError:
        raise ConfigError(f"gpu {key!r}: unknown (allowed: {', '.join(gpus())})") from None
