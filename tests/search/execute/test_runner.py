"""The run loop: seeded determinism (also across --jobs), resume after an interruption or a dead
driver, duplicate designs evaluated once, grid exhaustion, infeasible trials with reasons."""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import optuna
import pytest

from dse.errors import ConfigError
from dse.search.execute.evaluation import design_key
from dse.search.execute.runner import run_study
from dse.search.storage.optuna_compat import trial_id
from dse.search.storage.storage import open_study, quiet_optuna
from dse.search.study.results import load_results
from dse.search.study.study import load_study
from tests.fixtures import LATENCY_POWER_OBJECTIVES, TOY_OBJECTIVES, TOY_SPACE, write_study


def fake_eval(design, models):
    """A cheap deterministic stand-in for the model (two conflicting objectives)."""
    s, w = design["core_side"], design["tile_width"]
    bonus = 0.5 if design["pooling"] == "broadcast" else 0.0
    out = {}
    for m in models:
        if s == 8 and w == 8:
            out[m] = {"feasible": False, "infeasible_reason": "too big", "a": None, "b": None}
        else:
            out[m] = {"feasible": True, "infeasible_reason": "", "a": s + w / 8, "b": s * w / 64 + bonus}
    return out


def _study(tmp_path: Path, sampler: str = "nsga2", trials: int = 24, extra: str = "", space: str = TOY_SPACE) -> Path:
    return write_study(tmp_path, space=space, objectives=TOY_OBJECTIVES, file="s.toml", trials=trials, batch=8,
                       study_extra=extra, sampler=sampler,
                       sampler_settings="population_size = 8" if sampler == "nsga2" else "")


def _cfg(p: Path, **kw):
    return load_study(p, check_metrics=False, **kw)


def _history(cfg):
    res = load_results(cfg)
    return [(r.number, r.state, tuple(sorted(r.params.items())), tuple(r.values or ())) for r in res.records]


@pytest.mark.parametrize("sampler", ["nsga2", "tpe", "random"])
def test_seeded_study_is_deterministic(tmp_path, sampler):
    hist = []
    for run in ("a", "b"):
        d = tmp_path / run
        d.mkdir()
        cfg = _cfg(_study(d, sampler))
        run_study(cfg, evaluator=fake_eval)
        hist.append(_history(cfg))
        res = load_results(cfg)
        hist.append((res.knee().number, [r.number for r in res.front()]))
    assert hist[0] == hist[2] and hist[1] == hist[3]
    # another seed explores differently
    d = tmp_path / "c"
    d.mkdir()
    cfg = _cfg(_study(d, sampler), seed=5)
    run_study(cfg, evaluator=fake_eval)
    assert _history(cfg) != hist[0]


@pytest.mark.parametrize("sampler", ["nsga2", "tpe", "random"])
def test_reusing_the_sampler_study_gives_the_trials_of_a_rebuild(tmp_path, monkeypatch, sampler):
    """Between batches the mirror keeps its in-memory study and swaps the sampler; the trials are
    those of rebuilding the study from its finished trials before every batch."""
    from dse.search.storage.mirror import StudyMirror
    hist, swaps = [], []
    real = StudyMirror._holds_only
    for run in ("swap", "rebuild"):
        d = tmp_path / run
        d.mkdir()
        cfg = _cfg(_study(d, sampler, trials=48))
        if run == "rebuild":
            monkeypatch.setattr(StudyMirror, "_holds_only", lambda self, trials: False)
        else:
            monkeypatch.setattr(StudyMirror, "_holds_only",
                                lambda self, trials: swaps.append(real(self, trials)) or swaps[-1])
        run_study(cfg, evaluator=fake_eval)
        hist.append(_history(cfg))
    assert hist[0] == hist[1]
    assert any(swaps)            # the swap path ran (NSGA-II: then refused by its study state)


def test_jobs_do_not_change_results(tmp_path):
    """Real model evaluation in 1 process vs 2 loky workers: identical trials and front."""
    space = ('[params]\narray_depth = { type = "categorical", choices = ["16K", "24K", "32K"] }\n'
             'tile_width = { type = "categorical", choices = [1, 2, 4] }\n')
    hist = []
    for jobs in (1, 2):
        p = write_study(tmp_path / f"j{jobs}", space=space, objectives=LATENCY_POWER_OBJECTIVES, file="s.toml",
                        trials=12, batch=6, sampler="random")
        cfg = load_study(p)
        s = run_study(cfg, jobs=jobs)
        assert s.complete == 12
        hist.append(_history(cfg))
    assert hist[0] == hist[1]


def test_duplicates_are_evaluated_once(tmp_path):
    space = ('[params]\ncore_side = { type = "int", low = 1, high = 2 }\n'
             'tile_width = { type = "categorical", choices = [1, 2] }\n'
             'pooling = { type = "fixed", value = "direct" }\n')
    cfg = _cfg(_study(tmp_path, "random", trials=20, space=space))
    calls = []

    def counting(design, models):
        calls.append(design_key(cfg, design))
        return fake_eval(design, models)

    s = run_study(cfg, evaluator=counting)
    assert s.complete == 20 and s.evaluations == len(calls) == len(set(calls)) <= 4
    assert s.duplicates == 20 - s.evaluations
    res = load_results(cfg)
    dups = [r for r in res.records if r.duplicate_of is not None]
    assert len(dups) == s.duplicates
    for r in dups:
        first = res.record(r.duplicate_of)
        assert first.design_key == r.design_key and first.values == r.values and r.metrics == first.metrics
    assert len(res.candidates()) == len(set(calls))   # the front counts a design once


def test_the_summary_counts_the_time_spent_on_evaluations(tmp_path):
    """``result_s`` (``dse run --json``): with --jobs 1 the evaluations run as their results are
    asked for, so it holds at least their sleeps and never more than the run."""
    cfg = _cfg(_study(tmp_path, "random", trials=20))
    slept = []

    def slow(design, models):
        time.sleep(0.02)
        slept.append(0.02)
        return fake_eval(design, models)

    s = run_study(cfg, evaluator=slow)
    assert s.evaluations == len(slept) > 0
    assert sum(slept) <= s.result_s <= s.elapsed_s
    assert "result_s" in s.fields()


def test_resume_after_interrupt_loses_and_repeats_nothing(tmp_path):
    cfg = _cfg(_study(tmp_path, "nsga2", trials=24))
    calls = {"n": 0}

    def flaky(design, models):
        calls["n"] += 1
        if calls["n"] == 13:          # in the middle of the second batch
            raise KeyboardInterrupt
        return fake_eval(design, models)

    with pytest.raises(KeyboardInterrupt):
        run_study(cfg, evaluator=flaky)
    before = load_results(cfg)
    done = [r for r in before.records if r.complete]
    assert len(done) >= 8                                    # trials told before the interrupt are kept
    assert all(r.complete for r in before.records)           # nothing left RUNNING / half-written

    evaluated = []

    def counting(design, models):
        evaluated.append(design_key(cfg, design))
        return fake_eval(design, models)

    s = run_study(cfg, evaluator=counting)
    after = load_results(cfg)
    assert s.complete == 24 and len(after.complete) == 24 and len(after.records) == 24
    for r in done:                                           # nothing lost or changed
        a = after.record(r.number)
        assert a.values == r.values and a.params == r.params and a.state == "COMPLETE"
    assert not set(evaluated) & {r.design_key for r in done}  # nothing re-evaluated
    assert len(evaluated) == len(set(evaluated))
    # re-running a finished study does nothing
    s2 = run_study(cfg, evaluator=counting)
    assert s2.new_trials == 0 and s2.complete == 24


def test_dead_driver_trials_are_failed_and_requeued(tmp_path, monkeypatch):
    """A driver killed mid-batch leaves RUNNING trials; once their heartbeat is stale the next run
    fails them and re-queues their parameters (RetryHeartbeatStaleTrialCallback)."""
    cfg = replace(_cfg(_study(tmp_path, "random", trials=6)), heartbeat_s=1)   # grace: 3 s
    with quiet_optuna():
        study, storage = open_study(cfg, create=True)
        t = study.ask()
        params = cfg.space.suggest(t, cfg.base_env())
        storage.record_heartbeat(trial_id(t))       # the dead driver's last beat
    time.sleep(4.5)
    s = run_study(cfg, evaluator=fake_eval)
    res = load_results(cfg)
    assert res.record(0).state == "FAIL"
    retried = [r for r in res.records if r.number > 0 and r.params == {k: params[k] for k in r.params}
               and r.complete]
    assert retried, "the dead trial's parameters were not re-run"
    assert s.complete == 6


def test_grid_sampler_covers_the_grid_exactly(tmp_path):
    space = ('[params]\ncore_side = { type = "int", low = 1, high = 3 }\n'
             'tile_width = { type = "categorical", choices = [2, 8] }\n'
             'pooling = { type = "fixed", value = "broadcast" }\n')
    cfg = _cfg(_study(tmp_path, "grid", trials=100, space=space))
    s = run_study(cfg, evaluator=fake_eval)
    assert s.complete == 6 and s.evaluations == 6 and s.exhausted
    got = sorted((r.params["core_side"], r.params["tile_width"]) for r in load_results(cfg).complete)
    assert got == [(a, b) for a in (1, 2, 3) for b in (2, 8)]
    assert run_study(cfg, evaluator=fake_eval).new_trials == 0


def test_infeasible_designs_are_violations_with_reasons(tmp_path):
    cfg = _cfg(_study(tmp_path, "grid", trials=200))
    run_study(cfg, evaluator=fake_eval)
    res = load_results(cfg)
    bad = [r for r in res.complete if not r.feasible]
    reasons = {r.reason for r in bad}
    assert "too big" in reasons                                   # model infeasible (8 x 8)
    assert "constraint a <= 8.2 violated (8.5 vs 8.2)" in reasons   # core_side 8, tile_width 4
    assert all(r.constraints["infeasible_workloads"] > 0 or r.constraints["c0"] > 0 for r in bad)
    assert all(r.feasible for r in res.front())
    # oracle: the front equals the brute-force non-dominated set of the feasible grid
    pts = {}
    for s in range(1, 9):
        for w in (1, 2, 4, 8):
            for pool in ("direct", "broadcast"):
                m = fake_eval({"core_side": s, "tile_width": w, "pooling": pool}, ["x"])["x"]
                if m["feasible"] and m["a"] <= 8.2:
                    pts[(s, w, pool)] = (m["a"], -m["b"])
    nd = {k for k, v in pts.items() if not any(o[0] <= v[0] and o[1] <= v[1] and o != v for o in pts.values())}
    assert {(r.params["core_side"], r.params["tile_width"], r.params["pooling"]) for r in res.front()} == nd


def test_changed_space_is_refused_on_resume(tmp_path):
    p = _study(tmp_path, "random", trials=4)
    run_study(_cfg(p), evaluator=fake_eval)
    (tmp_path / "space.toml").write_text(TOY_SPACE.replace("high = 8", "high = 6"))
    with pytest.raises(ConfigError) as ei:
        run_study(_cfg(p), evaluator=fake_eval)
    assert str(ei.value) == (f"{p.resolve()}: study 's' in {tmp_path.resolve() / 'results' / 's.db'} "
                             f"was created from a different space, objectives, workloads or base design; "
                             f"give [study] a new name, pass another --storage, or delete the old results")


def test_front_of_a_missing_study_is_a_clear_error(tmp_path):
    cfg = _cfg(_study(tmp_path), seed=3)
    with pytest.raises(ConfigError,
                       match=r"no study 's\[seed=3\]' in .*s\.db; run `dse run \S*s\.toml --seed 3` first"):
        load_results(cfg)


def test_journal_storage(tmp_path):
    cfg = _cfg(_study(tmp_path, "random", trials=5), storage=f"journal:{tmp_path / 'j.log'}")
    assert run_study(cfg, evaluator=fake_eval).complete == 5
    assert (tmp_path / "j.log").exists() and not (tmp_path / "results" / "s.db").exists()
    assert len(load_results(cfg).complete) == 5


def test_errors_in_the_model_fail_the_trial_not_the_study(tmp_path):
    cfg = _cfg(_study(tmp_path, "random", trials=6))

    def buggy(design, models):
        if design["core_side"] == 3:
            raise ZeroDivisionError("boom")
        return fake_eval(design, models)

    s = run_study(cfg, evaluator=buggy)
    assert s.complete == 6
    fails = [r for r in load_results(cfg).records if r.state == "FAIL"]
    assert s.errors == len(fails)
    assert all(r.error == "ZeroDivisionError: boom" for r in fails)


def test_optuna_sees_constraints(tmp_path):
    cfg = _cfg(_study(tmp_path, "grid", trials=200))
    run_study(cfg, evaluator=fake_eval)
    st = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path.resolve() / 'results' / 's.db'}")
    best = {t.number for t in st.best_trials}          # optuna's own constrained front
    res = load_results(cfg)
    assert best == {r.number for r in res.front()}


@pytest.mark.postgres
def test_run_resume_and_front_on_postgresql(tmp_path, postgres_url):
    cfg = _cfg(_study(tmp_path, "nsga2", trials=16), storage=postgres_url)
    assert run_study(cfg, evaluator=fake_eval, max_batches=1).complete == 8
    s = run_study(cfg, evaluator=fake_eval)
    assert s.complete == 16 and s.new_trials == 8
    res = load_results(cfg)
    assert len(res.records) == 16 and all(r.complete for r in res.records)
    # the same seeded study on SQLite gives the same trials
    d = tmp_path / "sq"
    d.mkdir()
    cfg2 = _cfg(_study(d, "nsga2", trials=16))
    run_study(cfg2, evaluator=fake_eval, max_batches=1)
    run_study(cfg2, evaluator=fake_eval)
    assert _history(cfg2) == _history(cfg)


def test_front_trials_are_optunas_best_trials():
    """The progress line's front (no deep copy of every trial) is ``Study.best_trials``."""
    import numpy as np

    from dse.search.execute.progress import front_trials
    rng = np.random.default_rng(3)
    for constrained in (False, True):
        st = optuna.create_study(directions=["minimize", "maximize"])
        for i in range(120):
            t = st.ask({"x": optuna.distributions.IntDistribution(0, 9)})
            if constrained:
                t.set_constraint("c0", float(rng.choice([-1.0, 0.0, 0.5])))
            if i % 17 == 5:
                st.tell(t, state=optuna.trial.TrialState.FAIL)
            else:
                a = int(rng.integers(0, 12))           # a trade-off, with ties and equal rows
                st.tell(t, [float(a), float(a + rng.integers(0, 3))])
        ours = front_trials(st.get_trials(deepcopy=False), ["minimize", "maximize"])
        assert [t.number for t in ours] == [t.number for t in st.best_trials]
        assert 1 < len(ours) < 120
