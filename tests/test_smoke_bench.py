"""benchmarks/smoke.py's verdict on synthetic timings: today's pass, a closed form five times
slower fails (and only that ratio), a ratio without a floor fails; the floors file it reads is
whole, and written back it reads the same. No timing is taken here: the real measurement is the
script's (`.ci/run` runs it)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke():
    spec = importlib.util.spec_from_file_location("smoke_under_test", ROOT / "benchmarks" / "smoke.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Timings of one run (seconds of CPU; 2026-12-07 at 345917b, rounded): closed form 2^18 points in
# 0.25 s against numpy's 2.46 G ops/s at 290 ops per point; 120 evaluations in 1.38 s, 5 plans
# in 3.13 s for 120 trials; bands 4.51 s cold, 1.72 s warm; two processes busy 9.5 and 9.0 s of
# a 10.5 s span.
TODAY = {"closed_form": (1 << 18, 0.2456, 2.463e9, 290), "plan": (1.38, 120, 3.13, 120),
         "bands": (4.51, 1.72), "utilisation": ({"a": [(0.0, 4.0), (4.5, 10.0)], "b": [(0.5, 9.5), (10.0, 10.5)]}, 2)}


def ratios(smoke, t):
    return {"closed_form": smoke.closed_form_share(*t["closed_form"]), "plan": smoke.plan_ratio(*t["plan"]),
            "bands": smoke.bands_ratio(*t["bands"]), "utilisation": smoke.utilisation(*t["utilisation"])}


def floors_of(r, share=1 / 3):
    return {k: v * share for k, v in r.items()}


def test_the_ratios_from_their_timings(smoke):
    r = ratios(smoke, TODAY)
    assert r["closed_form"] == pytest.approx((1 << 18) / 0.2456 / (2.463e9 / 290))
    assert r["plan"] == pytest.approx((1.38 / 120) / (3.13 / 120))
    assert r["bands"] == pytest.approx(1.72 / 4.51)
    assert r["utilisation"] == pytest.approx((4.0 + 5.5 + 9.0 + 0.5) / (2 * 10.5))


def test_todays_timings_pass_their_floors(smoke):
    r = ratios(smoke, TODAY)
    lines, ok = smoke.check(r, floors_of(r))
    assert ok and len(lines) == 4 and all(" ok " in ln for ln in lines)


def test_a_closed_form_five_times_slower_fails_alone(smoke):
    floors = floors_of(ratios(smoke, TODAY))
    points, cpu, rate, ops = TODAY["closed_form"]
    slowed = {**TODAY, "closed_form": (points, 5 * cpu, rate, ops)}
    lines, ok = smoke.check(ratios(smoke, slowed), floors)
    assert not ok
    assert [ln.split()[0] for ln in lines if " LOW " in ln] == ["closed_form"]
    # twice slower stays above a third: the floors leave room for a noisy machine
    _, ok2 = smoke.check(ratios(smoke, {**TODAY, "closed_form": (points, 2 * cpu, rate, ops)}), floors)
    assert ok2


@pytest.mark.parametrize("name, slowed", [
    ("plan", {"plan": (1.38, 120, 5 * 3.13, 120)}),                       # the planner 5x slower
    ("bands", {"bands": (5 * 4.51, 1.72)}),                               # trace generation 5x slower
    ("utilisation", {"utilisation": ({"a": [(0.0, 1.0)], "b": [(9.0, 10.5)]}, 2)}),   # workers idle
])
def test_each_ratio_fails_on_its_own_slowdown(smoke, name, slowed):
    floors = floors_of(ratios(smoke, TODAY))
    lines, ok = smoke.check(ratios(smoke, {**TODAY, **slowed}), floors)
    assert not ok and [ln.split()[0] for ln in lines if " LOW " in ln] == [name]


def test_a_ratio_without_a_floor_fails(smoke):
    r = ratios(smoke, TODAY)
    floors = floors_of(r)
    del floors["bands"]
    lines, ok = smoke.check(r, floors)
    assert not ok and any("NO FLOOR" in ln and ln.startswith("bands") for ln in lines)


def test_the_shipped_floors_file_is_whole(smoke):
    f = smoke.read_floors()
    assert set(f["floor"]) == set(smoke.NAMES)
    assert f["date"] and f["commit"] and f["ops_per_point"] > 0
    for name, t in f["ratio"].items():
        assert t["floor"] == pytest.approx(min(t["measured"]) * smoke.FLOOR_SHARE, abs=1e-4), name


def test_floors_written_read_back(smoke, tmp_path):
    runs = [ratios(smoke, TODAY), {k: 2 * v for k, v in ratios(smoke, TODAY).items()}]
    path = tmp_path / "floors.toml"
    path.write_text(smoke.floors_text(runs, 290, "2026-12-07", "abc1234", "1.0 on 2 cores"))
    f = smoke.read_floors(path)
    assert f["commit"] == "abc1234" and f["ops_per_point"] == 290
    for k, v in runs[0].items():
        assert f["floor"][k] == pytest.approx(v / 3, abs=1e-4)


def test_the_script_names_what_it_patches(smoke):
    """smoke.py times ``guided.plan`` and slows ``dse.vector.evaluate.evaluate_columns`` by name."""
    from dse.search.propose.sample import guided
    from dse.vector import evaluate
    assert callable(guided.plan) and callable(evaluate.evaluate_columns)


def test_an_unknown_name_is_one_line(smoke, capsys):
    assert smoke.main(["--only", "closed_form,speed"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "speed" in err and "closed_form, plan, bands, utilisation" in err
