"""The band judgement of `dse reproduce --uncertainty`: the published value is known to half a unit
of its last digit as published, as in the pass rule (``registry.judge``)."""
from __future__ import annotations

from dse.reproduce.bands import band_summary, in_band, judge_bands
from dse.reproduce.registry import Row


def _row(key, published, text, status="pass"):
    return Row(key, published, published, 1.0, "trace", "", status, evidence="predicted", published_text=text)


def test_a_rounded_published_value_overlapping_the_band_is_inside_and_says_so():
    b = {"p5": 0.3812, "p50": 0.39, "p95": 0.3963}
    assert in_band(_row("a", 0.381, "0.381"), b) == (True, True)          # 0.3805 .. 0.3815 overlaps
    assert in_band(_row("a", 0.381, "0.3810"), b) == (False, False)       # 0.38095 .. 0.38105 does not
    assert in_band(_row("a", 0.39, "0.39"), b) == (True, False)           # inside as written
    assert in_band(_row("a", 5.7, "5.7"), {"p5": 5.6667, "p50": 5.6667, "p95": 5.6667}) == (True, True)
    assert in_band(_row("a", 400, "400"), {"p5": 389.3, "p50": 389.3, "p95": 389.3}) == (False, False)
    assert in_band(_row("a", 1.0, "1.0"), None) == (False, False)


def test_the_summary_counts_passes_inside_by_rounding_and_classes_misses():
    rows = [_row("x.a", 0.381, "0.381"), _row("x.b", 0.39, "0.39"), _row("x.c", 2.0, "2.0", "miss")]
    bands = {"x.a": {"p5": 0.3812, "p50": 0.39, "p95": 0.3963}, "x.b": {"p5": 0.38, "p50": 0.39, "p95": 0.4},
             "x.c": {"p5": 1.9, "p50": 2.0, "p95": 2.1}}
    j = judge_bands(rows, bands)
    s = band_summary(rows, j)
    assert (s["pass"], s["pass_in_band"], s["pass_in_band_by_rounding"], s["miss"]) == (2, 2, 1, 1)
    assert s["miss_classes"]["inside band"] == 1 and j["x.c"]["miss_class"] == "inside band"
