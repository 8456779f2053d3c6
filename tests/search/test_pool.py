"""The worker pool (dse/search/pool.py) when a worker dies: the design it ran fails the run with
one line, and the pool replaces the dead worker for the designs that follow. (Affinity and
hand-over order: tests/search/test_ask_ahead.py.)"""
from __future__ import annotations

import os

import pytest

from dse.errors import DSEError
from dse.search.pool import EvaluationPool


def _die(design, models):
    os._exit(3)          # a killed worker: no exception, no result


def _pid(design, models):
    return {m: {"pid": os.getpid()} for m in models}


def test_a_dead_worker_fails_its_design_and_is_replaced():
    pool = EvaluationPool(2, affinity=True)
    try:
        first = pool.result(pool.submit(_pid, {}, ["m"], group="g")).metrics["m"]["pid"]
        with pytest.raises(DSEError, match="an evaluation worker died"):
            pool.result(pool.submit(_die, {}, ["m"], group="g"))
        after = [pool.result(pool.submit(_pid, {}, ["m"], group="g")).metrics["m"]["pid"] for _ in range(3)]
    finally:
        pool.close()
    assert first not in after            # the group's worker died: a new process serves it
    assert len(set(after)) == 1 and pool.queued == [0, 0]
