"""The on-disk cache of synthetic traces: hits are bit-identical, bad files are regenerated."""
from __future__ import annotations

import numpy as np

from dse.catalog import get_model
from dse.workload import synth, synth_cache


def test_cache_hit_is_identical_and_corrupt_files_are_regenerated(tmp_path, monkeypatch):
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path))
    m = get_model("olmoe-1b-7b")
    fresh = synth.generate(m, 16, 3, 7, None, synth.default_profile(m))
    a = synth_cache.generate_cached(m, 16, 3, 7, synth.default_profile(m))
    files = sorted((tmp_path / "traces").glob("*.npy"))
    assert len(files) == 1
    b = synth_cache.generate_cached(m, 16, 3, 7, synth.default_profile(m))
    assert isinstance(b.experts, np.memmap)                      # served from disk
    assert np.array_equal(a.experts, fresh.experts) and np.array_equal(b.experts, fresh.experts)
    assert b.meta == fresh.meta
    files[0].write_bytes(b"\x93NUMPY truncated")                 # a killed writer, a full disk
    c = synth_cache.generate_cached(m, 16, 3, 7, synth.default_profile(m))
    assert np.array_equal(c.experts, fresh.experts)
    # another seed is another file
    synth_cache.generate_cached(m, 16, 3, 8, synth.default_profile(m))
    assert len(list((tmp_path / "traces").glob("*.npy"))) == 2


def test_cache_can_be_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("DSE_CACHE_DIR", "off")
    assert synth_cache.cache_dir() is None
    m = get_model("olmoe-1b-7b")
    t = synth_cache.generate_cached(m, 8, 2, 0, synth.default_profile(m))
    assert not isinstance(t.experts, np.memmap) and t.experts.shape == (2, m.moe_layers, 8, m.top_k)
