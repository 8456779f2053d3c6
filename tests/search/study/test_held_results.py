"""`dse run`'s summary from the trials the run holds (``RunSummary.results``, ``_Run.held_results``):
the same records ``load_results`` reads back from the storage, or None (then the CLI reads them
back) when the storage may hold trials the run did not see."""
from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from dse.cli.run import _knee_summary
from dse.search.execute.runner import run_study
from dse.search.storage.optuna_compat import trial_id
from dse.search.storage.storage import open_study, quiet_optuna
from dse.search.study.results import load_results
from tests.search.execute.test_runner import _cfg, _study, fake_eval

ROOT = Path(__file__).resolve().parents[3]

# the toy space, with a repeat or two and a design infeasible for `fake_eval` (core side 8, width 8)
SMALL = ('[params]\ncore_side = { type = "categorical", choices = [2, 8] }\n'
         'tile_width = { type = "categorical", choices = [2, 8] }\n'
         'pooling = { type = "categorical", choices = ["direct", "broadcast"] }\n')


def _records(res) -> list[dict]:
    """Every field of every record, as plain JSON values (tuples and lists alike)."""
    return [json.loads(json.dumps(r.__dict__, sort_keys=True)) for r in res.records]


def _same_as_read_back(cfg, s) -> None:
    assert s.results is not None, "the run held its trials but gave no results"
    back = load_results(cfg)
    assert _records(s.results) == _records(back)
    assert s.results.study_attrs == back.study_attrs
    assert _knee_summary(cfg, s.results) == _knee_summary(cfg)


@pytest.mark.parametrize("sampler", ["nsga2", "random", "tpe"])
def test_held_results_are_the_stored_ones(tmp_path, sampler):
    cfg = _cfg(_study(tmp_path, sampler, trials=24, space=SMALL))
    s = run_study(cfg, evaluator=fake_eval)
    assert s.duplicates > 0 and s.complete == 24
    assert any(not r.feasible for r in s.results.records)     # infeasible, stored PRUNED
    assert any(r.duplicate_of is not None for r in s.results.records)
    _same_as_read_back(cfg, s)


def test_held_results_after_a_resume_include_the_earlier_trials(tmp_path):
    cfg = _cfg(_study(tmp_path, "random", trials=24, space=SMALL))
    first = run_study(cfg, evaluator=fake_eval, max_batches=1)
    assert first.complete == 8
    s = run_study(cfg, evaluator=fake_eval)
    assert s.new_trials == 16 and len(s.results.records) == 24
    _same_as_read_back(cfg, s)
    done = run_study(cfg, evaluator=fake_eval)            # nothing left to run: the stored trials
    assert done.new_trials == 0
    _same_as_read_back(cfg, done)


def test_held_results_on_a_journal_storage(tmp_path):
    cfg = _cfg(_study(tmp_path, "random", trials=16, space=SMALL), storage=f"journal:{tmp_path / 'j.log'}")
    _same_as_read_back(cfg, run_study(cfg, evaluator=fake_eval))


@pytest.mark.parametrize("when", ["first batch", "last batch"])
def test_trials_another_process_writes(tmp_path, when):
    """A trial added to the storage during the run (as a `dse worker` or a user would): after the
    first batch the run meets it (a WAITING trial it runs) and its results hold it; after the
    last one the run never sees it, so it gives no results and the summary reads the study back."""
    cfg = _cfg(_study(tmp_path, "random", trials=24, space=SMALL))
    added = []

    def other_writer(line):
        if not added and (when == "first batch" or line["complete"] >= line["target"]):
            with quiet_optuna():
                study, _ = open_study(cfg, create=True)      # the study exists: opened to write
                study.enqueue_trial({"core_side": 2, "tile_width": 2, "pooling": "direct"})
                added.append(line["complete"])

    s = run_study(cfg, evaluator=fake_eval, on_batch=other_writer)
    assert added
    if when == "first batch":
        _same_as_read_back(cfg, s)
        assert any(r.number == 8 and r.params == {"core_side": 2, "tile_width": 2, "pooling": "direct"}
                   for r in s.results.records)
    else:
        assert s.results is None and len(load_results(cfg).records) == 25
        assert _knee_summary(cfg, s.results) == _knee_summary(cfg)


def test_a_requeued_trial_of_a_dead_driver_is_read_back(tmp_path):
    """The run re-runs a dead driver's trial into a new one and the failed one stays: its records
    are read back (the held ones would miss the failed trial)."""
    cfg = replace(_cfg(_study(tmp_path, "random", trials=6, space=SMALL)), heartbeat_s=1)   # grace: 3 s
    with quiet_optuna():
        study, storage = open_study(cfg, create=True)
        t = study.ask()
        cfg.space.suggest(t, cfg.base_env())
        storage.record_heartbeat(trial_id(t))
    time.sleep(4.5)
    s = run_study(cfg, evaluator=fake_eval)
    back = load_results(cfg)
    assert back.record(0).state == "FAIL"
    if s.results is not None:                             # held: then exactly the stored ones
        assert _records(s.results) == _records(back)
    assert _knee_summary(cfg, s.results) == _knee_summary(cfg)


def test_dse_run_json_prints_the_summary_of_the_stored_study(tmp_path, capsys):
    """`dse run --json` (summary from the held results): its figures only, and the front and knee
    of the study as read back from the storage."""
    from dse.cli import main
    from dse.search.study.study import load_study
    url = f"sqlite:///{tmp_path}/q.db"
    assert main(["run", str(ROOT / "studies/quickstart.toml"), "--trials", "12", "--no-progress", "--json",
                 "--storage", url]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "results" not in out and out["complete"] == 12
    back = _knee_summary(load_study(ROOT / "studies/quickstart.toml", storage=url, trials=12))
    assert back["knee_trial"] is not None
    assert {k: out[k] for k in back} == json.loads(json.dumps(back))


def test_reading_a_study_back_pauses_garbage_collection(tmp_path, monkeypatch):
    """``load_results`` and the held results build their records with the cyclic garbage
    collector paused (a full collection walks every trial object built so far), and restore its
    state after, also on an error."""
    import gc

    from dse.errors import ConfigError
    from dse.search.study import results
    cfg = _cfg(_study(tmp_path, "random", trials=24, space=SMALL))
    assert run_study(cfg, evaluator=fake_eval).complete == 24
    enabled = []
    build = results.results_from_trials

    def building(*a, **k):
        enabled.append(gc.isenabled())
        return build(*a, **k)
    monkeypatch.setattr(results, "results_from_trials", building)
    assert len(load_results(cfg).records) == 24 and gc.isenabled()
    assert run_study(cfg, evaluator=fake_eval).results is not None and gc.isenabled()   # held: nothing to run
    assert enabled == [False, False]
    gc.disable()
    try:
        load_results(cfg)
        assert not gc.isenabled()              # left as it was
    finally:
        gc.enable()
    with pytest.raises(ConfigError):
        load_results(_cfg(_study(tmp_path / "none", "random", trials=8, space=SMALL)))
    assert gc.isenabled()
