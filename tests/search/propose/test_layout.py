"""The propose package's layout (issue 48 item 5): three sub-packages, what samples (``sample``),
what bounds (``bound``) and what refines the knee (``knee``), each with one way in. Code outside a
sub-package imports the sub-package (its ``__init__``), never one of its modules; the
sub-packages import each other bottom up only (bound <- sample <- knee)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PROPOSE = ROOT / "dse" / "search" / "propose"
SUBS = ("bound", "sample", "knee")            # bottom up
PREFIX = "dse.search.propose."


def imports(path: Path) -> list[str]:
    """Every module ``path`` imports (``from X import y`` gives X and X.y), function bodies included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            out += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def sub_of(module_file: Path) -> str | None:
    rel = module_file.relative_to(PROPOSE).parts
    return rel[0] if len(rel) > 1 and rel[0] in SUBS else None


@pytest.mark.parametrize("sub", SUBS)
def test_each_sub_package_has_one_way_in(sub):
    """No module outside ``sub`` imports one of ``sub``'s modules (only names from ``sub`` itself)."""
    bad = []
    for f in sorted((ROOT / "dse").rglob("*.py")):
        if f.is_relative_to(PROPOSE / sub):
            continue
        for m in imports(f):
            if m.startswith(f"{PREFIX}{sub}.") and (PROPOSE / sub / (m.split(".")[4] + ".py")).exists():
                bad.append(f"{f.relative_to(ROOT)} imports {m}")
    assert bad == []


def test_sub_packages_import_bottom_up():
    bad = []
    for f in sorted(PROPOSE.rglob("*.py")):
        own = sub_of(f)
        if own is None:
            continue
        for m in imports(f):
            for other in SUBS:
                if m.startswith(f"{PREFIX}{other}") and SUBS.index(other) > SUBS.index(own):
                    bad.append(f"{f.relative_to(ROOT)} ({own}) imports {m} ({other})")
    assert bad == []


def test_the_layout_is_what_the_package_docstring_says():
    import dse.search.propose as p
    for sub in SUBS:
        assert f"``{sub}``" in p.__doc__
        init = PROPOSE / sub / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text()))
    assert sorted(f.stem for f in PROPOSE.glob("*.py")) == ["__init__", "samplers"]
