"""Attention-FFN disaggregated serving: time per output token."""
from __future__ import annotations

from dse.performance import serving


def test_af_serving_functions():
    assert serving.tpot_af_us(6.0, 2.0) == 6.0 and serving.tpot_homogeneous_us(6.0, 18.0) == 24.0
