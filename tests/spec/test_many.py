"""``validate_flat`` (many designs at once) against ``DesignPoint.from_dict`` design by design: the
same verdict for each design, and for each accepted one the same values, of the same types."""
from __future__ import annotations

import math
from dataclasses import fields

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.errors import ConfigError
from dse.spec import DesignPoint
from dse.spec.many import validate_flat

FIELDS = [f.name for f in fields(DesignPoint)]

# Per knob: values from_dict accepts and values it refuses (wrong type, range, step, choice, NaN).
VALUES = {
    "core_side": [1, 2, 4, 8, 20, 0, 21, 4.0, 4.5, "4", True, None],
    "tile_width": [1, 4, 64, 65, "8", 8.0],
    "array_depth": [256, 32768, "32K", "16k", 255, "1.5K", 1 << 20, (1 << 20) + 1],
    "pe_groups_per_core": [None, 1, 4, 16, 17, 400, 401, 0],
    "macro_width_bits": [8, 128, 12, 4096, 4104],
    "macro_mhz": [1.0, 200.0, 5000.0, 0.5, 5000.5, float("nan"), float("inf"), 200, "200", -0.0],
    "noc_ghz": [0.05, 1.0, 2.5, 0.04, 10.0, 10.01],
    "read_bw_scale": [0.0, 1e-9, 1.0, 16.0, 16.5, -0.0],
    "d2d_gbps_per_die": [0.0, 96.0, 10000.0, -1.0, 1e5],
    "die_units_x": [1, 4, 16, 64, 65],
    "die_units_y": [1, 2, 20, 64],
    "core_remainder": ["partial", "idle", "none", 3],
    "batch": [None, 1, 128, 0, "64"],
    "trace": ["synthetic", "catalog", "", "x" * 5000],
    "placement": ["lpt", "contiguous", "coactivation", "random"],
    "pooling": ["direct", "broadcast", None],
    "fetch": ["fifo", "load_aware"],
    "fetch_queue_depth": [1, 16, 1024, 1025],
}

design = st.dictionaries(st.sampled_from(sorted(VALUES)), st.none(), max_size=8).flatmap(
    lambda d: st.fixed_dictionaries({k: st.sampled_from(VALUES[k]) for k in d}))


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and (a == b and math.copysign(1, a) == math.copysign(1, b)
                                   if isinstance(a, float) else a == b)


def _check(designs, extra=None) -> None:
    got = validate_flat(designs, extra)
    assert got is not None
    ok, values = got
    assert len(ok) == len(designs)
    for i, d in enumerate(designs):
        try:
            p = DesignPoint.from_dict({**d, **(extra or {})})
        except ConfigError:
            assert not ok[i], f"validate_flat accepts {d}, from_dict refuses it"
            continue
        assert ok[i], f"validate_flat refuses {d}, from_dict accepts it"
        for f in FIELDS:
            assert _same(values[f][i], getattr(p, f)), (d, f, values[f][i], getattr(p, f))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(design, min_size=1, max_size=30),
       st.sampled_from([None, {"model": "qwen3.5-35b-a3b"}, {"model": "qwen3-30b-a3b"}, {"model": "no-such-model"},
                        {"core_side": 8, "model": "qwen3.5-35b-a3b"}]))
def test_the_verdicts_and_values_of_from_dict(designs, extra):
    _check(designs, extra)


def test_all_floats_a_knob_takes_are_checked_on_numpy():
    designs = [{"macro_mhz": x} for x in (0.5, 1.0, 200.0, float("nan"), float("-inf"), 5000.0, 5000.1)]
    designs += [{"read_bw_scale": x} for x in (0.0, 1e-300, 16.0, 16.000001)]
    _check(designs)
    assert validate_flat(designs)[0].tolist() == [False, True, True, False, False, True, False] + [
        False, True, True, False]


def test_the_cross_rules():
    designs = [{"core_side": 4, "pe_groups_per_core": 16}, {"core_side": 4, "pe_groups_per_core": 17},
               {"core_side": 17, "die_units_x": 16, "die_units_y": 16}, {"core_side": 16, "die_units_x": 16},
               {"core_side": 20, "die_units_x": 4, "die_units_y": 20}, {"core_side": 0, "pe_groups_per_core": 1},
               {"core_side": 1, "pe_groups_per_core": 2}, {"core_side": 2, "pe_groups_per_core": 5},
               {"core_side": 8, "pe_groups_per_core": 64}, {"core_side": 8, "pe_groups_per_core": 65}]
    _check(designs)
    assert validate_flat(designs)[0].tolist() == [True, False, False, True, True, False, False, False, True, False]


def test_values_equal_in_python_but_not_to_from_dict_stay_apart():
    designs = [{"core_side": 1}, {"core_side": True}, {"core_side": 1.0}, {"core_side": 1.5},
               {"pe_mhz": 400}, {"pe_mhz": 400.0}, {"pe_mhz": True}, {"pe_mhz": "400"}]
    _check(designs)
    assert validate_flat(designs)[0].tolist() == [True, False, True, False, True, True, False, True]


def test_what_only_from_dict_can_word_is_left_to_it():
    assert validate_flat([{"core_side": 4}, {"hardware": {"core_side": 4}}]) is None
    assert validate_flat([{"core_sidee": 4}]) is None
    assert validate_flat([{"core_side": [4]}]) is None
    assert validate_flat([["core_side"]]) is None
    assert validate_flat([{}], {"nonsense": 1}) is None
