"""Resource bounds of workloads: catalog sizes that fit the trace id dtype, and a memory estimate
checked before a synthetic trace is allocated."""
from __future__ import annotations

from pathlib import Path

import pytest

from dse.catalog import MAX_EXPERTS
from dse.cli import main
from dse.errors import ConfigError
from dse.workload.limits import check_trace_memory, trace_bytes_estimate

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _own_catalog_env(monkeypatch):
    """`dse --catalog` exports DSE_CATALOG for its workers: undo it after each test."""
    monkeypatch.setenv("DSE_CATALOG", "")


TINY = """[huge]
name = "huge"
experts = {experts}
top_k = {top_k}
moe_layers = {layers}
hidden = 64
expert_intermediate = 32
"""


def test_catalog_experts_must_fit_the_trace_id_dtype(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text(TINY.format(experts=70000, top_k=70000, layers=2))
    assert main(["--catalog", str(f), "evaluate", "--model", "huge"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"huge.experts = 70000: must be <= {MAX_EXPERTS}" in err
    f.write_text(TINY.format(experts=MAX_EXPERTS, top_k=8, layers=2))
    assert main(["--catalog", str(f), "models"]) == 0


def test_trace_memory_is_checked_before_allocation(tmp_path, capsys):
    # 65536 experts, top-65536, 100000 layers: petabytes; refused on any machine, nothing allocated.
    f = tmp_path / "c.toml"
    f.write_text(TINY.format(experts=MAX_EXPERTS, top_k=MAX_EXPERTS, layers=100000))
    assert main(["--catalog", str(f), "evaluate", "--model", "huge"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dse: error: model huge: a routing trace of")
    assert "more than the" in err and "GiB" in err


def test_trace_memory_estimate_against_a_budget():
    class M:
        name, moe_layers, top_k, experts = "m", 40, 8, 256
    need = trace_bytes_estimate(64, 40, 16, 8, 256)
    assert need == 64 * 40 * 16 * 8 * (1 + 16) + 40 * 16 * 256 * 16
    check_trace_memory(M, 16, 64, budget_bytes=need)          # exactly at the budget: allowed
    with pytest.raises(ConfigError, match="trace_steps"):
        check_trace_memory(M, 16, 64, budget_bytes=need - 1)
