"""Hypothesis fuzz of the trace loader and the router-dump converter.

Any bytes, any mutation of a valid archive, any array (dtype, shape, values) in any member, and
any JSON / JSON-lines dump give a Trace or a DSEError (one line), never another exception and
never an unpickled object.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dse.errors import DSEError
from dse.workload.load import load_any
from dse.workload.trace import Trace, make_trace, save_trace

SETTINGS = settings(max_examples=int(os.environ.get("DSE_FUZZ_EXAMPLES", 150)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
MODEL, LAYERS, EXPERTS, K = "olmoe-1b-7b", 16, 64, 8


def _valid_bytes() -> bytes:
    rng = np.random.default_rng(3)
    ids = np.stack([rng.permutation(EXPERTS)[:K] for _ in range(2 * LAYERS * 2)]).reshape(2, LAYERS, 2, K)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "t.npz"
        save_trace(make_trace(ids, MODEL, EXPERTS, source="fuzz"), p, compress=False)
        return p.read_bytes()


VALID = _valid_bytes()


def _load(raw: bytes, suffix: str = ".npz", model: str | None = None):
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"t{suffix}"
        p.write_bytes(raw)
        try:
            tr = load_any(p, model=model)
        except DSEError as exc:
            assert str(exc) and "\n" not in str(exc)
            return None
        assert isinstance(tr, Trace)
        assert tr.experts.ndim == 4 and tr.experts.min() >= 0 and tr.experts.max() < tr.meta.n_experts
        return tr


def test_valid_archive_loads():
    tr = _load(VALID, model=MODEL)
    assert tr is not None and tr.meta.model == MODEL and tr.experts.shape == (2, LAYERS, 2, K)


@SETTINGS
@given(raw=st.binary(max_size=600))
def test_arbitrary_bytes(raw):
    _load(raw)


@SETTINGS
@given(edits=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=8),
       cut=st.one_of(st.none(), st.integers(0, len(VALID))))
def test_mutated_valid_archive(edits, cut):
    raw = bytearray(VALID)
    for pos, val in edits:
        raw[pos] = val
    _load(bytes(raw[:cut] if cut is not None else raw))


member_arrays = st.one_of(
    hnp.arrays(dtype=st.one_of(hnp.integer_dtypes(), hnp.unsigned_integer_dtypes(), hnp.floating_dtypes(),
                               st.just(np.dtype(bool))),
               shape=hnp.array_shapes(min_dims=0, max_dims=5, max_side=4)),
    st.sampled_from([np.array(MODEL), np.array("gpt-5"), np.array(""), np.array(2), np.array(-1),
                     np.array(10 ** 18, dtype=np.int64), np.array(["a", "b"])]),
)


@SETTINGS
@given(name=st.sampled_from(["experts", "model", "batch", "n_experts", "source", "format"]), arr=member_arrays,
       drop=st.booleans())
def test_any_member_replaced_or_dropped(name, arr, drop):
    src = zipfile.ZipFile(io.BytesIO(VALID))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            if info.filename == name + ".npy":
                if drop:
                    continue
                buf = io.BytesIO()
                np.lib.format.write_array(buf, arr, allow_pickle=False)
                zf.writestr(info.filename, buf.getvalue())
            else:
                zf.writestr(info.filename, src.read(info.filename))
    _load(out.getvalue(), model=MODEL if name != "model" else None)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.floats(allow_nan=False), st.text(max_size=6)),
    lambda inner: st.lists(inner, max_size=9) | st.dictionaries(
        st.sampled_from(["token", "layer", "experts", "layers", "step", "phase", "meta", "routes", "num_experts",
                         "top_k", "0", "1", "token_pos"]), inner, max_size=5),
    max_leaves=25)


@SETTINGS
@given(doc=json_values)
def test_router_dump_json(doc):
    _load(json.dumps(doc).encode(), suffix=".json")


@SETTINGS
@given(lines=st.lists(st.fixed_dictionaries({"token": st.integers(-2, 4), "layer": st.integers(-1, 17)},
                                            optional={"experts": st.lists(st.integers(-1, 70), max_size=9),
                                                      "step": st.integers(0, 2)}), max_size=40))
def test_router_dump_jsonl(lines):
    _load("\n".join(json.dumps(x) for x in lines).encode(), suffix=".jsonl", model=MODEL)
