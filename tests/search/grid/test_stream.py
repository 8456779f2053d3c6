"""`dse grid` streamed: blocks and chunks are `enumerate_space`'s rows in order, and the running
front, knee, hypervolume and counts equal the in-memory path's (`run_grid`) on a 10^4-point
space, with or without an interruption resumed from the checkpoint."""
from __future__ import annotations

import numpy as np
import pytest

from dse.search.grid.grid import enumerate_space, resolved, run_grid
from dse.search.grid.stream import chunks, count_points, enumerate_blocks, stream_grid
from dse.search.space.objectives import objectives_from_dict
from dse.search.space.space_file import space_from_dict
from tests.search.grid.test_grid import SUB_GRID, THREE, TWO

# 10,240 points plus conditional ones: a bound on an earlier knob, a knob active for one order
SPACE = {"params": {
    "core_side": {"type": "int", "low": 1, "high": 8},
    "pe_groups_per_core": {"type": "int", "low": "core_side**2", "high": "core_side**2"},
    "tile_width": {"type": "categorical", "choices": [1, 2, 4, 8, 16]},
    "array_depth": {"type": "int", "low": 8192, "high": 65536, "step": 8192},
    "macro_mhz": {"type": "float", "low": 100, "high": 400, "step": 100},
    "core_mesh_link_bits": {"type": "int", "low": 128, "high": 512, "step": 128},
    "reduction_order": {"type": "categorical", "choices": ["ep_first", "tp_first"]},
    "die_noc_link_bits": {"type": "categorical", "choices": [256, 1024], "when": {"reduction_order": "tp_first"}},
}}
BASE = {"model": "qwen3.5-35b-a3b"}


def _same(a, b):
    assert a.n == b.n and a.n_feasible == b.n_feasible and a.knee == b.knee
    np.testing.assert_array_equal(a.front, b.front)
    np.testing.assert_array_equal(a.values, b.values)
    assert a.hypervolume == b.hypervolume
    for k in a.grid.values:
        np.testing.assert_array_equal(a.grid.values[k], b.grid.values[k])
        np.testing.assert_array_equal(a.grid.active[k], b.grid.active[k])


@pytest.mark.parametrize("spec", [SUB_GRID, SPACE])
def test_blocks_and_chunks_are_the_enumeration_in_order(spec):
    space = space_from_dict(spec)
    env = resolved(BASE)
    whole = enumerate_space(space, env)
    assert count_points(space, BASE, limit=97) == whole.n
    for limit, size in ((97, 250), (1000, 64), (1 << 20, 1 << 16)):
        blocks = list(enumerate_blocks(space, env, limit))
        assert all(b.n <= limit for b in blocks) or limit < 16
        parts = list(chunks(iter(blocks), size))
        assert [p.n for p in parts[:-1]] == [size] * (len(parts) - 1) and sum(p.n for p in parts) == whole.n
        for k in whole.values:
            np.testing.assert_array_equal(np.concatenate([p.values[k] for p in parts]), whole.values[k])
            np.testing.assert_array_equal(np.concatenate([p.active[k] for p in parts]), whole.active[k])


@pytest.mark.parametrize("objectives", [TWO, THREE])
def test_streamed_front_equals_the_in_memory_front(objectives):
    space, objset = space_from_dict(SPACE), objectives_from_dict(objectives)
    ref = run_grid(space, objset, BASE).front_result()
    assert ref.n > 10_000 and 1 < len(ref.front) < ref.n_feasible
    _same(stream_grid(space, objset, BASE, chunk=777), ref)


def test_interrupted_after_k_chunks_resumes_to_the_same_result(tmp_path):
    space, objset = space_from_dict(SPACE), objectives_from_dict(TWO)
    ref = stream_grid(space, objset, BASE, chunk=1000)
    ck = tmp_path / "grid.ckpt.npz"
    done = []

    def stop_after_4(n):
        done.append(n)
        if len(done) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        stream_grid(space, objset, BASE, chunk=1000, checkpoint=str(ck), checkpoint_every_s=3600,
                    progress=stop_after_4)
    assert ck.exists()                  # saved on the interrupt, not by the (hourly) timer
    seen = []
    res = stream_grid(space, objset, BASE, chunk=1000, checkpoint=str(ck), progress=seen.append)
    assert res.resumed_chunks == 4 and sum(seen) == ref.n - 4000 and not ck.exists()
    _same(res, ref)
