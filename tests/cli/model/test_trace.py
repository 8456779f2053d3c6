"""`dse trace convert / stats` through the CLI, and their errors (exit 2)."""
from __future__ import annotations

import json

from dse.cli import main
from tests.workload.dumps import MODEL, K, L, rand_ids, routes_doc, write_dump


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


# -- honest conversion: warnings, windows used, stats against the catalog's targets -------------
def test_cli_convert_warns_and_evaluate_reports_the_windows_used(tmp_path, dumps4, capsys):
    f = tmp_path / "one.json"
    write_dump(f, 0, 6)
    out = tmp_path / "one.npz"
    assert main(["trace", "convert", str(f), "-o", str(out)]) == 0           # 6 tokens -> 1 step of B = 6
    cap = capsys.readouterr()
    assert "1 steps x" in cap.out
    lines = cap.err.strip().splitlines()
    assert len(lines) == 2 and all(x.startswith("dse: warning: ") for x in lines)
    assert "one sequence" in lines[0] and "1 step < profiling 16 + measured 64" in lines[1]
    assert main(["evaluate", "--trace", str(out), "--json"]) == 0
    cap = capsys.readouterr()
    m = json.loads(cap.out)
    assert (m["trace_steps_measured"], m["profile_steps_used"], m["profile_window"]) == (1, 1, "measured window")
    assert m["trace_steps"] == 64 and m["profile_steps"] == 16                # the knobs echo the request ...
    assert "measured 1 step; placement profiled on 1 step (measured window) instead of the 16" in cap.err  # ... said
    inter = tmp_path / "inter.npz"
    assert main(["trace", "convert", *map(str, dumps4), "-o", str(inter), "--batch", "2"]) == 0
    cap = capsys.readouterr()
    assert "interleaved" in cap.out and "one sequence" not in cap.err and "5 steps < profiling 16" in cap.err


def test_stats_against_the_catalog_targets(tmp_path, capsys):
    f = tmp_path / "one.json"
    write_dump(f, 0, 8)
    assert main(["trace", "stats", str(f), "--model", MODEL, "--batch", "4"]) == 0
    text = capsys.readouterr().out
    assert f"against the catalog's targets of {MODEL}" in text
    assert "achieved" in text and "target" in text and "ratio" in text
    assert main(["trace", "stats", str(f), "--model", MODEL, "--batch", "4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert "gini" in d["targets"] and d["targets"]["gini"] > 0
    assert main(["trace", "stats", str(f), "--batch", "4", "--json"]) == 0
    assert "targets" not in json.loads(capsys.readouterr().out)
