"""Knob values: a typo gets a suggestion."""
from __future__ import annotations

from dse.cli import main


def test_value_typo_gets_a_suggestion(capsys):
    assert main(["evaluate", "--set", "pooling=broadcst"]) == 2
    assert "did you mean 'broadcast'?" in capsys.readouterr().err


def test_a_value_accepted_once_is_still_checked_against_each_knob_and_errors_name_their_source():
    import pytest

    from dse.errors import ConfigError
    from dse.spec.params import BY_NAME, coerce
    depth, side = BY_NAME["array_depth"], BY_NAME["core_side"]
    assert coerce(depth, "32K") == 32768 and coerce(depth, "32K") == 32768      # the second from memory
    assert coerce(side, 4) == 4 and type(coerce(side, 4.0)) is int
    with pytest.raises(ConfigError, match="a.toml"):
        coerce(side, 32768, "a.toml")                          # legal depth, illegal core side
    with pytest.raises(ConfigError, match="b.toml"):
        coerce(side, 32768, "b.toml")                          # a refusal is never remembered
    pooling = BY_NAME["pooling"]
    good = pooling.choice_values()[0]
    assert coerce(pooling, good) == good
    with pytest.raises(ConfigError, match="c.toml"):
        coerce(BY_NAME["fetch"], good, "c.toml")
