"""Knob values: a typo gets a suggestion."""
from __future__ import annotations

from dse.cli import main


def test_value_typo_gets_a_suggestion(capsys):
    assert main(["evaluate", "--set", "pooling=broadcst"]) == 2
    assert "did you mean 'broadcast'?" in capsys.readouterr().err
