"""Small router dumps written by the tests (never the unlicensed real dumps): random top-k ids,
'routes' JSON documents and single-request dumps. Shared by tests/workload and tests/cli."""
from __future__ import annotations

import json

import numpy as np
import pytest

MODEL = "olmoe-1b-7b"          # 16 layers x 64 experts, top-8: small and in the catalog
L, E, K = 16, 64, 8


def rand_ids(steps, batch, seed=0, layers=L, experts=E, k=K):
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((steps, layers, batch, experts)), axis=-1)[..., :k]


def routes_doc(ids_tokens, phases=None, meta=True):
    """A 'routes' JSON document: ids_tokens [T, L, K]."""
    routes = []
    for t, per_layer in enumerate(ids_tokens):
        routes.append({"token_pos": t, "token_id": 100 + t, "token_str": "x",
                       "phase": (phases[t] if phases else "decode"),
                       "layers": {str(layer): {"experts": [int(e) for e in per_layer[layer]], "weights": [0.1] * K}
                                  for layer in range(len(per_layer))}})
    doc = {"routes": routes}
    if meta:
        doc["meta"] = {"num_experts": E, "top_k": K, "num_moe_layers": L}
    return doc


def token_ids(seq: int, t: int) -> list[list[int]]:
    """Expert ids of token t of sequence seq, per layer: distinct, and unique to (seq, t, layer)."""
    return [[(seq * 17 + t * 5 + layer + j * 8) % E for j in range(K)] for layer in range(L)]


def write_dump(path, seq: int, n_tokens: int) -> None:
    routes = [{"token_pos": t, "phase": "decode",
               "layers": {str(layer): {"experts": ids} for layer, ids in enumerate(token_ids(seq, t))}}
              for t in range(n_tokens)]
    path.write_text(json.dumps({"meta": {"num_experts": E, "top_k": K, "num_moe_layers": L}, "routes": routes}))


@pytest.fixture
def dumps4(tmp_path):
    """Four single-request dumps of 3, 5, 2 and 4 tokens."""
    files = []
    for seq, n in enumerate((3, 5, 2, 4)):
        f = tmp_path / f"req{seq}.json"
        write_dump(f, seq, n)
        files.append(f)
    return files
