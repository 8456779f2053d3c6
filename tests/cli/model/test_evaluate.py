"""`dse evaluate`: table and JSON output, every reference model, design files, infeasible designs."""
from __future__ import annotations

import json

import pytest

from dse.cli import main

REQUIRED = ["feasible", "infeasible_reason", "dies", "tp_degree", "d_used_columns", "array_utilization",
            "t_layer_us", "ffn_latency_us_per_token", "weight_mb_per_token", "weight_energy_uj_per_token",
            "die_area_mm2", "die_power_w", "pool_power_w"]


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_evaluate_json_has_required_keys(capsys):
    rc, out, _ = run_cli(capsys, "evaluate", "--json", "--batch", "8", "--set", "trace=catalog")
    assert rc == 0
    d = json.loads(out)
    for k in REQUIRED:
        assert k in d
    assert d["dies"] == 25 and d["feasible"] is True
    assert d["ffn_latency_us_per_token"] == pytest.approx(1.93, rel=0.01)


@pytest.mark.parametrize("model", ["qwen3.5-35b-a3b", "qwen3.5-397b-a17b", "glm-5.2"])
def test_evaluate_every_reference_model(capsys, model):
    rc, out, _ = run_cli(capsys, "evaluate", "--json", "--model", model, "--set", "trace=catalog")
    assert rc == 0 and json.loads(out)["model"] == model


def test_evaluate_config_file_and_table(capsys, tmp_path):
    f = tmp_path / "d.toml"
    f.write_text('[hardware]\narray_depth = "16K"\n[workload]\nbatch = 64\ntrace = "catalog"\n')
    rc, out, _ = run_cli(capsys, "evaluate", str(f))
    assert rc == 0
    design, header, rule, *body = out.splitlines()
    assert "B=64" in design.split() and "array_depth=16384" in design.split()
    table = {}
    for line in body:
        group, metric, *value = line.split()
        table[metric] = " ".join(value)
    # the file's 16K depth needs TP 2, so the default pool of 25 dies doubles (spec s3: 49 at 16K)
    assert table["tp_degree"] == "2" and table["dies"] == "49"
    rc, js, _ = run_cli(capsys, "evaluate", "--json", str(f))
    d = json.loads(js)
    assert float(table["t_layer_us"]) == pytest.approx(d["t_layer_us"], rel=1e-3)
    assert d["dies"] == 49 and d["batch"] == 64


def test_infeasible_json(capsys):
    rc, out, _ = run_cli(capsys, "evaluate", "--json", "--model", "glm-5.2", "--set", "array_depth=16K",
                         "--set", "trace=catalog")
    d = json.loads(out)
    assert rc == 0 and d["feasible"] is False and "18432" in d["infeasible_reason"] and d["t_layer_us"] is None


def test_evaluate_uncertainty_adds_bands_of_every_numeric_metric(capsys):
    rc, out, _ = run_cli(capsys, "evaluate", "--batch", "8", "--steps", "8", "--uncertainty", "3", "--json")
    assert rc == 0
    d = json.loads(out)
    u = d["uncertainty"]
    from dataclasses import fields

    from dse.spec import DesignPoint
    knobs = {f.name for f in fields(DesignPoint)}
    numeric = {k for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool)} - knobs
    assert numeric <= set(u) and len(numeric) > 100
    for k, b in u.items():
        assert list(b) == ["p5", "p50", "p95"] and b["p5"] <= b["p50"] <= b["p95"], k
    assert u["t_layer_us"]["p5"] < u["t_layer_us"]["p95"]          # the fixed part of t_layer is drawn
    rc2, out2, _ = run_cli(capsys, "evaluate", "--batch", "8", "--steps", "8", "--uncertainty", "3", "--json")
    assert json.loads(out2)["uncertainty"] == u                   # seeded: the same draws
    rc3, out3, _ = run_cli(capsys, "evaluate", "--batch", "8", "--steps", "8", "--uncertainty", "3", "--json",
                           "--jobs", "2")
    assert rc3 == 0 and json.loads(out3)["uncertainty"] == u      # the draws on worker processes


def test_evaluate_uncertainty_refuses_a_negative_count(capsys):
    rc, out, err = run_cli(capsys, "evaluate", "--uncertainty", "-2")
    assert rc != 0 and err.startswith("dse: error: --uncertainty -2") and "Traceback" not in err
    rc, out, err = run_cli(capsys, "evaluate", "--uncertainty", "2", "--jobs", "0")
    assert rc != 0 and err.startswith("dse: error: --jobs 0") and "Traceback" not in err


@pytest.mark.parametrize("flag, value, knob", [("--model", "qwen", "model"), ("--batch", "0", "batch"),
                                               ("--seed", "x", "trace_seed"), ("--steps", "-3", "trace_steps")])
def test_a_knob_flag_is_named_in_its_error(capsys, flag, value, knob):
    # they were checked as `--set` overrides: "--set: model = 'qwen': ..." for `--model qwen`
    rc, out, err = run_cli(capsys, "evaluate", flag, value)
    assert rc == 2 and out == ""
    assert err.startswith(f"dse: error: {flag}: {knob} = '{value}': must be") and err.count("\n") == 1


def test_the_feasibility_group_shows_communication_over_its_provision(capsys, tmp_path):
    # the quickstart's knee (side 2, 256-bit mesh): it maps and fits its die, but its core mesh carries
    # more than its provision; `feasible yes` alone read as "a study would accept it"
    f = tmp_path / "d.toml"
    f.write_text('[hardware]\ncore_side = 2\npe_groups_per_core = 4\ncore_mesh_link_bits = 256\n'
                 '[workload]\ntrace = "synthetic"\n')
    rc, out, _ = run_cli(capsys, "evaluate", str(f))
    rows = [ln.split() for ln in out.splitlines()[3:] if ln.startswith("feasibility")]
    assert [r[1] for r in rows] == ["feasible", "infeasible_reason", "comm_ok", "comm_violation"]
    assert rc == 0 and rows[0][2] == "yes" and rows[2][2] == "no" and float(rows[3][2]) > 0
    note = out.splitlines()[-1]
    assert note.startswith("note: feasible means the design maps and fits its die") and "core_mesh" in note
    rc, out, _ = run_cli(capsys, "evaluate", "--set", "trace=catalog")      # the published design: within it
    assert rc == 0 and "note:" not in out


def test_evaluate_names_a_study_file_for_what_it_is(capsys):
    # it said "study: unknown key (allowed: sections hardware, ...)"
    from pathlib import Path
    study = Path(__file__).resolve().parents[3] / "studies" / "quickstart.toml"
    rc, out, err = run_cli(capsys, "evaluate", str(study))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"dse: error: {study} is a study file, not a design file") and "`dse run " in err
