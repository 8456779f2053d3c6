"""Study figures: numeric axes in numeric order, log axes where values span decades, only the
knobs that vary on the front, labels that say minimise/maximise, the knee labelled, counts as the
CLI prints them."""
from __future__ import annotations

import numpy as np
import pytest

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
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    res = load_results(load_study(quickstart_study[0], storage=quickstart_study[2]))
    fig = sp.front_figure(res)
    ax = fig.axes[0]
    assert "lower is better" in ax.get_xlabel() and "(min)" not in ax.get_xlabel()
    assert ax.get_xlabel().startswith("scheduled latency (us/token)")
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith(f"knee: trial {res.knee().number}") for t in texts)   # knee labelled
    assert str(len(res.complete)) in fig._suptitle.get_text()
    pfig = sp.parallel_figure(res)
    ticks = [t.get_text() for t in pfig.axes[0].get_xticklabels()]
    varying = sp.varying_knobs(res, res.front())
    assert ticks[:len(varying)] == varying                    # only the knobs that vary on the front
    assert len(ticks) == len(varying) + len(res.cfg.objectives.names)