"""Fixtures of the workload tests (registered here so test modules need not import them)."""
from tests.workload.dumps import dumps4  # noqa: F401 (four single-request router dumps)
