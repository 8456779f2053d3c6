"""`dse front --reference`: the reference evaluated as a trial of the study is, and placed
against the front (checked against a plain re-computation on the study's records)."""
from __future__ import annotations

import numpy as np
import pytest

from dse.errors import ConfigError
from dse.search.review import reference as rf


def test_published_is_the_spec_default_with_the_study_workload(res):
    ep = rf.reference_endpoint(res.cfg, "published")
    assert ep.design["core_side"] == 4 and ep.design["array_depth"] == 32768
    assert "model" not in ep.design


def test_reference_evaluates_as_the_study_evaluates_a_trial(res):
    r = res.front()[0]
    ev = rf.evaluate_as_study(res.cfg, r.design)
    assert ev.values == pytest.approx(r.values, rel=1e-12) and ev.feasible == r.feasible


def test_dominated_by_equals_a_plain_recomputation(res):
    ep = rf.reference_endpoint(res.cfg, "published")
    ref = rf.reference_json(res, ep, rf.evaluate_as_study(res.cfg, ep.design))
    names = res.cfg.objectives.names
    signs = [o.sign for o in res.cfg.objectives.objectives]
    mine = [s * ref["objectives"][n] for s, n in zip(signs, names)]
    want = []
    for r in res.front():
        v = [s * r.values[j] for j, s in enumerate(signs)]
        if all(a <= b for a, b in zip(v, mine)) and any(a < b for a, b in zip(v, mine)):
            want.append(r.number)
    assert ref["dominated_by"] == want
    # published is infeasible on glm-5.2 alone (node demand over its provision)
    assert ref["feasible"] is False
    assert [m for m, x in ref["per_model"].items() if not x["feasible"]] == ["glm-5.2"]
    assert ref["nearest"]["trial"] in [r.number for r in res.front()]
    e = ref["epsilon"]
    assert (e["additive"] <= 0) == bool(want or any(
        all(s * r.values[j] <= mine[j] for j, s in enumerate(signs)) for r in res.front()))


def test_design_file_reference_and_bad_files(res, tmp_path):
    from dse.search.review.export import write_design
    r = res.front()[0]
    path = write_design(res, r, tmp_path / "d.toml")
    ep = rf.reference_endpoint(res.cfg, str(path))
    assert ep.notes == ["batch = 128 of the design file d.toml replaced by the study's value (unset: each "
                        "model's native batch)"]          # the study's workload, as for a trial
    ev = rf.evaluate_as_study(res.cfg, ep.design)
    assert np.allclose(ev.values, r.values, rtol=1e-12)
    assert rf.reference_json(res, ep, ev)["dominated_by"] == []      # a front design
    bad = tmp_path / "bad.toml"
    bad.write_text("[hardware]\ncore_sid = 4\n")
    with pytest.raises(ConfigError, match=r"bad.toml.*core_sid"):
        rf.reference_endpoint(res.cfg, str(bad))
    with pytest.raises(ConfigError, match="no such design file"):
        rf.reference_endpoint(res.cfg, str(tmp_path / "missing.toml"))
