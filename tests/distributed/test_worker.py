"""Distributed studies and crash safety, with real processes and a real PostgreSQL server.

* 3 `dse worker` processes on one PostgreSQL grid study of 300 trials; one is SIGKILLed while it
  holds running trials and is restarted: exactly 300 COMPLETE trials, no design twice, the killed
  trials re-queued and completed, and the same Pareto front as a single-process `dse run`.
* SIGKILL of a `dse run` on SQLite mid-run, then resume: every trial completed before the kill is
  still there, unchanged, and the study finishes.
* SIGTERM: the in-flight batch is recorded, the worker exits 143 and nothing stays RUNNING.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dse.search.storage.stored import is_scored
from dse.search.study.study import load_study
from tests.fixtures import write_distributed_study as write_study

pytestmark = pytest.mark.slow


def dse(*argv: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("DSE_CATALOG", None)
    return subprocess.Popen([sys.executable, "-m", "dse", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, **kw)


def finish(p: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"process timed out; stderr: {err[-2000:]}")
    return p.returncode, out, err


def trials_of(study_file: Path, storage: str):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = load_study(study_file, storage=storage, check_metrics=False)
    try:
        study = optuna.load_study(study_name=cfg.name, storage=storage)
    except KeyError:
        return []
    return study.get_trials(deepcopy=False)


def wait_for(pred, timeout: float, what: str, poll: float = 0.2):
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        v = pred()
        if v:
            return v
        time.sleep(poll)
    pytest.fail(f"timed out waiting for {what}")


def front_keys(study_file: Path, storage: str) -> set[str]:
    from dse.search.study.results import load_results
    res = load_results(load_study(study_file, storage=storage, check_metrics=False))
    return {r.design_key for r in res.front()}


@pytest.mark.postgres
def test_three_workers_one_killed_exact_trials_and_same_front(tmp_path, postgres_url):
    from optuna.trial import TrialState
    study = write_study(tmp_path)
    common = ["worker", str(study), "--storage", postgres_url, "--heartbeat", "1", "--poll", "0.2"]
    workers = {f"w{i}": dse(*common, "--worker-id", f"w{i}") for i in range(3)}

    # Kill w1 while it holds RUNNING trials (mid-batch), after the study is well under way.
    def w1_running():
        ts = trials_of(study, postgres_url)
        done = sum(is_scored(t) for t in ts)
        mine = [t.number for t in ts if t.state == TrialState.RUNNING and t.user_attrs.get("dse_worker") == "w1"]
        return mine if done >= 60 and mine else None

    held = wait_for(w1_running, 180, "worker w1 to hold running trials")
    workers["w1"].send_signal(signal.SIGKILL)
    rc_killed, _, _ = finish(workers["w1"])
    assert rc_killed == -signal.SIGKILL
    killed_at = {t.number: t.state for t in trials_of(study, postgres_url)}
    workers["w1-restarted"] = dse(*common, "--worker-id", "w1")
    del workers["w1"]

    for name, p in workers.items():
        rc, out, err = finish(p)
        assert rc == 0, f"{name}: rc={rc}\n{err[-3000:]}"
        assert "Traceback" not in err
        assert postgres_url.split(":")[2].split("@")[0] not in out + err  # password never printed

    ts = trials_of(study, postgres_url)
    complete = [t for t in ts if is_scored(t)]       # infeasible ones are stored PRUNED (dse.search.storage.stored)
    assert len(complete) == 300
    keys = [t.user_attrs["design_key"] for t in complete]
    assert len(set(keys)) == 300, "a design was completed twice"
    assert not [t for t in ts if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    # The trials w1 held when it died were failed (heartbeat) and their designs completed by copies.
    by_number = {t.number: t for t in ts}
    for n in held:
        if killed_at.get(n) == TrialState.RUNNING:
            assert by_number[n].state == TrialState.FAIL, f"trial {n} of the killed worker is {by_number[n].state}"
            retried = [t for t in complete if t.system_attrs.get("failed_trial") == n]
            assert len(retried) == 1, f"trial {n}: {len(retried)} completed retries"
    fixed = {tuple(sorted(t.system_attrs.get("fixed_params", {}).items())) for t in complete}
    assert len(fixed) == 300

    # Reference: the same study, single process (`dse run`, the runner), on SQLite.
    ref = f"sqlite:///{tmp_path / 'ref.db'}"
    rc, out, err = finish(dse("run", str(study), "--storage", ref, "--no-progress"))
    assert rc == 0, err
    ref_front = front_keys(study, ref)
    assert ref_front and front_keys(study, postgres_url) == ref_front


def test_sqlite_run_sigkill_then_resume_keeps_every_completed_trial(tmp_path):
    # enough trials that the run is still going when it is killed (a batch is written at once: fast)
    study = write_study(tmp_path, sampler="random", trials=1000, batch=4, name="crash")
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    p = dse("run", str(study), "--storage", url, "--no-progress")
    wait_for(lambda: sum(is_scored(t) for t in trials_of(study, url)) >= 30, 180,
             "30 complete trials")
    p.send_signal(signal.SIGKILL)
    rc, _, _ = finish(p)
    assert rc == -signal.SIGKILL
    before = {t.number: (t.state, t.values, t.params, t.user_attrs.get("design_key"))
              for t in trials_of(study, url) if is_scored(t)}
    assert 30 <= len(before) < 1000

    rc, out, err = finish(dse("run", str(study), "--storage", url, "--no-progress"))
    assert rc == 0, err
    after = {t.number: t for t in trials_of(study, url)}
    for n, (state, values, params, key) in before.items():
        t = after[n]
        assert t.state == state and t.values == values and t.params == params
        assert t.user_attrs.get("design_key") == key
    assert sum(is_scored(t) for t in after.values()) == 1000


def test_sigterm_records_the_in_flight_batch(tmp_path):
    from optuna.trial import TrialState
    study = write_study(tmp_path, sampler="random", trials=100000, batch=4, name="term")
    url = f"sqlite:///{tmp_path / 'term.db'}"
    p = dse("worker", str(study), "--storage", url, "--worker-id", "t")
    wait_for(lambda: sum(is_scored(t) for t in trials_of(study, url)) >= 8, 120,
             "8 complete trials")
    p.send_signal(signal.SIGTERM)
    rc, out, err = finish(p, timeout=60)
    assert rc == 128 + signal.SIGTERM, err
    assert "finishing the in-flight batch" in err and "Traceback" not in err
    ts = trials_of(study, url)
    assert not [t for t in ts if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert not [t for t in ts if t.state == TrialState.FAIL]
    assert f"{sum(is_scored(t) for t in ts)}/100000 complete" in out
