"""Multi-fidelity search: a screened design is dominated by (or equal to) the front it cites, or
infeasible, both under the bound and in truth; screened trials are recorded, never on the front,
never cached; the study is deterministic under a seed, whatever --jobs, and resumes exactly."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from dse.search import load_results, load_study, run_study
from dse.search.execute.evaluation import evaluate_design
from dse.search.execute.trials import DesignCache
from dse.search.front import pareto
from dse.search.propose.bound.fidelity import check_fidelity
from dse.search.space.objectives import score
from tests.fixtures import SCHEDULING_SPACE, write_study
from tests.search.execute.test_resume import interrupted_run, outcome

OBJECTIVES = """
[[objectives]]
metric = "ffn_us_per_token_delivered"
direction = "minimize"
[[objectives]]
metric = "effective_mfu"
direction = "maximize"
[[constraints]]
metric = "comm_violation"
le = 0
"""
SPACE = SCHEDULING_SPACE + 'core_mesh_link_bits = { type = "int", low = 128, high = 512, step = 128 }\n'


def _study(tmp: Path, trials: int = 48, fidelity: str = "multi", sampler: str = "tpe") -> Path:
    return write_study(tmp, space=SPACE, objectives=OBJECTIVES, trials=trials, seed=3, batch=12, sampler=sampler,
                       search=f'fidelity = "{fidelity}"', workload='models = ["qwen3.5-35b-a3b"]\nbatch = 64')


@pytest.fixture(scope="module")
def screened_study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fidelity")
    cfg = load_study(_study(tmp), storage=f"sqlite:///{tmp / 's.db'}")
    summary = run_study(cfg)
    return cfg, summary, load_results(cfg)


def test_a_screened_design_is_dominated_by_the_trial_it_cites_or_infeasible(screened_study):
    cfg, summary, res = screened_study
    screened = [r for r in res.records if r.screened]
    assert summary.screened == len(screened) and summary.new_trials == cfg.trials
    kinds = {r.screened.split(" ")[0] for r in screened}
    assert kinds == {"dominated", "infeasible"}, kinds        # both screens were exercised
    dirs = cfg.objectives.directions
    for r in screened:
        start = r.number - r.number % cfg.batch                # the screen saw the trials before the batch
        truth = score(evaluate_design(r.design, cfg.models), cfg.objectives)
        if r.screened.startswith("infeasible"):
            assert not truth.feasible, f"trial {r.number}: screened as infeasible but feasible"
            continue
        n = int(re.fullmatch(r"dominated by trial (\d+) under the closed-form bound", r.screened).group(1))
        cited = res.record(n)
        assert n < start and cited.feasible and not cited.screened
        front_pt, bound, true = (pareto.to_min(np.array([v]), dirs)[0] for v in (cited.values, r.values, truth.values))
        assert (front_pt <= bound).all(), f"trial {r.number}: its bound is not dominated by trial {n}"
        assert (bound <= true + 1e-12 * np.abs(true)).all(), f"trial {r.number}: the bound is better than the truth"
        assert not truth.feasible or (front_pt <= true).all(), f"trial {r.number}: would have entered the front"


def test_screened_trials_are_recorded_never_on_the_front_nor_cached(screened_study):
    cfg, summary, res = screened_study
    screened = {r.number for r in res.records if r.screened}
    assert screened and all(res.record(n).state == "COMPLETE" and not res.record(n).feasible for n in screened)
    assert all(res.record(n).reason.startswith("screened: ") for n in screened)
    assert all(res.record(n).stored == "PRUNED" and res.record(n).outcome == f"screened: {res.record(n).screened}"
               for n in screened)                       # no front (optuna's, the dashboard's) takes them
    assert not screened & {r.number for r in res.front()}
    assert summary.evaluations + summary.duplicates + summary.screened == summary.new_trials
    from dse.search.storage.storage import open_study
    study, _ = open_study(cfg, create=False)
    cache, _, _ = DesignCache.from_trials(study.get_trials(deepcopy=False))
    assert len(cache) == summary.evaluations
    df = res.dataframe()
    assert set(df.loc[df["screened"] != "", "trial"]) == screened


def test_multi_fidelity_is_deterministic_whatever_jobs(tmp_path):
    study = _study(tmp_path, trials=24)
    one = load_study(study, storage=f"sqlite:///{tmp_path / 'one.db'}")
    two = load_study(study, storage=f"sqlite:///{tmp_path / 'two.db'}")
    run_study(one, jobs=1)
    run_study(two, jobs=2)
    a, b = outcome(one), outcome(two)
    assert a == b
    assert any(r.screened for r in load_results(one).records)


@pytest.mark.slow
def test_a_multi_fidelity_study_killed_twice_ends_as_an_uninterrupted_run(tmp_path):
    study = _study(tmp_path, trials=36)
    ref = load_study(study, storage=f"sqlite:///{tmp_path / 'ref.db'}")
    run_study(ref)
    storage = f"sqlite:///{tmp_path / 'killed.db'}"
    for kill_at, signame, jobs in ((17, "SIGKILL", 1), (24, "SIGTERM", 2)):   # mid-batch, then between batches
        interrupted_run(study, storage, kill_at, signame, jobs, tmp_path / f"run-{kill_at}.log")
    cfg = load_study(study, storage=storage)
    assert run_study(cfg).notes == []
    assert outcome(cfg) == outcome(ref)
    assert any(r.screened for r in load_results(cfg).records)


def test_check_fidelity_names_the_allowed_values():
    assert check_fidelity("multi", "s.toml", "synthetic") == "multi"
    with pytest.raises(Exception, match=r"^s.toml: search.fidelity = 'fast': must be one of single, multi$"):
        check_fidelity("fast", "s.toml", "synthetic")
