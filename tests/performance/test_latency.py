"""Weight-read latency per token, by hand."""
from __future__ import annotations

import pytest

from dse.performance import latency


def test_latency_by_hand():
    # 40 layers x (50.1 x 3 MiB + 2048 x 256 B router) / 8 tokens / 409.6 TB/s
    step = latency.weight_bytes_per_step(40, 50.1, 3 * 2048 * 512, 2048 * 256)
    assert latency.read_us_per_token(step / 8, 409.6e3) == pytest.approx(1.93024)


def test_no_pooling_bytes_by_hand():
    # spec s8: without pooling every PE job reads its weights: 213.5 jobs per layer at B = 64
    # replace U(B) = 168.6 -> 40 x (213.5 x 3 MiB + 2048 x 256 B) / 64 = 420.1 MB per token
    b = latency.no_pooling_weight_bytes_per_token(40, 213.5, 3 * 2048 * 512, 2048 * 256, 64)
    assert b == pytest.approx(40 * (213.5 * 3 * 2048 * 512 + 2048 * 256) / 64)
    assert b / 1e6 == pytest.approx(420.1, abs=0.05)
