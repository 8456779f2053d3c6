"""Weight-movement energy per token (spec section 8, Table VII).

331 MB/token at B = 64 -> 1326 uJ at 4.00 pJ/B (HBM) vs 66 uJ at 0.20 pJ/B (ReRAM).
Without pooling every PE job reads its weights: jobs per layer replace U(B)
(213.5 vs 168.6 at B = 64 -> 420 MB, 84 uJ per token).
"""
from __future__ import annotations

from dse.units import UJ_PER_PJ


def energy_uj(bytes_moved: float, pj_per_byte: float) -> float:
    return bytes_moved * pj_per_byte * UJ_PER_PJ
