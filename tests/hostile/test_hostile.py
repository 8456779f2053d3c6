"""Hostile input through the real CLI: every corpus case gives ONE `dse: error:` line, exit 2.

The corpus lives in tests/hostile/ (see hostile_corpus.py); `python tests/hostile/make_table.py`
prints the table of every case and its exact error line.
"""
from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from tests.hostile.hostile_corpus import FOLDERS, HERE, all_cases, problems, run_case

CASES = all_cases()


# Every case in this process (dse.cli.main, fast); one case per input kind through the real
# `python -m dse` entry point too (make_table.py runs them all that way).
REAL = {kind: c.id for c in reversed(CASES) for kind in [c.kind]}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_one_line_user_error(case, tmp_path):
    out = run_case(case, tmp_path, subprocess_cli=False)
    assert problems(case, out) == [], f"{case.id}: rc={out.rc} stderr={out.stderr!r}"
    assert out.stdout == ""


@pytest.mark.parametrize("case", [c for c in CASES if c.id in REAL.values()], ids=lambda c: c.id)
def test_hostile_input_through_python_m_dse(case, tmp_path):
    out = run_case(case, tmp_path, subprocess_cli=True)
    assert problems(case, out) == [], f"{case.id}: rc={out.rc} stderr={out.stderr!r}"
    assert out.stdout == ""


def test_expectations_cover_exactly_the_corpus():
    expect = tomllib.loads((HERE / "expect.toml").read_text())
    for folder in FOLDERS:
        files = {f.name for f in (HERE / folder).iterdir() if f.is_file()}
        assert set(expect.get(folder, {})) == files, folder
    assert set(expect) <= set(FOLDERS)


def test_problems_detects_a_bad_outcome():
    """The checker itself can fail: a traceback, a wrong status or a second line are all caught."""
    from tests.hostile.hostile_corpus import Case, Outcome
    case = Case("x", ("evaluate",), "design TOML", "x.toml", ("core_side",))
    assert problems(case, Outcome(2, "", "dse: error: x.toml: core_side = 0: bad\n")) == []
    assert problems(case, Outcome(1, "", "Traceback (most recent call last):\n  boom\n"))
    assert problems(case, Outcome(2, "", "dse: error: x.toml: core_side\nmore\n"))
    assert problems(case, Outcome(2, "", "dse: error: y.toml: tile_width\n"))


def test_utf8_byte_order_mark_is_tolerated(tmp_path):
    f = tmp_path / "bom.toml"
    f.write_bytes(b"\xef\xbb\xbf[hardware]\ncore_side = 4\n")
    proc = subprocess.run([sys.executable, "-m", "dse", "evaluate", "--json", str(f)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"core_side": 4' in proc.stdout
