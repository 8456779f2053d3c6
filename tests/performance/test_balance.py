"""Machine balance and the knee batch (Table I and the spec text)."""
from __future__ import annotations

import pytest

from dse.catalog import get_gpu, get_model
from dse.performance import balance
from tests.reference import check

M35 = get_model("qwen3.5-35b-a3b")


# ---- Table I --------------------------------------------------------------------------------
@pytest.mark.parametrize("gpu,prefix", [("h20", "h20"), ("h100", "h100")])
def test_machine_balance(gpu, prefix):
    g = get_gpu(gpu)
    f = balance.flop_per_byte(g.flops, g.read_bps)
    check("machine_balance", f"{prefix}_flop_per_byte", f)
    check("machine_balance", f"{prefix}_tokens_per_read", balance.tokens_per_read(f))
    check("machine_balance", f"{prefix}_knee_batch_35b", balance.knee_batch(f, M35.experts, M35.top_k))


def test_knee_batch_397b_from_spec_text():
    # spec s1: 397B (E/k = 51.2): 1894 (H20) / 15123 (H100)
    m = get_model("qwen3.5-397b-a17b")
    for gpu, pub in (("h20", 1894), ("h100", 15123)):
        g = get_gpu(gpu)
        got = balance.knee_batch(balance.flop_per_byte(g.flops, g.read_bps), m.experts, m.top_k)
        assert abs(got - pub) <= 1
