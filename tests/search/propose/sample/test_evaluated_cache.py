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
