"""The smoke set run on the lowest dependency versions that pyproject.toml admits (`.ci/floors`
installs ``.ci/floors.txt`` into a second venv and runs ``pytest -m floors`` there; the main
suite runs it too, on whatever is installed).

Each step is the `dse` command a user types, in a subprocess: run, resume (more trials), front,
export the knee, evaluate the export, report, and a worker adding trials, on SQLite and on a
journal file. Issue 45: with optuna 4.x (admitted by ``optuna>=4.0`` then) the first command
stopped on ``Trial.set_constraint``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "quickstart.toml"

pytestmark = pytest.mark.floors


def dse(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, f"dse {' '.join(args)}: exit {r.returncode}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.mark.long                # seven commands in fresh processes (.ci/floors runs them too)
@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_the_user_commands_run(tmp_path, kind):
    storage = f"sqlite:///{tmp_path / 'q.db'}" if kind == "sqlite" else f"journal:{tmp_path / 'q.log'}"
    at = [str(STUDY), "--storage", storage]
    first = json.loads(dse("run", *at, "--trials", "8", "--json"))
    assert first["complete"] == 8 and first["new_trials"] == 8
    resumed = json.loads(dse("run", *at, "--trials", "12", "--json"))
    assert resumed["complete"] == 12 and resumed["new_trials"] == 4           # resumed, not started anew
    front = json.loads(dse("front", *at, "--json"))
    assert front["front"] and front["knee"] is not None
    design = tmp_path / "design.toml"
    dse("export", *at, "--knee", "-o", str(design))
    ev = json.loads(dse("evaluate", str(design), "--json"))
    assert ev, "dse evaluate printed nothing"
    knee_latency = front["knee"]["objectives"]["ffn_us_per_token_scheduled"]
    assert ev["ffn_us_per_token_scheduled"] == pytest.approx(knee_latency, rel=1e-9)  # the export evaluates as stored
    report = tmp_path / "report.html"
    dse("report", *at, "-o", str(report), "--no-reproduce")
    assert report.stat().st_size > 10_000
    done = json.loads(dse("worker", *at, "--trials", "16", "--json"))
    assert json.loads(dse("run", *at, "--json"))["complete"] >= 16, done


def test_the_floors_file_holds_the_floors_of_pyproject():
    """``.ci/floors.txt`` pins each runtime dependency at its pyproject.toml floor (``>=X``)."""
    from packaging.requirements import Requirement
    from packaging.version import Version
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {}
    for r in map(Requirement, deps):
        low = [s.version for s in r.specifier if s.operator == ">="]
        assert len(low) == 1, f"pyproject.toml: {r}: one floor (>=) per runtime dependency"
        floors[r.name.lower()] = low[0]
    pins = dict(ln.split("==") for ln in (ROOT / ".ci" / "floors.txt").read_text().split("\n")
                if ln.strip() and not ln.startswith("#"))
    for name, low in floors.items():
        assert name in pins and Version(pins[name]) == Version(low), \
            f".ci/floors.txt: {name}=={pins.get(name)}; pyproject.toml says >={low}"
