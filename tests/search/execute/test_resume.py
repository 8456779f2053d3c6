"""Deterministic resume: a seeded study killed anywhere and resumed, any number of times, ends with
the trials, front, knee and exported knee of an uninterrupted run.

The study is ``studies/full.toml``'s space and constraints (NSGA-II over every knob, three
objectives) on the closed-form workload, so it is fast (its dollar and MFU objectives need a
trace; latency, power and area stand in). The driver runs in a subprocess that
sends itself a signal once the study holds n trials, right before telling the next one: SIGKILL /
SIGTERM (the process dies at once, losing the told trials of its batch not yet written)
or SIGINT (Ctrl-C: they are written), at five points drawn at random (seeded), mid-batch and between batches,
with ``--jobs 1`` and ``--jobs 2``, and with the Dask backend (a local cluster of 2 workers)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dse.search import load_results, load_study, run_study

ROOT = Path(__file__).resolve().parents[3]
TRIALS, BATCH = 32, 8

# Runs the study in this process and signals itself when it is about to tell a trial once the study
# holds `kill_at` finished trials (written, or told and not yet written: a batch is written at once).
DRIVER = """
import os, signal, sys
from dse.search import load_results, load_study, run_study
from dse.search.storage.mirror import StudyMirror
study, storage, kill_at, signame, jobs, backend = sys.argv[1:7]
cfg = load_study(study, storage=storage)
held = [len(load_results(cfg).records) if os.path.exists(storage.removeprefix("sqlite:///")) else 0]
tell = StudyMirror.tell
def signal_then_tell(self, trial, values):
    if held[0] >= int(kill_at):
        os.kill(os.getpid(), getattr(signal, signame))
    held[0] += 1
    return tell(self, trial, values)
StudyMirror.tell = signal_then_tell
try:
    run_study(cfg, jobs=int(jobs), backend=backend)
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(3)   # not interrupted: the kill point was not reached
"""


OBJECTIVES = """
[[objectives]]
metric = "ffn_latency_us_per_token"
direction = "minimize"
[[objectives]]
metric = "pool_power_w"
direction = "minimize"
[[objectives]]
metric = "die_area_mm2"
direction = "minimize"
[[constraints]]
metric = "die_area_mm2"
le = "die_area_budget_mm2"
[[constraints]]
metric = "comm_violation"
le = 0
"""


def write_study(tmp: Path) -> Path:
    (tmp / "objectives.toml").write_text(OBJECTIVES)
    f = tmp / "resume.toml"
    f.write_text(f"""
[study]
name = "resume"
space = "{ROOT / 'spaces' / 'full.toml'}"
objectives = "objectives.toml"
trials = {TRIALS}
seed = 11
batch = {BATCH}
[sampler]
name = "nsga2"
population_size = {BATCH}
[workload]
models = ["qwen3.5-35b-a3b"]
trace = "catalog"
""")
    return f


def outcome(cfg) -> dict:
    """Trials (number, state, params, values, duplicate_of), front, knee and the exported knee."""
    res = load_results(cfg)
    knee = res.knee()
    return json.loads(json.dumps({
        "trials": [(r.number, r.state, r.params, r.values, r.duplicate_of) for r in res.records],
        "front": [r.number for r in res.front()],
        "knee": None if knee is None else res.to_json(knee)}))


def kill_points(rng: random.Random) -> list[int]:
    """Five distinct points in (0, TRIALS): at least one between batches and one mid-batch."""
    while True:
        pts = sorted(rng.sample(range(1, TRIALS), 5))
        if any(p % BATCH == 0 for p in pts) and any(p % BATCH for p in pts):
            return pts


def written(kill_at: int, signame: str, before: int) -> range:
    """Trials the storage may hold after a signal once ``kill_at`` trials were told (``before`` of
    them written by earlier runs): Ctrl-C writes the told trials of the batch in flight; a process
    killed outright loses those not yet written (never an earlier batch; with worker processes
    some may have been written ahead while the driver waited), and resuming asks them again."""
    if signame == "SIGINT":
        return range(kill_at, kill_at + 1)
    return range(max(before, kill_at - kill_at % BATCH), kill_at + 1)


def interrupted_run(study: Path, storage: str, kill_at: int, signame: str, jobs: int, log: Path,
                    backend: str = "loky") -> int:
    """Run the driver until it signals itself; its exit status. (Output goes to a file: evaluation
    workers a killed driver leaves behind would hold a pipe open.)"""
    with log.open("w") as err:
        p = subprocess.Popen([sys.executable, "-c", DRIVER, str(study), storage, str(kill_at), signame, str(jobs),
                              backend],
                             stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            rc = p.wait(timeout=300)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)     # the evaluation workers it left behind
            except ProcessLookupError:
                pass
    assert "Traceback" not in log.read_text(), log.read_text()
    return rc


@pytest.mark.slow
def test_a_study_killed_five_times_ends_as_an_uninterrupted_run(tmp_path):
    study = write_study(tmp_path)
    ref_cfg = load_study(study, storage=f"sqlite:///{tmp_path / 'ref.db'}")
    run_study(ref_cfg)
    want = outcome(ref_cfg)
    assert len(want["trials"]) == TRIALS and want["front"] and want["knee"]

    storage = f"sqlite:///{tmp_path / 'killed.db'}"
    plan = zip(kill_points(random.Random(20261201)), ["SIGKILL", "SIGTERM", "SIGKILL", "SIGINT", "SIGKILL"],
               [1, 2, 1, 2, 2])
    done = 0
    for kill_at, signame, jobs in plan:
        rc = interrupted_run(study, storage, kill_at, signame, jobs, tmp_path / f"run-{kill_at}.log")
        expected = 130 if signame == "SIGINT" else -getattr(signal, signame)
        assert rc == expected, f"kill at {kill_at} ({signame}, --jobs {jobs}): exit {rc}"
        want_done, done = written(kill_at, signame, done), len(load_results(load_study(study, storage=storage)).records)
        assert done in want_done, f"killed after trial {kill_at} ({signame}) but the study holds {done}"
    cfg = load_study(study, storage=storage)
    s = run_study(cfg, jobs=2)
    assert s.notes == []
    got = outcome(cfg)
    for g, w in zip(got["trials"], want["trials"]):
        assert g == w, f"trial {w[0]} differs"
    assert got["front"] == want["front"] and got["knee"] == want["knee"]


@pytest.mark.slow
def test_a_study_killed_under_dask_ends_as_an_uninterrupted_run(tmp_path):
    """``--backend dask`` (a local cluster, killed with its driver): SIGKILL mid-batch, then SIGINT
    between batches, resumed on Dask: the trials, front and knee of an uninterrupted ``--jobs 1`` run."""
    study = write_study(tmp_path)
    ref_cfg = load_study(study, storage=f"sqlite:///{tmp_path / 'ref.db'}")
    run_study(ref_cfg)
    want = outcome(ref_cfg)
    storage = f"sqlite:///{tmp_path / 'dask.db'}"
    done = 0
    for kill_at, signame in [(BATCH + 3, "SIGKILL"), (3 * BATCH, "SIGINT")]:
        rc = interrupted_run(study, storage, kill_at, signame, 2, tmp_path / f"dask-{kill_at}.log", backend="dask")
        assert rc == (130 if signame == "SIGINT" else -signal.SIGKILL), (tmp_path / f"dask-{kill_at}.log").read_text()
        want_done, done = written(kill_at, signame, done), len(load_results(load_study(study, storage=storage)).records)
        assert done in want_done
    cfg = load_study(study, storage=storage)
    s = run_study(cfg, jobs=2, backend="dask")
    assert s.notes == []
    got = outcome(cfg)
    assert got["trials"] == want["trials"]
    assert got["front"] == want["front"] and got["knee"] == want["knee"]


def test_a_resumed_batch_that_differs_is_reported(tmp_path):
    """Trials written by something else than the batch procedure (here: another seed) are noticed
    when the interrupted batch is re-asked, and the user is told."""
    study = write_study(tmp_path)
    storage = f"sqlite:///{tmp_path / 's.db'}"
    from dataclasses import replace
    other = replace(load_study(study, storage=storage, trials=3), seed=12)
    run_study(other)                             # 3 trials of batch 0, proposed under seed 12
    notes: list[str] = []
    s = run_study(load_study(study, storage=storage, trials=8), notify=notes.append)
    assert s.complete == 8 and notes == s.notes and len(notes) == 1 and "differ" in notes[0]
