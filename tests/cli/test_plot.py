"""`dse plot`: the front and parallel-coordinates images of a finished study."""
from __future__ import annotations

from tests.fixtures import run_dse as dse


def test_plot_writes_images(study, tmp_path):
    r = dse("plot", str(study), "-o", str(tmp_path), "--format", "png", "--format", "svg")
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["st-front.png", "st-front.svg", "st-parallel.png", "st-parallel.svg"]
    assert (tmp_path / "st-front.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
