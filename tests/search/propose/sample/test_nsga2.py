"""``MemoNSGAIISampler`` (dse/search/propose/sample/nsga2.py) proposes exactly what optuna's ``NSGAIISampler`` does."""
from __future__ import annotations

import numpy as np
import optuna
import pytest

from dse.search.execute.runner import run_study
from dse.search.propose import samplers
from dse.search.propose.sample.nsga2 import MemoNSGAIISampler
from dse.search.storage.optuna_compat import clear_study_system_attrs
from dse.search.study.study import load_study
from tests.search.execute.test_runner import _history, _study, fake_eval


def _run(sampler_cls, population: int, batch: int, batches: int, seed: int) -> list:
    """dse's way of asking: a new sampler per batch, seeded for it, the study's sampler state
    dropped; values with ties, some trials failed or pruned, a conditional parameter."""
    rng = np.random.default_rng(seed)
    study = optuna.create_study(directions=["minimize", "maximize"])
    out = []
    for b in range(batches):
        clear_study_system_attrs(study)
        study.sampler = sampler_cls(population_size=population, seed=seed * 1000 + b)
        trials = [study.ask() for _ in range(batch)]
        for t in trials:
            x = t.suggest_int("x", 0, 20)
            y = t.suggest_float("y", 0.1, 10.0, log=True)
            c = t.suggest_categorical("c", ["a", "b", "c"])
            if c == "a":
                t.suggest_int("z", 1, 4)
            out.append(t.params)
        for t in trials:
            u = rng.random()
            if u < 0.05:
                study.tell(t, state=optuna.trial.TrialState.FAIL)
            elif u < 0.1:
                study.tell(t, state=optuna.trial.TrialState.PRUNED)
            else:
                x, y = t.params["x"], t.params["y"]
                study.tell(t, [float(round(x / 3 + y)), float(round(x - y))])
    return out


@pytest.mark.parametrize("population,batch", [(6, 6), (10, 6), (4, 9)])
def test_the_same_proposals_as_nsga2(population, batch):
    for seed in (0, 1):
        assert _run(MemoNSGAIISampler, population, batch, 14, seed) == \
            _run(optuna.samplers.NSGAIISampler, population, batch, 14, seed)


def test_a_dse_study_is_the_same_trial_for_trial(tmp_path, monkeypatch):
    runs = []
    for name, cls in (("memo", MemoNSGAIISampler), ("plain", optuna.samplers.NSGAIISampler)):
        monkeypatch.setattr(samplers, "_nsga2", lambda cfg, seed, s, cls=cls: cls(seed=seed, **s))
        d = tmp_path / name
        d.mkdir()
        cfg = load_study(_study(d, "nsga2", trials=64), check_metrics=False)
        run_study(cfg, evaluator=fake_eval)
        runs.append(_history(cfg))
    assert runs[0] == runs[1]
    assert len(runs[0]) == 64


def test_the_study_attributes_keep_nsga2s_names():
    assert MemoNSGAIISampler._get_generation_key() == optuna.samplers.NSGAIISampler._get_generation_key()
    assert MemoNSGAIISampler._get_parent_cache_key_prefix() == \
        optuna.samplers.NSGAIISampler._get_parent_cache_key_prefix()


def test_the_shipped_nsga2_is_the_memo_one(tmp_path):
    cfg = load_study(_study(tmp_path, "nsga2"), check_metrics=False)
    assert type(samplers.make_sampler(cfg, 0)) is MemoNSGAIISampler


def _sequential(sampler_cls, seed: int) -> list:
    """optuna's own way: one sampler for the whole study, each trial told before the next (three
    parameters at least: with one, NSGA-II mutates every parameter and never uses the space)."""
    study = optuna.create_study(directions=["minimize", "minimize"],
                                sampler=sampler_cls(population_size=5, seed=seed))
    out = []
    for i in range(60):
        t = study.ask()
        x = t.suggest_int("x", 0, 30)
        y = t.suggest_int("y", 0, 30)
        v = t.suggest_categorical("v", [0, 1, 2])
        w = t.suggest_int("w", 0, 3) if i < 3 or x > 20 else 0     # the intersection shrinks at trial 3
        out.append(t.params)
        study.tell(t, [float(x % 7 + y + v), float(30 - x + w + v)])
    return out


def test_one_sampler_for_a_whole_study_proposes_the_same():
    for seed in (0, 3):
        assert _sequential(MemoNSGAIISampler, seed) == _sequential(optuna.samplers.NSGAIISampler, seed)
