"""Warm state built once per study and shared by every worker (issue 34): with 1, 2 and 4 loky
worker processes, each scheduling domain's unit layout is built exactly once (the build log that
``dse.mapping.warm_cache`` appends to counts builds in every process), their number is the number
of distinct domains the study's designs meet, and the trials are those of ``--jobs 1``."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dse.search.execute.warm import layout_domain
from dse.search.study.results import load_results
from dse.search.study.study import load_study

ROOT = Path(__file__).resolve().parents[3]
STUDY = """
[study]
space = "space.toml"
objectives = "{root}/objectives/latency-silicon.toml"
trials = 36
seed = 3
batch = 12
[sampler]
name = "random"
[workload]
models = ["qwen3.5-35b-a3b"]
batch = 32
trace = "synthetic"
trace_steps = 16
profile_steps = 4
"""
SPACE = """
[params]
core_side = { type = "int", low = 2, high = 3 }
placement = { type = "categorical", choices = ["contiguous", "lpt", "coactivation"] }
pe_groups_per_core = { type = "int", low = 1, high = 2, when = { placement = "lpt" } }
tile_width = { type = "categorical", choices = [2, 4] }
pooling = { type = "categorical", choices = ["direct", "broadcast"] }
"""


def _run(d: Path, jobs: int, **extra: str) -> tuple[list[str], list]:
    d.mkdir(parents=True)
    (d / "space.toml").write_text(SPACE)
    (d / "s.toml").write_text(STUDY.format(root=ROOT))
    log = d / "builds.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSE_")}
    env.update(DSE_CACHE_DIR=str(d / "cache"), DSE_WARM_BUILD_LOG=str(log), **extra)
    p = subprocess.run([sys.executable, "-m", "dse", "run", str(d / "s.toml"), "--jobs", str(jobs)],
                       capture_output=True, text=True, env=env, cwd=d, timeout=300)
    assert p.returncode == 0, p.stderr
    records = load_results(load_study(d / "s.toml")).records
    return (log.read_text().split("\n")[:-1] if log.exists() else []), records


def _keys(lines: list[str], kind: str) -> list[str]:
    return [x.split()[0] for x in lines if x.split()[2] == kind]


@pytest.mark.parametrize("jobs", [1, 2, 4])
def test_warm_builds_equal_distinct_domains_at_any_worker_count(tmp_path, jobs):
    """Layouts: one build per distinct (model, domain, placement); the rounds' lead-job tables
    (per layout, tile width, pooling and groups): each built once, the same set at every --jobs."""
    builds, records = _run(tmp_path / f"j{jobs}", jobs)
    keys, tables = _keys(builds, "layout"), _keys(builds, "table")
    domains = {layout_domain(r.design, "qwen3.5-35b-a3b") for r in records if r.duplicate_of is None} - {None}
    assert len(keys) == len(set(keys)) == len(domains) > 4
    assert len(tables) == len(set(tables)) > len(keys)
    if jobs > 1:
        sbuilds, serial = _run(tmp_path / "serial", 1)
        rows = lambda rs: [(r.number, r.params, r.values) for r in rs]  # noqa: E731
        assert rows(records) == rows(serial)
        assert set(tables) == set(_keys(sbuilds, "table"))


def test_shared_warm_state_gives_the_metrics_of_none(tmp_path):
    """The same study with every process building its own warm state (DSE_WARM_CACHE_DIR=off):
    the same trials and values, bit for bit, and nothing written to a shared folder."""
    _, shared = _run(tmp_path / "shared", 2)
    builds, alone = _run(tmp_path / "alone", 2, DSE_WARM_CACHE_DIR="off")
    rows = lambda rs: [(r.number, r.params, r.values, r.feasible, r.metrics) for r in rs]  # noqa: E731
    assert rows(shared) == rows(alone)
    assert any(((r.metrics or {}).get("qwen3.5-35b-a3b") or {}).get("ffn_us_per_token_scheduled")
               for r in shared)                                    # the rounds' tables were used
    assert not (tmp_path / "alone" / "cache" / "layouts").exists()
