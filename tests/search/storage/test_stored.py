"""How trials are stored (``dse.search.storage.stored``): optuna-dashboard's best trials are ``dse front``,
studies written in the earlier form read (and resume) the same."""
from __future__ import annotations

import json
import math

import optuna
import pytest
from optuna.trial import TrialState

from dse.cli import main
from dse.search.storage.stored import (
    FORM_ATTR,
    OUTCOME_ATTR,
    VALUES_ATTR,
    outcome,
    sampler_form,
    stored_form,
    stored_state,
)
from tests.dashboard_api import dashboard_get
from tests.fixtures import write_study

# A small real study with every kind of trial: infeasible designs (die area over its budget),
# feasible designs with a non-finite objective (catalog routing measures no effective MFU: -inf),
# and repeats (32 designs, 40 trials).
SPACE = """
[params]
array_depth = { type = "categorical", choices = ["16K", "32K"] }
tile_width = { type = "categorical", choices = [1, 8] }
core_mesh_link_bits = { type = "int", low = 256, high = 768, step = 512 }
macro_mhz = { type = "float", low = 100, high = 300, step = 200 }
trace = { type = "categorical", choices = ["catalog", "synthetic"] }
"""
OBJECTIVES = """
[[objectives]]
metric = "effective_mfu"
direction = "maximize"
[[objectives]]
metric = "ffn_latency_us_per_token"
[[constraints]]
metric = "die_area_mm2"
le = "die_area_budget_mm2"
"""
NAME = "par"


def write_par(folder) -> str:
    return str(write_study(folder, space=SPACE, objectives=OBJECTIVES, file="par.toml", name=NAME, trials=40,
                           seed=3, batch=8, sampler="tpe", workload='models = ["qwen3.5-35b-a3b"]'))


def dse_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def run(capsys, study: str, url: str, trials: int) -> None:
    assert main(["run", study, "--storage", url, "--trials", str(trials), "--no-progress"]) == 0
    capsys.readouterr()


def dashboard_best(url: str) -> tuple[list[int], dict]:
    """Trial numbers of the best trials optuna-dashboard's own API serves (``/api/studies/<id>``)."""
    get = dashboard_get(url)

    sid = next(s["study_id"] for s in get("/api/studies")["study_summaries"] if s["study_name"] == NAME)
    detail = get(f"/api/studies/{sid}")
    return sorted(t["number"] for t in detail["best_trials"]), detail


# ---- the rule -----------------------------------------------------------------------------------
def test_stored_state_and_outcome():
    inf = math.inf
    names = ["a", "b"]
    assert stored_state(True, [1.0, 2.0], None) == "COMPLETE" and outcome(True, "", [1.0, 2.0], names, None) == ""
    assert stored_state(False, [1.0, inf], None) == "PRUNED"
    assert outcome(False, "die area 500 mm2", [1.0, inf], names, None) == "infeasible: die area 500 mm2"
    assert stored_state(True, [1.0, -inf], None) == "FAIL"
    assert outcome(True, "", [1.0, -inf], names, None) == "non-finite objective: b = -inf"
    assert stored_state(True, [1.0, 2.0], 4) == "PRUNED"
    assert outcome(True, "", [1.0, 2.0], names, 4) == "repeat of trial 4"
    assert stored_state(True, [1.0, -inf], 4) == "FAIL"          # a repeat of a non-finite design
    assert stored_state(True, [math.nan, 1.0], None) == "FAIL"   # optuna's tell fails a NaN
    assert outcome(False, "", None, names, None, "ZeroDivisionError: x") == "error: ZeroDivisionError: x"


def _told(values, feasible=True, dup=None, cons=(0.0, -0.5)):
    from optuna.distributions import FloatDistribution
    return optuna.trial.create_trial(params={"x": 0.5}, distributions={"x": FloatDistribution(0, 1)}, values=values,
                                     user_attrs={"dse": {"feasible": feasible, "duplicate_of": dup}, "design_key": "k"},
                                     constraints={"infeasible_workloads": cons[0], "c0": cons[1]})


def test_stored_form_round_trip():
    inf = math.inf
    for values, feasible, dup, state in (([1.0, 2.0], True, None, TrialState.COMPLETE),
                                         ([1.0, inf], False, None, TrialState.PRUNED),
                                         ([-inf, 2.0], True, None, TrialState.FAIL),
                                         ([1.0, 2.0], True, 3, TrialState.PRUNED)):
        told = _told(values, feasible, dup, cons=(0.0, -0.5) if feasible else (1.0, 2.5))
        st = stored_form(told)
        assert st.state == state
        assert st.system_attrs["constraints"] == list(told.constraints.values())
        assert not any(k.startswith("constraints:") for k in st.system_attrs)
        if state == TrialState.COMPLETE:
            assert st.values == values and VALUES_ATTR not in st.user_attrs
        else:
            assert st.values is None
            assert all(isinstance(v, str) or math.isfinite(v) for v in st.user_attrs[VALUES_ATTR])
        back = sampler_form(st)
        assert back.state == TrialState.COMPLETE and back.values == values and back.params == told.params
        assert list(back.constraints.values()) == list(told.constraints.values())
    plain = optuna.trial.create_trial(value=1.0)
    assert stored_form(plain) is plain and sampler_form(plain) is plain   # not a dse trial: as it is


# ---- the dashboard agrees with `dse front` ------------------------------------------------------
def test_dashboard_best_trials_are_dse_front(tmp_path, capsys):
    study = write_par(tmp_path)
    url = f"sqlite:///{tmp_path / 'par.db'}"
    run(capsys, study, url, 40)
    trials = optuna.load_study(study_name=NAME, storage=url).get_trials(deepcopy=False)
    outcomes = [t.user_attrs.get(OUTCOME_ATTR, "") for t in trials]
    # the study holds every kind of trial the stored form is about
    assert any(o.startswith("infeasible:") for o in outcomes)
    assert any(o.startswith("non-finite objective: effective_mfu = -inf") for o in outcomes)
    assert any(o.startswith("repeat of trial") for o in outcomes)
    assert all(v is None or all(math.isfinite(x) for x in v) for v in (t.values for t in trials))

    front = dse_json(capsys, "front", study, "--storage", url)
    want = sorted(r["trial"] for r in front["front"])
    best, detail = dashboard_best(url)
    assert want and best == want
    assert detail["objective_names"] == ["effective_mfu", "ffn_latency_us_per_token"]
    assert all(len(t["constraints"]) == 2 for t in detail["trials"] if t["state"] in ("Complete", "Pruned"))
    assert sorted(t.number for t in optuna.load_study(study_name=NAME, storage=url).best_trials) == want
    # dse's own tables: every trial evaluated (state as told), and how it is stored, with why
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    df = load_results(load_study(study, storage=url)).dataframe()
    assert set(df["state"]) == {"COMPLETE"} and set(df["stored"]) == {"COMPLETE", "PRUNED", "FAIL"}
    assert list(df["outcome"]) == outcomes
    # the earlier form of the same study: the dashboard's best trials were not the front
    old = f"sqlite:///{tmp_path / 'old.db'}"
    write_old_form(url, old)
    assert dashboard_best(old)[0] != want


# ---- studies written in the earlier form -------------------------------------------------------
def write_old_form(src: str, dst: str) -> None:
    """Copy a study as dse wrote it before the stored form: every evaluated trial COMPLETE with
    the values told (infinite ones included), constraints under ``constraints:<name>`` keys, no
    metric names."""
    s = optuna.load_study(study_name=NAME, storage=src)
    d = optuna.create_study(study_name=NAME, storage=dst, directions=s.directions)
    for k, v in s.user_attrs.items():
        if k != FORM_ATTR:
            d.set_user_attr(k, v)
    names = ["infeasible_workloads", "c0"]
    for t in s.get_trials(deepcopy=False):
        told = sampler_form(t)
        system = {k: v for k, v in told.system_attrs.items() if k != "constraints"}
        system.update({f"constraints:{n}": v for n, v in zip(names, told.constraints.values())})
        user = {k: v for k, v in told.user_attrs.items() if k not in (VALUES_ATTR, OUTCOME_ATTR)}
        d.add_trial(optuna.trial.FrozenTrial(
            number=t.number, state=told.state, value=None, values=told.values, datetime_start=t.datetime_start,
            datetime_complete=t.datetime_complete, params=t.params, distributions=t.distributions, user_attrs=user,
            system_attrs=system, intermediate_values={}, trial_id=0))


def test_a_study_in_the_earlier_form_reads_and_resumes_the_same(tmp_path, capsys):
    earlier_form_reads_and_resumes_the_same(tmp_path, capsys, f"sqlite:///{tmp_path / 'old.db'}")


@pytest.mark.postgres
def test_a_study_in_the_earlier_form_on_postgresql(tmp_path, capsys, postgres_url):
    earlier_form_reads_and_resumes_the_same(tmp_path, capsys, postgres_url)


def earlier_form_reads_and_resumes_the_same(tmp_path, capsys, old: str) -> None:
    """A study written in the earlier form into ``old`` (24 trials) reads as the same study written
    now, and once resumed to 40 trials by this version is migrated and ends as that study."""
    study = write_par(tmp_path)
    new = f"sqlite:///{tmp_path / 'new.db'}"
    run(capsys, study, new, 24)
    write_old_form(new, old)
    olds = optuna.load_study(study_name=NAME, storage=old).get_trials(deepcopy=False)
    assert all(t.state == TrialState.COMPLETE for t in olds)                        # really the old form
    assert any(not all(math.isfinite(v) for v in t.values) for t in olds)
    assert all(not any(k == "constraints" for k in t.system_attrs) for t in olds)
    for argv in (["front"], ["front", "--all"]):
        assert dse_json(capsys, *argv, study, "--storage", old) == dse_json(capsys, *argv, study, "--storage", new)
    # resumed by this version: its trials are rewritten into the stored form, the sampler sees the
    # same trials, so the study ends as the new one, and the dashboard agrees with `dse front`
    run(capsys, study, old, 40)
    run(capsys, study, new, 40)
    a, b = dse_json(capsys, "front", study, "--storage", old), dse_json(capsys, "front", study, "--storage", new)
    assert a == b and a["n_trials"] == 40
    assert dse_json(capsys, "front", study, "--storage", old, "--all")["trials"] == \
        dse_json(capsys, "front", study, "--storage", new, "--all")["trials"]
    migrated = optuna.load_study(study_name=NAME, storage=old)
    fresh = optuna.load_study(study_name=NAME, storage=new)
    assert migrated.user_attrs[FORM_ATTR] == 1
    for m, f in zip(migrated.get_trials(deepcopy=False), fresh.get_trials(deepcopy=False)):
        assert (m.state, m.values, m.user_attrs, m.system_attrs) == (f.state, f.values, f.user_attrs, f.system_attrs)
    assert dashboard_best(old)[0] == sorted(r["trial"] for r in a["front"])


def test_a_journal_study_in_the_earlier_form_reads_the_same(tmp_path, capsys):
    """A journal storage cannot change a finished trial: its earlier-form trials stay, and read the same."""
    study = write_par(tmp_path)
    new, old = f"sqlite:///{tmp_path / 'new.db'}", f"journal:{tmp_path / 'old.log'}"
    run(capsys, study, new, 16)
    from dse.search.storage.storage import open_storage
    write_old_form(new, open_storage(old, NAME, tmp_path))
    run(capsys, study, old, 24)
    run(capsys, study, new, 24)
    assert dse_json(capsys, "front", study, "--storage", old, "--all") == \
        dse_json(capsys, "front", study, "--storage", new, "--all")


def test_a_worker_writes_the_stored_form_and_counts_every_evaluated_trial(tmp_path, capsys):
    """`dse worker` writes through the same stored form: the study ends with exactly its target of
    evaluated trials (infeasible, repeated and non-finite ones counted though not COMPLETE), and
    the dashboard's best trials are `dse front`."""
    from dse.search.storage.stored import is_scored
    study = write_par(tmp_path)
    url = f"sqlite:///{tmp_path / 'w.db'}"
    assert main(["worker", study, "--storage", url, "--worker-id", "w", "--poll", "0.1"]) == 0
    capsys.readouterr()
    trials = optuna.load_study(study_name=NAME, storage=url).get_trials(deepcopy=False)
    assert sum(is_scored(t) for t in trials) == 40
    assert {t.state for t in trials} >= {TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL}
    front = dse_json(capsys, "front", study, "--storage", url)
    assert dashboard_best(url)[0] == sorted(r["trial"] for r in front["front"]) != []
