"""The workload of a trace-driven design point: the profiling run is independent of the measured
requests."""
from __future__ import annotations

from dse.workload.window import profile_seed, workload
from dse.spec import DesignPoint
from dse.workload import synth_cache
from dse.catalog import get_model


def test_profiling_run_is_independent_of_the_measured_requests():
    # the profiling stream is never the measured one, and different measured seeds never share a
    # profiling stream (nor collide with another seed's measured stream at these seeds)
    seeds = range(64)
    prof = [profile_seed(s) for s in seeds]
    assert all(p != s for p, s in zip(prof, seeds))
    assert len(set(prof)) == len(prof) and not set(prof) & set(seeds)
    assert all(0 <= p < 1 << 32 for p in prof)
    p = DesignPoint.from_dict({"trace_steps": 8, "profile_steps": 8})
    wl = workload(p, get_model(p.model))
    measured, _ = synth_cache.cached(p.model, p.run_batch, 8, p.trace_seed, "auto", 0)
    assert wl.profile_ids.shape == measured.experts.shape
    # a different request stream: not the measured window, not a prefix of the same stream
    assert (wl.profile_ids != measured.experts).mean() > 0.5


def test_bounded_cache_keeps_the_most_recent_entries():
    from dse.workload.window import BoundedCache
    c = BoundedCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get_or_make("a", lambda: 99) == 1             # a hit does not call make
    c.put("c", 3)                                           # evicts the least recently put: "a"
    assert c.get("a") is None and c.get("b") == 2 and c.get("c") == 3
    assert c.get_or_make("a", lambda: 4) == 4
    c.clear()
    assert c.get("b") is None
