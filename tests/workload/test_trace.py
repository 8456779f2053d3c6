"""Trace format, streaming loader, strict validation and regrouping.

Router dumps here are small synthetic files written in the documented formats (never data from
unlicensed traces)."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest

from dse.errors import ConfigError, TraceError
from dse.workload.load import load_any
from dse.workload.trace import TraceFile, loads, make_trace, regroup, save_trace, write_chunks

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
        for layer in range(L):
            for t in range(5):
                for e in ids[s, layer, t]:
                    ref[s, layer, e] += 1
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
