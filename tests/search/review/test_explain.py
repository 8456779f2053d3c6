"""`dse explain`: contributions add up to each objective's change, only differing knobs get one,
a single changed knob takes all of it, linked knobs are one player."""
from __future__ import annotations

import math

import pytest

from dse.search.review import explain as ex
from dse.search.review import reference as rf


def _check_adds_up(out):
    for n, total in out["total"].items():
        parts = [c[n] for c in out["contributions"].values()]
        assert abs(sum(parts) - total) < 1e-6


@pytest.mark.parametrize("scale", ["log", "linear"])
def test_contributions_add_up_and_only_differing_knobs(res, scale):
    a, b = rf.endpoint(res, "published"), rf.endpoint(res, "knee")
    out = ex.explain(res, a, b, scale=scale)
    _check_adds_up(out)
    differ = {k for k, v in out["from"]["params"].items() if v != out["to"]["params"][k]}
    assert {k for p in out["players"] for k in p} == differ
    assert out["scale"] == scale and out["method"]["exact"]
    fa, fb = out["from"]["objectives"], out["to"]["objectives"]
    for n in out["total"]:
        want = math.log(fb[n] / fa[n]) if scale == "log" else fb[n] - fa[n]
        assert out["total"][n] == pytest.approx(want, rel=1e-9, abs=1e-12)
    shares = out["feasibility"]["contributions"]
    assert sum(v["all"] for v in shares.values()) == pytest.approx(float(out["to"]["feasible"])
                                                                     - float(out["from"]["feasible"]))


def test_sampled_orders_add_up_with_errors(res):
    out = ex.explain(res, rf.endpoint(res, "published"), rf.endpoint(res, "knee"), exact_max=0, orders=8)
    _check_adds_up(out)
    assert not out["method"]["exact"] and set(out["stderr"]) == set(out["contributions"])


def test_one_changed_knob_takes_all_of_the_change(res):
    a = rf.endpoint(res, "published")
    b = rf.Endpoint("one knob", {**a.design, "macro_mhz": 150.0})
    out = ex.explain(res, a, b)
    assert list(out["contributions"]) == ["macro_mhz"]
    assert out["contributions"]["macro_mhz"] == pytest.approx(out["total"], rel=1e-12)
    flips = out["feasibility"]["flips"]["macro_mhz"]
    assert [(f["model"], f["makes"]) for f in flips] == [("glm-5.2", "feasible")]
    assert "comm_violation <= 0" in flips[0]["violated"]


def test_linked_knobs_are_one_player():
    a = {"core_side": 4, "pe_groups_per_core": 16, "tile_width": 4}
    b = {"core_side": 2, "pe_groups_per_core": 4, "tile_width": 8}
    assert ex.players(a, b) == [("core_side", "pe_groups_per_core"), ("tile_width",)]
    assert ex.players(a, {**b, "pe_groups_per_core": 16}) == [("core_side",), ("tile_width",)]
    assert ex.hybrid(a, b, frozenset({0}), ex.players(a, b)) == {"core_side": 2, "pe_groups_per_core": 4,
                                                                  "tile_width": 4}


def test_same_design_has_nothing_to_explain(res):
    a = rf.endpoint(res, "knee")
    out = ex.explain(res, a, a)
    assert out["contributions"] == {} and all(v == 0 for v in out["total"].values())
