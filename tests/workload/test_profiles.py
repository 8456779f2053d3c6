"""Shipped routing profiles: popularity reproduced, small files with licences, U(B) from a profile."""
from __future__ import annotations

import numpy as np
import pytest

from dse.catalog import get_model
from dse.workload import profiles, synth
from dse.workload.stats import flat_stats


def test_profile_popularity_is_reproduced():
    m = get_model("qwen3-30b-a3b")
    tr = synth.generate(m, 64, 16, seed=0, profile="qwen3-30b-a3b")
    freq = np.zeros((m.moe_layers, m.experts))
    for layer in range(m.moe_layers):
        freq[layer] = np.bincount(tr.experts[:, layer].ravel(), minlength=m.experts)
    freq /= 16 * 64
    heat = profiles.load("qwen3-30b-a3b").heat
    assert np.corrcoef(freq.ravel(), heat.ravel())[0, 1] > 0.9
    s = flat_stats(tr)
    t = synth.targets(m, 64)
    assert abs(s["gini"] / t["gini"] - 1) < 0.1


def test_profiles_shipped_small_with_licences():
    from dse.data import path
    files = [f for f in path("profiles").iterdir()]
    names = {f.name for f in files}
    assert {"LICENSE.mbolt", "LICENSE.olmoe", "ATTRIBUTION.md", "synth.toml"} <= names
    assert sum(len(f.read_bytes()) for f in files) < 1_000_000
    for n in profiles.names():
        p = profiles.load(n)
        assert p.licence and p.source
        np.testing.assert_allclose(p.heat.sum(axis=1), p.top_k, rtol=1e-4)


@pytest.mark.parametrize("name", ["glm-5.2", "qwen3-next-80b-a3b", "olmoe-1b-7b"])
def test_union_from_profile(name):
    p = profiles.load(name)
    us = [profiles.union_from_profile(name, b) for b in (1, 2, 8, 64, 512)]
    assert us[0] == pytest.approx(p.top_k, rel=1e-4)
    assert all(a < b for a, b in zip(us, us[1:])) and us[-1] <= p.experts
    assert profiles.union_from_profile("no-such-profile", 8) is None
