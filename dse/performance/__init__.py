"""Closed-form performance physics of the FFN pool: layer time and per-token latency, weight
energy, machine balance, the GPU baselines and attention-FFN serving."""
