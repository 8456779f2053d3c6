"""Router-dump converters (routes JSON, JSON lines) and their errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dse.errors import TraceError
from dse.workload.convert import convert


MODEL = "olmoe-1b-7b"          # 16 layers x 64 experts, top-8: small and in the catalog


L, E, K = 16, 64, 8


def rand_ids(steps, batch, seed=0, layers=L, experts=E, k=K):
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((steps, layers, batch, experts)), axis=-1)[..., :k]


# -- router dumps -------------------------------------------------------------------------------
def routes_doc(ids_tokens, phases=None, meta=True):
    """A 'routes' JSON document: ids_tokens [T, L, K]."""
    routes = []
    for t, per_layer in enumerate(ids_tokens):
        routes.append({"token_pos": t, "token_id": 100 + t, "token_str": "x",
                       "phase": (phases[t] if phases else "decode"),
                       "layers": {str(l): {"experts": [int(e) for e in per_layer[l]], "weights": [0.1] * K}
                                  for l in range(len(per_layer))}})
    doc = {"routes": routes}
    if meta:
        doc["meta"] = {"num_experts": E, "top_k": K, "num_moe_layers": L}
    return doc


def test_routes_json_infers_model_and_cuts_steps(tmp_path):
    tok = rand_ids(1, 20)[0].transpose(1, 0, 2)            # [20 tokens, L, K]
    phases = ["prefill"] * 4 + ["decode"] * 16
    f = tmp_path / "r.json"
    f.write_text(json.dumps(routes_doc(tok, phases)))
    tr = convert([f], batch=5)
    assert tr.meta.model == MODEL and tr.experts.shape == (3, L, 5, K)   # 16 decode tokens -> 3 steps of 5
    assert (tr.experts[0, :, 0] == tok[4]).all()                        # first decode token
    assert (tr.experts[2, :, 4] == tok[18]).all()
    everything = convert([f], batch=5, phase="all")
    assert everything.experts.shape[0] == 4
    one_step = convert([f])                                             # fewer tokens than native B
    assert one_step.meta.batch == 16 and one_step.meta.steps == 1


def test_jsonl_per_layer_records_with_aliases_and_steps(tmp_path):
    ids = rand_ids(2, 3)                                   # 2 steps x 3 tokens
    lines = []
    for s in range(2):
        for t in range(3):
            for l in range(L):
                lines.append(json.dumps({"step": s, "token_pos": t, "layer_idx": l,
                                         "topk_ids": [int(e) for e in ids[s, l, t]]}))
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(reversed(lines)) + "\n")        # order on disk does not matter
    tr = convert([f], model=MODEL)
    assert tr.meta.batch == 3 and (tr.experts == ids).all()


def test_jsonl_per_token_layers_object(tmp_path):
    tok = rand_ids(1, 6)[0].transpose(1, 0, 2)
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(json.dumps({"token": t, "layers": {str(l): [int(e) for e in tok[t, l]]
                                                                for l in range(L)}}) for t in range(6)))
    tr = convert([f], model=MODEL, batch=3)
    assert tr.experts.shape == (2, L, 3, K) and (tr.experts[1, :, 2] == tok[5]).all()


def _dump_error(tmp_path, doc, name="bad.json", **kw):
    f = tmp_path / name
    f.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.raises(TraceError) as ei:
        convert([f], **kw)
    msg = str(ei.value)
    assert "\n" not in msg and str(f) in msg
    return msg


def test_dump_errors(tmp_path):
    tok = rand_ids(1, 4)[0].transpose(1, 0, 2)
    doc = routes_doc(tok)
    del doc["routes"][2]["layers"]["5"]
    assert "missing layer 5" in _dump_error(tmp_path, doc)
    doc = routes_doc(tok)
    doc["routes"][1]["layers"]["0"]["experts"] = doc["routes"][1]["layers"]["0"]["experts"][:7]
    assert "expected top-8" in _dump_error(tmp_path, doc)
    doc = routes_doc(tok)
    doc["routes"][3]["layers"]["2"]["experts"][1] = 99
    assert "must be in [0, 63]" in _dump_error(tmp_path, doc)
    doc = routes_doc(tok)
    ex = doc["routes"][0]["layers"]["4"]["experts"]
    ex[1] = ex[0]
    assert "repeats expert" in _dump_error(tmp_path, doc)
    doc = routes_doc(tok)
    assert "wrong model" in _dump_error(tmp_path, doc, model="qwen3-30b-a3b")
    doc = routes_doc(tok)
    doc["meta"]["num_experts"] = 60
    assert "no catalog model has" in _dump_error(tmp_path, doc)
    assert "not valid JSON" in _dump_error(tmp_path, '{"routes": [', name="x.json")
    assert "line 2: not valid JSON" in _dump_error(tmp_path, '{"token": 0, "layer": 0, "experts": [1]}\n{oops\n',
                                                   name="x.jsonl", model=MODEL)
    assert "fewer than batch 8" in _dump_error(tmp_path, routes_doc(tok), batch=8)
    assert "unrecognised router dump" in _dump_error(tmp_path, {"hello": 1})
