"""`dse params / models / constants`, and a user catalog adding a model."""
from __future__ import annotations

import json
import os

import pytest

from dse.cli import main


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("cmd", ["params", "models", "constants"])
def test_info_commands(capsys, cmd):
    rc, out, _ = run_cli(capsys, cmd)
    assert rc == 0 and len(out.splitlines()) > 5
    rc, out, _ = run_cli(capsys, cmd, "--json")
    assert rc == 0 and isinstance(json.loads(out), list)


def test_user_catalog_adds_a_model(capsys, tmp_path, monkeypatch):
    f = tmp_path / "extra.toml"
    f.write_text('[tiny]\nname = "tiny-moe"\nexperts = 16\ntop_k = 2\nmoe_layers = 4\nhidden = 1024\n'
                 'expert_intermediate = 256\n')
    monkeypatch.delenv("DSE_CATALOG", raising=False)
    rc, out, _ = run_cli(capsys, "--catalog", str(f), "evaluate", "--json", "--model", "tiny-moe",
                         "--set", "trace=catalog")
    assert rc == 0 and json.loads(out)["model"] == "tiny-moe"
    assert "DSE_CATALOG" not in os.environ          # the call left the environment as it found it
    monkeypatch.setenv("DSE_CATALOG", "/elsewhere/a.toml")
    run_cli(capsys, "--catalog", str(f), "models")
    assert os.environ["DSE_CATALOG"] == "/elsewhere/a.toml"
