"""A closed-form-only study cannot optimise, or constrain, a metric only the trace-driven model
computes (dse/search/study/study_metrics.py): refused with one line, and the premises checked on real
designs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dse.errors import ConfigError
from dse.pipeline.evaluate import evaluate
from dse.search.grid.grid import closed_form_metrics
from dse.search.space.space_file import load_space
from dse.search.study.study import load_study
from dse.spec import DesignPoint
from tests.fixtures import LATENCY_POWER_OBJECTIVES

ROOT = Path(__file__).resolve().parents[3]
STUDY = """[study]
space = "{root}/spaces/depth-width.toml"
objectives = "{root}/objectives/{objectives}.toml"
trials = 4
[workload]
models = ["qwen3.5-35b-a3b"]
{workload}
"""


def _study(d: Path, objectives: str, workload: str) -> Path:
    p = d / f"{objectives}-{len(workload)}.toml"
    p.write_text(STUDY.format(root=ROOT, objectives=objectives, workload=workload))
    return p


def test_trace_driven_objectives_on_the_catalog_are_refused(tmp_path):
    p = _study(tmp_path, "latency-silicon", 'trace = "catalog"')
    with pytest.raises(ConfigError) as err:
        load_study(p)
    msg = str(err.value)
    assert msg.startswith(f"{ROOT / 'objectives' / 'latency-silicon.toml'}: objectives ffn_us_per_token_delivered: ")
    assert "trace = 'catalog'" in msg and "trace = 'synthetic'" in msg and "\n" not in msg
    assert "pool_power_w" not in msg                     # a closed-form objective is not named


@pytest.mark.parametrize("objectives,workload", [
    ("latency-silicon-closed-form", 'trace = "catalog"'),    # closed-form metrics on the catalog
    ("latency-silicon", 'trace = "synthetic"'),              # trace-driven metrics on a trace
    ("latency-silicon", ""),                                 # the default routing is a trace
])
def test_studies_that_can_compute_their_objectives_load(tmp_path, objectives, workload):
    assert load_study(_study(tmp_path, objectives, workload)).objectives.metrics


def test_dse_run_says_it_in_one_line(tmp_path):
    p = _study(tmp_path, "full", 'trace = "catalog"')
    r = subprocess.run([sys.executable, "-m", "dse", "run", str(p), "--storage", f"sqlite:///{tmp_path / 's.db'}"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error: ")
    assert "objectives ffn_us_per_token_scheduled, usd_per_mtok_delivered, effective_mfu:" in lines[0]
    assert not (tmp_path / "s.db").exists()


CONSTRAINED = LATENCY_POWER_OBJECTIVES + "{extra}\n"      # closed-form objectives and die-area constraint


def _constrained(d: Path, extra: str, workload: str = 'trace = "catalog"') -> Path:
    obj = d / f"constrained-{len(extra)}.toml"
    obj.write_text(CONSTRAINED.format(extra=extra))
    p = d / f"study-{len(extra)}-{len(workload)}.toml"
    p.write_text(STUDY.format(root=ROOT, objectives="x", workload=workload).replace(
        f"{ROOT}/objectives/x.toml", str(obj)))
    return p


@pytest.mark.parametrize("extra,named", [
    ('[[constraints]]\nmetric = "actual_mfu"\nge = 0.3', "'actual_mfu >= 0.3' (actual_mfu)"),
    ('[[constraints]]\nmetric = "die_area_mm2"\nle = "mm2_per_occupancy"\nlabel = "area per use"',
     "'area per use' (mm2_per_occupancy)"),                # the right-hand side is the trace-driven one
])
def test_trace_driven_constraints_on_the_catalog_are_refused(tmp_path, extra, named):
    p = _constrained(tmp_path, extra)
    with pytest.raises(ConfigError) as err:
        load_study(p)
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path / f'constrained-{len(extra)}.toml'}: constraints {named}: ")
    assert "count as met" in msg and "trace = 'synthetic'" in msg and "\n" not in msg
    assert "die_area_budget_mm2" not in msg                # the closed-form constraint is not named
    assert load_study(_constrained(tmp_path, extra, 'trace = "synthetic"')).objectives.constraints  # on a trace: fine


def test_closed_form_constraints_on_the_catalog_load(tmp_path):
    assert len(load_study(_constrained(tmp_path, "")).objectives.constraints) == 1


def test_a_constraint_on_a_missing_metric_counts_as_met():
    """The premise of the refusal: a feasible design whose constraint metric is empty scores as
    feasible (the constraint ignored), so a closed-form study would never apply it."""
    import tomllib

    from dse.search.space.objectives import objectives_from_dict, score
    objs = objectives_from_dict(tomllib.loads(CONSTRAINED.format(
        extra='[[constraints]]\nmetric = "actual_mfu"\nge = 0.3')), source="t")
    sc = score({"m": {"feasible": True, "ffn_latency_us_per_token": 1.0, "pool_power_w": 2.0, "die_area_mm2": 1.0,
                      "die_area_budget_mm2": 2.0, "actual_mfu": None}}, objs)
    assert sc.feasible and sc.constraints[-1] == 0.0


def test_the_metrics_refused_are_empty_on_the_catalog_for_real_designs():
    """The premise: every metric the check calls trace-driven is None in the scalar evaluation of
    catalog designs (random points of spaces/full.toml, feasible or not)."""
    _, traced = closed_form_metrics({"model": "qwen3.5-35b-a3b", "trace": "catalog"})
    space = load_space(ROOT / "spaces" / "full.toml")
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(60):
        values = {d.name: d.choices[rng.integers(len(d.choices))] for d in space.dims if d.type == "categorical"}
        try:
            point = DesignPoint.from_dict({**values, "model": "qwen3.5-35b-a3b", "trace": "catalog"})
        except ConfigError:
            continue
        m = evaluate(point).metrics
        assert all(m.get(k) is None for k in traced - {"infeasible_reason"}), \
            {k: m.get(k) for k in traced if m.get(k) is not None}
        checked += 1
    assert checked >= 20
