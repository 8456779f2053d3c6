"""The campaign's spread of a synthetic trace and the profile-correlation mix (issue 33, the
model-uncertainty unknowns ``routing_campaign_position`` and ``profile_load_correlation``)."""
from __future__ import annotations

import numpy as np
import pytest

from dse.catalog import get_model
from dse.constants import C
from dse.data import load_toml
from dse.spec import DesignPoint
from dse.workload import campaign as cp
from dse.workload.stats import load_correlation
from dse.workload.window import workload

M35 = "qwen3.5-35b-a3b"


def test_the_window_is_the_catalogs_campaign_at_the_calibration_batch():
    w = cp.gini_window(get_model(M35))
    camp = load_toml("models.toml")["qwen3_5_35b_a3b"]["routing"]["campaign"]
    at = [r["gini"] for r in camp if r["batch"] == 128]
    assert (w.batch, w.steps, w.seed) == (128, 64, 0)           # synth.toml's calibrated_on
    assert (w.low, w.high, w.rows, w.target) == (min(at), max(at), len(at), 0.491)
    assert w.low < w.target < w.high


def test_the_range_ends_move_the_trace_gini_by_the_campaign_offsets():
    m = get_model(M35)
    w = cp.gini_window(m)
    lo, hi = cp.scale_range(M35)
    g = lambda s: cp.trace_gini(M35, round(s, 12), w.batch, w.steps, w.seed)   # noqa: E731
    g_cal = g(1.0)
    assert lo < 1.0 < hi                                         # gini rises with the skew
    assert g(lo) - g_cal == pytest.approx(w.low - w.target, abs=cp.GINI_TOLERANCE)     # -0.020
    assert g(hi) - g_cal == pytest.approx(w.high - w.target, abs=cp.GINI_TOLERANCE)    # +0.031
    assert cp.skew_scale(m, -1.0) == lo and cp.skew_scale(m, 1.0) == hi and cp.skew_scale(m, 0.0) == 1.0
    assert cp.skew_scale(m, 0.5) == pytest.approx(1 + (hi - 1) / 2)
    assert cp.search_scale_range(m, w) == (lo, hi)               # the recorded answer is a new search's


def test_every_recorded_scale_is_current():
    rec = cp.recorded_scales()
    assert sorted(rec) == sorted(cp.recordable()) == [M35, "qwen3.5-397b-a17b"]
    for name, row in rec.items():
        m = get_model(name)
        assert row["key"] == cp.scale_key(m, cp.gini_window(m))  # else: regenerate (SCALES_HEADER)


def test_an_unrecorded_answer_is_searched_once_then_read_from_disk(tmp_path, monkeypatch):
    m = get_model(M35)
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cp, "recorded_scales", lambda: {})
    calls = []
    monkeypatch.setattr(cp, "search_scale_range", lambda model, w: calls.append(model.name) or (0.9, 1.1))
    cp.scale_range.cache_clear()
    try:
        assert cp.scale_range(M35) == (0.9, 1.1) and calls == [M35]
        assert len(list((tmp_path / "campaign").glob("*.json"))) == 1
        cp.scale_range.cache_clear()
        assert cp.scale_range(M35) == (0.9, 1.1) and calls == [M35]      # from disk, not searched
        monkeypatch.setenv("DSE_CACHE_DIR", "off")
        cp.scale_range.cache_clear()
        assert cp.scale_range(M35) == (0.9, 1.1) and calls == [M35, M35]
    finally:
        cp.scale_range.cache_clear()
    assert cp.scale_key(m, cp.gini_window(m)) != cp.scale_key(m, cp.GiniWindow(128, 64, 1, 0.491, 0.471, 0.522, 3))


@pytest.mark.parametrize("name", ["glm-5.2", "mixtral-8x7b", "qwen3-30b-a3b"])
def test_a_model_without_a_campaign_is_not_moved(name):
    m = get_model(name)
    assert cp.gini_window(m) is None and cp.scale_range(name) is None
    assert cp.skew_scale(m, -1.0) == cp.skew_scale(m, 1.0) == 1.0
    p = DesignPoint.from_dict({"model": name, "trace_steps": 4, "profile_steps": 4, "batch": 8})
    with C.overridden({"routing_campaign_position": 1.0}):
        assert workload(p, m).key[6:] == ()                      # the nominal workload, shared


def test_the_nominal_workload_is_the_calibrated_trace_and_a_draw_has_its_own():
    m = get_model(M35)
    p = DesignPoint.from_dict({"trace_steps": 4, "profile_steps": 4, "batch": 16})
    nominal = workload(p, m)
    assert nominal.key[6:] == ()
    with C.overridden({"routing_campaign_position": 1.0}):
        drawn = workload(p, m)
    assert drawn.key[6:] == (("skew_scale", cp.scale_range(M35)[1]), ("profile_load_correlation", 0.0))
    assert not np.array_equal(drawn.load, nominal.load)
    assert workload(p, m) is nominal                             # restored after the draw


def test_the_profile_mix_reaches_the_target_correlation_with_the_smallest_weight():
    rng = np.random.default_rng(5)
    prof, meas = rng.gamma(1.0, size=(6, 64)), rng.gamma(1.0, size=(6, 64))
    c0 = load_correlation(prof, meas)
    assert abs(c0) < 0.2
    for r in (0.05, 0.09, 0.5):
        mixed, a = cp.mixed_profile(prof, meas, r)
        assert load_correlation(mixed, meas) == pytest.approx(r, abs=1e-6) and 0 < a < 1
        below = (1 - a * 0.99) * prof + a * 0.99 * meas
        assert load_correlation(below, meas) < r                 # a smaller weight does not reach it
    same, a = cp.mixed_profile(prof, meas, c0 - 0.01)
    assert same is prof and a == 0.0                             # already correlated that much
    same, a = cp.mixed_profile(prof, meas, 0.0)
    assert same is prof and a == 0.0


def test_a_drawn_profile_correlation_reaches_the_workload():
    m = get_model(M35)
    p = DesignPoint.from_dict({"trace_steps": 4, "profile_steps": 4, "batch": 16})
    own = workload(p, m).profile_correlation()
    assert own < 0.09                                            # the independent run: about 0
    with C.overridden({"profile_load_correlation": 0.09}):
        wl = workload(p, m)
        assert wl.profile_correlation() == pytest.approx(0.09, abs=1e-6)
        assert np.array_equal(wl.load, workload(p, m).load)      # the measured window is not touched
    assert workload(p, m).profile_correlation() == own
