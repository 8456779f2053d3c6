"""`dse grid`: the vectorised enumeration is the grid sampler's, and the front and knee equal
the scalar path's (scalar pipeline, scalar scoring, `pareto.nondominated`, `pareto.knee_index`)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dse.pipeline.evaluate import evaluate
from dse.search.front import pareto
from dse.search.front.ndsort import nondominated_fast
from dse.search.grid.grid import enumerate_space, run_grid
from dse.search.space.objectives import objectives_from_dict, score
from dse.search.space.space_file import space_from_dict
from dse.spec import DesignPoint

ROOT = Path(__file__).resolve().parents[3]

# ~10^3 points, with a bound that depends on an earlier knob and a conditional knob
SUB_GRID = {"params": {
    "core_side": {"type": "int", "low": 2, "high": 6, "step": 2},
    "pe_groups_per_core": {"type": "int", "low": 1, "high": "core_side**2", "step": 5},
    "tile_width": {"type": "categorical", "choices": [2, 8]},
    "array_depth": {"type": "categorical", "choices": ["16K", "24K", "32K", "48K"]},
    "macro_mhz": {"type": "float", "low": 100, "high": 300, "step": 100},
    "reduction_order": {"type": "categorical", "choices": ["ep_first", "tp_first"]},
    "die_noc_link_bits": {"type": "categorical", "choices": [128, 1024], "when": {"reduction_order": "tp_first"}},
    "dies_per_package": {"type": "fixed", "value": 2},
}}
TWO = {"objectives": [{"metric": "ffn_latency_us_per_token"}, {"metric": "pool_power_w"}],
       "constraints": [{"metric": "die_area_mm2", "le": "die_area_budget_mm2"}]}
THREE = {"objectives": [{"metric": "t_layer_us"}, {"metric": "usd_per_mtok"},
                        {"metric": "die_noc_headroom_gbps", "direction": "maximize"}],
         "constraints": [{"metric": "comm_violation", "le": 0}, {"metric": "die_area_slack_mm2", "ge": 5}]}


def _base_env(base):
    env = DesignPoint.from_dict({**base, "trace": "catalog"}).to_dict()
    env["pe_groups_per_core"] = env["core_side"] ** 2
    return env


def test_enumeration_is_the_grid_samplers_order():
    space = space_from_dict(SUB_GRID)
    env = _base_env({})
    dicts = space.grid(env)
    grid = enumerate_space(space, env)
    assert grid.n == len(dicts) and 900 <= grid.n <= 1500
    searched = set(space.searched_names)
    for i in range(grid.n):
        assert grid.params(i) == {k: v for k, v in dicts[i].items() if k in searched}
        for k, v in grid.params(i).items():
            assert type(v) is type(dicts[i][k])


@pytest.mark.parametrize("objectives,model", [(TWO, "qwen3.5-35b-a3b"), (THREE, "glm-5.2")])
def test_front_and_knee_equal_the_scalar_path(objectives, model):
    space, objset = space_from_dict(SUB_GRID), objectives_from_dict(objectives)
    base = {"model": model, "batch": 64}
    res = run_grid(space, objset, base, chunk=256)
    values, feasible = [], []
    for chosen in space.grid(_base_env(base)):
        metrics = evaluate(DesignPoint.from_dict({**base, **chosen, "trace": "catalog"})).metrics
        s = score({model: metrics}, objset)
        values.append(s.values)
        feasible.append(s.feasible)
    values = np.array(values)
    np.testing.assert_array_equal(res.feasible, feasible)
    assert 0 < sum(feasible) < len(feasible)
    ok = np.isfinite(values)
    np.testing.assert_array_equal(np.isfinite(res.values), ok)
    np.testing.assert_allclose(res.values[ok], values[ok], rtol=1e-12)
    cand = np.flatnonzero(np.array(feasible) & ok.all(axis=1))
    F = pareto.to_min(values[cand], objset.directions)
    mask = pareto.nondominated_pairwise(F)
    assert list(res.front) == list(cand[mask])
    assert res.knee == cand[mask][pareto.knee_index(F[mask])]


def test_fast_nondominated_equals_the_reference_with_ties():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n, m = int(rng.integers(1, 120)), int(rng.integers(1, 5))
        F = rng.integers(0, int(rng.integers(1, 6)), (n, m)).astype(float)
        np.testing.assert_array_equal(nondominated_fast(F), pareto.nondominated_pairwise(F))
    for m in (2, 3):       # large enough for the elite pre-filter
        F = np.round(rng.random((3000, m)), 2)
        np.testing.assert_array_equal(nondominated_fast(F), pareto.nondominated_pairwise(F))
        np.testing.assert_array_equal(pareto.nondominated(F), nondominated_fast(F))   # the dispatch


def _dse(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def test_cli_json_has_the_front_shape_and_refuses_trace_driven_inputs(tmp_path):
    r = _dse("grid", "spaces/depth-width.toml", "--json", "-o", str(tmp_path / "t.parquet"))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["points"] == out["n_trials"] == 700 and out["points_per_s"] > 0 and out["seconds"] > 0
    assert out["knee"]["trial"] in [e["trial"] for e in out["front"]]
    assert set(out["knee"]) >= {"trial", "params", "design", "objectives", "feasible", "reason", "metrics"}
    assert math.isclose(out["knee"]["metrics"]["ffn_latency_us_per_token"],
                        out["knee"]["objectives"]["ffn_latency_us_per_token"])
    import pyarrow.parquet as pq
    t = pq.read_table(tmp_path / "t.parquet")
    assert t.num_rows == 700 and "m.die_area_mm2" in t.column_names and "p.array_depth" in t.column_names
    for args, what in ((("spaces/full.toml",), "params.placement: a trace-driven knob"),
                       (("spaces/depth-width.toml", "--objectives", "objectives/full.toml"),
                        "is trace-driven; `dse grid` evaluates the closed form only")):
        r = _dse("grid", *args)
        assert r.returncode == 2 and what in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cli_checkpoint_is_removed_when_done_and_refused_with_a_table(tmp_path):
    ck = tmp_path / "q.ckpt.npz"
    plain = json.loads(_dse("grid", "spaces/depth-width.toml", "--json").stdout)
    r = _dse("grid", "spaces/depth-width.toml", "--json", "--checkpoint", str(ck))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert not ck.exists() and [e["trial"] for e in out["front"]] == [e["trial"] for e in plain["front"]]
    r = _dse("grid", "spaces/depth-width.toml", "--checkpoint", str(ck), "-o", str(tmp_path / "t.parquet"))
    assert r.returncode == 2 and "a parquet table cannot be resumed" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
