"""Coordinate sweeps of a design (dse.search.propose.knee.sweep): every legal one-knob alternative,
nothing else, the same whatever the seed."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dse.search import load_study
from dse.search.propose.knee import sweep as knee_sweep
from dse.search.propose.sample import draw
from dse.search.space.space_file import load_space

ROOT = Path(__file__).resolve().parents[4]


def _full():
    cfg = load_study(ROOT / "studies" / "full.toml")
    return cfg.space, cfg.base_env()


def test_every_variant_is_legal_and_moves_its_knob():
    space, base = _full()
    rng = np.random.default_rng(4)
    for _ in range(5):
        parent = draw.uniform(space, base, rng)
        vs, knobs = knee_sweep.variants(space, base, parent)
        assert len(vs) == len(knobs) > 100
        for q, k in zip(vs, knobs):
            assert draw.is_legal(space, base, q), (k, q)
            assert q[k] != parent.get(k)
            moved = {n for n in set(q) | set(parent) if q.get(n) != parent.get(n)}
            # only the swept knob moves, unless it moved another knob's bound or `when` condition
            assert moved == {k} or k in ("core_side", "fetch"), (k, moved)


def test_the_sweep_covers_every_value_of_each_knob():
    """core_side 8 -> the seven other sides; tile_width: its four other choices; pe_groups_per_core
    under side 3: the eight other values up to 9 (its bound read at the parent's side)."""
    space, base = _full()
    parent = knee_sweep.legalise(space, base, {**draw.uniform(space, base, np.random.default_rng(0)),
                                               "core_side": 3, "pe_groups_per_core": 2, "tile_width": 4})
    vs, knobs = knee_sweep.variants(space, base, parent)
    by = {}
    for q, k in zip(vs, knobs):
        by.setdefault(k, []).append(q[k])
    assert sorted(by["core_side"]) == [1, 2, 4, 5, 6, 7, 8]
    assert sorted(by["tile_width"]) == [1, 2, 8, 16]
    assert sorted(by["pe_groups_per_core"]) == [1, 3, 4, 5, 6, 7, 8, 9]
    side1 = [q for q in vs if q["core_side"] == 1]
    assert side1 and all(q["pe_groups_per_core"] == 1 for q in side1)      # nearest legal value
    only, knobs = knee_sweep.variants(space, base, parent, only=("tile_width",))
    assert set(knobs) == {"tile_width"} and len(only) == 4


def test_the_sweep_does_not_depend_on_a_generator():
    space, base = _full()
    parent = draw.uniform(space, base, np.random.default_rng(9))
    a = knee_sweep.variants(space, base, parent)
    b = knee_sweep.variants(space, base, dict(reversed(list(parent.items()))))
    assert a == b


def test_values_of_unstepped_and_log_knobs(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('[params]\nmacro_mhz = { type = "float", low = 1.0, high = 100.0, log = true }\n'
                 'noc_ghz = { type = "float", low = 1.0, high = 2.0 }\n'
                 'array_depth = { type = "int", low = 1024, high = 65536 }\n'
                 'fetch = { type = "categorical", choices = ["fifo", "load_aware"] }\n'
                 'fetch_queue_depth = { type = "int", low = 2, high = 8, step = 2, when = { fetch = "load_aware" } }\n')
    space = load_space(p)
    parent = {"macro_mhz": 10.0, "noc_ghz": 1.5, "array_depth": 4096, "fetch": "fifo"}
    vs, knobs = knee_sweep.variants(space, {}, parent)
    fs = sorted(q["macro_mhz"] for q, k in zip(vs, knobs) if k == "macro_mhz")
    assert abs(fs[0] - 1.0) < 1e-9 and abs(fs[-1] - 100.0) < 1e-9 and abs(fs[3] - 10 ** 0.75) < 1e-9
    assert len(fs) == knee_sweep.GRID - 1                            # geometric: the middle point, 10, is the parent's
    gs = sorted(q["noc_ghz"] for q, k in zip(vs, knobs) if k == "noc_ghz")
    assert abs(gs[1] - 1.125) < 1e-9 and 1.5 not in gs               # linear grid, the parent's value left out
    ns = [q["array_depth"] for q, k in zip(vs, knobs) if k == "array_depth"]
    assert len(ns) <= knee_sweep.MAX_VALUES and 1024 in ns and 65536 in ns
    on = [q for q, k in zip(vs, knobs) if k == "fetch"]
    # a knob its condition turns on: its low value
    assert on == [{**parent, "fetch": "load_aware", "fetch_queue_depth": 2}]
    for q in vs:
        assert draw.is_legal(space, {}, q)
