"""Knee confidence under the model's unknowns (``dse front --robust --model-uncertainty N``)."""
from __future__ import annotations

import pytest

from dse.constants import C
from dse.search.front import model_uncertainty as mu
from tests.search.review.test_quality import fake_eval, fake_study

SEEN: list = []


def recording_eval(design, models):
    """fake_eval, remembering the constants it was evaluated under."""
    SEEN.append((C.t_layer_fixed_us, C.stretch_per_hop, design.get("trace_seed")))
    return fake_eval(design, models)


def test_every_draw_is_a_variant_and_its_constants_reach_the_evaluation(tmp_path):
    res = fake_study(tmp_path)
    SEEN.clear()
    before = (C.t_layer_fixed_us, C.stretch_per_hop)
    rk = mu.model_uncertainty_knees(res, 5, recording_eval)
    assert len(rk.variants) == 5 and sum(rk.counts.values()) + sum(k is None for k in rk.knees) == 5
    assert (C.t_layer_fixed_us, C.stretch_per_hop) == before                  # restored after each
    drawn = {s[:2] for s in SEEN}
    assert len(drawn) == 5 and all(0.31 <= t <= 0.41 and 0.05625 <= h <= 0.05875 for t, h in drawn)
    assert all(mu.CONSTANTS_KEY not in v.label for v in rk.variants)
    js = rk.to_json(res)
    ff = rk.front_frequency()
    for row in js["knee_frequency"]:
        assert row["front_frequency"] == ff[row["trial"]] and 0 <= row["front_frequency"] <= 1
    assert sum(rk.frequency().values()) == pytest.approx(1.0)
    assert max(ff.values()) == 1.0 or len({tuple(f) for f in rk.fronts}) > 1
