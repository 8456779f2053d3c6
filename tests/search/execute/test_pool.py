"""The worker pool (dse/search/execute/pool.py) when a worker dies: the design it ran fails the run with
one line, and the pool replaces the dead worker for the designs that follow. (Affinity and
hand-over order: tests/search/execute/test_ask_ahead.py; the driver as one of the slots: below.)"""
from __future__ import annotations

import os

import pytest

from dse.errors import DSEError
from dse.search.execute.pool import EvaluationPool


def _die(design, models):
    os._exit(3)          # a killed worker: no exception, no result


def _pid(design, models):
    return {m: {"pid": os.getpid()} for m in models}


def started(pool: EvaluationPool, timeout_s: float = 60.0) -> EvaluationPool:
    """``pool`` once its workers are up (until then designs wait for this process instead)."""
    import time
    pool.result(pool.submit(_pid, {}, ["m"]))
    end = time.monotonic() + timeout_s
    while not all(pool.started[i] for i in range(len(pool.started)) if i != pool.here):
        assert time.monotonic() < end, "the workers did not start"
        time.sleep(0.01)
    return pool


def test_a_dead_worker_fails_its_design_and_is_replaced():
    """A design that kills its process: in a worker (in the driver it would end the run, as with
    --jobs 1; a run killed so resumes, tests/search/execute/test_resume.py)."""
    pool = started(EvaluationPool(2, affinity=True))
    try:
        first = pool.result(pool.submit(_pid, {}, ["m"], group="g")).metrics["m"]["pid"]
        assert first != os.getpid()
        with pytest.raises(DSEError, match="an evaluation worker died"):
            pool.result(pool.submit(_die, {}, ["m"], group="g"))
        after = [pool.result(pool.submit(_pid, {}, ["m"], group="g")).metrics["m"]["pid"] for _ in range(3)]
    finally:
        pool.close()
    assert first not in after            # the group's worker died: a new process serves it
    assert len(set(after)) == 1 and pool.queued == [0, 0]


def _gated(design, models):
    """Waits until the test opens the gate file (nothing finishes before the test says so)."""
    import time
    while not os.path.exists(design["gate"]):
        time.sleep(0.01)
    return _pid(design, models)


def test_the_driver_evaluates_what_waits_while_it_waits(tmp_path):
    """--jobs 2: one worker and this process. The worker holds AFFINITY_DEPTH designs of group a
    (blocked on a gate); a design of a new group b waits for a slot, and this process, asking for
    its result, evaluates it itself (a run no longer waits on two workers it shares the cores with)."""
    from dse.search.execute.pool import AFFINITY_DEPTH
    gate = tmp_path / "gate"
    pool = started(EvaluationPool(2, affinity=True))
    try:
        held = [pool.submit(_gated, {"gate": str(gate)}, ["m"], group="a") for _ in range(AFFINITY_DEPTH)]
        b = pool.submit(_pid, {}, ["m"], group="b")
        assert len(pool.executor) == 2 and pool.executor[1] is None and pool.here == 1
        assert pool.pending(b)                           # not run until asked for
        assert pool.result(b).metrics["m"]["pid"] == os.getpid()
        assert pool.owner["b"] == 1                      # this process owns b now
        gate.touch()
        workers = {pool.result(h).metrics["m"]["pid"] for h in held}
    finally:
        pool.close()
    assert len(workers) == 1 and os.getpid() not in workers
    assert pool.queued == [0, 0]


def test_designs_wait_for_this_process_while_the_worker_starts(tmp_path):
    """Until its first (empty) task is back, a worker holds nothing: what is submitted meanwhile
    is evaluated here when asked for, not queued behind a process still importing. The workers
    of earlier tests are stopped first: a warm one is up at once (the test skipped then)."""
    from dse.search.execute.workers import stop_workers
    stop_workers()
    pool = EvaluationPool(2, affinity=True)
    try:
        hs = [pool.submit(_pid, {}, ["m"], group=g) for g in "abc"]
        if pool.started[0]:
            pytest.skip("the worker started before the designs were submitted")
        assert pool.queued[0] == 1 and not pool.handles[hs[0]]     # the empty task; designs wait
        assert {pool.result(h).metrics["m"]["pid"] for h in hs} == {os.getpid()}
    finally:
        pool.close()


def _interrupt(design, models):
    raise KeyboardInterrupt


def test_ctrl_c_in_a_design_the_driver_runs_cancels_it_and_goes_up(tmp_path):
    from concurrent.futures import CancelledError
    gate = tmp_path / "gate"
    pool = started(EvaluationPool(2, affinity=True))
    try:
        held = [pool.submit(_gated, {"gate": str(gate)}, ["m"], group="a") for _ in range(3)]
        mine = pool.submit(_interrupt, {}, ["m"], group="b")
        with pytest.raises(KeyboardInterrupt):
            pool.result(mine)
        with pytest.raises(CancelledError):
            mine.result(timeout=0)
        assert pool.queued[pool.here] == 0
        gate.touch()
        assert all(pool.result(h).ok for h in held)
    finally:
        pool.close()


def test_released_workers_leave_no_thread_behind():
    """`dse run` releases its workers when its run is over and ``stop_workers`` joins them at
    exit: then no thread of the pool is left alive, and the worker process is gone. A live
    non-daemon thread (loky's manager thread, forgotten by ``shutdown(wait=False)``) made
    ``lifetime.exit_now`` take the interpreter's slow normal exit."""
    import threading

    from dse.search.execute.workers import release_workers, stop_workers
    before = set(threading.enumerate())
    pool = started(EvaluationPool(2, affinity=True))
    try:
        worker = pool.result(pool.submit(_pid, {}, ["m"], group="g")).metrics["m"]["pid"]
    finally:
        pool.close()
    assert worker != os.getpid()
    release_workers()
    stop_workers()
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == []
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)


def _pid_and_design(design, models):
    import time
    time.sleep(0.05)          # long enough that the worker, once started, takes some
    return {m: {"pid": os.getpid(), "x": design["x"]} for m in models}


def _fails_on_3(design, models):
    if design["x"] == 3:
        raise ValueError("bad x")
    return _pid_and_design(design, models)


def test_evaluate_all_keeps_task_order_uses_a_worker_and_leaves_none_behind():
    """``dse front --robust --jobs 2`` re-evaluates on the engine's pool (``evaluate_all``): results
    in task order, some from a worker process, which is gone once the workers are stopped (as at
    the CLI's exit); a failed design stops it with its error line."""
    from dse.search.execute.pool import evaluate_all, run_many
    from dse.search.execute.workers import release_workers, stop_workers
    assert run_many(1) is None
    tasks = [({"x": i, "core_side": i % 3}, ("m",)) for i in range(40)]
    out = run_many(2)(_pid_and_design, tasks)
    assert [o["m"]["x"] for o in out] == list(range(40))
    workers = {o["m"]["pid"] for o in out} - {os.getpid()}
    assert len(workers) == 1
    with pytest.raises(DSEError, match="bad x"):
        evaluate_all(_fails_on_3, tasks[:6], 2)
    release_workers()
    stop_workers()
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_re_evaluations_group_by_workload():
    """``dse front --robust --jobs N`` groups its tasks by workload (``workload_key``): designs of
    one draw share its trace and placements; designs of two draws share nothing."""
    from dse.pipeline.uncertainty import CONSTANTS_KEY
    from dse.search.execute.pool import workload_key
    a = {"core_side": 2, "trace_seed": 3, CONSTANTS_KEY: {"t_layer_fixed_us": 0.33}}
    assert workload_key(a) == workload_key({**a, "core_side": 4, "array_depth": 8192})
    assert workload_key(a) != workload_key({**a, "trace_seed": 4})
    assert workload_key(a) != workload_key({**a, CONSTANTS_KEY: {"t_layer_fixed_us": 0.35}})
