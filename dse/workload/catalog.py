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

GIB = 1 << 30

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


def _validate_table(tkey: str, t: Any, source: str) -> MoEModel:
    if not isinstance(t, dict):
        raise ConfigError(f"{source}: {tkey}: must be a table describing a model")
    for k, typ in _REQUIRED.items():
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
            raise ConfigError(f"{source}: {tkey}.{k} = {v!r}: must be of type {typ.__name__}")
        if typ is int and not (0 <= v <= (1 << 24)):
            raise ConfigError(f"{source}: {tkey}.{k} = {v!r}: must be an integer in [0, {1 << 24}]")
        if typ is float and not math.isfinite(v):
            raise ConfigError(f"{source}: {tkey}.{k} = {v!r}: must be finite")
        kwargs[k] = v
    for k in ("experts", "top_k", "moe_layers", "hidden", "expert_intermediate"):
        if kwargs[k] < 1:
            raise ConfigError(f"{source}: {tkey}.{k} = {kwargs[k]}: must be an integer >= 1")
    if kwargs["top_k"] > kwargs["experts"]:
        raise ConfigError(f"{source}: {tkey}.top_k = {kwargs['top_k']}: must be <= experts ({kwargs['experts']})")
    model = MoEModel(**kwargs)
    if model.native_batch == 0:
        object.__setattr__(model, "native_batch", max(1, round(4 * model.experts / model.top_k)))
    if model.ffn_weights_gib is not None:
        got = model.ffn_weight_bytes / GIB
        if abs(got / model.ffn_weights_gib - 1) > 0.01:
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
        from dse.spec.design import read_toml
        data = read_toml(Path(f))
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
