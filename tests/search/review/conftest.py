"""Fixtures of the review tests."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="package")
def res(catalog_study):
    """The three-model catalog study (worst of three, objectives/full.toml's objectives; run once
    per session, tests/conftest.py) read back: `dse front --reference` and `dse explain`."""
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    return load_results(load_study(catalog_study))
