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
