"""The workload of a trace-driven design point: the profiling run is independent of the measured
requests."""
from __future__ import annotations

from dse.catalog import get_model
from dse.spec import DesignPoint
from dse.workload import synth_cache
from dse.workload.window import profile_seed, workload


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


def test_a_touched_entry_is_recent_and_not_counted_again():
    from dse.workload.window import BoundedCache
    counted = []
    c = BoundedCache(2, 10 ** 6, lambda v: counted.append(v) or 1)
    c.put("a", 1)
    c.put("b", 2)
    c.touch("a")                                            # "a" used again, unchanged
    c.touch("nothing")                                      # an evicted or unknown key: no-op
    c.put("c", 3)                                           # evicts the least recently used: "b"
    assert c.get("a") == 1 and c.get("b") is None and c.get("c") == 3
    assert counted == [1, 2, 3]


def _pearson_oracle(a, b):
    """Plain-Python per-layer Pearson correlation, averaged over layers with variance on both sides."""
    out = []
    for x, y in zip(a.tolist(), b.tolist()):
        n = len(x)
        mx, my = sum(x) / n, sum(y) / n
        sxy = sum((u - mx) * (v - my) for u, v in zip(x, y))
        sxx = sum((u - mx) ** 2 for u in x)
        syy = sum((v - my) ** 2 for v in y)
        if sxx > 0 and syy > 0:
            out.append(sxy / (sxx * syy) ** 0.5)
    return sum(out) / len(out) if out else 0.0


def test_load_correlation_matches_a_plain_python_oracle():
    import numpy as np

    from dse.workload.stats import load_correlation
    rng = np.random.default_rng(5)
    a = rng.poisson(3.0, size=(7, 40)).astype(float)
    b = 0.6 * a + rng.poisson(2.0, size=(7, 40))
    a[3] = 2.0                                               # a layer without variance is skipped
    assert abs(load_correlation(a, b) - _pearson_oracle(a, b)) < 1e-12
    assert load_correlation(a, a) == 1.0 or abs(load_correlation(a, a) - 1.0) < 1e-12
    assert load_correlation(np.ones((2, 4)), a[:2, :4]) == 0.0   # nothing informative: 0, never NaN


def test_profile_load_correlation_says_whether_the_placement_saw_the_measured_loads():
    import numpy as np

    from dse.pipeline.evaluate import evaluate
    base = {"trace_steps": 16, "profile_steps": 8}
    indep = evaluate(DesignPoint.from_dict(base)).metrics
    seen = evaluate(DesignPoint.from_dict({**base, "profile_steps": 0})).metrics
    # an independent batch of other requests shares no router state with the measured one in the
    # synthetic generator; profiling on the measured window itself is perfectly correlated
    assert indep["profile_window"] == "independent run" and abs(indep["profile_load_correlation"]) < 0.1
    assert seen["profile_window"] == "measured window" and seen["profile_load_correlation"] > 0.999
    wl = workload(DesignPoint.from_dict(base), get_model(DesignPoint.from_dict(base).model))
    assert np.isclose(indep["profile_load_correlation"],
                      _pearson_oracle(wl.profile_load, wl.load.mean(axis=0)), rtol=0, atol=1e-12)


def test_bounded_cache_keeps_within_its_byte_budget_and_the_newest_entry():
    from dse.workload.window import BoundedCache
    c = BoundedCache(10, max_bytes=100, nbytes=lambda v: v)
    c.put("a", 40)
    c.put("b", 40)
    c.put("c", 40)                                          # 120 > 100: the oldest goes
    assert c.get("a") is None and c.bytes == 80
    c.put("huge", 500)                                      # over budget alone: kept, the rest evicted
    assert c.get("huge") == 500 and c.get("b") is None and c.get("c") is None


def test_workload_cache_holds_an_eight_model_study():
    # the byte size of a workload follows its arrays' shapes; the largest catalog model at its
    # native batch and the default windows fits the byte budget eight times over
    import numpy as np

    from dse.workload.window import MAX_WORKLOADS, WORKLOAD_CACHE_BYTES
    p = DesignPoint.from_dict({"trace_steps": 16, "profile_steps": 8})
    m = get_model(p.model)
    wl = workload(p, m)
    assert wl.nbytes == wl.load.nbytes + wl.profile_ids.nbytes + wl.profile_load.nbytes
    assert wl.load.shape == (16, m.moe_layers, m.experts) and wl.profile_ids.shape[:1] == (8,)
    big = get_model("qwen3.5-397b-a17b")
    d = DesignPoint.from_dict({})
    per_entry = (d.trace_steps * big.moe_layers * big.experts * wl.load.itemsize
                 + d.profile_steps * big.moe_layers * big.native_batch * big.top_k * 2
                 + big.moe_layers * big.experts * np.dtype(np.float64).itemsize)
    assert MAX_WORKLOADS >= 8 and 8 * per_entry < WORKLOAD_CACHE_BYTES
