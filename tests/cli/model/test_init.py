"""`dse init DIR`: the examples copied and runnable from there; never overwriting; and the wheel
carries the same files (one copy: setup.py puts the repository's files in the wheel)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dse.cli import main
from dse.cli.model.init import EXAMPLES, example_files

ROOT = Path(__file__).resolve().parents[3]


def test_init_copies_every_example_and_each_study_loads_from_there(tmp_path, capsys):
    from dse.search.study.study import load_study
    assert main(["init", str(tmp_path / "demo")]) == 0
    files = example_files(ROOT)
    assert {f.as_posix() for f in files} >= {"studies/quickstart.toml", "studies/full.toml",
                                             "spaces/quickstart.toml", "notebooks/quickstart.ipynb"}
    assert set(files) == {p.relative_to(tmp_path / "demo") for p in (tmp_path / "demo").rglob("*") if p.is_file()}
    for f in files:
        assert (tmp_path / "demo" / f).read_bytes() == (ROOT / f).read_bytes(), f
    studies = sorted((tmp_path / "demo" / "studies").glob("*.toml"))
    assert len(studies) == len(list((ROOT / "studies").glob("*.toml")))
    for st in studies:                                      # relative space / objectives paths resolve
        cfg = load_study(st)
        assert cfg.source.parent == st.parent.resolve()
    assert f"dse run {tmp_path / 'demo' / 'studies' / 'quickstart.toml'}" in capsys.readouterr().out


def test_init_refuses_to_overwrite_in_one_line(tmp_path, capsys):
    (tmp_path / "demo" / "studies").mkdir(parents=True)
    mine = tmp_path / "demo" / "studies" / "quickstart.toml"
    mine.write_text("# mine\n")
    assert main(["init", str(tmp_path / "demo")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"dse: error: {mine}: exists; dse init never overwrites")
    assert mine.read_text() == "# mine\n" and not (tmp_path / "demo" / "spaces").exists()   # nothing written
    (tmp_path / "file").write_text("")
    assert main(["init", str(tmp_path / "file")]) == 2


def test_setup_py_copies_what_dse_init_copies():
    """setup.py cannot import dse (its dependencies are not there at build time): same table."""
    import ast
    tree = ast.parse((ROOT / "setup.py").read_text())
    table = [ast.literal_eval(n.value) for n in tree.body
             if isinstance(n, ast.Assign) and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["EXAMPLES"]]
    assert table == [EXAMPLES]


@pytest.mark.slow
@pytest.mark.long                # builds a wheel and installs it in a new venv
def test_a_wheel_carries_the_examples_and_init_then_run_work_from_it(tmp_path):
    """`pip wheel --no-deps .` (from a copy of the sources), the wheel's files, then `dse init demo`
    and `dse run demo/studies/quickstart.toml` in an empty folder with the wheel's package."""
    src = tmp_path / "src"
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, src / name)
    for name in ("dse", *EXAMPLES):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "results"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(tmp_path / "w")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    wheel = next((tmp_path / "w").glob("rexpert_dse-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    packaged = sorted(n.removeprefix("dse/data/examples/") for n in names if n.startswith("dse/data/examples/"))
    assert packaged == sorted(f.as_posix() for f in example_files(ROOT))
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    for f in example_files(ROOT):                          # the packaged copy is the repository's
        assert (site / "dse" / "data" / "examples" / f).read_bytes() == (ROOT / f).read_bytes(), f
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}

    def dse(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dse", *args], cwd=empty, env=env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)

    where = subprocess.run([sys.executable, "-c", "import dse; print(dse.__file__)"], cwd=empty, env=env,
                           capture_output=True, text=True).stdout
    assert where.startswith(str(site)), where                # the wheel's package, not the checkout
    assert dse("init", "demo").returncode == 0
    r = dse("run", "demo/studies/quickstart.toml")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "/160 trials finished" in r.stdout and "knee clear:" in r.stdout     # the knee phase settles
    assert (empty / "demo" / "studies" / "results" / "quickstart.db").is_file()
    again = dse("init", "demo")
    assert again.returncode == 2 and again.stderr.count("\n") == 1
