"""Fixtures of the CLI tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures import LATENCY_POWER_OBJECTIVES, SILICON36_SPACE, run_dse, write_study
from tests.workload.dumps import dumps4  # noqa: F401 (a fixture: four single-request router dumps, for test_trace)


@pytest.fixture(scope="package")
def study(tmp_path_factory) -> Path:
    """A finished 24-trial NSGA-II study of the real model (run once by `dse run --jobs 2`), shared
    by the export / front / plot tests."""
    d = tmp_path_factory.mktemp("exp")
    p = write_study(d, space=SILICON36_SPACE, objectives=LATENCY_POWER_OBJECTIVES, file="st.toml", trials=24,
                    batch=8, seed=1, sampler="nsga2", sampler_settings="population_size = 8")
    r = run_dse("run", str(p), "--jobs", "2", cwd=d.parent)
    assert r.returncode == 0, r.stderr
    assert "study st: 24/24 trials finished" in r.stdout
    assert (d / "results" / "st.db").exists()                 # beside the study file, not in the cwd
    return p
