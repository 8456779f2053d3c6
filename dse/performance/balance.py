"""Machine balance and knee batch (spec section 1, Table I).

F = peak FLOP/s / read B/s. A weight read shared by t tokens gives 2t FLOP/B, so the compute
roof needs t >= F/2 tokens per read; the mean expert load is B k / E, so the knee batch is
B* = (F/2)(E/k). H20: F = 74, 37 tokens/read, B* = 1184 for the 35B model (E/k = 32).
"""
from __future__ import annotations


def flop_per_byte(peak_flops: float, read_bytes_per_s: float) -> float:
    return peak_flops / read_bytes_per_s


def tokens_per_read(balance: float) -> float:
    """Tokens that must share one weight read to reach the compute roof: F/2."""
    return balance / 2


def knee_batch(balance: float, experts: int, top_k: int) -> float:
    """B* = (F/2) (E/k): the batch at which the mean expert load reaches F/2."""
    return tokens_per_read(balance) * experts / top_k
