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
    assert r.stderr == (f"dse: error: {st}: study.space = 'space.toml': params.core_side.high = 30: must be an "
                        f"integer in [1, 20]\n")


def test_run_without_a_terminal_prints_one_line_per_batch(tmp_path, capsys):
    from dse.cli import main
    study = str(Path(__file__).resolve().parents[2] / "studies" / "quickstart.toml")
    url = f"sqlite:///{tmp_path / 'q.db'}"
    assert main(["run", study, "--storage", url, "--trials", "4"]) == 0      # batch 2: two batches
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.startswith("quickstart: ")]
    assert [ln.split(",")[0] for ln in lines] == ["quickstart: 2/4 trials", "quickstart: 4/4 trials"]
    assert all("trials/s" in ln and "ETA" in ln and "feasible" in ln and "front" in ln for ln in lines)
    nxt = cap.out.split("next steps (one command per line):\n", 1)[1].splitlines()
    assert [ln.split()[:2] for ln in nxt] == [["dse", "front"], ["dse", "report"], ["dse", "export"]]
    assert all("|" not in ln and f"quickstart.toml --storage {url}" in ln for ln in nxt)   # no pipeline
