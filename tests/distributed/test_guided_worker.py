"""The closed-form-guided sampler behind ``dse worker``: one trial asked at a time, plans remade."""
from __future__ import annotations

import optuna

from dse.distributed.worker import run_worker
from dse.search.storage.stored import is_scored
from dse.search.study.study import load_study
from tests.fixtures import write_distributed_study


def _scored(cfg):
    ts = optuna.load_study(study_name=cfg.name, storage=cfg.storage).get_trials(deepcopy=False)
    return [t for t in ts if is_scored(t)]


def test_two_guided_workers_finish_the_target_with_distinct_designs(tmp_path):
    study = write_distributed_study(tmp_path, sampler="guided", trials=16, batch=4, name="guided")
    cfg = load_study(study, storage=f"sqlite:///{tmp_path / 'guided.db'}", check_metrics=False)
    first = run_worker(cfg, worker_id="w0", max_trials=6, log=lambda _: None)
    second = run_worker(cfg, worker_id="w1", log=lambda _: None)
    scored = _scored(cfg)
    assert first.evaluated == 6 and len(scored) == 16 and second.complete == 16
    keys = [t.user_attrs["design_key"] for t in scored]
    assert len(set(keys)) == len(keys)          # the plan leaves out designs already proposed
    # the die-area constraint's closed-form bound is exact: every proposal that passed the screen meets it
    assert all(t.state.name == "COMPLETE" for t in scored), [t.user_attrs.get("dse_outcome") for t in scored]
