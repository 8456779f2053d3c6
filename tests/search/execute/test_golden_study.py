"""A seeded ``studies/full.toml`` study (96 trials, ``--jobs 2``) against its golden record: every
trial's parameters and values, the front and the knee. The record was written by the code before
the study engine was split into modules (main at 9e5844e; ``tests/golden/full-96-seed0.json``); a change that
alters what a seeded study proposes or records fails here. Regenerate only for an intended change
of the sampling, and say why in the commit: ``python tests/search/execute/test_golden_study.py``.

The study is pinned here as it was when the record was written (NSGA-II, population and batch
24, seed 0, synthetic trace) over the shipped ``spaces/full.toml`` and ``objectives/full.toml``,
so that a later choice of sampler for the shipped study does not change the record."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dse.search import load_results, load_study, run_study

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "full-96-seed0.json"
TRIALS, JOBS = 96, 2


def snapshot(cfg) -> dict:
    """What the golden record holds: trials (params, values, state, feasibility, design key,
    duplicate_of), the front's trial numbers and the knee's."""
    res = load_results(cfg)
    trials = [{"number": r.number, "state": r.state, "params": r.params, "values": r.values,
               "feasible": r.feasible, "design_key": r.design_key, "duplicate_of": r.duplicate_of}
              for r in res.records]
    k = res.knee()
    return {"trials": trials, "front": [r.number for r in res.front()], "knee": None if k is None else k.number}


STUDY = f"""
[study]
name = "full"
space = "{ROOT / 'spaces' / 'full.toml'}"
objectives = "{ROOT / 'objectives' / 'full.toml'}"
trials = {TRIALS}
seed = 0
batch = 24
[sampler]
name = "nsga2"
population_size = 24
[workload]
models = ["qwen3.5-35b-a3b"]
trace = "synthetic"
"""


def run_full(storage: str) -> dict:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        study = Path(d) / "full.toml"
        study.write_text(STUDY)
        cfg = load_study(study, trials=TRIALS, storage=storage)
        run_study(cfg, jobs=JOBS)
        return json.loads(json.dumps(snapshot(cfg)))     # JSON round trip: tuples -> lists, as stored


@pytest.mark.slow
def test_seeded_full_study_matches_its_golden_record(tmp_path):
    want = json.loads(GOLDEN.read_text())
    got = run_full(f"sqlite:///{tmp_path / 'full.db'}")
    assert len(got["trials"]) == TRIALS
    for g, w in zip(got["trials"], want["trials"]):
        assert g == w, f"trial {w['number']} differs"
    assert got["front"] == want["front"] and got["knee"] == want["knee"]


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        GOLDEN.write_text(json.dumps(run_full(f"sqlite:///{d}/full.db"), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}", file=sys.stderr)
