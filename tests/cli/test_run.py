"""`dse run` on a bad space: one error line."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _write(tmp_path: Path, text: str, name: str = "space.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_cli_reports_bad_space_in_one_line(tmp_path):
    sp = _write(tmp_path, '[params]\ncore_side = { type = "int", low = 1, high = 30 }\n')
    st = _write(tmp_path, f"""
        [study]
        space = "{sp.name}"
        objectives = {{ objectives = [{{ metric = "t_layer_us" }}] }}
    """, "study.toml")
    r = subprocess.run([sys.executable, "-m", "dse", "run", str(st)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == f"dse: error: {sp}: params.core_side.high = 30: must be an integer in [1, 20]\n"
