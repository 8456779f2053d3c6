"""What a user sees from the shipped studies, held byte for byte against golden files.

For every study in ``studies/`` (as shipped, seed 0, ``--jobs 1``) the test runs ``dse run``, then
``dse front --json`` and ``dse export --knee``, and compares both outputs with
``tests/golden/shipped/<study>.front.json`` and ``<study>.knee.toml``. ``dse reproduce --json``
is held by ``tests/cli/model/test_reproduce.py`` against ``tests/golden/reproduce.json``.

The files were written by the code before ``dse/search`` was split into sub-packages (main at
fb44354), so a re-layout that changes any number a user sees fails here. Regenerate them only for
an intended change of the physics or of the sampling, and say why in the commit::

    python tests/test_shipped_golden.py            # rewrites tests/golden/shipped/
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                      # `python tests/test_shipped_golden.py`
    sys.path.insert(0, str(ROOT))


def run_dse(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m dse ARGS`` in a fresh process whose environment holds no ``DSE_*`` setting (an
    earlier test's ``--catalog`` leaves ``DSE_CATALOG`` in this process's environment)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSE_")}
    return subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True, cwd=cwd, env=env)

GOLDEN = ROOT / "tests" / "golden" / "shipped"
STUDIES = sorted(p.stem for p in (ROOT / "studies").glob("*.toml"))
# minutes each (480 guided trials; 100,800 grid points): CI only (`long`), the others every hour
LONG_STUDIES = {"catalog", "full", "full-multifidelity", "ground-truth"}


def outputs(study: str, work: Path) -> dict[str, str]:
    """The front JSON and the knee's design file of one shipped study run at seed 0."""
    url = f"sqlite:///{work / (study + '.db')}"
    src = ROOT / "studies" / f"{study}.toml"
    r = run_dse("run", str(src), "--storage", url, "--seed", "0", "--no-progress", cwd=work)
    assert r.returncode == 0, r.stderr
    front = run_dse("front", str(src), "--storage", url, "--seed", "0", "--json", cwd=work)
    assert front.returncode == 0, front.stderr
    knee = work / "knee.toml"
    ex = run_dse("export", str(src), "--storage", url, "--seed", "0", "--knee", "-o", str(knee), cwd=work)
    assert ex.returncode == 0, ex.stderr
    return {f"{study}.front.json": front.stdout, f"{study}.knee.toml": knee.read_text()}


@pytest.mark.slow
@pytest.mark.timeout(1800)          # studies/catalog.toml: 480 trials on three models at --jobs 1
@pytest.mark.parametrize("study", [pytest.param(s, marks=pytest.mark.long) if s in LONG_STUDIES else s
                                   for s in STUDIES])
def test_shipped_study_outputs_match_golden(study, tmp_path):
    got = outputs(study, tmp_path)
    for name, text in got.items():
        want = (GOLDEN / name).read_text()
        assert text == want, f"{name} differs from tests/golden/shipped/{name}"


def test_every_shipped_study_has_golden_files():
    assert STUDIES, "no shipped study found"
    for s in STUDIES:
        assert (GOLDEN / f"{s}.front.json").is_file() and (GOLDEN / f"{s}.knee.toml").is_file(), s


if __name__ == "__main__":
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for s in STUDIES:
        with tempfile.TemporaryDirectory() as d:
            for name, text in outputs(s, Path(d)).items():
                (GOLDEN / name).write_text(text)
                print("wrote", GOLDEN / name)
