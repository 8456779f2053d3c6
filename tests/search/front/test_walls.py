"""The walls of the box (dse/search/front/walls.py): shares at each bound, against a plain count."""
from __future__ import annotations

import pytest

from dse.search.front.walls import at_bounds, mapping_limit
from dse.search.space.space_file import space_from_dict

SPACE = space_from_dict({"params": {
    "core_side": {"type": "int", "low": 1, "high": 8},
    "pe_groups_per_core": {"type": "int", "low": 1, "high": "core_side**2"},
    "pe_mhz": {"type": "float", "low": 200, "high": 800, "step": 100},
    "dies_per_package": {"type": "categorical", "choices": [1, 2, 4, 8]},
    "placement": {"type": "categorical", "choices": ["contiguous", "lpt"]},
    "fetch": {"type": "categorical", "choices": ["fifo", "load_aware"]},
    "fetch_queue_depth": {"type": "int", "low": 2, "high": 32, "step": 2, "when": {"fetch": "load_aware"}},
    "array_depth": {"type": "int", "low": 8192, "high": 65536, "step": 4096},
}})


def design(**kw):
    base = dict(core_side=4, pe_groups_per_core=4, pe_mhz=500.0, dies_per_package=4, placement="lpt",
                fetch="fifo", array_depth=16384)
    return {**base, **kw}


def plain_share(designs, knob, value):
    active = [d for d in designs if knob in d]
    return sum(d[knob] == value for d in active) / len(active)


def test_shares_at_each_bound_match_a_plain_count():
    ds = [design(pe_mhz=800.0, dies_per_package=8), design(pe_mhz=800.0, dies_per_package=8),
          design(pe_mhz=800.0, dies_per_package=1), design(pe_mhz=300.0, dies_per_package=2)]
    walls = {(w.knob, w.bound): w for w in at_bounds(SPACE, ds)}
    assert walls[("pe_mhz", "high")].share == pytest.approx(plain_share(ds, "pe_mhz", 800.0)) == 0.75
    assert ("dies_per_package", "high") not in walls                  # 2 of 4: not more than half
    assert not any(w.knob == "placement" for w in walls.values())     # not a numeric knob
    assert walls[("pe_mhz", "high")].limit == ""
    assert "widen the range" in walls[("pe_mhz", "high")].sentence()


def test_expression_bounds_and_inactive_knobs():
    # pe_groups_per_core's high bound is core_side**2: 16 at side 4, 4 at side 2
    ds = [design(core_side=4, pe_groups_per_core=16), design(core_side=2, pe_groups_per_core=4),
          design(core_side=4, pe_groups_per_core=8)]
    walls = {(w.knob, w.bound): w for w in at_bounds(SPACE, ds)}
    assert walls[("pe_groups_per_core", "high")].share == pytest.approx(2 / 3)
    # fetch_queue_depth counts only where load-aware fetch is on: 2 of 2 at the floor
    ds = [design(fetch="load_aware", fetch_queue_depth=2), design(fetch="load_aware", fetch_queue_depth=2),
          design(), design(), design()]
    walls = {(w.knob, w.bound): w for w in at_bounds(SPACE, ds)}
    assert walls[("fetch_queue_depth", "low")].share == 1.0


def test_the_depth_floor_is_a_mapping_limit_only_when_one_step_below_cannot_map():
    ds = [design(array_depth=8192)] * 3
    wall = [w for w in at_bounds(SPACE, ds, hiddens=[2048]) if w.knob == "array_depth"][0]
    assert wall.bound == "low" and "mapping limit" in wall.limit       # 4096 < 3 x 2048 = 6144
    wall = [w for w in at_bounds(SPACE, ds, hiddens=[1024]) if w.knob == "array_depth"][0]
    assert wall.limit == ""                                              # a 3072-column chunk fits 4096
    assert mapping_limit("array_depth", "high", 65536, 4096, [2048]) == ""
