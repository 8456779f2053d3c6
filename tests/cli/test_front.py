"""`dse front`: columns, sort, terminal width, --all reasons, the stated hypervolume reference,
hints with the typed path and flags."""
from __future__ import annotations

import json

from dse.cli import main


def test_front_columns_sort_and_width(quickstart_study, capsys):
    assert main(["front", *quickstart_study, "--columns", "array_depth,pool_power_w", "--sort=-pool_power_w"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("trial"))
    assert lines[head].split() == ["trial", "knee", "array_depth", "pool_power_w"]
    powers = [float(ln.split()[-1]) for ln in lines[head + 2:] if ln.strip() and ln.split()[0].isdigit()]
    assert powers == sorted(powers, reverse=True)
    assert "hypervolume reference:" in out
    assert max(len(ln) for ln in lines if not ln.startswith(("*", "hypervolume", "objectives"))) <= 100
    assert main(["front", *quickstart_study, "--all"]) == 0
    out = capsys.readouterr().out
    assert "reason" in out and "die area" in out
    assert main(["front", *quickstart_study, "--columns", "pool_powr"]) == 2
    assert "did you mean 'pool_power_w'" in capsys.readouterr().err


def test_hints_repeat_path_and_flags(tmp_path, capsys):
    from pathlib import Path
    study = tmp_path / "s.toml"
    root = Path(__file__).resolve().parents[2]
    study.write_text((root / "studies" / "quickstart.toml").read_text().replace(
        '"../spaces/', f'"{root}/spaces/').replace('"../objectives/', f'"{root}/objectives/'))
    url = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["front", str(study), "--storage", url, "--seed", "3"]) == 2
    err = capsys.readouterr().err
    assert f"dse run {study} --storage {url} --seed 3" in err


def test_front_json_reports_reference_and_settled(quickstart_study, capsys):
    assert main(["front", *quickstart_study, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["hypervolume_reference"]) == {o["name"] for o in d["objectives"]}
    assert isinstance(d["knee_settled"], bool) and d["hypervolume"] > 0
