"""Design points of a space drawn by hypothesis (shared by the vector and bound tests)."""
from __future__ import annotations

import math

from hypothesis import strategies as st


class DrawTrial:
    """An optuna-like trial whose suggestions hypothesis draws (the space's own bounds,
    steps, conditions and dependent bounds decide what is drawable)."""
    def __init__(self, data):
        self.data = data

    def suggest_categorical(self, name, choices):
        return self.data.draw(st.sampled_from(list(choices)), label=name)

    def suggest_int(self, name, low, high, step=1, log=False):
        return low + step * self.data.draw(st.integers(0, (high - low) // step), label=name)

    def suggest_float(self, name, low, high, step=None, log=False):
        k = self.data.draw(st.integers(0, int(math.floor((high - low) / step + 1e-9))), label=name)
        return float(f"{low + k * step:.12g}")
