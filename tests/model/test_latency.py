"""Weight-read latency per token, by hand."""
from __future__ import annotations

import pytest

from dse.model import latency


def test_latency_by_hand():
    # 40 layers x (50.1 x 3 MiB + 2048 x 256 B router) / 8 tokens / 409.6 TB/s
    step = latency.weight_bytes_per_step(40, 50.1, 3 * 2048 * 512, 2048 * 256)
    assert latency.read_us_per_token(step / 8, 409.6e3) == pytest.approx(1.93024)
