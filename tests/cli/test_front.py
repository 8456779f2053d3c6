"""`dse front`: columns, sort, terminal width, --all reasons, the stated hypervolume reference,
hints with the typed path and flags."""
from __future__ import annotations

import json

import pytest

from dse.cli import main


def _results(args: list[str]):
    """The results of the study ``args`` (``[study, "--storage", url]``) address."""
    from dse.search import load_results, load_study
    return load_results(load_study(args[0], storage=args[2]))


def test_front_columns_sort_and_width(quickstart_study, capsys):
    assert main(["front", *quickstart_study, "--columns", "core_side,pool_power_w", "--sort=-pool_power_w"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("trial"))
    assert lines[head].split() == ["trial", "knee", "core_side", "pool_power_w"]
    powers = [float(ln.split()[-1]) for ln in lines[head + 2:] if ln.strip() and ln.split()[0].isdigit()]
    assert powers == sorted(powers, reverse=True)
    assert "hypervolume reference:" in out
    assert max(len(ln) for ln in lines if not ln.startswith(("*", "hypervolume", "objectives"))) <= 100
    assert main(["front", *quickstart_study, "--columns", "pool_powr"]) == 2
    assert "did you mean 'pool_power_w'" in capsys.readouterr().err


def test_front_all_shows_why_a_trial_is_infeasible(tmp_path, capsys):
    # the shipped quickstart's guided sampler screens infeasible designs out: TPE draws some
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    text = (root / "studies" / "quickstart.toml").read_text()
    assert '[sampler]\nname = "guided"' in text
    study = tmp_path / "qs-tpe.toml"
    study.write_text(text.replace('[sampler]\nname = "guided"', '[sampler]\nname = "tpe"').replace(
        '"../spaces/', f'"{root}/spaces/').replace('"../objectives/', f'"{root}/objectives/'))
    url = f"sqlite:///{tmp_path / 'qs.db'}"
    assert main(["run", str(study), "--storage", url, "--trials", "24", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["front", str(study), "--storage", url, "--all"]) == 0
    out = capsys.readouterr().out
    assert "reason" in out and "die area" in out


def test_hints_repeat_path_and_flags(tmp_path, capsys):
    from pathlib import Path
    study = tmp_path / "s.toml"
    root = Path(__file__).resolve().parents[2]
    study.write_text((root / "studies" / "quickstart.toml").read_text().replace(
        '"../spaces/', f'"{root}/spaces/').replace('"../objectives/', f'"{root}/objectives/'))
    url = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["front", str(study), "--storage", url, "--seed", "3"]) == 2
    err = capsys.readouterr().err
    assert f"dse run {study} --storage {url} --seed 3" in err


def test_front_json_reports_reference_and_settled(quickstart_study, capsys):
    assert main(["front", *quickstart_study, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["hypervolume_reference"]) == {o["name"] for o in d["objectives"]}
    assert isinstance(d["knee_settled"], bool) and d["hypervolume"] > 0


def test_front_shows_knee_candidates(quickstart_study, capsys, monkeypatch):
    """JSON: the top candidates (3 by default, --candidates N) with knobs, objectives, score and
    margin, the first being the knee; text: one line each and the verdict, 'ambiguous' when the
    top margin is below the threshold."""
    assert main(["front", *quickstart_study, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    kc = d["knee_candidates"]
    assert 1 <= len(kc["candidates"]) <= 3 and kc["count"] >= len(kc["candidates"])
    top = kc["candidates"][0]
    assert top["trial"] == d["knee"]["trial"] and top["objectives"] == d["knee"]["objectives"]
    assert set(top["architecture"]) == {"core_side", "array_depth", "tile_width", "pooling"}
    assert top["architecture"]["core_side"] == d["knee"]["params"]["core_side"]
    assert [c["rank"] for c in kc["candidates"]] == list(range(1, len(kc["candidates"]) + 1))
    scores = [c["score"] for c in kc["candidates"]]
    # best first; scores equal to rounding (designs of equal energy) may come in either order
    assert all(a >= b - 1e-12 * abs(b) for a, b in zip(scores, scores[1:]))
    if kc["rival"] is not None:             # a design of another architecture set the margin
        assert top["margin"] == pytest.approx(scores[0] - kc["rival"]["score"], abs=1e-12)
        assert len(scores) == 1 or top["margin"] <= scores[0] - scores[1]
    elif len(scores) > 1:
        assert top["margin"] == scores[0] - scores[1]
    assert kc["ambiguous"] is (top["margin"] is not None and top["margin"] < kc["threshold"])
    assert main(["front", *quickstart_study, "--json", "--candidates", "1"]) == 0
    assert len(json.loads(capsys.readouterr().out)["knee_candidates"]["candidates"]) == 1
    assert main(["front", *quickstart_study]) == 0
    out = capsys.readouterr().out
    word = d["knee_verdict"]                                    # one verdict (dse/search/propose/knee/verdict.py)
    assert word in ("clear", "ambiguous", "not settled") and (word == "ambiguous") is kc["ambiguous"]
    assert f"1. trial {top['trial']} (score" in out and f"knee {word}: " in out
    assert out.count("knee clear") + out.count("knee ambiguous") + out.count("knee not settled") == 1
    from dse.search.front import knee
    monkeypatch.setattr(knee, "AMBIGUOUS_MARGIN", -1.0)        # every margin clears it
    assert main(["front", *quickstart_study]) == 0
    assert "knee ambiguous" not in capsys.readouterr().out
    monkeypatch.setattr(knee, "AMBIGUOUS_MARGIN", 10.0)
    assert main(["front", *quickstart_study]) == 0
    assert "knee ambiguous: " in capsys.readouterr().out


def test_front_shows_the_best_design_and_the_depth_of_each_architecture(quickstart_study, capsys):
    """``architectures``: the best evaluated design of the top architectures, on the front or not,
    with how many of its designs were evaluated; checked against the study's records."""
    from dse.search.front import knee
    from dse.search.propose.knee.front import full_designs
    from dse.search.review import quality
    assert main(["front", *quickstart_study, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    archs = d["knee_candidates"]["architectures"]
    res = _results(quickstart_study)
    recs = res.candidates()
    keys = d["knee_candidates"]["keys"]
    views = full_designs(res.cfg, [r.design for r in recs])
    u = knee.Scale.of(res.F(res.front())).utility(res.F(recs))
    by = {}
    for r, v, ui in zip(recs, views, u):
        by.setdefault(tuple(v[k] for k in keys), []).append((ui, r.number))
    assert 1 <= len(archs) <= 3
    for a in archs:
        rows = by[tuple(a["architecture"][k] for k in keys)]
        assert a["designs"] == len(rows) and abs(a["best_score"] - max(rows)[0]) < 1e-9
    best = sorted((max(v)[0] for v in by.values()), reverse=True)[:len(archs)]
    assert [a["best_score"] for a in archs] == pytest.approx(best)
    assert main(["front", *quickstart_study]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    assert "best evaluated design per architecture" in out and f"{archs[0]['designs']} design" in out
    assert quality.architectures(res, knee.knee_candidates(res.F([]), [], ()), 3) == []


def test_front_pools_several_runs_and_reports_knee_agreement(tmp_path, capsys):
    """Two real runs of the quickstart study (seeds 0 and 1, one storage each) pooled: one front,
    one knee, and how many runs put each architecture first; the report gets the table."""
    from pathlib import Path

    from dse.search import load_results, load_study, run_study
    study = str(Path(__file__).resolve().parents[2] / "studies" / "quickstart.toml")
    urls = [f"sqlite:///{tmp_path / f's{seed}.db'}" for seed in (0, 1)]
    fronts, finished = [], 0
    for seed, url in zip((0, 1), urls):
        cfg = load_study(study, seed=seed, storage=url)
        run_study(cfg)
        res = load_results(cfg)
        fronts.append({tuple(res.objective_values(r).values()) for r in res.front()})
        finished += len(res.complete)
    assert main(["front", study, "--storage", urls[0], "--storage", urls[1], "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["runs"] == ["quickstart", "quickstart[seed=1]"] and d["n_trials"] == finished
    pooled = {tuple(r["objectives"].values()) for r in d["front"]}
    assert pooled <= fronts[0] | fronts[1]                # the pooled front: the union's non-dominated designs
    agree = d["knee_agreement"]
    assert sum(a["first_in"] for a in agree["agreement"]) == 2
    assert agree["merged"] == list(d["knee_candidates"]["candidates"][0]["architecture"].values())
    assert list(agree["agreement"][0]["architecture"].values()) == agree["merged"]
    assert [p["agrees"] for p in agree["per_run"]] == [p["architecture"] == agree["merged"] for p in agree["per_run"]]
    run, trial = d["pooled_trials"][str(d["knee"]["trial"])]
    assert run in d["runs"] and isinstance(trial, int)
    assert main(["front", study, "--storage", urls[0], "--storage", urls[1]]) == 0
    assert "knee agreement over 2 runs" in capsys.readouterr().out
    out = tmp_path / "r.md"
    assert main(["report", study, "--storage", urls[0], "--storage", urls[1], "-o", str(out), "--no-reproduce"]) == 0
    assert "Knee agreement over 2 pooled runs" in out.read_text()
    capsys.readouterr()
    assert main(["front", study, "--storage", urls[0], "--storage", urls[1], "--robust", "2"]) == 2
    assert "not pooled runs" in capsys.readouterr().err


@pytest.fixture(scope="module")
def walled_study(tmp_path_factory) -> list[str]:
    """The quickstart before issue 51 (array depth, tile width, mesh width and macro clock for
    delivered latency against pool power, seed 0): a front held at the ends of three ranges."""
    from pathlib import Path

    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    root = Path(__file__).resolve().parents[2]
    tmp = tmp_path_factory.mktemp("walled")
    study = tmp / "walled.toml"
    study.write_text(f'[study]\nname = "walled"\nspace = "{root}/spaces/depth-width.toml"\n'
                     f'objectives = "{root}/objectives/latency-silicon.toml"\ntrials = 64\nseed = 0\nbatch = 2\n'
                     '[sampler]\nname = "tpe"\n[workload]\nmodels = ["qwen3.5-35b-a3b"]\n')
    url = f"sqlite:///{tmp / 'walled.db'}"
    run_study(load_study(study, storage=url))
    return [str(study), "--storage", url]


@pytest.mark.parametrize("which", ["quickstart", "walled"])
def test_front_reports_the_knobs_at_a_bound(which, request, capsys):
    """`at_bounds` (JSON) and the "at a bound:" lines list the numeric knobs more than half of
    the front holds at one end of its range (among the designs where the knob is active), as a
    plain count over the front's designs finds: none on the shipped quickstart, some on the
    quickstart before issue 51 (three with the traces of issue 44's sampler, two with issue 49's)."""
    study = request.getfixturevalue(f"{which}_study")
    res = _results(study)
    front = res.front()
    expect = []
    for d in res.cfg.space.dims:
        numeric = d.type == "categorical" and all(isinstance(c, (int, float)) for c in d.choices)
        if d.type not in ("int", "float") and not numeric:
            continue
        active = [r for r in front if d.name in r.design]
        for bound, i in (("low", 0), ("high", 1)):
            ends = (min(d.choices), max(d.choices)) if numeric else None
            at = [r for r in active if r.design[d.name] == (ends or res.cfg.space.bounds(d, r.design))[i]]
            if len(at) > len(active) / 2:
                expect.append((d.name, bound))
    assert (len(expect) == 0) is (which == "quickstart")
    assert main(["front", *study, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert sorted((w["knob"], w["bound"]) for w in d["at_bounds"]) == sorted(expect)
    assert all(w["share"] > 0.5 for w in d["at_bounds"])
    assert main(["front", *study]) == 0
    out = capsys.readouterr().out
    from dse.cli.run import WALLS_MIN_FRONT
    if len(front) >= WALLS_MIN_FRONT:
        assert out.count("at a bound: ") == len(expect)
        for w in d["at_bounds"]:
            assert f"{w['knob']} = " in out
    else:                                  # too few designs to tell a user to widen a range
        assert out.count("at a bound: ") == (1 if expect else 0)
        assert not expect or f"at a bound: not judged on a front of {len(front)} designs" in out


def test_a_small_front_is_not_told_to_widen_its_ranges():
    from dse.cli.run import WALLS_MIN_FRONT, wall_lines
    from dse.search.front.walls import Wall
    w = Wall("tile_width", "low", 1, 0.75)
    assert wall_lines([], 3) == []
    assert wall_lines([w, w], 4) == ["at a bound: not judged on a front of 4 designs (`dse front --json` lists "
                                     "at_bounds; run more trials)"]
    lines = wall_lines([w], WALLS_MIN_FRONT)
    assert len(lines) == 1 and lines[0].startswith("at a bound: tile_width = 1 (low end of its range)")

def test_a_terminal_of_no_width_falls_back_to_columns(quickstart_study, capsys, monkeypatch):
    # under `script` or some `docker exec -t` sessions the terminal reports 0 columns: `dse run` and
    # `dse front` died in textwrap ("invalid width 0") after the results were saved
    import io
    import os

    from dse.report import terminal_width

    class Tty(io.StringIO):
        def isatty(self):
            return True

        def fileno(self):
            return 1

    monkeypatch.setattr(os, "get_terminal_size", lambda fd=None: os.terminal_size((0, 0)))
    monkeypatch.setattr("sys.stdout", Tty())
    monkeypatch.setenv("COLUMNS", "88")
    assert terminal_width() == 88
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() == 100
    assert main(["front", *quickstart_study]) == 0
    import sys
    assert "knee candidates" in sys.stdout.getvalue()


def test_a_knee_not_settled_names_the_trials_to_run(tmp_path):
    # "--trials N" left the user to guess N: twice the finished trials (HISTORY: twice the trials
    # refined the catalog study's knee on 15 of 20 seeds)
    from pathlib import Path

    from tests.fixtures import run_dse
    study = str(Path(__file__).resolve().parents[2] / "studies" / "quickstart.toml")
    url = f"sqlite:///{tmp_path / 'ten.db'}"
    assert run_dse("run", study, "--storage", url, "--trials", "10", "--no-progress").returncode == 0
    r = run_dse("front", study, "--storage", url)
    assert r.returncode == 0 and "knee not settled" in r.stdout
    assert "to settle the knee: run more trials (`dse run " in r.stderr
    assert f"quickstart.toml --storage {url} --trials 20` resumes it to twice the trials it has)" in r.stderr


def test_a_wrong_column_is_matched_to_the_studys_own_names_first(quickstart_study, capsys):
    # `--sort power` suggested the metric 'pe_power_w', not the study's objective 'pool_power_w'
    assert main(["front", *quickstart_study, "--sort", "power"]) == 2
    assert capsys.readouterr().err.endswith("did you mean 'pool_power_w'?\n")
    assert main(["front", *quickstart_study, "--columns", "foo"]) == 2
    err = capsys.readouterr().err
    assert "the objectives are ffn_us_per_token_scheduled, pool_power_w" in err and "`dse params`" in err


def test_an_objective_column_prints_its_distinct_values_distinctly():
    # the quickstart's trials 59 and 6 both read 4.594 us (4.59378 and 4.59418): 59 looked dominated
    from dse.cli.front import distinct_columns
    rows = [[59, "", 4.59378, 561.4], [6, "*", 4.59418, 425.4], [14, "", 2.0653, 1154.0]]
    out = distinct_columns(rows, [False, False, True, True])
    assert [r[2] for r in out] == ["4.5938", "4.5942", "2.0653"]
    assert [r[3] for r in out] == [561.4, 425.4, 1154.0]            # distinct at four digits: left to table()
    assert distinct_columns([[1, 2.5], [2, 2.5]], [False, True]) == [[1, 2.5], [2, 2.5]]   # equal values
