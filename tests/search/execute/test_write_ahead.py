"""Writing a batch's told trials while the driver waits for its workers (``runner._Unwritten``):
the study ends as when each batch is written once told, also when another process writes
trials between two writes of one batch (numbers, repeats and the cache follow the shift)."""
from __future__ import annotations

import time

import optuna
import pytest
from optuna.distributions import FloatDistribution

from dse.search.execute import runner
from dse.search.execute.pool import EvaluationPool
from dse.search.execute.runner import run_study
from dse.search.storage.mirror import StudyMirror
from dse.search.storage.storage import quiet_optuna
from dse.search.study.results import load_results
from dse.search.study.study import load_study
from tests.fixtures import TOY_OBJECTIVES, TOY_SPACE, write_study
from tests.search.execute.test_runner import fake_eval


def slow_eval(design, models):
    """``fake_eval`` taking long enough that the driver usually waits for a result (workers)."""
    time.sleep(0.03)
    return fake_eval(design, models)


@pytest.fixture
def always_waiting(monkeypatch):
    """Every result of a worker counts as still computed when the driver asks for it (on a loaded
    machine a worker may finish before the driver asks: the write ahead would then not happen)."""
    monkeypatch.setattr(EvaluationPool, "pending", lambda self, handle: not isinstance(handle, tuple))


def _study(d, trials: int = 32, storage: str | None = None):
    # not blind: no batch asked ahead
    return load_study(write_study(d, space=TOY_SPACE, objectives=TOY_OBJECTIVES, file="s.toml", trials=trials,
                                  batch=16, sampler="nsga2"), check_metrics=False, storage=storage)


def _stored(cfg) -> list[tuple]:
    return [(r.number, r.stored, tuple(sorted(r.params.items())), tuple(r.values or ()), r.duplicate_of, r.outcome)
            for r in load_results(cfg).records]


def _count_writes(monkeypatch) -> list[int]:
    sizes: list[int] = []
    real = StudyMirror.write_batch

    def write_batch(self, fts, first):
        sizes.append(len(fts))
        return real(self, fts, first)
    monkeypatch.setattr(StudyMirror, "write_batch", write_batch)
    return sizes


def test_told_trials_are_written_while_waiting_and_the_study_is_unchanged(tmp_path, monkeypatch, always_waiting):
    ref = _study(tmp_path / "one")
    run_study(ref, evaluator=fake_eval)                      # one process: each batch written once told
    sizes = _count_writes(monkeypatch)
    cfg = _study(tmp_path / "two")
    s = run_study(cfg, jobs=2, evaluator=slow_eval)
    assert s.complete == 32 and sum(sizes) == 32
    assert len(sizes) > 2, f"no write ahead of the batch end: {sizes}"
    assert all(n >= runner.WRITE_AHEAD_MIN_TRIALS for n in sizes[:-1] if n != sizes[-1])
    assert _stored(cfg) == _stored(ref)


def test_a_write_between_two_writes_of_a_batch_moves_the_rest_of_it(tmp_path, monkeypatch, always_waiting):
    """Another process writes a trial after the first write ahead of batch 2: the batch's later
    trials follow it, and every repeat still names the first trial of its design."""
    url = f"sqlite:///{tmp_path / 'w.db'}"
    cfg = _study(tmp_path, trials=48, storage=url)
    done = []
    real = StudyMirror.write_batch

    def write_batch(self, fts, first):
        shift = real(self, fts, first)
        if first >= 16 and not done:                  # the first write of batch 2 (trials 16-31)
            done.append(first)
            with quiet_optuna():
                other = optuna.load_study(study_name=cfg.name, storage=url)
                t = other.ask({"zz": FloatDistribution(0, 1)})
                other.tell(t, state=optuna.trial.TrialState.FAIL)
        return shift
    monkeypatch.setattr(StudyMirror, "write_batch", write_batch)
    s = run_study(cfg, jobs=2, evaluator=slow_eval)
    assert s.complete == 48
    res = load_results(cfg)
    recs = res.records
    assert [r.number for r in recs] == list(range(49))
    foreign = [r for r in recs if "zz" in r.params]
    assert len(foreign) == 1 and 16 < foreign[0].number < 32, "not written inside batch 2"
    dups = [r for r in recs if r.duplicate_of is not None]
    assert dups
    for r in dups:
        first = res.record(r.duplicate_of)
        assert first.design_key == r.design_key and first.duplicate_of is None and first.values == r.values
        if r.outcome.startswith("repeat"):
            assert r.outcome == f"repeat of trial {r.duplicate_of}"
    keys = [r.design_key for r in recs if r.design_key and r.duplicate_of is None and r.stored != "FAIL"]
    assert len(keys) == len(set(keys))                # each design evaluated (and stored first) once


def test_ctrl_c_inside_a_write_ahead_writes_nothing_twice(tmp_path, monkeypatch, always_waiting):
    """Ctrl-C arriving just after a write ahead committed: the batch's trials are each stored
    once, and the resumed run ends with the trials of an uninterrupted one."""
    ref = _study(tmp_path / "ref")
    run_study(ref, evaluator=fake_eval)
    url = f"sqlite:///{tmp_path / 'k.db'}"
    cfg = _study(tmp_path / "k", storage=url)
    real, hit = StudyMirror.write_batch, []

    def write_batch(self, fts, first):
        shift = real(self, fts, first)
        if first >= 16 and not hit:                    # inside batch 2, once written
            hit.append(first)
            raise KeyboardInterrupt
        return shift
    monkeypatch.setattr(StudyMirror, "write_batch", write_batch)
    with pytest.raises(KeyboardInterrupt):
        run_study(cfg, jobs=2, evaluator=slow_eval)
    stored = _stored(cfg)
    assert hit and 16 < len(stored) < 32
    assert [r[0] for r in stored] == list(range(len(stored)))
    assert stored == _stored(ref)[:len(stored)]        # each told trial once, as the reference has it
    monkeypatch.setattr(StudyMirror, "write_batch", real)
    run_study(cfg, jobs=2, evaluator=slow_eval)
    assert _stored(cfg) == _stored(ref)
