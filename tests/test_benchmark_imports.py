"""Every ``from dse... import name`` in the benchmarks (module level or inside a function) names
something the package has: a benchmark is run by hand, so a moved name would go unnoticed."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted([*(Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"),
                     Path(__file__).resolve().parents[1] / "benchmarks" / "smoke.py"])


def _dse_imports(path: Path) -> list[tuple[str, str, int]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dse" and not node.level:
            out += [(node.module, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno) for a in node.names if a.name.split(".")[0] == "dse"]
    return out


def test_the_benchmarks_import_dse():
    assert BENCHMARKS and any(_dse_imports(p) for p in BENCHMARKS)


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_every_dse_name_a_benchmark_imports_exists(path):
    missing = []
    for module, name, line in _dse_imports(path):
        mod = importlib.import_module(module)
        if name and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")      # a submodule
            except ImportError:
                missing.append(f"{path.name}:{line}: from {module} import {name}")
    assert not missing, missing
