"""``benchmarks/bench_basins.py``: the knee score, each architecture's best design, and the hybrids
of two designs (every subset of the knobs they differ in, moved to the second's values),
checked against evaluations made here one design at a time (the runs are the benchmark's)."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_basins as bb  # noqa: E402


def test_the_knee_score_inverts_maximised_objectives():
    # latency 2, cost 3 minimised, MFU 0.5 maximised: -(ln 2 + ln 3 - ln 0.5) = -ln 12
    assert bb.knee_score([2.0, 3.0, 0.5], ("minimize", "minimize", "maximize")) == pytest.approx(-math.log(12))


def test_each_architecture_keeps_its_best_feasible_design():
    rec = lambda f, v, **p: SimpleNamespace(feasible=f, values=v, params=p)   # noqa: E731
    recs = [rec(True, [2.0], side=4, x=1), rec(True, [1.0], side=4, x=2), rec(False, [0.5], side=4, x=3),
            rec(True, [3.0], side=5, x=1), rec(True, None, side=6, x=1)]
    best = bb.best_by_architecture(recs, ("side",), ("minimize",))
    assert set(best) == {(4,), (5,)}
    assert best[(4,)] == (pytest.approx(0.0), {"side": 4, "x": 2})     # -ln 1: the infeasible 0.5 is not taken
    assert best[(5,)][0] == pytest.approx(-math.log(3.0))


def _evaluate(cfg, p):
    from dse.search.execute.evaluation import evaluate_design
    from dse.search.space.objectives import score
    sc = score(evaluate_design(cfg.design(p), cfg.models), cfg.objectives)
    return bb.knee_score(sc.values, tuple(cfg.objectives.directions)) if sc.feasible else None


def test_the_hybrids_are_every_subset_moved_and_match_one_by_one_evaluations():
    from dse.search.study.study import load_study
    cfg = load_study(ROOT / "studies" / "quickstart.toml")
    a = {"core_side": 4, "core_mesh_link_bits": 512, "macro_mhz": 200.0}
    b = {"core_side": 2, "core_mesh_link_bits": 256, "macro_mhz": 300.0}
    differ, got = bb.hybrids(cfg, a, b, exact_max=12)
    assert differ == ["core_mesh_link_bits", "core_side", "macro_mhz"]
    assert sorted(got, key=lambda s: (len(s), s)) == [
        ("core_mesh_link_bits",), ("core_side",), ("macro_mhz",), ("core_mesh_link_bits", "core_side"),
        ("core_mesh_link_bits", "macro_mhz"), ("core_side", "macro_mhz"),
        ("core_mesh_link_bits", "core_side", "macro_mhz")]
    assert got[("macro_mhz",)] == _evaluate(cfg, {**a, "macro_mhz": 300.0})
    assert got[("core_mesh_link_bits", "core_side", "macro_mhz")] == _evaluate(cfg, b)
    assert got[("core_mesh_link_bits",)] == _evaluate(cfg, {**a, "core_mesh_link_bits": 256})
    assert len({v for v in got.values() if v is not None}) >= 4      # the knobs move the score
    # beyond exact_max: single knobs, pairs, triples and all of them, each once
    _, few = bb.hybrids(cfg, a, b, exact_max=1)
    assert sorted(few) == sorted(got)
