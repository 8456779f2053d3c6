"""The two published sweeps (array depth, core side): the knees come out of the metrics."""
from __future__ import annotations

import json

import pytest

from dse.cli import main
from dse.data import load_toml
from dse.pipeline import sweep as sw
from dse.reproduce.registry import judge


def run_json(capsys, *argv):
    assert main(["sweep", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_depth_sweep_exchange_and_knee(capsys):
    out = run_json(capsys, "depth")
    rows = {(r["model"], r["array_depth"]): r for r in out["rows"]}
    a, b = rows[("qwen3.5-35b-a3b", 16384)], rows[("qwen3.5-35b-a3b", 32768)]
    # 16K vs 32K: layer time halves, D2D opens (TP = 2), dies 25 -> 49
    assert a["t_layer_us"] / b["t_layer_us"] == pytest.approx(0.5, abs=0.01)
    assert b["d2d_demand_gbps_per_die"] == 0 < a["d2d_demand_gbps_per_die"]
    assert (b["dies"], a["dies"]) == (25, 49) and (b["tp_degree"], a["tp_degree"]) == (1, 2)
    assert not rows[("glm-5.2", 16384)]["feasible"]
    assert "exceeds array_depth 16384" in rows[("glm-5.2", 16384)]["infeasible_reason"]
    for m in sw.REFERENCE_MODELS:
        r = rows[(m, 32768)]
        assert r["feasible"] and r["comm_ok"] and r["d2d_demand_gbps_per_die"] <= r["d2d_provision_gbps_per_die"]
    assert out["knee"]["knee"] == 32768


def test_depth_knee_rule_on_synthetic_rows():
    def row(m, v, ok, t, dies):
        return {"model": m, "array_depth": v, "feasible": ok, "comm_ok": ok, "t_layer_us": t, "dies": dies,
                "infeasible_reason": "" if ok else "x"}
    rows = [row("a", 1, True, 10, 5), row("b", 1, False, 5, 1),      # depth 1: one model fails
            row("a", 2, True, 20, 5), row("b", 2, True, 20, 9),      # depth 2: tie on time, more dies
            row("a", 3, True, 20, 4), row("b", 3, True, 15, 8),      # depth 3: same worst time, fewer dies
            row("a", 4, True, 40, 1), row("b", 4, True, 40, 1)]      # depth 4: slower
    k = sw.depth_knee(rows)
    assert k["knee"] == 3
    assert [s["acceptable"] for s in k["summary"]] == [False, True, True, True]


def test_side_sweep_knee(capsys):
    out = run_json(capsys, "side")
    rows = out["rows"]
    assert [r["core_side"] for r in rows] == [2, 4, 6, 8]
    # Table X layout: the direct-scheduling companion of every side, at the native batch
    for r in rows:
        assert r["batch"] == 128
        assert 0 < r["occupancy_direct"] < r["occupancy"]
        assert r["actual_mfu_direct"] == pytest.approx(r["ideal_mfu"] * r["occupancy_direct"])
    # The knee is a joint result of the scheduler's occupancy and our stretch and area. The
    # scheduler reproduces Table X's occupancies within the trace tolerance: a scheduler regression
    # that moves them fails here, naming the side, instead of hiding behind an expected failure.
    pub = load_toml("reference", "rexpert-35b.toml")["pooling_35b"]["occupancy_bcast"]["value"]
    off = [(s, r["occupancy"], p) for s, r, p in zip((2, 4, 6, 8), rows, pub)
           if judge(p, r["occupancy"], "trace")[1] == "miss"]
    assert off == [], f"scheduler occupancy misses Table X at (side, ours, published) {off}"
    stretch = [r["round_stretch"] for r in rows]
    assert stretch == sorted(stretch) and stretch[0] == 1.0
    for r in rows:
        assert r["effective_mfu"] == pytest.approx(r["actual_mfu"] / r["round_stretch"])
    assert out["knee"] == {"max_effective_mfu": 4, "min_mm2_per_occupancy": 4}


def test_side_sweep_other_model_runs_at_its_native_batch(capsys):
    out = run_json(capsys, "side", "2", "8", "--model", "glm-5.2", "--set", "trace_steps=2", "--set",
                   "profile_steps=2")
    assert [(r["model"], r["core_side"], r["batch"]) for r in out["rows"]] == [("glm-5.2", 2, 205), ("glm-5.2", 8, 205)]
    assert all(r["occupancy_direct"] <= r["occupancy"] for r in out["rows"])


def test_depth_plot(tmp_path, capsys):
    f = tmp_path / "d.svg"
    assert main(["sweep", "depth", "16K", "32K", "--model", "qwen3.5-35b-a3b", "--plot", str(f)]) == 0
    # on the default model alone 16K is acceptable and has the shorter layer: the 32K knee comes
    # from GLM-5.2 not mapping at 16K
    assert "knee: array_depth = 16384" in capsys.readouterr().out
    assert f.read_text().lstrip().startswith("<?xml")
