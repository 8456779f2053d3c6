"""The worker processes of the evaluation pool (dse/search/execute/workers.py): ``prestart`` starts them
before their pool exists, and the pool then waits for that first task instead of giving each
worker one of its own. (Stopping them at exit: tests/search/execute/test_pool.py.)"""
from __future__ import annotations

import os
import time

import pytest

from dse.search.execute import pool as pool_module
from dse.search.execute import workers
from dse.search.execute.pool import EvaluationPool


def _pid(design, models):
    return {m: {"pid": os.getpid()} for m in models}


@pytest.fixture()
def no_workers():
    """Each test starts from no worker and leaves none behind."""
    workers.stop_workers()
    yield
    workers.stop_workers()


@pytest.fixture()
def submitted(monkeypatch) -> list:
    """The functions the pool hands its workers (``submit_solo``), in order."""
    out: list = []
    real = workers.submit_solo

    def spy(executors, i, fn, *args):
        out.append(fn)
        return real(executors, i, fn, *args)

    monkeypatch.setattr(pool_module, "submit_solo", spy)
    return out


def test_prestart_starts_the_pools_workers_and_the_pool_takes_their_first_task(no_workers, submitted):
    workers.prestart(2)
    assert len(workers._SOLO) == 1                     # jobs 2: one worker beside this process
    first = workers._STARTING[workers._SOLO[0]]
    assert first.result(timeout=60) is None            # the worker is up: its empty task came back
    pool = EvaluationPool(2, affinity=True)
    try:
        h = pool.submit(_pid, {}, ["m"], group="g")
        assert workers.first_task(workers._SOLO[0]) is None      # the pool took it
        end = time.monotonic() + 60
        while not pool.started[0]:                               # its callback ran at once (done)
            assert time.monotonic() < end
            time.sleep(0.01)
        assert pool.executor[0] is workers._SOLO[0]
        assert workers.worker_started not in submitted           # no second empty task
        assert pool.result(h).ok
        later = pool.submit(_pid, {}, ["m"], group="g")
        assert pool.result(later).metrics["m"]["pid"] != os.getpid()    # the prestarted worker evaluates
    finally:
        pool.close()


def test_a_pool_without_prestart_gives_its_workers_their_first_task(no_workers, submitted):
    pool = EvaluationPool(2, affinity=True)
    try:
        assert pool.result(pool.submit(_pid, {}, ["m"], group="g")).ok
        assert submitted[0] is workers.worker_started
    finally:
        pool.close()


def test_prestart_of_one_job_starts_nothing(no_workers):
    workers.prestart(1)
    assert workers._SOLO == [] and workers._STARTING == {}


def test_prestart_twice_gives_each_worker_one_first_task(no_workers):
    workers.prestart(2)
    once = dict(workers._STARTING)
    workers.prestart(2)
    assert workers._STARTING == once


def test_released_workers_forget_their_first_tasks(no_workers):
    workers.prestart(2)
    workers.release_workers()
    assert workers._STARTING == {} and workers._SOLO == []
