"""The knee phase (``[search] knee_share``, ``stop = "knee-settled"``; dse.search.propose.knee.phase):
its settings, its phases recorded in the study, a resume in the middle of it asking the trials of
an uninterrupted run, and the settled stop."""
from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from dse.errors import ConfigError
from dse.search import load_results, load_study, run_study
from dse.search.propose.knee import phase as knee_phase

ROOT = Path(__file__).resolve().parents[2]


def study(tmp_path: Path, search: str, name: str = "kp", trials: int = 48, sampler: str = "guided",
          objectives: str = "latency-silicon.toml", settings: str = "") -> Path:
    """A study of the quickstart space (batches of 8, seed 3) with ``[search]`` lines ``search``
    and extra ``[sampler]`` lines ``settings``."""
    p = tmp_path / f"{name}.toml"
    p.write_text(f'[study]\nname = "{name}"\nspace = "{ROOT}/spaces/depth-width.toml"\n'
                 f'objectives = "{ROOT}/objectives/{objectives}"\ntrials = {trials}\nbatch = 8\nseed = 3\n'
                 f'[sampler]\nname = "{sampler}"\npool = 300\n{settings}\n[search]\n{search}\n'
                 f'[workload]\nmodels = ["qwen3.5-35b-a3b"]\n')
    return p


def params(cfg) -> list[dict]:
    return [r.params for r in sorted(load_results(cfg).records, key=lambda r: r.number)]


def attrs(cfg) -> dict:
    from dse.search.storage.storage import open_study
    s, _ = open_study(cfg, create=False)
    return dict(s.user_attrs)


def test_settings_parse_and_refuse(tmp_path):
    cfg = load_study(study(tmp_path, 'knee_share = 0.25\nstop = "knee-settled"\nknee_patience = 2\n'
                                     'knee_keys = ["array_depth", "tile_width"]'))
    assert cfg.knee == knee_phase.KneeSearch(0.25, "knee-settled", 2, 3, ("array_depth", "tile_width"))
    assert cfg.knee.global_trials(48, 8) == 32            # 0.75 x 48 = 36 -> whole batches: 32
    assert load_study(study(tmp_path, "", name="plain")).knee == knee_phase.KneeSearch()
    for bad, what in (('stop = "never"', "search.stop"), ("knee_share = 0.95", "search.knee_share"),
                      ("knee_patience = 0", "search.knee_patience"), ('knee_keys = "core_side"', "knee_keys"),
                      ("knee_shares = 0.2", "unknown key")):
        with pytest.raises(ConfigError, match=what):
            load_study(study(tmp_path, bad, name="bad"))


def test_resume_in_the_knee_phase_asks_the_trials_of_an_uninterrupted_run(tmp_path):
    search = "knee_share = 0.5"                           # global phase 24 trials (3 batches), knee phase 24
    a = load_study(study(tmp_path, search), storage=f"sqlite:///{tmp_path / 'a.db'}")
    run_study(a)
    b = load_study(study(tmp_path, search), storage=f"sqlite:///{tmp_path / 'b.db'}")
    run_study(b, max_batches=4)                           # stopped after the first knee-phase batch
    assert attrs(b)[knee_phase.ATTR]["phase"] == "knee"
    run_study(b, max_batches=1)
    run_study(b)
    assert len(params(a)) == 48 and params(b) == params(a)
    rec = attrs(a)[knee_phase.ATTR]
    assert rec["global_trials"] == 24 and [h[0] for h in rec["history"]] == [24, 32, 40, 48]
    # the knee phase moves around its candidates: its trials differ from the plain sampler's
    c = load_study(study(tmp_path, ""), storage=f"sqlite:///{tmp_path / 'c.db'}")
    run_study(c)
    assert params(c)[24:] != params(a)[24:]


def test_a_resumed_study_keeps_its_recorded_phases(tmp_path):
    """A resume with another trial target keeps the global phase the study recorded."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    cfg = load_study(study(tmp_path, "knee_share = 0.5"), storage=url)
    run_study(cfg, max_batches=2)
    assert attrs(cfg)[knee_phase.ATTR] == {"global_trials": 24, "knee_share": 0.5, "stop": "trials",
                                           "phase": "global"}
    longer = load_study(study(tmp_path, "knee_share = 0.5"), storage=url, trials=64)
    run_study(longer)
    assert attrs(longer)[knee_phase.ATTR]["global_trials"] == 24


def test_knee_settled_stops_before_the_cap_and_stays_stopped(tmp_path):
    """On the three objectives of full.toml (a front with one clear bulge; latency against power
    on this space is a family of equal latency x power designs, whose knee is ambiguous and
    so never settles)."""
    search = 'knee_share = 0.6\nstop = "knee-settled"'
    cfg = load_study(study(tmp_path, search, trials=160, objectives="full.toml"),
                     storage=f"sqlite:///{tmp_path / 's.db'}")
    s = run_study(cfg)
    rec = attrs(cfg)[knee_phase.ATTR]
    assert rec["phase"] == "settled" and s.complete == rec["settled_at"] < 160
    assert rec["verdict"]["verdict"] == "clear" and not rec["verdict"]["unrefined"]
    assert any("knee settled" in n for n in s.notes)
    again = run_study(cfg)
    assert again.new_trials == 0 and again.complete == s.complete
    cands = attrs(cfg)[knee_phase.CANDIDATES_ATTR]
    assert cands["candidates"][0]["trial"] == load_results(cfg).knee().number
    # the dashboard's attributes and the report measure the top margin alike, rival included
    from dse.search.review import quality
    _, kc = quality.knee_candidates(load_results(cfg))
    assert cands["ambiguous"] == kc.ambiguous and not kc.ambiguous
    assert cands["candidates"][0]["margin"] == pytest.approx(kc.margin, abs=1e-6)
    assert cands["rival"] == (None if kc.rival is None else kc.rival.to_json(kc.keys))


def test_settled_needs_unchanged_candidates_and_a_clear_margin():
    class C:
        knee = knee_phase.KneeSearch(0.5, "knee-settled", 2)
    top = [["a"], 0.30, 0.05]
    hist = [(8, [top]), (16, [[["b"], 0.2, 0.1]]), (24, [top]), (32, [[["a"], 0.305, 0.05]]), (40, [top])]
    assert knee_phase.settled_at(C, hist) == 40           # 24, 32, 40 the same within SCORE_TOL
    assert knee_phase.settled_at(C, hist[:4]) is None
    unclear = [(c, [[["a"], 0.3, 0.001]]) for c in (8, 16, 24)]
    assert knee_phase.settled_at(C, unclear) is None      # ambiguous: never settled
    optuna.logging.set_verbosity(optuna.logging.WARNING)
