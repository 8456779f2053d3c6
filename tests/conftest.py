"""Shared fixtures. Keep this small; add fixtures below with a one-line docstring each.

PostgreSQL: `.ci/run` starts a throw-away server and exports ``DSE_TEST_POSTGRES_URL`` (an admin
URL). Tests marked ``postgres`` use the ``postgres_url`` fixture: a fresh database per test,
dropped afterwards. Without the URL they skip locally and FAIL under CI (``DSE_CI=1``).
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

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
def _hermetic_trace_cache(tmp_path_factory, worker_id):
    """Synthetic-trace disk cache in a per-run temp dir (never the user's ~/.cache), shared by the
    run's xdist workers (the cache is written whole or not at all, for concurrent processes: a
    trace one worker generated is read by the other, not generated again); subprocesses inherit
    it through the environment."""
    old = os.environ.get("DSE_CACHE_DIR")
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if worker_id != "master" else base) / "dse-cache"   # xdist: gw0, gw1 share it
    shared.mkdir(exist_ok=True)
    os.environ["DSE_CACHE_DIR"] = str(shared)
    yield
    if old is None:
        os.environ.pop("DSE_CACHE_DIR", None)
    else:
        os.environ["DSE_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def worker_id(request) -> str:
    """The xdist worker running this session ("gw0", "gw1", ...), or "master" without xdist (the
    value of pytest-xdist's fixture of that name; here so that the suite runs without the plugin,
    as .ci/floors runs it)."""
    return getattr(request.config, "workerinput", {}).get("workerid", "master")


@pytest.fixture(scope="session")
def catalog_study(tmp_path_factory) -> Path:
    """The three-model catalog study (tests.fixtures.write_catalog_study), run once per session by
    `dse run` and shared by the review tests (`dse front --reference`, `dse explain` in-process)
    and the CLI's (front, explain, plot, report of a reference design). Under xdist each worker
    that runs one of its users runs it once, its traces shared through the trace cache."""
    from dse.cli import main
    from tests.fixtures import write_catalog_study
    p = write_catalog_study(tmp_path_factory.mktemp("catalog"))
    assert main(["run", str(p)]) == 0
    return p


@pytest.fixture(scope="session")
def quickstart_study(tmp_path_factory) -> list[str]:
    """CLI arguments addressing a finished run of studies/quickstart.toml in a temp storage."""
    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    study = str(Path(__file__).resolve().parent.parent / "studies" / "quickstart.toml")
    url = f"sqlite:///{tmp_path_factory.mktemp('quickstart') / 'qs.db'}"
    run_study(load_study(study, storage=url))
    return [study, "--storage", url]
