"""Fixtures of the review tests."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="package")
def res(tmp_path_factory):
    """The three-model catalog study (worst of three, objectives/full.toml's objectives), run once
    and read back: `dse front --reference` and `dse explain`."""
    from dse.search.execute.runner import run_study
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    from tests.fixtures import write_catalog_study
    cfg = load_study(write_catalog_study(tmp_path_factory.mktemp("catalog")))
    run_study(cfg)
    return load_results(cfg)
