"""The closed-form bound of ``ffn_us_per_token_scheduled`` (``bounds.scheduled_floor_us``, what the
guided sampler and the multi-fidelity screen read) never exceeds the scheduled value, and the
vectorised bound table gives the same bound, over random designs of ``spaces/full.toml``."""
from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.pipeline.evaluate import evaluate
from dse.search.propose.bound.fidelity import closed_form_bounds, closed_form_bounds_many
from dse.search.space.space_file import load_space
from dse.spec import DesignPoint
from tests.draw import DrawTrial

FULL = load_space(Path(__file__).resolve().parents[2] / "spaces" / "full.toml")
METRICS = ("ffn_us_per_token_scheduled", "usd_per_mtok_scheduled")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_scheduled_bound_never_exceeds_the_scheduled_value(data):
    model = data.draw(st.sampled_from(["qwen3.5-35b-a3b", "qwen3-30b-a3b"]), label="model")
    workload = {"batch": data.draw(st.sampled_from([1, 8, 16, 64, 128, 256]), label="batch"),
                "trace": "synthetic", "trace_steps": data.draw(st.sampled_from([4, 16]), label="steps")}
    design = {**FULL.suggest(DrawTrial(data), {**workload, "model": model}), **workload}
    point = DesignPoint.from_dict({**design, "model": model})
    m = evaluate(point).metrics
    b = closed_form_bounds({model: point})[model]
    many = closed_form_bounds_many([{model: point}])[0][model]
    for k in METRICS:
        assert (b.get(k) is None) == (many.get(k) is None)
        if m[k] is None or b.get(k) is None:
            continue
        assert b[k] <= m[k], f"{k}: bound {b[k]} > scheduled {m[k]} for {design}"
        assert b[k] == many[k]
