"""``MemoTPESampler`` (dse.search.propose.sample.tpe): optuna's TPE with one split of the trials per trial asked
proposes exactly what optuna's ``TPESampler`` proposes, and splits once per trial instead of once
per parameter."""
from __future__ import annotations

import optuna
import pytest
from optuna.samplers._tpe import sampler as tpe_module

from dse.search.propose.sample.tpe import MemoTPESampler
from tests.search.execute.test_runner import _cfg, _history, _study, fake_eval


def _objective(trial):
    """Three knobs, two conflicting objectives, a constraint violated on part of the space."""
    x = trial.suggest_float("x", 0.0, 4.0)
    k = trial.suggest_int("k", 1, 8)
    c = trial.suggest_categorical("c", ["a", "b", "c"])
    trial.set_constraint("violation", x + k - 9.0)       # > 0: infeasible
    return x + k + (c == "b"), (4.0 - x) * (8 - k) + (c == "c")


def _run(sampler_cls, liar: bool, trials: int = 40, batch: int = 4) -> list:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = sampler_cls(seed=3, n_startup_trials=8, constant_liar=liar)
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    while len(study.trials) < trials:               # asked in batches: the liar sees running trials
        asked = [study.ask() for _ in range(batch)]
        for t in asked:
            study.tell(t, _objective(t))
    return [(t.number, t.params, t.values) for t in study.trials]


def _count_splits(monkeypatch) -> list[int]:
    """Count optuna's splits of the finished trials (one per ``_split_trials`` it computes)."""
    calls = [0]
    inner = tpe_module._split_complete_trials

    def counting(*a, **k):
        calls[0] += 1
        return inner(*a, **k)
    monkeypatch.setattr(tpe_module, "_split_complete_trials", counting)
    return calls


@pytest.mark.parametrize("liar", [True, False])
def test_memo_tpe_proposes_what_optuna_tpe_proposes(liar):
    memo = _run(MemoTPESampler, liar)
    plain = _run(optuna.samplers.TPESampler, liar)
    assert memo == plain
    assert len({str(p) for _, p, _ in memo}) > 30          # TPE's proposals, not a constant


def test_the_trials_are_split_once_per_trial_not_per_knob(monkeypatch):
    calls = _count_splits(monkeypatch)
    _run(optuna.samplers.TPESampler, True)
    plain = calls[0]
    calls[0] = 0
    _run(MemoTPESampler, True)
    memo = calls[0]
    assert memo == 40 - 8                    # one split per trial TPE samples (after 8 start-up trials)
    assert plain == 3 * memo                 # optuna: one per knob
    calls[0] = 0
    _run(optuna.samplers.TPESampler, True)   # after the memo sampler ran: optuna's own TPE unchanged
    assert calls[0] == plain


def test_a_tpe_study_gives_the_trials_of_optunas_tpe(tmp_path, monkeypatch):
    """Through `dse run` (batches, constant liar, infeasible designs, repeats): the same trials."""
    hist = []
    for name, cls in (("memo", MemoTPESampler), ("plain", optuna.samplers.TPESampler)):
        monkeypatch.setattr("dse.search.propose.sample.tpe.MemoTPESampler", cls)
        d = tmp_path / name
        d.mkdir()
        cfg = _cfg(_study(d, "tpe", trials=40))
        from dse.search.execute.runner import run_study
        run_study(cfg, evaluator=fake_eval)
        hist.append(_history(cfg))
    assert hist[0] == hist[1] and len(hist[0]) == 40
