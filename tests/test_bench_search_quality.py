"""The measures of ``benchmarks/bench_search_quality.py --only catalog`` on synthetic fronts: the
hypervolume share of the union front, the knee score on one common scale and the knee regret,
the per-sampler summary and the verdict (the runs themselves are the benchmark's, not a test's)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_search_quality as bq  # noqa: E402


def test_hv_share_of_the_union_front_by_hand():
    # two objectives, minimised; union front (0,1), (0.5,0.5), (1,0): ideal (0,0), nadir (1,1),
    # reference 1.1: union HV 0.1*0.5 + 0.6*0.5 + 1.1*0.1 = 0.46
    a = np.array([[0.0, 1.0], [1.0, 0.0]])          # HV 0.1*1 + 1.1*0.1 = 0.21
    b = np.array([[0.5, 0.5]])                      # HV 0.6*0.6 = 0.36
    dominated = np.array([[2.0, 2.0]])              # beyond the reference once normalised
    empty = np.zeros((0, 2))
    shares = bq.hv_shares([a, b, dominated, empty])
    assert shares == pytest.approx([0.21 / 0.46, 0.36 / 0.46, 0.0, 0.0])
    assert bq.hv_shares([np.vstack([a, b])]) == pytest.approx([1.0])
    assert len(bq.union_front([a, b, dominated, empty])) == 3


def test_the_union_normalises_every_run_alike():
    # a run that found only the union's nadir corner region scores less than one spanning it
    lo = np.array([[0.0, 10.0], [10.0, 0.0]])
    mid = np.array([[4.0, 4.0]])
    s_lo, s_mid = bq.hv_shares([lo, mid])
    assert 0 < s_lo < s_mid < 1


def test_knee_score_is_minus_the_log_product_with_maximised_objectives_inverted():
    # latency, cost minimised, MFU maximised (negated in the minimisation form)
    U = np.array([[1.0, 4.0, -0.25], [2.0, 3.0, -0.5], [4.0, 1.0, -0.2]])
    scores = bq.knee_scores([[2.0, 3.0, -0.5], None, [1.0, 4.0, -0.25]], U)
    assert scores[0] == pytest.approx(-math.log(2.0 * 3.0 / 0.5))
    assert scores[1] == -math.inf
    assert scores[2] == pytest.approx(-math.log(1.0 * 4.0 / 0.25))
    # the common scale does not hinge on the union's spread: another union, the same scores
    other = np.array([[0.5, 9.0, -0.9], [8.0, 0.7, -0.1]])
    assert bq.knee_scores([[2.0, 3.0, -0.5]], other)[0] == pytest.approx(scores[0])


def test_a_one_design_front_scores_on_the_common_scale_not_its_own():
    # on its own front a lone design's objectives are constant, dropped from its scale: utility 0
    from dse.search.front.knee import Scale
    lone = np.array([[2.0, 3.0, -0.5]])
    assert Scale.of(lone).utility(lone)[0] == 0.0
    U = np.vstack([lone, [[1.0, 5.0, -0.4]]])
    assert bq.knee_scores([lone[0].tolist()], U)[0] == pytest.approx(-math.log(12.0))


def test_knee_regret_is_the_best_score_minus_each():
    assert bq.knee_regrets(np.array([-1.0, -2.5, -math.inf])).tolist() == [0.0, 1.5, math.inf]
    assert bq.knee_regrets(np.array([-math.inf, -math.inf])).tolist() == [math.inf, math.inf]


def _row(sampler, budget, seed, front, knee):
    return bq.CatalogRow(sampler, budget, seed, {"front": front, "knee": knee, "trials": 48, "wall": 10.0,
                                                 "cpu": 12.0})


def test_scored_rows_summary_and_verdict():
    good = [[1.0, 1.0, -1.0]]                     # the best knee: utility 0
    fair = [[1.0, 2.0, -1.0]]      # ln 2 worse in cost; dominated, so the union front is one design
    rows = [_row("guided", "shipped", 0, good, good[0]), _row("guided", "shipped", 1, fair, fair[0]),
            _row("tpe", "trials", 0, fair, fair[0]), _row("tpe", "trials", 1, [], None),
            _row("tpe", "wall", 0, good, good[0]), _row("tpe", "wall", 1, good, good[0])]
    U = bq.score_rows(rows)
    assert np.unique(U, axis=0).tolist() == good       # equal rows all kept (pareto.nondominated)
    assert [r.regret for r in rows] == pytest.approx([0, math.log(2), math.log(2), math.inf, 0, 0])
    assert [r.share for r in rows][3] == 0.0
    assert rows[1].share < rows[0].share == pytest.approx(1.0)
    s = bq.summarise(rows)
    g = s[("guided", "shipped")]
    assert g["regret_mean"] == pytest.approx(math.log(2) / 2) and g["regret_worst"] == pytest.approx(math.log(2))
    assert g["hv_worst"] == pytest.approx(rows[1].share) and g["runs"] == 2
    assert s[("tpe", "trials")]["regret_worst"] == math.inf
    # guided beats TPE at equal trials, loses to it at equal wall time (TPE found the best design twice)
    assert bq.catalog_verdict(s, "guided") == {"trials": True, "wall": False}


def test_the_verdict_needs_both_measures():
    me = {"hv_mean": 0.9, "regret_mean": 0.01}
    assert bq.catalog_verdict({("guided", "shipped"): me, ("gp", "trials"): {"hv_mean": 0.8, "regret_mean": 0.0}},
                              "guided") == {"trials": False}
    assert bq.catalog_verdict({("guided", "shipped"): me, ("gp", "trials"): {"hv_mean": 0.95, "regret_mean": 0.5}},
                              "guided") == {"trials": False}
    assert bq.catalog_verdict({("guided", "shipped"): me, ("gp", "wall"): {"hv_mean": 0.9, "regret_mean": 0.01}},
                              "guided") == {"wall": True}


def test_stock_samplers_get_a_batch_sized_nsga2_population_only():
    assert bq._stock_settings("nsga2", 24) == {"population_size": 24}
    assert all(bq._stock_settings(s, 24) == {} for s in ("tpe", "gp", "random"))
