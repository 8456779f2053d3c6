"""Study figures and `dse front` output: numeric axes in numeric order, log axes where values
span decades, only the knobs that vary on the front, labels that say minimise/maximise, the
front table's columns / sort / width, the typed path and flags in hints, value-typo suggestions."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dse.cli import main
from dse.viz import study_plots as sp


def test_numeric_axis_keeps_numeric_order_with_none_first():
    col, (pos, labels) = sp.encode_axis([None, 8, 6, 4, 32, 30, 2])
    assert labels == ["None", "2", "4", "6", "8", "30", "32"]
    order = [v for _, v in sorted(zip(col, [None, 8, 6, 4, 32, 30, 2]), key=lambda t: t[0])]
    assert order == [None, 2, 4, 6, 8, 30, 32]


def test_many_distinct_numbers_are_a_linear_or_log_axis():
    vals = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
    lin, _ = sp.encode_axis(vals)
    log, (_, labels) = sp.encode_axis(vals, log=True)
    assert np.all(np.diff(lin) > 0) and np.all(np.diff(log) > 0)
    assert log[3] == pytest.approx(1 / 3)          # 1.0 sits a third of the way from 0.1 to 100 on a log axis
    assert labels[0] == "0.1" and labels[-1] == "100"


def test_spans_decades():
    assert sp.spans_decades(np.array([0.05, 9.0]))
    assert not sp.spans_decades(np.array([1.0, 9.0]))
    assert not sp.spans_decades(np.array([-1.0, 90.0]))


def test_front_figure_and_parallel_coordinates(quickstart_study, tmp_path):
    from dse.search.results import load_results
    from dse.search.study import load_study
    res = load_results(load_study(quickstart_study[0], storage=quickstart_study[2]))
    fig = sp.front_figure(res)
    ax = fig.axes[0]
    assert "minimise" in ax.get_xlabel() and "(min)" not in ax.get_xlabel()
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith(f"knee: trial {res.knee().number}") for t in texts)   # knee labelled
    assert str(len(res.complete)) in fig._suptitle.get_text()
    pfig = sp.parallel_figure(res)
    ticks = [t.get_text() for t in pfig.axes[0].get_xticklabels()]
    varying = sp.varying_knobs(res, res.front())
    assert ticks[:len(varying)] == varying                    # only the knobs that vary on the front
    assert len(ticks) == len(varying) + len(res.cfg.objectives.names)


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
    study = tmp_path / "s.toml"
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    study.write_text((root / "studies" / "quickstart.toml").read_text().replace(
        '"../spaces/', f'"{root}/spaces/').replace('"../objectives/', f'"{root}/objectives/'))
    url = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["front", str(study), "--storage", url, "--seed", "3"]) == 2
    err = capsys.readouterr().err
    assert f"dse run {study} --storage {url} --seed 3" in err


def test_value_typo_gets_a_suggestion(capsys):
    assert main(["evaluate", "--set", "pooling=broadcst"]) == 2
    assert "did you mean 'broadcast'?" in capsys.readouterr().err


def test_front_json_reports_reference_and_settled(quickstart_study, capsys):
    assert main(["front", *quickstart_study, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["hypervolume_reference"]) == {o["name"] for o in d["objectives"]}
    assert isinstance(d["knee_settled"], bool) and d["hypervolume"] > 0


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


def test_run_without_a_terminal_prints_one_line_per_batch(tmp_path, capsys):
    from pathlib import Path
    study = str(Path(__file__).resolve().parent.parent / "studies" / "quickstart.toml")
    url = f"sqlite:///{tmp_path / 'q.db'}"
    assert main(["run", study, "--storage", url, "--trials", "32"]) == 0     # batch 16: two batches
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.startswith("quickstart: ")]
    assert [ln.split(",")[0] for ln in lines] == ["quickstart: 16/32 trials", "quickstart: 32/32 trials"]
    assert all("trials/s" in ln and "ETA" in ln and "feasible" in ln and "front" in ln for ln in lines)
    assert f"next: dse front {study} --storage {url}" in cap.out or "next: dse front studies/quickstart.toml" in cap.out
