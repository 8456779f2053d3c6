"""Trace format, streaming loader, strict validation, converters and `dse trace` CLI.

Router dumps here are small synthetic files written in the documented formats (never data from
unlicensed traces)."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from dse.cli import main
from dse.errors import ConfigError, TraceError
from dse.workload import stats
from dse.workload.convert import convert
from dse.workload.trace import (TraceFile, load_any, loads, make_trace, regroup, save_trace, write_chunks)

MODEL = "olmoe-1b-7b"          # 16 layers x 64 experts, top-8: small and in the catalog
L, E, K = 16, 64, 8


def rand_ids(steps, batch, seed=0, layers=L, experts=E, k=K):
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((steps, layers, batch, experts)), axis=-1)[..., :k]


def test_loads_counts_tokens_per_expert():
    ids = rand_ids(3, 5)
    n = loads(ids, E)
    ref = np.zeros((3, L, E), dtype=int)
    for s in range(3):
        for l in range(L):
            for t in range(5):
                for e in ids[s, l, t]:
                    ref[s, l, e] += 1
    assert (n == ref).all()


def test_round_trip_and_streamed_chunks(tmp_path):
    ids = rand_ids(7, 4)
    tr = make_trace(ids, MODEL, E, source="unit test")
    f = save_trace(tr, tmp_path / "t.npz")
    tf = TraceFile(f)
    assert (tf.meta.model, tf.meta.batch, tf.meta.steps, tf.meta.top_k) == (MODEL, 4, 7, K)
    assert tf.meta.source == "unit test"
    back = np.concatenate(list(tf.chunks(3)), axis=0)
    assert (back == ids).all() and tf.dtype == np.uint8
    assert (tf.load(2, 5).experts == ids[2:5]).all()
    with np.load(f, allow_pickle=False) as z:        # a plain npz, readable without our code
        assert z["experts"].shape == (7, L, 4, K) and str(z["model"]) == MODEL


def test_write_chunks_streams_without_holding_the_trace(tmp_path):
    tr = make_trace(rand_ids(6, 2), MODEL, E)
    f = write_chunks(tmp_path / "s.npz", tr.meta, (tr.experts[i:i + 2] for i in range(0, 6, 2)), compress=False)
    assert (TraceFile(f).load().experts == tr.experts).all()


def _write_raw(path, **members):
    with zipfile.ZipFile(path, "w") as zf:
        for k, v in members.items():
            with zf.open(k + ".npy", "w") as fh:
                np.lib.format.write_array(fh, np.asarray(v))


def _members(ids, **over):
    d = {"experts": ids, "model": np.array(MODEL), "batch": np.array(ids.shape[2]),
         "n_experts": np.array(E), "source": np.array("x"), "format": np.array("rexpert-trace/1")}
    d.update(over)
    return d


@pytest.mark.parametrize("mutate, message", [
    (lambda ids: {"experts": ids[0]}, "4 dimensions"),
    (lambda ids: {"experts": np.where(ids == 3, 64, ids)}, "must be in [0, 63]"),
    (lambda ids: {"experts": np.where(ids == 3, -1, ids).astype(np.int16)}, "must be in [0, 63]"),
    (lambda ids: {"experts": np.concatenate([ids[..., :1], ids[..., :K - 1]], axis=-1)}, "repeats expert"),
    (lambda ids: {"experts": ids.astype(np.float32)}, "must be integers"),
    (lambda ids: {"model": np.array("no-such-model")}, "not in the catalog"),
    (lambda ids: {"model": np.array("qwen3.5-35b-a3b")}, "wrong model"),
    (lambda ids: {"batch": np.array(99)}, "batch = 99"),
    (lambda ids: {"format": np.array("other/9")}, "format"),
])
def test_validation_errors_are_one_line(tmp_path, mutate, message):
    ids = rand_ids(2, 3)
    f = tmp_path / "bad.npz"
    _write_raw(f, **_members(ids, **mutate(ids)))
    with pytest.raises(TraceError) as ei:
        load_any(f, model=MODEL)
    assert message in str(ei.value) and "\n" not in str(ei.value) and str(f) in str(ei.value)


def test_missing_member_and_not_a_zip(tmp_path):
    f = tmp_path / "m.npz"
    m = _members(rand_ids(1, 2))
    del m["model"]
    _write_raw(f, **m)
    with pytest.raises(TraceError, match="missing model"):
        TraceFile(f)
    g = tmp_path / "g.npz"
    g.write_text("hello")
    with pytest.raises(TraceError, match="not a trace archive"):
        TraceFile(g)
    with pytest.raises(TraceError, match="no such file"):
        TraceFile(tmp_path / "none.npz")


def test_design_model_must_match(tmp_path):
    f = save_trace(make_trace(rand_ids(2, 3), MODEL, E), tmp_path / "t.npz")
    with pytest.raises(TraceError, match="design point uses 'qwen3.5-35b-a3b'"):
        load_any(f, model="qwen3.5-35b-a3b")


def test_regroup_keeps_token_order():
    ids = rand_ids(4, 6)                                   # 24 tokens per layer
    r = regroup(make_trace(ids, MODEL, E), 8)
    assert r.experts.shape == (3, L, 8, K)
    tok = ids.transpose(1, 0, 2, 3).reshape(L, 24, K)
    assert (r.experts.transpose(1, 0, 2, 3).reshape(L, 24, K) == tok).all()
    with pytest.raises(ConfigError, match="exceeds the 24 tokens"):
        regroup(make_trace(ids, MODEL, E), 25)


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


# -- stats -----------------------------------------------------------------------------------------
def test_stats_definitions_on_a_hand_trace():
    # 2 steps, 1 layer of a 4-expert top-1 model, B = 4
    ids = np.array([[[[0], [0], [1], [2]]], [[[0], [3], [3], [3]]]])
    tr = make_trace(ids, "x", 4, validate=True)
    acc = stats.accumulate(tr.meta, [tr.experts])
    s = acc.summary()
    assert s["hottest_over_mean"] == pytest.approx((2 / 1 + 3 / 1) / 2)     # mean load B k / E = 1
    assert s["global_peak_hottest_over_mean"] == 3 and s["hottest_tokens_per_step"] == 3
    assert s["hot_set_persistence"] == 0.5                                   # hottest: 0 then 3
    assert s["union"] == {1: 1.0, 2: (1 + 2 + 2 + 1) / 4, 4: 2.5}       # slices {0,0} {1,2} {0,3} {3,3}
    assert s["gini"] == pytest.approx(stats.gini(np.array([3, 1, 1, 3]))[()])
    assert stats.gini(np.array([1, 1, 1, 1]))[()] == 0
    assert stats.top_share(np.array([5, 3, 1, 1]), 1)[()] == 0.5


def test_cli_convert_then_stats_and_stats_on_the_dump(tmp_path, capsys):
    tok = rand_ids(1, 12)[0].transpose(1, 0, 2)
    f = tmp_path / "r.json"
    f.write_text(json.dumps(routes_doc(tok)))
    out = tmp_path / "t.npz"
    assert main(["trace", "convert", str(f), "-o", str(out), "--batch", "4"]) == 0
    assert "3 steps" in capsys.readouterr().out
    assert main(["trace", "stats", str(out), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    for key in ("gini", "hottest_over_mean", "top8_slot_share", "top16_slot_share", "hot_set_persistence",
                "union", "coactivation", "per_layer", "per_step"):
        assert key in a
    assert a["union"]["1"] == K and len(a["per_layer"]["gini"]) == L
    assert main(["trace", "stats", str(f), "--batch", "4", "--json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert b["gini"] == a["gini"] and b["union"] == a["union"]
    assert main(["trace", "stats", str(out)]) == 0
    text = capsys.readouterr().out
    assert "per layer" in text and "per step" in text and "averaged" in text


def test_cli_errors_exit_2(tmp_path, capsys):
    assert main(["trace", "stats", str(tmp_path / "none.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dse: error:") and err.count("\n") == 1
    assert main(["trace", "synth", "--model", MODEL, "--profile", "nope", "--steps", "1"]) == 2
    assert "not shipped" in capsys.readouterr().err
