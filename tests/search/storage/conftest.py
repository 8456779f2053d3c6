"""Fixtures of the storage tests (registered here so test modules need not import them)."""
from tests.search.sqlite_study import finished_db  # noqa: F401 (a finished SQLite study; module scope)
