"""Hypervolume on a stated reference, the knee's history, knee confidence (robust knees) and the
comparison of several studies, on a cheap stand-in model."""
from __future__ import annotations

import math

import pytest

from dse.errors import ConfigError
from dse.search.execute.runner import run_study
from dse.search.review import quality
from dse.search.study.results import load_results
from dse.search.study.study import load_study

SPACE = """
[params]
core_side = { type = "int", low = 1, high = 6 }
pooling = { type = "categorical", choices = ["direct", "broadcast"] }
"""
OBJ = """
[[objectives]]
metric = "a"
{ref_a}
[[objectives]]
metric = "b"
direction = "maximize"
{ref_b}
"""


def fake_eval(design, models):
    """Two conflicting objectives; the trace seed shifts which side bulges most."""
    s = design["core_side"]
    seed = int(design.get("trace_seed", 0))
    bonus = 0.5 if design["pooling"] == "broadcast" else 0.0
    bump = 0.6 if s == 2 + seed % 3 else 0.0
    return {m: {"feasible": s != 6, "infeasible_reason": "" if s != 6 else "side 6 too big",
                "a": float(s), "b": math.sqrt(s) + bonus + bump} for m in models}


def fake_study(tmp_path, name="s", seed=0, ref=False, grid=True):
    (tmp_path / "space.toml").write_text(SPACE)
    (tmp_path / f"obj{int(ref)}.toml").write_text(OBJ.format(ref_a="reference = 10.0" if ref else "",
                                                             ref_b="reference = 0.0" if ref else ""))
    p = tmp_path / f"{name}.toml"
    sampler = 'name = "grid"' if grid else 'name = "random"'
    p.write_text(f'[study]\nspace = "space.toml"\nobjectives = "obj{int(ref)}.toml"\ntrials = 12\nbatch = 4\n'
                 f'seed = {seed}\n[sampler]\n{sampler}\n')
    cfg = load_study(p, check_metrics=False)
    run_study(cfg, evaluator=fake_eval)
    return load_results(cfg)


def test_hypervolume_on_a_fixed_reference_is_in_objective_units(tmp_path):
    res = fake_study(tmp_path, ref=True)
    ref = quality.study_reference(res)
    assert ref.values == (10.0, 0.0) and "fixed by" in ref.source
    # front: (a, b) of the broadcast designs of sides 1..5 (bump at side 2): by hand, staircase area
    pts = sorted((float(s), math.sqrt(s) + 0.5 + (0.6 if s == 2 else 0)) for s in range(1, 6))
    front = [p for p in pts if not any(q[0] <= p[0] and q[1] >= p[1] and q != p for q in pts)]
    got = quality.hypervolume_on(res, res.front(), ref)
    # the staircase: for each point sorted by b descending, width (10 - a) over the b band it adds
    bands = sorted(front, key=lambda p: p[1])
    expect, lo = 0.0, 0.0
    for i, (_a, b) in enumerate(bands):
        width = 10.0 - min(p[0] for p in bands[i:])
        expect += width * (b - lo)
        lo = b
    assert got == pytest.approx(expect)


def test_default_reference_is_the_worst_finite_value_and_stated(tmp_path):
    res = fake_study(tmp_path)
    ref = quality.study_reference(res)
    assert "worst finite value" in ref.source
    assert ref.values == (6.0, 1.0)      # worst a (side 6: infeasible but finite) and worst b (side 1, direct)
    assert quality.hypervolume_on(res, res.front(), ref) != pytest.approx(1.21)


def test_knee_history_and_moved_warning(tmp_path):
    res = fake_study(tmp_path)
    hist = quality.knee_history(res, points=4)
    assert hist[-1][1].number == res.knee().number
    moved = quality.knee_moved(res)
    assert moved is None or moved[1].number == res.knee().number


def test_compare_uses_one_reference_and_finds_the_dominant_run(tmp_path):
    a = fake_study(tmp_path, "a", grid=True)
    b = fake_study(tmp_path, "b", seed=1, grid=False)
    cmp = quality.compare([a, b], ["a", "b"])
    assert "union" in cmp.reference.source
    assert cmp.coverage[0][1] == 1.0      # the exhaustive grid's front covers the random run's
    assert cmp.dominant == "a"
    assert cmp.hypervolume[0] >= cmp.hypervolume[1]
    assert all(isinstance(v, bool) for v in cmp.knob_agreement.values())


def test_compare_refuses_different_questions(tmp_path):
    a = fake_study(tmp_path, "a")
    b = fake_study(tmp_path, "b", ref=True)
    quality.compare([a, b], ["a", "b"])          # same names and directions: accepted
    (tmp_path / "other.toml").write_text('[[objectives]]\nmetric = "b"\n')
    c = fake_study(tmp_path, "c")
    from dataclasses import replace

    from dse.search.space.objectives import load_objectives
    c.cfg = replace(c.cfg, objectives=load_objectives(tmp_path / "other.toml"))
    with pytest.raises(ConfigError, match="objectives"):
        quality.compare([a, c], ["a", "c"])


def test_infeasibility_reasons_are_counted_by_kind(tmp_path):
    res = fake_study(tmp_path)
    assert quality.infeasibility_counts(res) == [("side # too big", 2)]


def _records(res, rows):
    """``res`` with its records replaced by feasible trials of (core_side, a, b) rows, in order."""
    from dataclasses import replace as rep
    base = res.records[0]
    recs = [rep(base, number=i, values=[a, b], feasible=True, params={"core_side": s, "pooling": "direct"},
                design={"core_side": s, "pooling": "direct"}, design_key=f"k{i}", duplicate_of=None, state="COMPLETE")
            for i, (s, a, b) in enumerate(rows)]
    return rep(res, records=recs)


def test_knee_settledness_is_the_verdict(tmp_path):
    """Settled: the one verdict (dse/search/propose/knee/verdict.py, tested there) is clear, or
    ambiguous with nothing left to refine; a run that has not evaluated its knee's moves is not."""
    res = fake_study(tmp_path, grid=False)           # 12 random draws of the 12-design space
    got = quality.knee_settledness(res)
    v = quality.study_verdict(res)
    assert got == {"settled": v.settled, "verdict": v.word, "reason": v.reason, "unrefined": v.unrefined}
    front = [(1, 0.0, 0.0), (2, 0.5, 2.0), (3, 1.0, 2.3), (4, 2.0, 2.5)]     # a clear bulge at side 2
    few = quality.knee_settledness(_records(res, front))     # side 2's other moves never evaluated
    assert few["verdict"] == "not settled" and not few["settled"] and few["unrefined"]


def test_an_exhausted_grid_is_settled(tmp_path):
    res = fake_study(tmp_path)                       # grid of 12 points, 3 batches: all evaluated
    assert len(res.complete) == res.cfg.trials == 12
    got = quality.knee_settledness(res)
    assert got["settled"] and not got["unrefined"]
    assert got["verdict"] == ("ambiguous" if quality.knee_candidates(res)[1].ambiguous else "clear")


def test_a_dominated_design_of_another_architecture_just_behind_the_knee_makes_it_ambiguous(tmp_path):
    """The top margin is measured against every evaluated design of another architecture, not
    only the other bulges of the front: one just behind the knee (dominated, so on no front)
    makes the choice ambiguous, and the verdict, the JSON and settledness name it."""
    res = fake_study(tmp_path, grid=False)
    front = [(1, 0.0, 0.0), (2, 0.5, 2.0), (3, 1.0, 2.3), (4, 2.0, 2.5)]     # a clear bulge at side 2
    filler = [(5, 9.0, -1.0 - i) for i in range(12)]
    clear = quality.knee_candidates(_records(res, front + filler))[1]
    assert clear.rival is None and not clear.ambiguous
    behind = (6, 0.5005, 1.999)                                                # side 6, a hair behind side 2
    got = _records(res, front + filler[:11] + [behind])
    fr, kc = quality.knee_candidates(got)
    assert [r.number for r in fr] == [r.number for r in quality.knee_candidates(_records(res, front + filler))[0]]
    assert kc.candidates[0].group == clear.candidates[0].group and kc.ambiguous
    assert kc.rival.group[0] == 6 and kc.rival.trial == 15
    assert 0 < kc.margin < clear.margin
    text = quality.verdict(kc)
    assert "ambiguous" in text and "trial 15" in text and "core_side=6" in text
    assert quality.candidates_json(got, fr, kc)["rival"]["trial"] == 15
    assert quality.knee_settledness(got)["verdict"] == "ambiguous"
