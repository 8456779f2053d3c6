"""Objective files: validation (exact one-line errors), metric names, scoring."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest

from dse.errors import ConfigError
from dse.search.space.objectives import load_objectives, objectives_from_dict, score
from dse.search.study.study import load_study
from tests.fixtures import TWO_MODEL_STUDY as GOOD
from tests.fixtures import write_small_study as _files

BAD_OBJECTIVES = [
    ('[[objectives]]\nmetric = "t_layer_us"\ndirection = "min"\n',
     "objectives[0].direction = 'min': must be one of minimize, maximize"),
    ('[[objectives]]\nmetric = "t_layer_us"\n[[constraints]]\nmetric = "die_area_mm2"\n',
     "constraints[0]: needs exactly one of le (metric <= rhs) or ge (metric >= rhs)"),
    ('[[objectives]]\nmetric = "t_layer_us"\naggregate = "median"\n',
     "objectives[0].aggregate = 'median': must be one of worst, mean, sum, max, min"),
    ('description = "x"\n',
     "objectives: missing or empty; expected [[objectives]] tables with metric and direction"),
    ('[[objectives]]\nmetric = "t_layer_us"\n[[objectives]]\nmetric = "t_layer_us"\n',
     "objectives: 't_layer_us' appears twice (give each objective a distinct metric or label)"),
    ('[[objectives]]\nmetric = "t_layer_us"\nweight = 2\n',
     "objectives[0].weight: unknown key (allowed: metric, direction, aggregate, label, reference)"),
]


@pytest.mark.parametrize("text,msg", BAD_OBJECTIVES)
def test_bad_objectives_exact_error(tmp_path, text, msg):
    p = tmp_path / "obj.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as ei:
        load_objectives(p)
    assert str(ei.value) == f"{p}: {msg}"


def test_unknown_metric_is_caught_at_load_with_suggestion(tmp_path):
    p = _files(tmp_path, GOOD, obj='[[objectives]]\nmetric = "t_layer_usec"\n')
    with pytest.raises(ConfigError) as ei:
        load_study(p)
    assert str(ei.value) == (f"{tmp_path / 'obj.toml'}: objectives[0].metric = 't_layer_usec': unknown metric "
                             f"(see `dse evaluate --json` for the metrics of a design); did you mean 't_layer_us'?")


def test_cli_bad_objectives_one_line(tmp_path):
    p = _files(tmp_path, GOOD, obj='[[objectives]]\nmetric = "t_layer_us"\ndirection = "min"\n')
    r = subprocess.run([sys.executable, "-m", "dse", "front", str(p)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == (f"dse: error: {p}: study.objectives = 'obj.toml': objectives[0].direction = 'min': must "
                        f"be one of minimize, maximize\n")


def test_score_aggregates_over_workloads_and_reports_violations():
    obj = objectives_from_dict({
        "objectives": [{"metric": "lat"}, {"metric": "mfu", "direction": "maximize"},
                       {"metric": "dies", "aggregate": "sum"}],
        "constraints": [{"metric": "area", "le": "budget"}, {"metric": "mfu", "ge": 0.2}],
    })
    a = {"feasible": True, "lat": 2.0, "mfu": 0.5, "dies": 10, "area": 390.0, "budget": 400.0}
    b = {"feasible": True, "lat": 3.0, "mfu": 0.3, "dies": 20, "area": 440.0, "budget": 400.0}
    s = score({"m1": a, "m2": b}, obj)
    assert s.values == [3.0, 0.3, 30.0]
    assert s.constraints[0] == 0.0
    assert s.constraints[1] == pytest.approx(0.1)          # (440 - 400) / 400
    assert s.constraints[2] == pytest.approx(-0.5)         # worst of (0.2-0.5)/0.2, (0.2-0.3)/0.2
    assert not s.feasible
    assert s.reason == "m2: constraint area <= budget violated (440 vs 400)"
    # a design the model cannot map: worst values, counted as infeasible with its reason
    c = {"feasible": False, "infeasible_reason": "chunk too big", "lat": None, "mfu": None, "dies": None}
    s2 = score({"m1": a, "m2": c}, obj)
    assert s2.values == [math.inf, -math.inf, math.inf]
    assert s2.constraints[0] == 1.0 and not s2.feasible
    assert s2.reason.startswith("m2: chunk too big")


def test_a_zero_limit_gives_the_violation_in_the_metrics_own_units():
    # comm_violation <= 0: a load 37 % over provision is violated by 0.37 (not 0.37 / 1e-12), and
    # 20 % under provision is satisfied by 0.2; a non-zero limit stays relative
    obj = objectives_from_dict({"objectives": [{"metric": "lat"}],
                                "constraints": [{"metric": "comm_violation", "le": 0},
                                                {"metric": "lat", "le": 2.0}]})
    over = {"feasible": True, "lat": 3.0, "comm_violation": 0.37}
    under = {"feasible": True, "lat": 1.0, "comm_violation": -0.2}
    s_over, s_under = score({"m": over}, obj), score({"m": under}, obj)
    assert s_over.constraints[1] == pytest.approx(0.37) and s_over.constraints[2] == pytest.approx(0.5)
    assert s_under.constraints[1] == pytest.approx(-0.2) and s_under.constraints[2] == pytest.approx(-0.5)
