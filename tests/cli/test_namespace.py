"""One namespace: no metric shares a knob's name, so every command gives a knob back at its value."""
from __future__ import annotations

import csv
import json

import pytest

from dse.cli import main
from dse.spec import DesignPoint
from dse.spec.params import PARAMS


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


@pytest.mark.parametrize("trace", ["catalog", "synthetic"])
def test_no_metric_shares_a_knobs_name(capsys, trace):
    out = json.loads(run_cli(capsys, "evaluate", "--json", "--set", f"trace={trace}", "--set", "trace_steps=8"))
    from dse.pipeline.evaluate import evaluate
    metrics = evaluate(DesignPoint.from_dict({"trace": trace, "trace_steps": 8})).metrics
    knobs = {p.name for p in PARAMS}
    assert not knobs & set(metrics), knobs & set(metrics)
    # every knob comes back at its own (resolved) value
    point = DesignPoint.from_dict({"trace": trace, "trace_steps": 8}).to_dict(resolved=True)
    for k in knobs:
        assert out[k] == point[k], k


def test_evaluate_json_gives_the_d2d_provision_back(capsys):
    out = json.loads(run_cli(capsys, "evaluate", "--json", "--set", "trace=catalog", "--set", "d2d_gbps_per_die=64"))
    assert out["d2d_gbps_per_die"] == 64 and out["d2d_provision_gbps_per_die"] == 64
    assert out["d2d_demand_gbps_per_die"] == 0          # TP = 1: nothing crosses a die


def _two_values(p) -> list:
    """Two legal values of a numeric knob: its default and a neighbour inside its range."""
    base = {"batch": 16, "pe_groups_per_core": 8}.get(p.name, p.default)
    step = p.multiple_of or 1
    other = base * 2 if p.hi is None or base * 2 <= p.hi else base // 2
    if p.kind == "int":
        other = max(step, int(other) // step * step)
    if other == base:
        other = base + step
    return [base, other]


NUMERIC = [p for p in PARAMS if p.kind in ("int", "float") and p.choices is None]


@pytest.mark.parametrize("param", NUMERIC, ids=[p.name for p in NUMERIC])
def test_sweep_shows_the_swept_values_in_the_knobs_column(capsys, tmp_path, param):
    values = _two_values(param)
    argv = ["sweep", param.name, *map(str, values), "--set", "trace=catalog", "--set", "trace_steps=4"]
    doc = json.loads(run_cli(capsys, *argv, "--json"))
    assert [r[param.name] for r in doc["rows"]] == values
    path = tmp_path / "s.csv"
    run_cli(capsys, *argv, "--csv", str(path))
    with open(path) as fh:
        assert [float(r[param.name]) for r in csv.DictReader(fh)] == [float(v) for v in values]
    lines = run_cli(capsys, *argv).splitlines()
    col = lines[0].split().index(param.name)
    assert [float(line.split()[col]) for line in lines[2:2 + len(values)]] == [float(v) for v in values]


def test_sweep_d2d_provision_shows_the_swept_provision(capsys):
    doc = json.loads(run_cli(capsys, "sweep", "d2d_gbps_per_die", "32", "64", "128", "--model", "glm-5.2",
                             "--set", "trace=catalog", "--json"))
    assert [r["d2d_gbps_per_die"] for r in doc["rows"]] == [32, 64, 128]
    assert len({r["d2d_demand_gbps_per_die"] for r in doc["rows"]}) == 1     # the demand does not move
