"""Asking the next batch while the current one is evaluated (``runner._Run._ask_ahead``, samplers
blind to the results) and keeping a scheduling domain on one worker (``EvaluationPool``).

A study run with workers asks ahead, yet ends with exactly the trials, repeats, failures and
evaluation count of the same study asked batch after batch in one process: repeats of a design
still being evaluated in the batch before, and a design whose evaluation failed there, included."""
from __future__ import annotations

import os
import signal
import time

import pytest

from dse.search.execute.pool import AFFINITY_DEPTH, EvaluationPool
from dse.search.execute.runner import run_study
from dse.search.study.results import load_results
from dse.search.study.study import load_study
from tests.fixtures import TOY_OBJECTIVES, write_study
from tests.search.execute.test_pool import started
from tests.search.execute.test_runner import fake_eval

# 8 designs: batches of 6 repeat designs of the batch before (the cache's and the ahead path's case)
SMALL_TOY_SPACE = """
[params]
core_side = { type = "int", low = 7, high = 8 }
tile_width = { type = "categorical", choices = [4, 8] }
pooling = { type = "categorical", choices = ["direct", "broadcast"] }
"""


def failing_eval(design, models):
    """``fake_eval``, but the (7, 4, direct) design always fails (a model bug)."""
    if (design["core_side"], design["tile_width"], design["pooling"]) == (7, 4, "direct"):
        raise RuntimeError("model bug")
    time.sleep(0.01)                   # workers still busy when the next batch is asked
    return fake_eval(design, models)


def _cfg(d, sampler: str = "random", trials: int = 30):
    return load_study(write_study(d, space=SMALL_TOY_SPACE, objectives=TOY_OBJECTIVES, file="s.toml",
                                  trials=trials, batch=6, seed=3, sampler=sampler), check_metrics=False)


def _trials(cfg) -> list[tuple]:
    return [(r.number, r.state, tuple(sorted(r.params.items())), tuple(r.values or ()), r.duplicate_of,
             r.error, r.outcome) for r in load_results(cfg).records]


def test_a_run_asking_ahead_ends_with_the_trials_of_one_asked_batch_by_batch(tmp_path):
    one = _cfg(tmp_path / "one")
    s1 = run_study(one, evaluator=failing_eval)
    two = _cfg(tmp_path / "two")
    s2 = run_study(two, jobs=2, evaluator=failing_eval)
    assert s1.asked_ahead == 0
    assert s2.asked_ahead == 4                   # batches 2-5 of 5 asked ahead
    t1, t2 = _trials(one), _trials(two)
    assert t1 == t2
    assert any(t[4] is not None for t in t1), "no repeated design: the case is not exercised"
    failed = [t for t in t1 if t[1] == "FAIL"]
    assert len({t[0] // 6 for t in failed}) >= 2, "the failing design must recur in later batches"
    assert (s1.evaluations, s1.duplicates, s1.errors) == (s2.evaluations, s2.duplicates, s2.errors)


def test_samplers_that_read_results_never_ask_ahead(tmp_path):
    cfg = _cfg(tmp_path / "tpe", sampler="tpe", trials=18)
    s = run_study(cfg, jobs=2, evaluator=failing_eval)
    assert s.asked_ahead == 0 and s.complete == 18


def test_the_last_batches_are_not_asked_ahead_past_the_target(tmp_path):
    cfg = _cfg(tmp_path / "short", trials=14)     # batches of 6, 6, 2: only the second is asked ahead
    s = run_study(cfg, jobs=2, evaluator=failing_eval)
    assert s.asked_ahead == 1
    assert len(load_results(cfg).records) == 14 + s.errors


def _pid(design, models):
    time.sleep(0.3)                   # nothing finishes while the test submits
    return {m: {"pid": os.getpid()} for m in models}


def test_designs_of_one_group_go_to_one_worker():
    pool = started(EvaluationPool(3, affinity=True))     # two workers (up) and this process
    try:
        groups = ["a", "b", "a", "b", "a"]
        handles = [pool.submit(_pid, {"g": g}, ["m"], group=g) for g in groups]
        pids = [pool.result(h).metrics["m"]["pid"] for h in handles]
    finally:
        pool.close()
    by_group = {g: {p for p, gg in zip(pids, groups) if gg == g} for g in groups}
    assert len(by_group["a"]) == 1 and len(by_group["b"]) == 1
    assert by_group["a"] != by_group["b"]


def test_a_worker_with_room_takes_its_group_then_a_new_group_then_steals():
    """The choice as a worker frees up (no process started: the pool's state is set by hand)."""
    from collections import deque
    from concurrent.futures import Future
    pool = EvaluationPool(2, affinity=True)
    pool.queued, pool.owned, pool.started = [0, AFFINITY_DEPTH], [1, 1], [True, True]
    pool.owner = {"a": 0, "b": 1}

    def waiting(*groups):
        pool.waiting = deque((Future(), None, {}, (), g) for g in groups)
    waiting("b", "new", "a")
    assert pool._choose(0) == (0, 2)               # its own group first, even behind others
    waiting("b", "new")
    assert pool._choose(0) == (0, 1) and pool.owner["new"] == 0 and pool.owned == [2, 1]
    waiting("b", None)
    assert pool._choose(0) == (0, 1)               # a design of no group: anyone's
    waiting("b")
    pool.queued[0] = 1
    assert pool._choose(0) is None                 # it still has work of its own: no steal
    pool.queued[0] = 0
    assert pool._choose(0) == (0, 0)               # idle, and its owner is full: stolen, not re-owned
    assert pool.owner["b"] == 1
    pool.queued[1] = AFFINITY_DEPTH - 1
    assert pool._choose(0) is None                 # its owner has room: left to it
    pool.here = 1
    assert pool._choose(0) == (0, 0)               # ... unless the owner is the driver (it takes
    pool.here = None                               # designs only while it waits for a result)
    assert pool._assign()[0][0] == 1 and pool.queued == [0, AFFINITY_DEPTH] and not pool.waiting
    waiting("c", "d")
    pool.queued, pool.owned = [0, 0], [3, 1]
    assert [i for i, _ in pool._assign()] == [1, 0]   # equal queues: the worker owning fewer groups first
    assert pool.owner["c"] == 1 and pool.owner["d"] == 0


def _pid_now(design, models):
    return {m: {"pid": os.getpid()} for m in models}


def test_new_groups_spread_over_idle_workers():
    """Each task done before the next is submitted (queues always empty): groups still alternate
    (over the two workers: this process takes a design only when one waits for a slot)."""
    pool = started(EvaluationPool(3, affinity=True))
    try:
        pids = [pool.result(pool.submit(_pid_now, {}, ["m"], group=g)).metrics["m"]["pid"] for g in "abcd"]
    finally:
        pool.close()
    assert len(set(pids)) == 2 and pids[0] == pids[2] and pids[1] == pids[3]


def test_without_affinity_the_workers_share_one_queue():
    pool = EvaluationPool(2)
    try:
        handles = [pool.submit(_pid, {"g": "a"}, ["m"], group="a") for _ in range(6)]
        pids = {pool.result(h).metrics["m"]["pid"] for h in handles}
    finally:
        pool.close()
    assert len(pool.queued) == 1 and len(pids) == 2      # one group, yet both workers took designs


@pytest.mark.skipif(not os.path.exists("/lib/x86_64-linux-gnu/libc.so.6") and not os.path.exists("/lib64/libc.so.6"),
                    reason="glibc only")
def test_freed_memory_is_kept_for_reuse_on_glibc():
    from dse.search.execute.evaluation import keep_freed_memory
    assert keep_freed_memory() is True


def test_a_study_asking_ahead_killed_three_times_ends_as_an_uninterrupted_run(tmp_path):
    """The random sampler's batches asked ahead, killed with the next batch in flight (SIGKILL and
    SIGTERM mid-batch, Ctrl-C at a batch boundary, all with --jobs 2), then resumed with --jobs 2:
    the trials, front and knee of an uninterrupted --jobs 1 run; the asked-ahead batch never
    reaches the storage before its turn."""
    from tests.search.execute.test_resume import BATCH, interrupted_run, outcome, written
    from tests.search.execute.test_resume import write_study as write_resume_study
    study = write_resume_study(tmp_path)
    study.write_text(study.read_text().replace('name = "nsga2"\npopulation_size = 8', 'name = "random"'))
    assert 'name = "random"' in study.read_text()
    ref_cfg = load_study(study, storage=f"sqlite:///{tmp_path / 'ref.db'}")
    run_study(ref_cfg)
    want = outcome(ref_cfg)
    storage = f"sqlite:///{tmp_path / 'killed.db'}"
    done = 0
    for kill_at, signame in [(BATCH + 3, "SIGKILL"), (2 * BATCH, "SIGINT"), (3 * BATCH - 2, "SIGTERM")]:
        rc = interrupted_run(study, storage, kill_at, signame, 2, tmp_path / f"run-{kill_at}.log")
        assert rc == (130 if signame == "SIGINT" else -getattr(signal, signame))
        want_done, done = written(kill_at, signame, done), len(load_results(load_study(study, storage=storage)).records)
        assert done in want_done, f"killed after trial {kill_at} ({signame}) but the study holds {done}"
    cfg = load_study(study, storage=storage)
    s = run_study(cfg, jobs=2)
    assert s.notes == [] and s.asked_ahead >= 1
    got = outcome(cfg)
    assert got["trials"] == want["trials"]
    assert got["front"] == want["front"] and got["knee"] == want["knee"]


def test_numpy_huge_pages_are_switched_off_in_an_evaluating_process():
    """numpy keeps its private switch; after ``skip_huge_pages`` it reports huge pages off."""
    import numpy as np

    from dse.search.execute.evaluation import skip_huge_pages
    switch = (np._core.multiarray._set_madvise_hugepage if hasattr(np, "_core")
              else np.core.multiarray._set_madvise_hugepage)
    before = switch(True)
    try:
        assert skip_huge_pages() is True
        assert switch(False) is False               # the previous setting: off
    finally:
        switch(before)
