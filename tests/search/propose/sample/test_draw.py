"""Uniform draws and mutants of a space: the compiled fast path (``draw.compiled``) asks the same
questions as ``Space.suggest`` (the reference) and so yields the same points from the same
generator stream, down to the generator's state afterwards."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.errors import ConfigError
from dse.search.propose.sample import draw
from dse.search.space.space_file import load_space, space_from_dict
from dse.search.study.study import load_study

ROOT = Path(__file__).resolve().parents[4]
FULL = load_space(ROOT / "spaces" / "full.toml")
# a log scale, floats without a step, expression bounds on two earlier knobs, a fixed knob, a condition
ODD_PARAMS = {
    "core_side": {"type": "int", "low": 1, "high": 8},
    "die_units_x": {"type": "int", "low": 8, "high": 24, "step": 4},
    "pe_groups_per_core": {"type": "int", "low": "max(1, core_side - 1)", "high": "min(core_side**2, die_units_x)"},
    "macro_mhz": {"type": "log", "low": 100, "high": 400},
    "pe_mhz": {"type": "float", "low": 200, "high": 800},
    "noc_ghz": {"type": "float", "low": 0.5, "high": "core_side / 2 + 0.5", "step": 0.25},
    "array_depth": {"type": "int", "low": 8192, "high": 65536, "log": True},
    "pooling": {"type": "fixed", "value": "direct"},
    "fetch": {"type": "categorical", "choices": ["fifo", "load_aware"]},
    "fetch_queue_depth": {"type": "int", "low": 2, "high": 32, "step": 2, "when": {"fetch": "load_aware"}},
}
ODD = space_from_dict({"params": ODD_PARAMS}, source="odd")


def _stream(space, base, seed, uniform, mutant, n=60):
    rng = np.random.default_rng(seed)
    out = [uniform(space, base, rng) for _ in range(n)]
    out += [mutant(space, base, rng, out[i % 7]) for i in range(n)]
    return [list(p.items()) + [tuple(type(v).__name__ for v in p.values())] for p in out], rng.random()


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), space=st.sampled_from([FULL, ODD]))
def test_fast_draws_equal_the_space_suggest_reference(seed, space):
    base = load_study(ROOT / "studies" / "full.toml").base_env()
    assert _stream(space, base, seed, draw.uniform, draw.mutant) == _stream(
        space, base, seed, draw.reference_uniform, draw.reference_mutant)


def test_a_bound_out_of_range_still_raises_every_time():
    space = space_from_dict({"params": {
        "core_side": {"type": "int", "low": 1, "high": 8},
        "pe_groups_per_core": {"type": "int", "low": 1, "high": "core_side - 4"}}}, source="bad")
    rng = np.random.default_rng(0)
    raised = 0
    for _ in range(40):
        try:
            p = draw.uniform(space, {}, rng)
            assert p["pe_groups_per_core"] <= p["core_side"] - 4
        except ConfigError as exc:
            assert "pe_groups_per_core" in str(exc)
            raised += 1
    assert 0 < raised < 40


@pytest.mark.parametrize("space", [FULL, ODD])
def test_is_legal_agrees_with_the_reference(space):
    rng = np.random.default_rng(1)
    base = {}
    for _ in range(30):
        p = draw.uniform(space, base, rng)
        assert draw.is_legal(space, base, p)
        name = next(iter(p))
        assert not draw.is_legal(space, base, {**p, name: -1})
