"""A design evaluated twice is one design (issue 35.3), with real processes on real PostgreSQL.

Two `dse run` drivers of one study (same seed: they propose the same designs at the same
moment), or `dse worker`s racing beside them, evaluate one design at once and both write it.
Afterwards the storage holds ONE COMPLETE trial per design (the others stored as repeats with
``duplicate_of``), and the four readers agree: optuna-dashboard's best trials (optuna's
``best_trials`` on the storage), ``dse front --json``, ``dse export --all`` and ``dse report``.

On main before this change the two-driver case left 8 of 40 designs COMPLETE twice (the
dashboard listed them twice; ``dse export --all`` counted them as two distinct designs).
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import pytest

from tests.fixtures import GRID300_SPACE, LATENCY_POWER_OBJECTIVES, write_study


def _dse(*argv: str, cache: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DSE_CATALOG"}
    if cache is not None:
        env["DSE_CACHE_DIR"] = cache
    return subprocess.Popen([sys.executable, "-m", "dse", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _finish(p: subprocess.Popen) -> str:
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err[-2000:]
    assert "Traceback" not in err
    return out


WRITERS = {   # case -> the processes started together on one fresh study
    "two dse run": ("run", "run"),
    "dse run and dse worker": ("run", "worker"),
    "two dse worker": ("worker", "worker"),
}


ATTEMPTS = 5        # fresh studies tried until the writers race (they nearly always do at once)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("case", list(WRITERS))
def test_racing_writers_store_one_design_once_and_every_reader_agrees(case, tmp_path, postgres_url):
    raced = 0
    for attempt in range(ATTEMPTS):
        raced = _race_and_check(case, tmp_path / f"a{attempt}", postgres_url, f"race{attempt}")
        if raced or case != "two dse run":
            break
    if case == "two dse run":
        assert raced >= 1, f"the drivers did not race in {ATTEMPTS} studies: nothing was tested"


def _race_and_check(case: str, folder, postgres_url: str, name: str) -> int:
    """Start the case's writers together on a fresh study ``name``, check the storage and every
    reader; the number of trials that raced (evaluated by one writer while another wrote them)."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = write_study(folder, space=GRID300_SPACE, objectives=LATENCY_POWER_OBJECTIVES, name=name, trials=40,
                        seed=7, batch=8, sampler="random",
                        workload='models = ["qwen3.5-35b-a3b"]\ntrace = "synthetic"')   # slower: wider races
    common = [str(study), "--storage", postgres_url]
    cache = str(folder / "cache")      # cold for each study: the session's warm cache (tests/conftest.py)
    # made evaluations so quick that two drivers of one seed stopped overlapping (the fresh-clone CI
    # of 50f955d: no race in 3 studies)
    procs = [_dse("run", *common, "--no-progress", cache=cache) if kind == "run" else
             _dse("worker", *common, "--worker-id", f"w{i}", "--poll", "0.1", cache=cache)
             for i, kind in enumerate(WRITERS[case])]
    for p in procs:
        _finish(p)

    trials = optuna.load_study(study_name=name, storage=postgres_url).get_trials()
    complete = collections.Counter(t.user_attrs["design_key"] for t in trials if t.state.name == "COMPLETE")
    assert max(complete.values()) == 1, {k: n for k, n in complete.items() if n > 1}   # the dashboard's view
    by_number = {t.number: t for t in trials}
    raced = 0
    for t in trials:
        dup = t.user_attrs.get("dse", {}).get("duplicate_of")
        if dup is None:
            continue
        assert t.state.name != "COMPLETE"
        want = f"repeat of trial {dup}"
        if not t.user_attrs["dse"].get("feasible", True):    # an infeasible repeat keeps its reason
            want = by_number[dup].user_attrs["dse_outcome"]   # (stored.outcome): the first trial's
            assert want.startswith("infeasible: ")
        assert t.user_attrs["dse_outcome"] == want
        assert by_number[dup].user_attrs["design_key"] == t.user_attrs["design_key"]
        raced += "metrics" in t.user_attrs["dse"]          # evaluated itself: a race, not a cache answer

    best = optuna.load_study(study_name=name, storage=postgres_url).best_trials
    dashboard = sorted(t.number for t in best)
    front = json.loads(_finish(_dse("front", *common, "--json")))["front"]
    assert sorted(p["trial"] for p in front) == dashboard

    _finish(_dse("export", *common, "--all", "-o", str(folder / "all.json")))
    rows = json.loads((folder / "all.json").read_text())
    distinct = collections.Counter(r["design_key"] for r in rows if r.get("duplicate_of") is None
                                   and r.get("state") == "COMPLETE")
    assert max(distinct.values()) == 1          # no design counted twice
    assert len(distinct) == len({t.user_attrs["design_key"] for t in trials if "design_key" in t.user_attrs})

    _finish(_dse("report", *common, "--no-reproduce", "-o", str(folder / "r.md")))
    report = (folder / "r.md").read_text()
    feasible = {t.user_attrs["design_key"] for t in trials if t.user_attrs.get("dse", {}).get("feasible")}
    assert f"({len(feasible)} distinct feasible designs), front {len(dashboard)} |" in report
    for n in dashboard:
        assert f"\n| {n} | " in report, n
    return raced


def _planted_twin(tmp_path, storage: str):
    """A finished study on ``storage`` and a COMPLETE copy of its first COMPLETE trial, written as
    a second racing writer would have (nothing demoted it: a journal, or a writer killed first)."""
    import optuna

    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    from tests.distributed.test_repeats import _complete_twin
    study_file = write_study(tmp_path, space=GRID300_SPACE, objectives=LATENCY_POWER_OBJECTIVES, name="twin",
                             trials=6, seed=7, batch=3, sampler="random", workload='models = ["qwen3.5-35b-a3b"]')
    cfg = load_study(study_file, storage=storage, check_metrics=False)
    run_study(cfg)
    study = optuna.load_study(study_name=cfg.name, storage=optuna_storage(storage))
    first = next(t for t in study.get_trials() if t.state.name == "COMPLETE")
    _complete_twin(study, first)
    return cfg, first


def optuna_storage(url: str):
    from dse.search.storage.storage import open_storage
    return open_storage(url, "twin", None)


def test_a_twin_left_complete_reads_as_a_repeat_everywhere(tmp_path):
    """Journal storage (cannot rewrite a finished trial): the reader marks the later twin."""
    from dse.search.study.results import load_results
    cfg, first = _planted_twin(tmp_path, f"journal:{tmp_path / 'twin.log'}")
    res = load_results(cfg)
    twin = res.records[-1]
    assert twin.design_key == first.user_attrs["design_key"] and twin.stored == "COMPLETE"
    assert twin.duplicate_of == first.number and twin.outcome == f"repeat of trial {first.number}"
    assert len({r.design_key for r in res.front()}) == len(res.front())
    keys = [r.design_key for r in res.records if r.duplicate_of is None]
    assert len(keys) == len(set(keys))                      # no design counted twice


def test_dse_run_demotes_a_twin_when_it_opens_the_study(tmp_path):
    """SQLite: a twin a killed writer left COMPLETE is stored as a repeat by the next `dse run`."""
    import optuna
    from optuna.trial import TrialState

    from dse.search.storage.storage import open_study
    cfg, first = _planted_twin(tmp_path, f"sqlite:///{tmp_path / 'twin.db'}")
    key = first.user_attrs["design_key"]
    study = optuna.load_study(study_name=cfg.name, storage=cfg.storage)
    def complete(study):
        return sum(t.user_attrs.get("design_key") == key for t in study.get_trials(states=(TrialState.COMPLETE,)))
    assert complete(study) == 2
    open_study(cfg, create=True)
    study = optuna.load_study(study_name=cfg.name, storage=cfg.storage)
    assert complete(study) == 1
    twin = study.get_trials()[-1]
    assert twin.state.name == "PRUNED" and twin.user_attrs["dse"]["duplicate_of"] == first.number


def test_an_infeasible_design_raced_twice_reads_as_one_design(tmp_path):
    """Two writers that raced on an infeasible design both store it PRUNED (``demote_repeats``
    leaves infeasible trials alone): the reader marks the later one a repeat, keeping its reason,
    so ``dse export --all`` counts the design once (the fresh-clone CI of 4abec09 counted two).
    A screened trial of the same design (its values are bounds) is neither a first nor a repeat."""
    import optuna

    from dse.search.storage.stored import OUTCOME_ATTR, VALUES_ATTR
    from dse.search.study.results import load_results
    cfg, first = _planted_twin(tmp_path, f"journal:{tmp_path / 'twin.log'}")
    study = optuna.load_study(study_name=cfg.name, storage=optuna_storage(cfg.storage))
    rec = {**first.user_attrs["dse"], "feasible": False, "reason": "die area over budget"}
    for screened in ("", "", "closed-form bound"):
        user = {**first.user_attrs, "design_key": "infeasible-key", "dse": rec, VALUES_ATTR: list(first.values),
                OUTCOME_ATTR: "infeasible: die area over budget", **({"screened": screened} if screened else {})}
        study.add_trial(optuna.trial.create_trial(state=optuna.trial.TrialState.PRUNED, params=dict(first.params),
                                                  distributions=dict(first.distributions), user_attrs=user,
                                                  system_attrs=dict(first.system_attrs)))
    res = load_results(cfg)
    a, b, screened = res.records[-3:]
    assert (a.duplicate_of, b.duplicate_of, screened.duplicate_of) == (None, a.number, None)
    assert b.outcome == "infeasible: die area over budget" and not b.feasible
    keys = [r.design_key for r in res.records if r.duplicate_of is None and not r.screened]
    assert len(keys) == len(set(keys))                      # no design counted twice
