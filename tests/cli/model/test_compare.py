"""`dse compare`: one figure, one reference point, coverage and knees knob by knob."""
from __future__ import annotations

import json

from dse.cli import main


def test_compare_cli_writes_the_figure_and_the_table(quickstart_study, tmp_path, capsys):
    study, _, url = quickstart_study
    out = tmp_path / "cmp.png"
    assert main(["compare", study, f"{study}@storage={url}", "--storage", url, "-o", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert out.read_bytes()[:4] == b"\x89PNG"
    a, b = d["runs"]
    assert d["coverage"][a][b] == 1.0 and d["dominant"] == a          # a study covers its own copy
    assert all(d["knees_agree"].values()) and d["hypervolume"][a] == d["hypervolume"][b]
    assert main(["compare", study]) == 2


def test_study_references_keep_an_at_sign_of_a_storage_url():
    import pytest

    from dse.cli.model.compare import parse_ref
    from dse.errors import ConfigError
    url = "postgresql://u:p@ss@db-host/dse?sslmode=require"
    assert parse_ref(f"s.toml@seed=3@storage={url}@model=m", None) == ("s.toml", {"storage": url, "seed": 3,
                                                                                 "model": "m"})
    assert parse_ref("s.toml", "x.db") == ("s.toml", {"storage": "x.db"})
    with pytest.raises(ConfigError, match="seed must be an integer"):
        parse_ref("s.toml@seed=x", None)
