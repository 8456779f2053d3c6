"""The `dse` entry point: `python -m dse`, and user errors as one line with exit status 2."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dse.cli import main


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("argv,needle", [
    (["evaluate", "--set", "core_side=0"], "--set: core_side = '0': must be an integer in [1, 20]"),
    (["evaluate", "--model", "nope"], "must be one of"),
    (["evaluate", "/nonexistent/x.toml"], "/nonexistent/x.toml: no such file"),
])
def test_user_errors_are_one_line_exit_2(capsys, argv, needle):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("dse: error: ") and needle in err


def test_console_script_entry_point():
    r = subprocess.run([sys.executable, "-m", "dse", "evaluate", "--json", "--set", "trace=catalog"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["dies"] == 25
