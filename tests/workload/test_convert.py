"""Router-dump converters (routes JSON, JSON lines) and their errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dse.errors import TraceError
from dse.workload.convert import convert, convert_report, warnings
from tests.workload.dumps import MODEL, K, L, rand_ids, routes_doc, token_ids, write_dump


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
            for layer in range(L):
                lines.append(json.dumps({"step": s, "token_pos": t, "layer_idx": layer,
                                         "topk_ids": [int(e) for e in ids[s, layer, t]]}))
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(reversed(lines)) + "\n")        # order on disk does not matter
    tr = convert([f], model=MODEL)
    assert tr.meta.batch == 3 and (tr.experts == ids).all()


def test_jsonl_per_token_layers_object(tmp_path):
    tok = rand_ids(1, 6)[0].transpose(1, 0, 2)
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(json.dumps({"token": t, "layers": {str(layer): [int(e) for e in tok[t, layer]]
                                                                for layer in range(L)}}) for t in range(6)))
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


# -- sequences: single-request dumps interleaved into real batches; warnings --------------------
def test_single_request_dumps_interleave_into_real_batches(dumps4):
    conv = convert_report(dumps4, batch=2)
    tr = conv.trace
    assert conv.sequences == 4 and conv.interleaved
    # continuous batching, by hand: slot 0 serves seq 0 (3 tokens) then seq 2 (2 tokens); slot 1 serves
    # seq 1 (5 tokens); at step 6 slot 1 finds no unused sequence left, so the trace has 5 steps
    expect = [[(0, 0), (1, 0)], [(0, 1), (1, 1)], [(0, 2), (1, 2)], [(2, 0), (1, 3)], [(2, 1), (1, 4)]]
    assert tr.experts.shape == (5, L, 2, K)
    for s, slots in enumerate(expect):
        for b, (seq, t) in enumerate(slots):
            assert (tr.experts[s, :, b] == np.array(token_ids(seq, t))).all()
    assert "4 sequences interleaved over B=2 slots" in tr.meta.source and "4 of 14 tokens unused" in tr.meta.source
    ws = warnings(conv, profile_steps=0, trace_steps=5)
    assert ws == []                                          # a real batch, enough steps


def test_one_sequence_is_cut_into_consecutive_steps_and_warned(tmp_path):
    f = tmp_path / "one.json"
    write_dump(f, 0, 12)
    conv = convert_report([f], batch=4)
    assert conv.sequences == 1 and not conv.interleaved and conv.trace.meta.steps == 3
    assert (conv.trace.experts[1, :, 0] == np.array(token_ids(0, 4))).all()     # consecutive tokens
    ws = warnings(conv, profile_steps=16, trace_steps=64)
    assert len(ws) == 2
    assert "one sequence" in ws[0] and "not a batch of independent requests" in ws[0]
    assert "3 steps < profiling 16 + measured 64" in ws[1] and "profiles placement on 1 step and measures 2" in ws[1]
    # fewer sequences than B: still consecutive, and said so
    conv2 = convert_report([f, f], batch=4)
    assert conv2.sequences == 2 and not conv2.interleaved
    assert "2 sequences (fewer than B=4)" in warnings(conv2, 0, 1)[0]
