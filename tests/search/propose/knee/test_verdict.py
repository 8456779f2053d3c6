"""The one verdict on a knee (dse/search/propose/knee/verdict.py): clear only when the margin is clear
and the knee's design and every contender within the window are refined (every one-knob move
evaluated, none better); ambiguous below the margin; not settled otherwise. On the cheap stand-in
study of tests/search/review/test_quality.py (core_side 1..6 x pooling direct/broadcast)."""
from __future__ import annotations

from dataclasses import replace

from dse.search.propose.knee import verdict
from dse.search.review import quality
from tests.search.review import test_quality
from tests.search.review.test_quality import fake_study

SPACE3 = test_quality.SPACE + 'placement = { type = "categorical", choices = ["contiguous", "lpt"] }\n'


def _study(res, rows):
    """``res`` with its records replaced by feasible trials of (core_side, pooling, a, b) rows."""
    base = res.records[0]
    recs = [replace(base, number=i, values=[a, b], feasible=True, params={"core_side": s, "pooling": p},
                    design={"core_side": s, "pooling": p}, design_key=f"k{s}{p}", duplicate_of=None,
                    state="COMPLETE")
            for i, (s, p, a, b) in enumerate(rows)]
    return replace(res, records=recs)




def _rows(c):
    """Every design of the space, a = side, b = side x c(side, pooling): knee score ln c."""
    return [(s, p, float(s), s * c(s, p)) for s in range(1, 7) for p in ("direct", "broadcast")]


def _c(s, p):          # the knee: side 2 broadcast (score ln 0.95), other broadcasts 0.11 below, direct far below
    return 0.95 if (s, p) == (2, "broadcast") else 0.85 if p == "broadcast" else 0.6


CLEAR = _rows(_c)


def test_every_one_knob_move_evaluated_and_a_clear_margin_is_clear(tmp_path):
    res = _study(fake_study(tmp_path, grid=False), CLEAR)
    fr, kc = quality.knee_candidates(res)
    assert kc.candidates[0].group[0] == 2 and not kc.ambiguous
    v = quality.study_verdict(res, fr, kc)
    assert v.word == "clear" and v.clear and v.settled and not v.unrefined, v
    assert "refined" in v.line()


def test_an_unevaluated_move_of_the_knee_is_not_settled(tmp_path):
    rows = [r for r in CLEAR if (r[0], r[1]) != (5, "broadcast")]      # one move of (2, broadcast) never tried
    v = quality.study_verdict(_study(fake_study(tmp_path, grid=False), rows))
    assert v.word == "not settled" and not v.settled
    assert v.unrefined == [{"architecture": {"core_side": 2, "array_depth": 32768, "tile_width": 4,
                                             "pooling": "broadcast"}, "moves_left": 1}]


def test_an_unrefined_contender_within_the_window_is_not_settled_and_a_far_one_does_not_count(tmp_path, monkeypatch):
    """Three knobs (side, pooling, placement): side 3 direct contiguous is 0.03 below the knee (side
    2 broadcast contiguous), a contender; its one-knob move to lpt is not evaluated (three knobs
    from the knee's design: no move of it), so the contender's score is a floor."""
    monkeypatch.setattr(test_quality, "SPACE", SPACE3)

    def c(s, p, w):
        return (0.92 if (s, p) == (3, "direct") else _c(s, p)) - (0.0 if w == "contiguous" else 0.3)

    rows = [(s, p, w, float(s), s * c(s, p, w)) for s in range(1, 7) for p in ("direct", "broadcast")
            for w in ("contiguous", "lpt")]
    res = _study3(fake_study(tmp_path, grid=False), [r for r in rows if r[:3] != (3, "direct", "lpt")])
    fr, kc = quality.knee_candidates(res)
    top = kc.candidates[0]
    assert top.group[0] == 2 and top.margin is not None and top.margin >= kc.threshold
    v = quality.study_verdict(res, fr, kc)
    assert v.word == "not settled" and [u["architecture"]["core_side"] for u in v.unrefined] == [3], v
    assert "within 0.1" in v.reason
    far = [(s, p, w, a, s * (_c(s, p) - (0.0 if w == "contiguous" else 0.3))) for s, p, w, a, _ in rows]
    (tmp_path / "far").mkdir()
    far = _study3(fake_study(tmp_path / "far", grid=False), [r for r in far if r[:3] != (3, "direct", "lpt")])
    assert quality.study_verdict(far).word == "clear"            # every other one 0.11 below or more


def _study3(res, rows):
    """``res`` with its records replaced by feasible trials of (side, pooling, placement, a, b) rows."""
    base = res.records[0]
    recs = [replace(base, number=i, values=[a, b], feasible=True,
                    params={"core_side": s, "pooling": p, "placement": w},
                    design={"core_side": s, "pooling": p, "placement": w}, design_key=f"k{s}{p}{w}",
                    duplicate_of=None, state="COMPLETE")
            for i, (s, p, w, a, b) in enumerate(rows)]
    return replace(res, records=recs)


def test_a_margin_below_the_threshold_is_ambiguous_whatever_the_refinement(tmp_path):
    tie = _rows(lambda s, p: 0.94 if (s, p) == (3, "broadcast") else _c(s, p))     # 0.011 below the knee
    res = _study(fake_study(tmp_path, grid=False), tie)
    fr, kc = quality.knee_candidates(res)
    v = quality.study_verdict(res, fr, kc)
    assert kc.ambiguous and v.word == "ambiguous" and "below the 0.02 threshold" in v.reason
    assert quality.knee_settledness(res)["verdict"] == "ambiguous"


def test_the_trials_verdict_agrees_with_the_study_verdict(tmp_path):
    """What ``dse run`` records and stops on (optuna trials) is what ``dse front`` prints."""
    res = fake_study(tmp_path)                       # the whole 12-point grid, evaluated by the stand-in model
    from dse.search.storage.storage import open_study
    study, _ = open_study(res.cfg, create=False)
    trials = sorted([t for t in study.get_trials() if t.state.is_finished()], key=lambda t: t.number)
    a, b = verdict.trials_verdict(res.cfg, trials), quality.study_verdict(res)
    assert (a.word, a.margin, a.unrefined) == (b.word, b.margin, b.unrefined)
    assert a.word in ("clear", "ambiguous")          # every design evaluated: nothing left to refine


def test_one_architecture_on_the_front_is_not_settled_until_its_design_is_refined(tmp_path):
    """No margin to judge: before, "clear" at once (the quickstart stopped after 2 of 4 trials)."""
    rows = [(2, "broadcast", 2.0, 1.9), (1, "broadcast", 1.0, 3.9), (3, "broadcast", 3.0, 1.0)]
    res = _study(fake_study(tmp_path, grid=False), rows)
    fr, kc = quality.knee_candidates(res)
    assert kc.margin is None and len(kc.candidates) == 1
    v = quality.study_verdict(res, fr, kc)
    assert v.word == "not settled" and not v.settled and v.unrefined[0]["moves_left"] > 0, v
