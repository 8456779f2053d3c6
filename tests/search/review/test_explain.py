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


def _stand_in(design, models):
    """Objectives from three knobs; no cost for the hybrid with B's clock and node links but A's depth."""
    lat = design["array_depth"] / 8192 + 200 / design["macro_mhz"]
    out = {"feasible": True, "infeasible_reason": "", "ffn_us_per_token_scheduled": lat,
           "effective_mfu": design["node_gbps"] / 100, "die_area_mm2": 1.0, "die_area_budget_mm2": 2.0,
           "comm_violation": 0.0, "usd_per_mtok_delivered": lat * 2}
    if design["macro_mhz"] == 150 and design["node_gbps"] == 64 and design["array_depth"] == 32768:
        del out["usd_per_mtok_delivered"]
    return {m: dict(out) for m in models}


def test_non_finite_hybrids_take_the_worst_value_or_are_not_attributed(res):
    a = rf.endpoint(res, "published")
    b = rf.Endpoint("b", {**a.design, "macro_mhz": 150.0, "node_gbps": 64.0, "array_depth": 24576})
    out = ex.explain(res, a, b, evaluator=_stand_in)
    assert out["nonfinite"]["usd_per_mtok_delivered"]["hybrids"] == 1
    assert sorted(out["nonfinite"]["usd_per_mtok_delivered"]["example"]["switched"]) == ["macro_mhz", "node_gbps"]
    _check_adds_up(out)
    assert out["contributions"]["node_gbps"]["ffn_us_per_token_scheduled"] == pytest.approx(0, abs=1e-12)
    skip = ex.explain(res, a, b, evaluator=_stand_in, nonfinite="skip")
    assert "usd_per_mtok_delivered" in skip["not_attributable"]
    assert all(c["usd_per_mtok_delivered"] is None for c in skip["contributions"].values())
    assert all(c["effective_mfu"] is not None for c in skip["contributions"].values())
