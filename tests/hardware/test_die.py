"""Core tiling of a die (grid, remainder units, the one core floorplan) and the tokens and experts
that reach one die of a layer."""
from __future__ import annotations

import pytest

from dse.hardware import die


def test_core_tiling_remainder():
    assert die.core_grid(6, 16, 20, "partial") == (3, 4)
    assert die.core_grid(6, 16, 20, "idle") == (2, 3)
    assert die.remainder_units(6, 16, 20) == 320 - 6 * 36
    assert die.active_units(8, 16, 20, "idle") == 4 * 64
    assert die.active_units(8, 16, 20, "partial") == 320


def test_core_spans_partial_and_idle():
    assert die.core_spans(16, 6, "partial") == [6, 6, 4]
    assert die.core_spans(16, 6, "idle") == [6, 6]
    assert die.core_spans(16, 4, "partial") == die.core_spans(16, 4, "idle") == [4, 4, 4, 4]


def test_one_floorplan_for_the_noc_and_the_scheduler():
    from dse.mapping import placement as pl
    for side in range(1, 9):
        for rem in ("partial", "idle"):
            shapes = die.core_shapes(side, 16, 20, rem)
            assert [w * h for _, _, w, h in shapes] == pl.die_core_units(side, 16, 20, rem)
            assert len(shapes) == die.cores_per_die(side, 16, 20, rem)


def test_tokens_and_experts_on_a_die_by_hand():
    # a layer that fits (257 experts on 320 units): every token reaches the die with all 9 experts
    assert die.p_token_on_die(9, 257, 320) == 1.0
    assert die.experts_per_token_on_die_given_touch(9, 257, 320) == 9.0
    # half a layer per die, 2 experts per token: P(on die) = 1 - 0.5^2 = 0.75, E[experts] = 1,
    # experts of a token that reaches the die = 1 / 0.75
    assert die.p_token_on_die(2, 640, 320) == 0.75
    assert die.experts_per_token_on_die(2, 640, 320) == 1.0
    assert die.experts_per_token_on_die_given_touch(2, 640, 320) == pytest.approx(4 / 3)
    assert die.tokens_on_die(8, 0.75) == 6.0
    assert die.experts_per_token_on_die_given_touch(0, 640, 320) == 0.0
