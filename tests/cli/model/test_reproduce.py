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
    lines = [ln.strip() for ln in out.splitlines()]
    assert rc == 0 and "latency_35b" in lines and any(ln.startswith("rexpert_us_b8 ") for ln in lines)
    assert "exact misses: 0" in " ".join(out.split())


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


GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "reproduce.json"


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
    assert "model-uncertainty bands (2 draws)" in " ".join(out.split("exact misses:")[-1].split())  # after the summary


def figure_blocks(out: str) -> list[list[str]]:
    """The table's figures, each as its lines: a figure line (indent 2), then its note lines (indent 4)."""
    table = out.split("\n\n")[0].splitlines()[2:]                 # past the header and its rule
    blocks: list[list[str]] = []
    for ln in table:
        if ln.startswith("    "):
            blocks[-1].append(ln)
        elif ln.startswith("  "):
            blocks.append([ln])
    return blocks


def test_reproduce_fits_80_columns_in_at_most_two_lines_per_figure(capsys, monkeypatch):
    """At COLUMNS=80 (issue 45: 1,107 lines, the longest 269 characters, a figure up to 15 lines)."""
    monkeypatch.setenv("COLUMNS", "80")
    rc, out, _ = run_cli(capsys, "reproduce")
    rows = json.loads(GOLDEN.read_text())["rows"]
    blocks = figure_blocks(out)
    assert len(blocks) == len(rows)
    assert max(len(ln) for ln in out.splitlines()) <= 80
    assert max(len(b) for b in blocks) == 2                      # notes shortened onto one line below
    with_note = [b for b, r in zip(blocks, rows) if r["note"]]
    assert all(len(b) == 2 for b in with_note)
    rc, out, _ = run_cli(capsys, "reproduce", "--misses")
    misses = [r for r in rows if r["status"] in ("miss", "error")]
    assert len(figure_blocks(out)) == len(misses) and len(out.splitlines()) <= 3 * len(misses) + 10


def test_reproduce_on_a_wide_terminal_keeps_each_figure_on_one_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")
    rc, out, _ = run_cli(capsys, "reproduce")
    blocks = figure_blocks(out)
    assert len(blocks) == len(json.loads(GOLDEN.read_text())["rows"]) and {len(b) for b in blocks} == {1}
    assert max(len(ln) for ln in out.splitlines()) <= 220
    assert "note" in out.splitlines()[0]


def test_reproduce_notes_prints_every_note_in_full(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rows = {r["key"]: r for r in json.loads(GOLDEN.read_text())["rows"]}
    _, out, _ = run_cli(capsys, "reproduce", "--notes", "--only", "area_power")
    text = " ".join(ln.strip() for ln in out.splitlines())
    notes = [r["note"] for k, r in rows.items() if k.startswith("area_power") and r["note"]]
    assert notes and all(" ".join(n.split()) in text for n in notes)
    assert max(len(ln) for ln in out.splitlines()) <= 80
