"""Two workers that evaluate one design at the same time: the later COMPLETE trial is stored as a repeat."""
from __future__ import annotations

from dataclasses import replace

import optuna
import pytest

from dse.distributed.worker import run_worker
from dse.search.execute.evaluation import design_key, evaluate_design
from dse.search.storage import optuna_compat as oc
from dse.search.storage.stored import OUTCOME_ATTR, demote_repeats, is_scored, sampler_form
from dse.search.study.study import load_study
from tests.fixtures import write_distributed_study


def _study(cfg):
    return optuna.load_study(study_name=cfg.name, storage=cfg.storage)


def _complete_twin(study, t):
    """A copy of the finished COMPLETE trial ``t``, written as another worker would have."""
    twin = optuna.trial.create_trial(state=t.state, values=list(t.values), params=dict(t.params),
                                     distributions=dict(t.distributions), user_attrs=dict(t.user_attrs),
                                     system_attrs=dict(t.system_attrs))
    study.add_trial(twin)


def test_demote_repeats_keeps_the_first_complete_trial_of_a_design(tmp_path):
    _demote_on(tmp_path, f"sqlite:///{tmp_path / 'twins.db'}")


@pytest.mark.postgres
def test_demote_repeats_on_postgresql(tmp_path, postgres_url):
    _demote_on(tmp_path, postgres_url)


def _demote_on(tmp_path, storage: str) -> None:
    study_file = write_distributed_study(tmp_path, trials=6, batch=3, name="twins")
    cfg = load_study(study_file, storage=storage, check_metrics=False)
    run_worker(cfg, worker_id="w0", log=lambda _: None)
    study = _study(cfg)
    first = next(t for t in study.get_trials() if t.state.name == "COMPLETE")
    _complete_twin(study, first)
    key = first.user_attrs["design_key"]
    assert sum(t.user_attrs.get("design_key") == key for t in study.best_trials) == 2   # what the dashboard listed
    assert demote_repeats(oc.study_storage(study), oc.study_id(study), key) == 1
    assert demote_repeats(oc.study_storage(study), oc.study_id(study), key) == 0       # idempotent
    twin = _study(cfg).get_trials()[-1]
    assert twin.state.name == "PRUNED" and twin.user_attrs[OUTCOME_ATTR] == f"repeat of trial {first.number}"
    assert twin.user_attrs["dse"]["duplicate_of"] == first.number
    assert is_scored(twin) and sampler_form(twin).values == first.values     # still counted, sampler sees it
    assert twin.system_attrs["constraints"] == first.system_attrs["constraints"]
    assert sum(t.user_attrs.get("design_key") == key for t in _study(cfg).best_trials) == 1


def test_a_worker_whose_design_another_worker_wrote_meanwhile_stores_a_repeat(tmp_path):
    study_file = write_distributed_study(tmp_path, trials=4, batch=2, name="race")
    cfg = load_study(study_file, storage=f"sqlite:///{tmp_path / 'race.db'}", check_metrics=False)
    ahead = replace(cfg, name="ahead", storage=f"sqlite:///{tmp_path / 'ahead.db'}")
    run_worker(ahead, worker_id="w9", log=lambda _: None)     # the same grid, evaluated elsewhere first
    done = {t.user_attrs["design_key"]: t for t in _study(ahead).get_trials() if t.state.name == "COMPLETE"}
    planted: list[str] = []

    def evaluate_while_another_worker_writes(design, models):
        key = design_key(cfg, design)
        if key in done and not planted:      # the other worker finishes this design while we evaluate it
            _complete_twin(_study(cfg), done[key])
            planted.append(key)
        return evaluate_design(design, models)

    s = run_worker(cfg, worker_id="w0", evaluator=evaluate_while_another_worker_writes, log=lambda _: None)
    assert planted and s.repeats_demoted == 1
    mine = [t for t in _study(cfg).get_trials() if t.user_attrs.get("design_key") == planted[0]]
    assert [t.state.name for t in mine] == ["COMPLETE", "PRUNED"]        # ours has the lower number: the twin gives way
    assert mine[1].user_attrs[OUTCOME_ATTR] == f"repeat of trial {mine[0].number}"
