"""``Evaluated`` reads a list of trials once (a knee-phase batch read the same trials four times:
its plan, its global share, the signature and the verdict after it), and what is learnt from them
alone (the estimator, the knee candidates) once as well."""
from __future__ import annotations

from dse.search import load_study, run_study
from dse.search.propose.bound import BoundMemo
from dse.search.propose.sample import guided
from tests.studies.test_knee_phase import study


def test_the_same_trials_are_read_once_and_each_plan_keeps_its_own_pending(tmp_path):
    cfg = load_study(study(tmp_path, "", trials=24, objectives="full.toml"), storage=f"sqlite:///{tmp_path / 'e.db'}")
    run_study(cfg)
    from dse.search.storage.storage import open_study
    st, _ = open_study(cfg, create=False)
    trials = sorted([t for t in st.get_trials() if t.state.is_finished()], key=lambda t: t.number)
    a = guided.Evaluated(cfg, trials)
    b = guided.Evaluated(cfg, list(trials), pending=[{"core_side": 99}])
    assert a.params is b.params                       # the same trials: read once
    guided._EVALUATED.clear()
    c = guided.Evaluated(cfg, trials)                 # read afresh: the same rows
    assert c.params is not a.params and c.params == a.params and c.keys == a.keys and c.designs == a.designs
    assert (c.values == a.values).all() and (c.feasible == a.feasible).all() and (c.front == a.front).all()
    assert (c.violation == a.violation).all() and c.front_params == a.front_params
    assert b.known - a.known == {guided.param_key({"core_side": 99})} and a.known == c.known   # pending apart
    assert a.estimator(cfg, 10.0, False, BoundMemo()) is b.estimator(cfg, 10.0, False, BoundMemo())
    assert a.estimator(cfg, 10.0, False, BoundMemo()) is not a.estimator(cfg, 1.0, False, BoundMemo())
    fewer = guided.Evaluated(cfg, trials[:-1])        # other trials: another read
    assert fewer.params is not c.params and len(fewer.params) <= len(c.params)


def test_a_finished_trial_is_read_once_and_its_row_is_a_fresh_reads(tmp_path):
    """``_read`` keeps each finished trial's row (per study config): a re-read, and a read of
    more trials, give what a read with nothing kept gives; an unfinished trial is never kept."""
    import numpy as np
    cfg = load_study(study(tmp_path, "", trials=24, objectives="full.toml"), storage=f"sqlite:///{tmp_path / 'r.db'}")
    run_study(cfg)
    from dse.search.storage.storage import open_study
    st, _ = open_study(cfg, create=False)
    trials = sorted([t for t in st.get_trials() if t.state.is_finished()], key=lambda t: t.number)
    guided._TRIAL_ROWS.clear()
    first = guided._read(cfg, trials[:12])
    assert {id(t) for t in trials[:12]} <= set(guided._TRIAL_ROWS)
    kept = guided._read(cfg, trials)                  # 12 rows kept, 12 read
    guided._TRIAL_ROWS.clear()
    fresh = guided._read(cfg, trials)
    for a, b in zip(kept, fresh):
        assert (a == b).all() if isinstance(a, np.ndarray) else a == b
    assert [x == y for x, y in zip(first[1], fresh[1])] == [True] * len(first[1])
    import copy

    import optuna
    running = copy.copy(trials[0])
    running.state = optuna.trial.TrialState.RUNNING
    guided._TRIAL_ROWS.clear()
    got = guided._read(cfg, [running])
    assert got[1] == [] and guided.param_key(running.params) in got[0] and not guided._TRIAL_ROWS


def test_the_estimators_rows_kept_in_the_memo_are_a_fresh_computations(tmp_path):
    """``evaluated_rows``: bounds, hints and features of the evaluated designs, each kept by the
    design's key; from a memo holding some of them, the same arrays as from nothing."""
    import numpy as np

    from dse.search.propose.bound.estimate import Estimator, evaluated_rows, features
    cfg = load_study(study(tmp_path, "", trials=24, objectives="full.toml"), storage=f"sqlite:///{tmp_path / 'f.db'}")
    run_study(cfg)
    from dse.search.storage.storage import open_study
    st, _ = open_study(cfg, create=False)
    trials = sorted([t for t in st.get_trials() if t.state.is_finished()], key=lambda t: t.number)
    ev = guided.Evaluated(cfg, trials)
    B, _, H = BoundMemo().arrays(cfg, ev.designs)
    X = features(cfg, ev.params, B, H)
    memo = BoundMemo()
    evaluated_rows(cfg, guided.Evaluated(cfg, trials[:10]), memo)       # some rows kept
    assert 0 < len(memo.fitted) < len(ev.keys)
    for got, want in zip(evaluated_rows(cfg, ev, memo), (B, H, X)):
        assert got.shape == want.shape and np.array_equal(got, want, equal_nan=True)
    assert len(memo.fitted) == len(set(ev.keys))
    a, b = Estimator(cfg, ev, 10.0, False, memo), Estimator(cfg, ev, 10.0, False, BoundMemo())
    assert np.array_equal(a.Xev, b.Xev)
    E1, p1 = a(ev.params, B, H)
    E2, p2 = b(ev.params, B, H)
    assert np.array_equal(E1, E2) and np.array_equal(p1, p2)
