"""Schedule-aware delivered throughput (spec Eq. 2): pure functions by hand, then the pipeline."""
from __future__ import annotations

import pytest

from dse.performance import delivered
from dse.pipeline.evaluate import evaluate
from dse.spec import DesignPoint

# Qwen3.5-35B-A3B: 40 MoE layers x k = 8 routed experts x 3 x 2048 x 512 FP8 weights, 2 FLOP each
FLOPS_35B = 2 * 40 * 8 * 3 * 2048 * 512          # 2,013,265,920 FLOP per token
PEAK_35B_GFLOPS = 25 * 128_000                    # 25 dies x 128 TFLOPS = 3.2 PFLOPS


def test_eq2_by_hand():
    rate = delivered.delivered_gflops(PEAK_35B_GFLOPS, actual_mfu=0.4, round_stretch=1.25)
    assert rate == pytest.approx(1.024e6)                             # 3.2 PFLOPS x 0.4 / 1.25
    t_comp = delivered.compute_us_per_token_delivered(FLOPS_35B, rate)
    assert t_comp == pytest.approx(2_013_265_920 / 1.024e15 * 1e6)    # 1.9661 us
    assert delivered.ffn_us_per_token_delivered(0.49, t_comp) == pytest.approx(1.96608, rel=1e-5)
    assert delivered.ffn_us_per_token_delivered(2.5, t_comp) == 2.5   # the weight stream binds
    assert delivered.tokens_per_s(2.0) == pytest.approx(500_000)


def _m(**knobs) -> dict:
    return evaluate(DesignPoint.from_dict({"batch": 128, "trace_steps": 16, **knobs})).metrics


def test_delivered_latency_of_the_default_design_at_b128_by_hand():
    m = _m()
    # the published figure is compute-bound at *peak*: 2.013e9 FLOP / 3.2e15 FLOP/s
    assert m["ffn_latency_us_per_token"] == pytest.approx(FLOPS_35B / 3.2e15 * 1e6)
    hand = max(m["ffn_read_us_per_token"], FLOPS_35B / (3.2e15 * m["actual_mfu"] / m["round_stretch"]) * 1e6)
    assert m["ffn_us_per_token_delivered"] == pytest.approx(hand)
    assert m["ffn_us_per_token_delivered"] > m["ffn_latency_us_per_token"]
    assert m["delivered_tokens_per_s"] == pytest.approx(1e6 / hand)
    assert m["usd_per_mtok_delivered"] > m["usd_per_mtok"]


def test_direct_pooling_is_slower_than_broadcast_on_the_schedule():
    b, d = _m(pooling="broadcast"), _m(pooling="direct")
    assert b["ffn_latency_us_per_token"] == d["ffn_latency_us_per_token"]      # the published figure cannot tell
    assert d["ffn_us_per_token_delivered"] > 2 * b["ffn_us_per_token_delivered"]
    assert d["usd_per_mtok_delivered"] > b["usd_per_mtok_delivered"]


def test_no_schedule_no_delivered_figure():
    m = evaluate(DesignPoint.from_dict({"trace": "catalog"})).metrics
    assert m["ffn_us_per_token_delivered"] is None and m["usd_per_mtok_delivered"] is None
