"""The soak's read-back checks (dse.distributed.audit) catch what they are for: a lost trial, a
design completed twice, a repeat pointing at another design, a front that differs."""
from __future__ import annotations

import datetime as dt
import itertools
import json
import random

from optuna.distributions import FloatDistribution
from optuna.trial import FrozenTrial, TrialState

from dse.distributed.audit import audit, dump_line, nondominated, per_minute

T0 = dt.datetime(2025, 1, 1, 12, 0, 0)


def trial(number, state="COMPLETE", values=None, key=None, user=None, system=None, params=None, at=None):
    user = dict(user or {})
    if key is not None:
        user.setdefault("design_key", key)
        user.setdefault("dse", {"feasible": True})
    params = params or {}
    return FrozenTrial(number=number, state=TrialState[state], value=None,
                       values=values if state == "COMPLETE" else None,
                       datetime_start=T0 + dt.timedelta(seconds=at or number),
                       datetime_complete=None if state in ("RUNNING", "WAITING") else
                       T0 + dt.timedelta(seconds=(at or number) + 1),
                       params=params, distributions={k: FloatDistribution(0, 1) for k in params},
                       user_attrs=user, system_attrs=dict(system or {}), intermediate_values={}, trial_id=number)


def clean_study():
    return [trial(0, values=[1.0, 4.0], key="a"), trial(1, values=[2.0, 2.0], key="b"),
            trial(2, "PRUNED", key="a", user={"dse_outcome": "repeat of trial 0", "dse_values": [1.0, 4.0]}),
            trial(3, "FAIL", user={"dse_worker": "w1"}, params={}),                      # killed while held
            trial(4, values=[3.0, 3.0], key="c", system={"failed_trial": 3, "retry_history": [3]}),
            trial(5, "PRUNED", user={"dse_surplus": True})]


def test_a_clean_study_passes():
    a = audit(clean_study(), ["minimize", "minimize"], 4, front=[0, 1])
    assert (a.complete, a.held, a.requeued, a.repeats, a.surplus) == (4, 1, 1, 1, 1)
    assert (a.n_lost, a.n_duplicates, a.front_oracle, a.ok) == (0, 0, [0, 1], True)


def test_each_fault_is_caught():
    ts = clean_study()
    ts[4] = trial(4, values=[3.0, 3.0], key="c")                             # the copy of 3 is missing
    assert audit(ts, ["minimize", "minimize"], 4, [0, 1]).lost == [3]
    ts = clean_study() + [trial(6, "RUNNING"), trial(7, "WAITING")]
    assert audit(ts, ["minimize", "minimize"], 4, [0, 1]).n_lost == 2
    ts = clean_study() + [trial(6, values=[2.0, 2.0], key="b")]              # design b completed twice
    a = audit(ts, ["minimize", "minimize"], 4, [0, 1])
    assert a.duplicates == {"b": [1, 6]} and a.n_duplicates == 2            # and one scored beyond the target
    ts = clean_study()
    ts[2] = trial(2, "PRUNED", key="a", user={"dse_outcome": "repeat of trial 1", "dse_values": [1.0, 4.0]})
    assert audit(ts, ["minimize", "minimize"], 4, [0, 1]).bad_repeats == [2]
    assert not audit(clean_study(), ["minimize", "minimize"], 4, [0]).front_equal
    assert audit(clean_study(), ["minimize", "minimize"], 5, [0, 1]).n_lost == 1   # one scored trial short


def test_a_held_trial_with_parameters_needs_a_copy_with_them():
    held = trial(3, "FAIL", system={"fixed_params": {"x": 0.5}})
    same = trial(4, "WAITING", system={"fixed_params": {"x": 0.5}, "retry_history": [3]})
    other = trial(4, "WAITING", system={"fixed_params": {"x": 0.7}, "retry_history": [3]})
    assert audit([held, same], ["minimize"], 0, []).requeued == 1
    assert audit([held, other], ["minimize"], 0, []).changed_params == [3]
    spent = trial(3, "FAIL", system={"retry_history": [0, 1, 2]})               # retries exhausted: its reason
    assert audit([spent], ["minimize"], 0, []).exhausted == 1


def test_nondominated_equals_brute_force():
    rng = random.Random(5)
    for _ in range(30):
        pts = [[rng.randint(0, 6) for _ in range(3)] for _ in range(rng.randint(1, 40))]
        dirs = [rng.choice(["minimize", "maximize"]) for _ in range(3)]
        s = [[v if d == "minimize" else -v for v, d in zip(p, dirs)] for p in pts]
        brute = [i for i, a in enumerate(s)
                 if not any(all(x <= y for x, y in zip(b, a)) and b != a for b in s)]
        assert nondominated(pts, dirs) == brute


def test_per_minute_and_dump():
    ts = [trial(n, values=[1.0], key=str(n), at=s) for n, s in enumerate(itertools.chain(range(0, 60, 2), [65, 70]))]
    assert per_minute(ts, ts) == [30 / 60, 2 / 11]
    rec = json.loads(dump_line(clean_study()[4]))
    assert rec == {"number": 4, "state": "COMPLETE", "params": {}, "values": [3.0, 3.0],
                   "user_attrs": {"design_key": "c"}, "system_attrs": {"failed_trial": 3, "retry_history": [3]}}
