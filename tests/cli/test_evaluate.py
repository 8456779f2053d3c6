"""The CLI as a user drives it: evaluate (table / JSON), reproduce, params, models, errors."""
from __future__ import annotations

import json
import subprocess
import sys

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
    assert rc == 0 and "t_layer_us" in out and "49" in out


def test_infeasible_json(capsys):
    rc, out, _ = run_cli(capsys, "evaluate", "--json", "--model", "glm-5.2", "--set", "array_depth=16K",
                         "--set", "trace=catalog")
    d = json.loads(out)
    assert rc == 0 and d["feasible"] is False and "18432" in d["infeasible_reason"] and d["t_layer_us"] is None


@pytest.mark.parametrize("argv,needle", [
    (["evaluate", "--set", "core_side=0"], "--set: core_side = '0': must be an integer in [1, 20]"),
    (["evaluate", "--model", "nope"], "must be one of"),
    (["evaluate", "/nonexistent/x.toml"], "/nonexistent/x.toml: no such file"),
])
def test_user_errors_are_one_line_exit_2(capsys, argv, needle):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("dse: error: ") and needle in err


def test_reproduce_exits_zero_when_exact_entries_pass(capsys):
    rc, out, _ = run_cli(capsys, "reproduce", "--only", "latency_35b")
    assert rc == 0 and "latency_35b.rexpert_us_b8" in out and "exact misses: 0" in out


def test_reproduce_json_lists_unmodelled_entries(capsys):
    rc, out, _ = run_cli(capsys, "reproduce", "--json")
    rows = json.loads(out)["rows"]
    keys = {r["key"] for r in rows}
    assert "hierarchy.pool_dies_35b" in keys
    # every published number appears exactly once, modelled or not
    assert len(keys) == len(rows)
    assert {r["status"] for r in rows} <= {"pass", "rounding", "miss", "not modelled", "error"}


def test_reproduce_fails_on_an_exact_miss(capsys, monkeypatch):
    from dse.reproduce import registry
    registry._load_modules()
    monkeypatch.setitem(registry._FIGURES, "hierarchy.unit_gflops",
                        registry.Figure(lambda: 409.6, "", "calibrated"))
    rc, out, _ = run_cli(capsys, "reproduce", "--only", "hierarchy")
    assert rc == 1 and "miss" in out


@pytest.mark.parametrize("cmd", ["params", "models", "constants"])
def test_info_commands(capsys, cmd):
    rc, out, _ = run_cli(capsys, cmd)
    assert rc == 0 and len(out.splitlines()) > 5
    rc, out, _ = run_cli(capsys, cmd, "--json")
    assert rc == 0 and isinstance(json.loads(out), list)


def test_console_script_entry_point():
    r = subprocess.run([sys.executable, "-m", "dse", "evaluate", "--json", "--set", "trace=catalog"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["dies"] == 25


def test_user_catalog_adds_a_model(capsys, tmp_path, monkeypatch):
    f = tmp_path / "extra.toml"
    f.write_text('[tiny]\nname = "tiny-moe"\nexperts = 16\ntop_k = 2\nmoe_layers = 4\nhidden = 1024\n'
                 'expert_intermediate = 256\n')
    monkeypatch.delenv("DSE_CATALOG", raising=False)
    rc, out, _ = run_cli(capsys, "--catalog", str(f), "evaluate", "--json", "--model", "tiny-moe",
                         "--set", "trace=catalog")
    assert rc == 0 and json.loads(out)["model"] == "tiny-moe"
    monkeypatch.delenv("DSE_CATALOG", raising=False)
