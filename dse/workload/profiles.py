"""Measured routing profiles shipped in derived, small form (``dse/data/profiles/*.npz``).

A profile is aggregate routing data of a real model: per recorded layer, the fraction of decode
tokens whose top-k contains each expert ("heat", summing to k over a layer), and the strongest
within-layer co-activation pairs (count per token and lift = P(ij) / (P(i) P(j))). No per-token
data: the sources publish counts only. Shipped (see ``dse/data/profiles/ATTRIBUTION.md``):

=====================  ==========================================================  ============
 profile               source                                                        licence
=====================  ==========================================================  ============
 qwen3-30b-a3b         mbolt co-activation atlas, 48 x 128, 75,773 decode tokens      MIT
 qwen3-next-80b-a3b    mbolt co-activation atlas, 48 x 512, 24,963 decode tokens      MIT
 glm-5.2               mbolt GLM-5.2 overlay, 75 x 256, 1,270 decode tokens           MIT
 olmoe-1b-7b           OLMoE routing analysis, layers 0 / 7 / 15 of 16, 64 experts     Apache-2.0
 mixtral-8x7b          OLMoE routing analysis (Mixtral), layers 0 / 7 / 15 of 32       Apache-2.0
=====================  ==========================================================  ============

Uses: ``union_from_profile`` (closed-form U(B) for catalog models naming a ``routing_profile``,
independent tokens), and the synthetic generator's ``--profile`` (measured popularity per layer,
co-activation topics from the measured pairs). The ``derive_*`` functions rebuild the files from
the upstream JSON (run once by a maintainer, never at run time).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dse.data import path as data_path
from dse.errors import ConfigError

PAIRS_PER_LAYER = 64
# Catalog models without a `routing_profile` key that a shipped profile describes.
MODEL_PROFILES = {"olmoe-1b-7b": "olmoe-1b-7b", "mixtral-8x7b": "mixtral-8x7b"}


@dataclass(frozen=True)
class Profile:
    name: str
    source: str
    licence: str
    tokens: int
    top_k: int
    layers: np.ndarray        # model layer index of every recorded layer [Lp]
    model_layers: int         # layers of the profiled model
    heat: np.ndarray          # [Lp, E] selection frequency per token (rows sum to k)
    pairs: np.ndarray         # [P, 3] int: recorded-layer row, expert i, expert j
    pair_freq: np.ndarray     # [P] co-selection frequency per token
    pair_lift: np.ndarray     # [P]

    @property
    def experts(self) -> int:
        return self.heat.shape[1]

    def layer_map(self, n_layers: int) -> np.ndarray:
        """Recorded-layer row used for each of ``n_layers`` model layers (nearest relative depth)."""
        if len(self.layers) == n_layers:
            return np.arange(n_layers)
        depth = self.layers / max(1, self.model_layers - 1)
        want = np.arange(n_layers) / max(1, n_layers - 1)
        return np.abs(want[:, None] - depth[None, :]).argmin(axis=1)

    def heat_for(self, n_layers: int) -> np.ndarray:
        return self.heat[self.layer_map(n_layers)]


def names() -> list[str]:
    return sorted(p.name[:-4] for p in data_path("profiles").iterdir() if p.name.endswith(".npz"))


@functools.cache
def load(name: str) -> Profile:
    """A shipped profile by name (see :func:`names`)."""
    f = data_path("profiles", f"{name}.npz")
    if not f.is_file():
        raise ConfigError(f"routing profile {name!r}: not shipped (allowed: {', '.join(names())})")
    with f.open("rb") as fh, np.load(fh, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    heat = d["heat"].astype(np.float64)
    heat *= int(d["top_k"]) / heat.sum(axis=1, keepdims=True)      # rows sum to k exactly (stored as float32)
    return Profile(name=str(d["name"]), source=str(d["source"]), licence=str(d["licence"]),
                   tokens=int(d["tokens"]), top_k=int(d["top_k"]), layers=d["layers"].astype(np.int64),
                   model_layers=int(d["model_layers"]), heat=heat,
                   pairs=d["pairs"].astype(np.int64), pair_freq=d["pair_freq"].astype(np.float64),
                   pair_lift=d["pair_lift"].astype(np.float64))


def for_model(model) -> str | None:
    """The shipped profile describing a catalog model, if any."""
    name = model.routing_profile or MODEL_PROFILES.get(model.name)
    return name if name in names() else None


def union_independent(freq: np.ndarray, batch: float) -> float:
    """Mean over layers of sum_e 1 - (1 - f_e)^B: U(B) for independent tokens (f = heat)."""
    f = np.clip(freq, 0.0, 1.0)
    return float((1.0 - (1.0 - f) ** batch).sum(axis=-1).mean())


@functools.lru_cache(maxsize=1024)
def union_from_profile(name: str, batch: int) -> float | None:
    """Closed-form U(B) from a shipped profile's popularity (independent tokens), or None."""
    if name not in names():
        return None
    return union_independent(load(name).heat, batch)


# -- derivation from the upstream files (maintainer use; inputs are paths the caller gives) -----
def _top_pairs(rows: list[list], n_tokens: int, layer_row: int) -> list[tuple]:
    out = []
    for p in sorted(rows, key=lambda r: -r[2])[:PAIRS_PER_LAYER]:
        out.append((layer_row, int(p[0]), int(p[1]), p[2] / n_tokens, float(p[3])))
    return out


def derive_mbolt(json_path: str | Path, name: str, model_layers: int | None = None) -> dict:
    """Arrays of a profile from an mbolt ``coactivation_*.json`` (heat + top pairs per layer)."""
    d = json.loads(Path(json_path).read_text())
    k = int(d["k"])
    layers = d["layers"]
    heat = np.array([L["heat"] for L in layers], dtype=np.float64)
    if "n_decode_tokens" in d:
        n_tok = int(d["n_decode_tokens"])
    else:
        n_tok = int(d["profile_rows"]["decode_rows"])
    pairs = []
    for r, L in enumerate(layers):
        pairs += _top_pairs(L["pairs"], n_tok, r)
    src = d.get("source_trace") or f"mbolt coactivation atlas ({d.get('model')}, {d.get('quant', '')})"
    return _arrays(name, f"{src}; github.com/doramirdor/mbolt @ e7e9dbf", "MIT (Copyright (c) 2026 Dor Amir)",
                   n_tok, k, np.arange(len(layers)), model_layers or len(layers), heat / n_tok, pairs)


def derive_olmoe(json_path: str | Path, name: str) -> dict:
    """Arrays of a profile from the OLMoE routing-analysis counts (all domains summed)."""
    d = json.loads(Path(json_path).read_text())
    k, rec = int(d["top_k"]), [int(x) for x in d["layers_recorded"]]
    counts = np.zeros((len(rec), int(d["num_experts"])))
    for dom in d["expert_counts"].values():
        for r, layer in enumerate(rec):
            counts[r] += np.array(dom[str(layer)], dtype=np.float64)
    n_tok = int(round(counts[0].sum() / k))
    return _arrays(name, f"OLMoE routing analysis ({d['model']}, all domains); github.com/allenai/OLMoE @ 357454f",
                   "Apache-2.0", n_tok, k, np.array(rec), int(d["num_layers"]), counts / n_tok, [])


def _arrays(name, source, licence, n_tok, k, layers, model_layers, heat, pairs) -> dict:
    p = np.array([(a, b, c) for a, b, c, _, _ in pairs], dtype=np.int32).reshape(-1, 3)
    return {"name": np.array(name), "source": np.array(source), "licence": np.array(licence),
            "tokens": np.array(n_tok), "top_k": np.array(k), "layers": np.asarray(layers, dtype=np.int32),
            "model_layers": np.array(model_layers), "heat": heat.astype(np.float32), "pairs": p,
            "pair_freq": np.array([x[3] for x in pairs], dtype=np.float32),
            "pair_lift": np.array([x[4] for x in pairs], dtype=np.float32)}


def write(arrays: dict, out_dir: str | Path) -> Path:
    out = Path(out_dir) / f"{arrays['name']}.npz"
    np.savez_compressed(out, **arrays)
    return out
