"""`dse trace convert / stats` through the CLI, and their errors (exit 2)."""
from __future__ import annotations

import json

import numpy as np

from dse.cli import main


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
