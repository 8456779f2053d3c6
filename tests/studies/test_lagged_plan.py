"""The guided sampler one batch behind (``[sampler] lag = 1``; dse.search.propose.samplers.blind):
batch i is planned from the trials before batch i - 1, so ``dse run`` with workers asks it while
batch i - 1 is evaluated; the trials are the same at every ``--jobs`` and after a resume, and
the same as a plan that only sees those trials."""
from __future__ import annotations

from pathlib import Path

import optuna

from dse.search import load_study, run_study
from dse.search.propose import samplers
from dse.search.propose.sample import guided
from tests.studies.test_knee_phase import params
from tests.studies.test_knee_phase import study as knee_study


def study(tmp_path: Path, lag: int, name: str = "lag") -> Path:
    return knee_study(tmp_path, "knee_share = 0.25", name, 40, objectives="full.toml", settings=f"lag = {lag}")


def test_lag_makes_guided_blind_to_the_last_batch_only():
    class C:
        sampler, batch = "guided", 8
        sampler_settings = {"lag": 1}
    assert samplers.blind(C) and samplers.lagged(C) == 1
    C.sampler_settings = {}
    assert not samplers.blind(C) and samplers.lagged(C) == 0


def test_the_plan_reads_the_trials_before_the_batch_before(tmp_path):
    """``guided.basis``: at position 24 (batches 0-2 finished) a lagged plan reads trials 0-15
    whatever the study holds after them; unlagged, every finished trial."""
    cfg = load_study(study(tmp_path, 1), storage=f"sqlite:///{tmp_path / 'b.db'}")
    run_study(cfg, max_batches=3)
    st = optuna.load_study(study_name=cfg.name, storage=cfg.storage)
    got, pending = guided.basis(cfg, st, 24, samplers.lagged(cfg))
    trials = sorted(st.get_trials(), key=lambda t: t.number)
    assert [t.number for t in got] == list(range(16))
    assert pending == [t.params for t in trials[16:24]]      # batch 2: designs known, results not read
    assert [t.number for t in guided.basis(cfg, st, 16, 1)[0]] == list(range(8))
    assert guided.basis(cfg, st, 8, 1)[0] == []
    plain = load_study(study(tmp_path, 0, name="plain"), storage=cfg.storage)
    assert samplers.lagged(plain) == 0 and guided.basis(plain, st, 24, 0) == (trials, [])


def test_lagged_trials_are_the_same_at_every_jobs_and_after_a_resume(tmp_path):
    one = load_study(study(tmp_path, 1), storage=f"sqlite:///{tmp_path / 'one.db'}")
    s1 = run_study(one)
    two = load_study(study(tmp_path, 1), storage=f"sqlite:///{tmp_path / 'two.db'}")
    s2 = run_study(two, jobs=2)
    assert s1.asked_ahead == 0 and s2.asked_ahead >= 3          # batches 1-4 asked while the one before ran
    assert len(params(one)) == 40 and params(two) == params(one)
    keys = [tuple(sorted(p.items())) for p in params(one)]
    assert len(set(keys)) == 40                                  # the batch in flight is never proposed again
    res = load_study(study(tmp_path, 1), storage=f"sqlite:///{tmp_path / 'res.db'}")
    run_study(res, max_batches=2)
    run_study(res, jobs=2, max_batches=2)                        # into the knee phase (global: 24 trials)
    run_study(res)
    assert params(res) == params(one)
    plain = load_study(study(tmp_path, 0, name="plain"), storage=f"sqlite:///{tmp_path / 'plain.db'}")
    run_study(plain)
    p0, p1 = params(plain), params(one)
    assert p0[:8] == p1[:8] and p0[8:] != p1[8:]                # batch 0 sees nothing either way; then the lag
