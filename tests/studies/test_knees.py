"""The shipped studies: they validate, and the knee studies select the same knee as an
independent brute-force oracle (every design evaluated directly, a plain-Python front and
chord-distance knee). Which knee the physics gives is reported by the studies themselves;
these tests check the engine finds it without being told."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from dse import DesignPoint, evaluate
from dse.search import load_results, load_study, run_study

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "studies").glob("*.toml"))
assert STUDIES, f"no study files in {ROOT / 'studies'}"


@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_shipped_studies_score_a_sampled_design(path):
    """A design the study's own sampler proposes first evaluates on every workload to one value
    per objective, and every metric the objectives and constraints read is produced."""
    import optuna

    from dse.search.execute.evaluation import evaluate_design
    from dse.search.propose.samplers import make_sampler
    from dse.search.space.objectives import score
    cfg = load_study(path)
    study = optuna.create_study(directions=cfg.objectives.directions, sampler=make_sampler(cfg, cfg.seed))
    design = cfg.design(cfg.space.suggest(study.ask(), cfg.base_env()))
    per_model = evaluate_design(design, cfg.models)
    assert set(per_model) == set(cfg.models)
    for m, metrics in per_model.items():
        missing = set(cfg.objectives.metrics) - set(metrics)
        assert not missing, f"{path.name}: {m}: metrics not produced: {sorted(missing)}"
    sc = score(per_model, cfg.objectives)
    assert len(sc.values) == len(cfg.objectives.objectives)
    assert all(isinstance(v, float) and not math.isnan(v) for v in sc.values)


def test_shipped_studies_have_distinct_names():
    """Two study files with one name would meet in one storage as one study."""
    names = [load_study(p, check_metrics=False).name for p in STUDIES]
    assert len(set(names)) == len(names), names


def _oracle_knee(points: list[tuple[dict, list[float]]], directions: list[str]) -> dict:
    """Brute force: feasible points -> non-dominated set -> normalised chord distance (2-D)."""
    sgn = [1 if d == "minimize" else -1 for d in directions]
    pts = [(p, [s * v for s, v in zip(sgn, vals)]) for p, vals in points]
    front = [(p, v) for p, v in pts
             if not any(all(a <= b for a, b in zip(w, v)) and w != v for _, w in pts)]
    uniq = []
    for p, v in front:
        if all(v != w for _, w in uniq):
            uniq.append((p, v))
    if len(uniq) == 1:
        return uniq[0][0]
    lo = [min(v[i] for _, v in uniq) for i in range(2)]
    hi = [max(v[i] for _, v in uniq) for i in range(2)]
    norm = [[(v[i] - lo[i]) / (hi[i] - lo[i]) if hi[i] > lo[i] else 0.0 for i in range(2)] for _, v in uniq]
    # extremes (0, y0) and (x1, 0) after normalisation are (0, 1) and (1, 0): chord x + y = 1
    dist = [(1 - x - y) / math.sqrt(2) for x, y in norm]
    best = max(dist)
    if best <= 1e-12:
        cand = range(len(uniq))
    else:
        cand = [i for i, d in enumerate(dist) if d >= best - 1e-12]
    i = min(cand, key=lambda i: (round(math.hypot(*norm[i]), 12), round(norm[i][0], 12), round(norm[i][1], 12)))
    return uniq[i][0]


def _run_and_compare(cfg, jobs: int = 1):
    s = run_study(cfg, jobs=jobs)
    assert s.exhausted and s.complete == len(cfg.space.grid(cfg.base_env()))
    res = load_results(cfg)
    knee = res.knee()
    points = []
    for params in cfg.space.grid(cfg.base_env()):
        per = {m: evaluate(DesignPoint.from_dict({**cfg.base, **params, "model": m})).metrics for m in cfg.models}
        from dse.search.space.objectives import score
        sc = score(per, cfg.objectives)
        if sc.feasible:
            points.append((params, sc.values))
    want = _oracle_knee(points, cfg.objectives.directions)
    got = {k: v for k, v in knee.params.items()}
    assert got == {k: want[k] for k in got}, (got, want)
    return knee


def test_core_pooling_knee_matches_the_oracle_and_the_study(tmp_path):
    cfg = load_study(ROOT / "studies" / "core-pooling.toml", storage=f"sqlite:///{tmp_path / 'cp.db'}")
    knee = _run_and_compare(cfg, jobs=2)
    # the reference study's bounded-pooling knee (Table X), rediscovered from effective MFU and
    # network mm2 per delivered occupancy alone
    assert knee.params == {"core_side": 4, "pooling": "broadcast"}


def test_array_depth_knee_on_the_default_model_matches_the_oracle(tmp_path):
    cfg = load_study(ROOT / "studies" / "array-depth.toml", storage=f"sqlite:///{tmp_path / 'ad.db'}",
                     model="qwen3.5-35b-a3b")
    knee = _run_and_compare(cfg)
    res = load_results(cfg)
    too_big = [r for r in res.complete if r.params["array_depth"] > 32768]
    assert too_big and all(not r.feasible and "die area" in r.reason for r in too_big)
    assert knee.params["array_depth"] <= 32768


def test_array_depth_knee_over_every_catalog_model_is_32k(tmp_path):
    # the study as shipped (every catalog model, closed-form unions): the reference study's
    # feasible-density knee, rediscovered from total dies vs worst layer time under the
    # die-area and D2D-provision constraints
    cfg = load_study(ROOT / "studies" / "array-depth.toml", storage=f"sqlite:///{tmp_path / 'all.db'}")
    assert len(cfg.models) >= 6
    knee = _run_and_compare(cfg, jobs=2)
    assert knee.params == {"array_depth": 32768}
    res = load_results(cfg)
    shallow = [r for r in res.complete if r.params["array_depth"] <= 16384]
    assert shallow and all(not r.feasible for r in shallow)   # GLM-5.2 / DeepSeek-V3 chunks do not fit
