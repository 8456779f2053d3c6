"""The progress lines' front, kept batch by batch (dse/search/execute/progress.py), against the front of
all trials recomputed each time."""
from __future__ import annotations

import numpy as np
import optuna
import pytest

from dse.search.execute import runner as runner_mod
from dse.search.execute.progress import RunningFront, TrialFront, front_trials
from dse.search.execute.runner import run_study
from dse.search.front import pareto
from dse.search.study.study import load_study
from tests.fixtures import TOY_OBJECTIVES, TOY_SPACE, write_study
from tests.search.execute.test_ask_ahead import failing_eval


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("special", [False, True])
def test_running_front_is_the_front_of_every_row(m, special):
    rng = np.random.default_rng(m + 10 * special)
    rows = rng.integers(0, 6, size=(400, m)).astype(float)       # many ties and equal rows
    if special:
        rows[rng.integers(0, 400, 30), rng.integers(0, m, 30)] = np.inf
        rows[rng.integers(0, 400, 5), 0] = np.nan
    front = RunningFront(m)
    start = 0
    while start < len(rows):
        stop = start + int(rng.integers(1, 40))
        front.add(rows[start:stop], list(range(start, min(stop, len(rows)))))
        start = stop
        full = np.flatnonzero(pareto.nondominated_pairwise(rows[:start]))
        assert front.tags == list(full)


def _trial(st, values, constraint=None, key=None):
    t = st.ask({"x": optuna.distributions.IntDistribution(0, 99)})
    t.set_user_attr("design_key", key if key is not None else f"k{t.number % 37}")
    if constraint is not None:
        t.set_constraint("c0", constraint)
    return t


def test_trial_front_follows_a_study_with_trials_still_running():
    """Trials asked ahead are still RUNNING when the front is updated; they count once told."""
    rng = np.random.default_rng(5)
    st = optuna.create_study(directions=["minimize", "maximize"])
    tracker = TrialFront(["minimize", "maximize"])
    running = []
    for _step in range(40):
        for _ in range(int(rng.integers(1, 8))):
            running.append(_trial(st, None, float(rng.choice([-1.0, 0.0, 0.5]))))
        told = running[:int(rng.integers(0, len(running) + 1))]
        running = running[len(told):]
        for t in told:
            if rng.random() < 0.1:
                st.tell(t, state=optuna.trial.TrialState.FAIL)
            else:
                a = int(rng.integers(0, 15))
                st.tell(t, [float(a), float(a + rng.integers(0, 3))])
        trials = st.get_trials(deepcopy=False)
        expect = {t.user_attrs.get("design_key") for t in front_trials(trials, ["minimize", "maximize"])}
        assert set(tracker.update(trials).front.tags) == expect and tracker.designs() == len(expect)
    assert {t.number for t in front_trials(st.get_trials(deepcopy=False), ["minimize", "maximize"])} == \
        {t.number for t in st.best_trials}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_runs_progress_lines_count_the_front_of_all_its_trials(tmp_path, monkeypatch, jobs):
    """Each progress line of a run (ask-ahead with workers) against the front recomputed from every
    trial the run holds at that moment."""
    checked = []
    line = runner_mod._Run._progress_line

    def both(self):
        out = line(self)
        trials = self.mirror.mem.get_trials(deepcopy=False)
        full = {t.user_attrs.get("design_key") for t in front_trials(trials, self.cfg.objectives.directions)}
        checked.append((out["front"], len(full)))
        return out

    monkeypatch.setattr(runner_mod._Run, "_progress_line", both)
    study = write_study(tmp_path, space=TOY_SPACE, objectives=TOY_OBJECTIVES, file="s.toml", trials=48, batch=6,
                        sampler="random")
    run_study(load_study(study, check_metrics=False), jobs=jobs, evaluator=failing_eval, on_batch=lambda _: None)
    assert len(checked) >= 8           # a failed evaluation is not a complete trial: one more batch
    assert all(a == b for a, b in checked), checked
    assert checked[-1][0] > 1


def test_trial_front_starts_again_on_a_study_rebuilt_anew():
    """A mirror rebuilt from scratch holds new trial objects, possibly fewer (a failed trial
    without parameters is not re-added): the front is then recomputed, not merged."""
    rng = np.random.default_rng(8)
    first = optuna.create_study(directions=["minimize", "minimize"])
    for i in range(30):
        t = _trial(first, None)                        # trial 0 dominates every other ...
        first.tell(t, [0.0, 0.0] if i == 0 else [float(rng.integers(1, 9)), float(rng.integers(1, 9))])
    tracker = TrialFront(["minimize", "minimize"])
    tracker.update(first.get_trials(deepcopy=False))
    again = optuna.create_study(directions=["minimize", "minimize"])
    for t in first.get_trials(deepcopy=False)[5:]:     # ... and is not re-added; then more than before
        again.add_trial(t)
    for _ in range(12):
        t = _trial(again, None)
        again.tell(t, [float(rng.integers(1, 9)), float(rng.integers(1, 9))])
    trials = again.get_trials(deepcopy=False)
    assert len(trials) > 30
    expect = {t.user_attrs.get("design_key") for t in front_trials(trials, ["minimize", "minimize"])}
    assert set(tracker.update(trials).front.tags) == expect and "k0" not in expect
