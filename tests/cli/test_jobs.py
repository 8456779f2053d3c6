"""--jobs of `dse run` / `dse worker`: clamped to the usable cores with one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from dse.cli import main
from dse.cli.jobs import bounded_jobs, usable_cores
from dse.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_jobs_above_the_cores_is_clamped_with_one_line(capsys):
    assert bounded_jobs(100000, cores=2) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dse: --jobs 100000: clamped to 2 (the usable cores of this machine)"]
    assert bounded_jobs(2, cores=2) == 2 and bounded_jobs(1, cores=8) == 1
    assert bounded_jobs(-1, cores=3) == 3
    assert capsys.readouterr().err == ""
    for bad in (0, -2):
        with pytest.raises(ConfigError, match="must be a positive number"):
            bounded_jobs(bad, cores=2)


def test_dse_run_with_a_huge_jobs_count_runs_on_the_usable_cores(tmp_path, capsys):
    rc = main(["run", str(ROOT / "studies/quickstart.toml"), "--jobs", "100000", "--trials", "2", "--no-progress",
               "--json", "--storage", f"sqlite:///{tmp_path}/q.db"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert f"--jobs 100000: clamped to {usable_cores()}" in err
    assert err.count("\n") == 1
