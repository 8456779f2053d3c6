"""The evaluation pool's workers keep their caches: loky's leak threshold is raised in each worker."""
from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.search.execute.evaluation import WORKER_MEMORY_GROWTH_MAX, jsonable, keep_worker_caches
from dse.search.execute.pool import EvaluationPool


def _threshold(design, models):
    from loky import process_executor
    return {"m": {"threshold": process_executor._MAX_MEMORY_LEAK_SIZE}}


def test_loky_still_has_the_leak_threshold():
    from loky import process_executor
    assert isinstance(process_executor._MAX_MEMORY_LEAK_SIZE, int), "loky renamed its leak threshold"


def test_workers_raise_the_leak_threshold():
    from loky import process_executor
    before = process_executor._MAX_MEMORY_LEAK_SIZE
    pool = EvaluationPool(2)
    try:
        outs = [pool.result(pool.submit(_threshold, {}, ["m"])) for _ in range(4)]
    finally:
        pool.close()
    assert {o.metrics["m"]["threshold"] for o in outs} == {WORKER_MEMORY_GROWTH_MAX}
    assert process_executor._MAX_MEMORY_LEAK_SIZE == before          # the driver's own is untouched


def test_keep_worker_caches_sets_the_threshold(monkeypatch):
    from loky import process_executor
    monkeypatch.setattr(process_executor, "_MAX_MEMORY_LEAK_SIZE", 300)
    assert keep_worker_caches(1234) and process_executor._MAX_MEMORY_LEAK_SIZE == 1234
    monkeypatch.delattr(process_executor, "_MAX_MEMORY_LEAK_SIZE")
    assert not keep_worker_caches(1234)


def _jsonable_reference(m):
    """``jsonable`` as it was before its fast path for plain scalars (the oracle), stage by stage:
    unwrap what has ``item``, non-finite floats to None, lists and tuples element by element,
    then keep the JSON types."""
    def unwrap(v):
        item = getattr(v, "item", None)
        return item() if callable(item) else v
    kept = {k: unwrap(v) for k, v in m.items()}
    kept = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in kept.items()}
    kept = {k: [x.item() if hasattr(x, "item") else x for x in v] if isinstance(v, (list, tuple)) else v
            for k, v in kept.items()}
    return {k: v for k, v in kept.items() if v is None or isinstance(v, (bool, int, float, str, list, dict))}


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64), st.integers(-9, 9).map(np.int32),
    st.booleans().map(np.bool_), st.lists(st.floats(allow_nan=False) | st.integers(), max_size=3),
    st.tuples(st.integers(-99, 99)).map(lambda t: tuple(np.int64(x) for x in t)),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.just(object()), st.just(np.zeros(1)))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _VALUES, max_size=8))
def test_jsonable_is_the_reference(m):
    ours, ref = jsonable(m), _jsonable_reference(m)
    assert json.dumps(ours, default=repr) == json.dumps(ref, default=repr)
    assert [type(v) for v in ours.values()] == [type(v) for v in ref.values()]
