"""`dse explain` and `dse front --reference` on the command line: JSON keys, the table, one-line
errors."""
from __future__ import annotations

import json

from dse.cli import main


def test_front_reference_json_and_text(catalog_study, capsys):
    assert main(["front", str(catalog_study), "--reference", "published", "--json"]) == 0
    ref = json.loads(capsys.readouterr().out)["reference"]
    assert set(ref) >= {"objectives", "feasible", "dominated_by", "epsilon", "nearest"}
    assert ref["feasible"] is False and "glm-5.2" in ref["reason"]
    assert main(["front", str(catalog_study), "--reference", "published"]) == 0
    out = capsys.readouterr().out
    assert "reference: published design" in out and "dominated by" in out and "nearest front design" in out


def test_front_reference_bad_file_is_one_line(catalog_study, tmp_path, capsys):
    bad = tmp_path / "d.toml"
    bad.write_text("[hardware]\narray_depth = -3\n")
    assert main(["front", str(catalog_study), "--reference", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "d.toml" in err and "array_depth" in err


def test_explain_json_and_table(catalog_study, capsys):
    assert main(["explain", str(catalog_study), "--from", "published", "--to", "knee", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"scale", "from", "to", "total", "contributions", "feasibility", "rules"}
    assert set(out["from"]) >= {"params", "objectives"} and out["scale"] == "log"
    for n, t in out["total"].items():
        assert abs(sum(c[n] for c in out["contributions"].values()) - t) < 1e-6
    assert main(["explain", str(catalog_study), "--from", "published", "--to", "knee"]) == 0
    text = capsys.readouterr().out
    assert "total (B vs A)" in text and "rule:" in text
    assert main(["explain", str(catalog_study), "--from", "published", "--to", "999"]) == 2
    assert "no such trial" in capsys.readouterr().err


def test_plot_and_report_mark_the_reference(catalog_study, tmp_path, capsys):
    assert main(["plot", str(catalog_study), "--reference", "published", "-o", str(tmp_path / "p")]) == 0
    capsys.readouterr()
    from dse.search import load_results, load_study
    from dse.search.review import reference as rf
    from dse.viz.study_plots import front_figure
    res = load_results(load_study(catalog_study))
    ep = rf.reference_endpoint(res.cfg, "published")
    ref = rf.reference_json(res, ep, rf.evaluate_as_study(res.cfg, ep.design))
    fig = front_figure(res, ref)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(s.startswith("reference: published design") for s in labels)
    out = tmp_path / "r.md"
    assert main(["report", str(catalog_study), "-o", str(out), "--no-reproduce"]) == 0
    text = out.read_text()
    assert "## Reference design" in text and "## The knee against the reference design" in text
    assert "total (B vs A)" in text and "| reference |" in text
    assert main(["report", str(catalog_study), "-o", str(tmp_path / "r2.md"), "--no-reproduce",
                 "--no-reference"]) == 0
    assert "Reference design" not in (tmp_path / "r2.md").read_text()
