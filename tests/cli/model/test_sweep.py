"""`dse sweep`: generic sweeps to CSV and plots, and their one-line errors."""
from __future__ import annotations

import csv

import pytest

from dse.cli import main


def test_generic_sweep_csv_and_plot(tmp_path, capsys):
    f_csv, f_png = tmp_path / "s.csv", tmp_path / "s.png"
    assert main(["sweep", "core_mesh_link_bits", "256", "512", "--csv", str(f_csv), "--plot", str(f_png),
                 "--metrics", "round_stretch,core_mesh_load,die_area_mm2"]) == 0
    text = capsys.readouterr().out
    assert "round_stretch" in text and "core_mesh_load" in text
    with open(f_csv) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["core_mesh_link_bits"] for r in rows] == ["256", "512"]
    assert float(rows[0]["round_stretch"]) > float(rows[1]["round_stretch"])
    assert f_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv,msg", [
    (["sweep", "nosuch", "1"], "must be a preset"),
    (["sweep", "tile_width"], "give at least one value"),
    (["sweep", "core_side", "3x"], "core_side"),
    (["sweep", "depth", "--metrics", "nosuch"], "--metrics 'nosuch'"),
    (["sweep", "depth", "32K", "--plot", "f.gif"], "unsupported figure format"),
    (["sweep", "core_sid", "2", "4"], "did you mean 'core_side'?"),
    (["sweep", "core_side", "2", "--set", "trace=catalog", "--metrics", "pool_power"], "did you mean 'pool_power_w'?"),
])
def test_sweep_errors_are_one_line(capsys, argv, msg):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err and "Traceback" not in err
