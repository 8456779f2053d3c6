"""The guided sampler's plan with its candidates' bounds computed in chunks on the study's workers
(``estimate.offloading``, ``estimate.ChunkedBounds``, ``EvaluationPool.submit_call``) is the plan
computed in the driver: the same arrays bit for bit, hence the same proposals, whichever chunks
a worker computed and whichever the driver took back."""
from __future__ import annotations

from concurrent.futures import Future, wait
from pathlib import Path

import numpy as np
import pytest

from dse.search import load_study, run_study
from dse.search.execute.pool import EvaluationPool
from dse.search.propose.bound import estimate
from dse.search.propose.sample import guided
from dse.search.storage.storage import open_study
from dse.search.storage.stored import sampler_form
from tests.search.propose.sample.test_guided import _study

ROOT = Path(__file__).resolve().parents[4]
FULL = load_study(ROOT / "studies" / "full.toml")


class LazyWorker:
    """A stand-in for the workers: of the tasks handed to it, every third is finished at once
    (computed when submitted), the next is "running" and never finishes (the driver must compute
    it itself, not wait), the next is waiting (cancelled by the driver). Counts those it ran."""

    def __init__(self, refuse: bool = False):
        self.tasks, self.ran, self.refuse = 0, 0, refuse

    def __call__(self, fn, *args):
        if self.refuse:
            return None
        kind = self.tasks % 3
        self.tasks += 1

        class _Task(Future):
            def cancel(self):
                return False if kind == 1 else super().cancel()

        task = _Task()
        if kind == 0:
            self.ran += 1
            task.set_running_or_notify_cancel()
            task.set_result(fn(*args))
        return task


def _pool(cfg, n: int, seed: int) -> list[dict]:
    """``n`` candidates of ``cfg`` as the plan draws them (uniform draws: no front yet), in flat form."""
    ev = guided.Evaluated(cfg, [])
    return [cfg.design(p) for p in guided.candidates(cfg, ev, np.random.default_rng(seed), n, 0.75)]


def _same(a, b) -> bool:
    return all(x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype != bool)
               for x, y in zip(a, b))


@pytest.mark.parametrize("chunk", [1, 37, 256])
def test_chunked_bounds_equal_one_call_over_every_design(chunk):
    designs = _pool(FULL, 700, 3)
    designs[5] = {**designs[5], "pe_groups_per_core": 1000}        # invalid: cfg.points refuses it
    whole = estimate.bound_arrays_here(FULL, designs)
    worker = LazyWorker()
    with estimate.offloading(worker):
        chunks = estimate.ChunkedBounds(FULL, chunk)
        for d in designs:                                           # one by one, as the plan draws them
            chunks.add((d,))
        got = chunks.arrays()
    assert worker.tasks == len(designs) // chunk and worker.ran >= 1 and chunks.offloaded == worker.ran
    assert _same(whole, got)


def test_bound_arrays_splits_in_halves_within_offloading_and_agrees():
    designs = _pool(FULL, 2 * estimate.OFFLOAD_MIN + 3, 4)
    worker = LazyWorker()
    with estimate.offloading(worker):
        got = estimate.bound_arrays(FULL, designs)
    assert worker.tasks == 1 and worker.ran == 1
    assert _same(estimate.bound_arrays_here(FULL, designs), got)
    worker.tasks = 1                                                # the next task "runs" and never ends
    with estimate.offloading(worker):
        assert _same(estimate.bound_arrays(FULL, designs), got) and worker.tasks == 2 and worker.ran == 1


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("offload")
    cfg = load_study(_study(tmp, trials=48, seed=2, pool=900), storage=f"sqlite:///{tmp / 's.db'}")
    run_study(cfg)
    study, _ = open_study(cfg, create=False)
    return cfg, [sampler_form(t) for t in study.get_trials(deepcopy=False)]


@pytest.mark.parametrize("upto", [12, 36, 48])
def test_the_plan_with_offloaded_bounds_is_the_serial_plan(history, upto):
    cfg, trials = history
    settings = {**cfg.sampler_settings, "pool": 1200}   # >= 3 chunks of distinct candidates (one parent at 12)
    serial = guided.plan(cfg, trials[:upto], np.random.default_rng(upto), cfg.batch, settings, estimate.BoundMemo())
    worker = LazyWorker()
    with estimate.offloading(worker):
        offloaded = guided.plan(cfg, trials[:upto], np.random.default_rng(upto), cfg.batch, settings,
                                estimate.BoundMemo())
    assert worker.tasks >= 3 and worker.ran >= 1, "the plan never handed a chunk out"
    assert offloaded == serial
    with estimate.offloading(LazyWorker(refuse=True)):               # no worker free: computed here
        assert guided.plan(cfg, trials[:upto], np.random.default_rng(upto), cfg.batch, settings,
                           estimate.BoundMemo()) == serial


def _noop(design, models):
    return {m: {} for m in models}


def test_submit_call_runs_on_an_idle_worker_and_the_arrays_agree():
    """A real pool (one worker process and this one): ``submit_call`` runs the chunk there."""
    pool = EvaluationPool(2, affinity=True)
    try:
        pool.result(pool.submit(_noop, {}, ("m",)))                 # starts the worker
        for _ in range(200):
            if pool.started[0]:
                break
            import time
            time.sleep(0.05)
        designs = _pool(FULL, 600, 5)
        with estimate.offloading(pool.submit_call):
            chunks = estimate.ChunkedBounds(FULL, 200)
            chunks.add(designs)
            wait([f for _, _, f in chunks.parts if f is not None], timeout=120)
            got = chunks.arrays()
        assert pool.calls == [0, 0] and pool.queued == [0, 0]         # every call accounted for and done
        sent = [f for _, _, f in chunks.parts if f is not None]
        assert len(sent) == 3 and chunks.offloaded == 3               # every chunk finished there, taken
        assert _same(estimate.bound_arrays_here(FULL, designs), got)
    finally:
        pool.close()


def test_submit_call_without_workers_is_none():
    assert EvaluationPool(1).submit_call(len, ()) is None
    assert EvaluationPool(2, affinity=True).submit_call(len, ()) is None      # no worker started yet


def test_weakly_dominated_is_the_plain_per_row_mask():
    """``pareto.weakly_dominated`` (column by column, as the plan uses it) against a per-row loop."""
    from dse.search.front import pareto

    def plain(P, F):
        return np.array([any(all(f[j] <= p[j] for j in range(len(p))) for f in F) for p in P], dtype=bool)
    rng = np.random.default_rng(0)
    for n, f, m in [(500, 30, 3), (200, 7, 2), (50, 1, 4), (0, 3, 3), (5, 0, 3)]:
        P = rng.integers(0, 4, (n, m)).astype(float)           # many ties and equal rows
        F = rng.integers(0, 4, (f, m)).astype(float)
        if n and f:
            P[0, 0], P[1, 1], F[0, -1] = np.inf, np.nan, -np.inf
        got = pareto.weakly_dominated(P, F)
        assert got.dtype == bool and np.array_equal(got, plain(P, F))
        assert 0 < got.sum() < n or n < 50 or f < 7
