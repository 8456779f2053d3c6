"""Loading any trace: a converted archive or an unconverted router dump, by the same calls."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np

from dse.workload.load import load_any, load_cached, peek_meta
from dse.workload.trace import make_trace, save_trace

MODEL, LAYERS, EXPERTS, K = "olmoe-1b-7b", 16, 64, 8


def _archive(tmp_path: Path) -> Path:
    ids = np.stack([np.stack([np.arange(K) + ((s + t + layer) % (EXPERTS - K)) for t in range(4)])
                    for s in range(3) for layer in range(LAYERS)]).reshape(3, LAYERS, 4, K)
    return save_trace(make_trace(ids, MODEL, EXPERTS), tmp_path / "t.npz")


def test_archive_and_dump_load_alike(tmp_path):
    f = _archive(tmp_path)
    tr = load_any(f, model=MODEL)
    assert tr.experts.shape == (3, LAYERS, 4, K) and peek_meta(f).steps == 3
    # the same routing as a JSON-lines dump: one record per (token, layer)
    dump = tmp_path / "d.jsonl"
    dump.write_text("\n".join(json.dumps({"token": s * 4 + t, "layer": layer,
                                          "experts": tr.experts[s, layer, t].tolist()})
                              for s in range(3) for t in range(4) for layer in range(LAYERS)))
    got = load_any(dump, model=MODEL, batch=4)
    assert np.array_equal(got.experts, tr.experts)
    meta = peek_meta(dump, MODEL)                 # no step marks: one step of all 12 tokens
    assert (meta.batch, meta.steps) == (12, 1)
    assert load_cached(dump, model=MODEL, batch=4) is load_cached(dump, model=MODEL, batch=4)
    assert load_any(f, model=MODEL, batch=6).experts.shape == (2, LAYERS, 6, K)   # regrouped


def test_trace_and_convert_do_not_import_each_other():
    root = Path(__file__).resolve().parents[2] / "dse" / "workload"
    for mod, other in (("trace", "convert"), ("convert", "load"), ("trace", "load")):
        names = {n.module for n in ast.walk(ast.parse((root / f"{mod}.py").read_text()))
                 if isinstance(n, ast.ImportFrom)}
        assert f"dse.workload.{other}" not in names, f"{mod}.py imports {other}.py"
