"""Knee confidence: the designs around the front re-evaluated under other trace seeds."""
from __future__ import annotations

import pytest

from dse.search.front import robust
from tests.search.review.test_quality import fake_eval, fake_study


def big_bump(design, models):
    """``fake_eval`` with the bump of b raised from 0.6 to 2.0."""
    out = fake_eval(design, models)
    bumped = design["core_side"] == 2 + int(design.get("trace_seed", 0)) % 3
    return {m: {**v, "b": v["b"] + (1.4 if bumped else 0.0)} for m, v in out.items()}


def test_robust_knees_count_every_variant(tmp_path):
    res = fake_study(tmp_path)
    variants = robust.seed_variants(res.cfg, 6)
    assert [v.overrides["trace_seed"] for v in variants] == [1, 2, 3, 4, 5, 6]
    rk = robust.robust_knees(res, variants, big_bump)
    freq = rk.frequency()
    assert sum(rk.counts.values()) == 6 and sum(freq.values()) == pytest.approx(1.0)
    # by hand (a minimised, b maximised; knee utility ln(b / a), the ends of a front not knees
    # while a bulge inside it exists): the bump moves to side 2 + seed % 3 -> sides 3, 4, 2, 3, 4, 2
    # (broadcast wins each time). At side 2 the front is (1, 2): no inside point, and b / a =
    # 3.91 / 2 beats 1.5 / 1; at sides 3 and 4 the front (1, 2, 3[, 4]) sags, no point inside it
    # bulges, and side 1 has the best b / a
    sides = [res.record(k).params["core_side"] for k in rk.knees]
    assert sides[2] == sides[5] == 2
    assert all(s in (1, 3, 4) for i, s in enumerate(sides) if i not in (2, 5))
    js = rk.to_json(res)
    assert js["knee_frequency"][0]["frequency"] == max(freq.values())

def test_robust_knees_through_run_many_equal_the_in_process_ones(tmp_path):
    """The CLI hands the re-evaluations to the engine's pool (``run_many``): the same knees."""
    res = fake_study(tmp_path)
    variants = robust.seed_variants(res.cfg, 4)
    calls = []

    def run_many(fn, tasks):
        calls.append(len(tasks))
        return [fn(d, m) for d, m in tasks]
    a = robust.robust_knees(res, variants, big_bump)
    b = robust.robust_knees(res, variants, big_bump, run_many=run_many)
    assert calls and a.knees == b.knees and a.counts == b.counts and a.fronts == b.fronts
