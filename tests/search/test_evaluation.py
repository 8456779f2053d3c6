"""The evaluation pool's workers keep their caches: loky's leak threshold is raised in each worker."""
from __future__ import annotations

from dse.search.evaluation import WORKER_MEMORY_GROWTH_MAX, keep_worker_caches
from dse.search.pool import EvaluationPool


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
