"""`dse reproduce`: exit status, the JSON rows, a miss on an exact entry, and the golden JSON."""
from __future__ import annotations

import json
from pathlib import Path

from dse.cli import main


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_reproduce_exits_zero_when_exact_entries_pass(capsys):
    rc, out, _ = run_cli(capsys, "reproduce", "--only", "latency_35b")
    assert rc == 0 and "latency_35b.rexpert_us_b8" in out and "exact misses: 0" in out


def test_reproduce_json_lists_unmodelled_entries(capsys):
    rc, out, _ = run_cli(capsys, "reproduce", "--json")
    rows = json.loads(out)["rows"]
    keys = {r["key"] for r in rows}
    assert "hierarchy.pool_dies_35b" in keys
    # every published number appears exactly once, modelled or not
    assert len(keys) == len(rows)
    assert {r["status"] for r in rows} <= {"pass", "rounding", "miss", "not modelled", "error"}


def test_reproduce_fails_on_an_exact_miss(capsys, monkeypatch):
    from dse.reproduce import registry
    registry._load_modules()
    monkeypatch.setitem(registry._FIGURES, "hierarchy.unit_gflops",
                        registry.Figure(lambda: 409.6, "", "calibrated"))
    rc, out, _ = run_cli(capsys, "reproduce", "--only", "hierarchy")
    assert rc == 1 and "miss" in out


GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "reproduce.json"


def test_reproduce_json_is_byte_identical_to_the_golden_file(capsys):
    """A refactoring guard, not a physics check: `dse reproduce --json` exactly as main printed it
    before the pipeline re-layout. When a figure changes on purpose, regenerate the file
    (`python -m dse reproduce --json > tests/golden/reproduce.json`) and say why in the commit."""
    main(["reproduce", "--json"])
    out = capsys.readouterr().out
    assert out == GOLDEN.read_text(), "dse reproduce --json changed (see this test's docstring)"


def test_reproduce_uncertainty_bands_and_classes_every_predicted_miss(capsys):
    """Every predicted row gets a band; every predicted miss a class (inside band / definition not
    built / structural, never unclassified); the counts add up, in JSON and in the table's last line."""
    rc, out, _ = run_cli(capsys, "reproduce", "--uncertainty", "2", "--json")
    d = json.loads(out)
    u = d["uncertainty"]
    predicted = [r for r in d["rows"] if r["evidence"] == "predicted"]
    assert u["predicted"] == len(predicted) and u["pass"] + u["miss"] == len(predicted)
    misses = [r for r in predicted if r["status"] in ("miss", "error")]
    assert sum(u["miss_classes"].values()) == len(misses) == u["miss"]
    for r in misses:
        assert r["miss_class"] in ("inside band", "definition not built", "structural")
        assert r["miss_class"] == "inside band" or "not classified" not in r["miss_reason"], r["key"]
    for r in predicted:
        assert r["band"] is None or r["band"]["p5"] <= r["band"]["p95"]
    rc, out, _ = run_cli(capsys, "reproduce", "--uncertainty", "2", "--only", "communication")
    assert "model-uncertainty bands (2 draws)" in out.splitlines()[-1]
