"""Shared fixtures. Keep this small; add fixtures below with a one-line docstring each.

PostgreSQL: `.ci/run` starts a throw-away server and exports ``DSE_TEST_POSTGRES_URL`` (an admin
URL). Tests marked ``postgres`` use the ``postgres_url`` fixture: a fresh database per test,
dropped afterwards. Without the URL they skip locally and FAIL under CI (``DSE_CI=1``).
"""
from __future__ import annotations

import os
import uuid

import pytest


def _admin_url() -> str | None:
    url = os.environ.get("DSE_TEST_POSTGRES_URL", "").strip()
    if not url:
        if os.environ.get("DSE_CI"):
            pytest.fail("DSE_CI is set but DSE_TEST_POSTGRES_URL is missing: .ci/run must start PostgreSQL")
        pytest.skip("no PostgreSQL: set DSE_TEST_POSTGRES_URL (see .ci/run)")
    return url


@pytest.fixture
def postgres_url() -> str:
    """URL of a fresh, empty PostgreSQL database for this test (dropped at teardown)."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    admin = make_url(_admin_url())
    name = f"dse_test_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield admin.set(database=name).render_as_string(hide_password=False)
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        engine.dispose()


@pytest.fixture(scope="session", autouse=True)
def _no_storage_from_the_environment():
    """``DSE_STORAGE`` unset for the session (subprocesses too): a developer's own storage never
    receives the tests' studies; a test that needs it sets it."""
    old = os.environ.pop("DSE_STORAGE", None)
    yield
    if old is not None:
        os.environ["DSE_STORAGE"] = old


@pytest.fixture(scope="session", autouse=True)
def _hermetic_trace_cache(tmp_path_factory):
    """Synthetic-trace disk cache in a per-session temp dir (never the user's ~/.cache);
    subprocesses inherit it through the environment."""
    old = os.environ.get("DSE_CACHE_DIR")
    os.environ["DSE_CACHE_DIR"] = str(tmp_path_factory.mktemp("dse-cache"))
    yield
    if old is None:
        os.environ.pop("DSE_CACHE_DIR", None)
    else:
        os.environ["DSE_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def quickstart_study(tmp_path_factory) -> list[str]:
    """CLI arguments addressing a finished run of studies/quickstart.toml in a temp storage."""
    from pathlib import Path

    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    study = str(Path(__file__).resolve().parent.parent / "studies" / "quickstart.toml")
    url = f"sqlite:///{tmp_path_factory.mktemp('quickstart') / 'qs.db'}"
    run_study(load_study(study, storage=url))
    return [study, "--storage", url]
