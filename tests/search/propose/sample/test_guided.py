"""The closed-form-guided sampler: legal designs only, never one whose closed-form bound the front
before its batch already dominates (or that the bound proves infeasible), deterministic under a
seed, and a resumed study (stopped mid-batch or between batches) ends as an uninterrupted one."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dse.search import load_results, load_study, run_study
from dse.search.front import pareto
from dse.search.propose.bound import estimate
from dse.search.propose.sample import draw, guided
from tests.fixtures import LATENCY_POWER_OBJECTIVES
from tests.search.execute.test_resume import outcome

ROOT = Path(__file__).resolve().parents[4]
OBJECTIVES = (ROOT / "objectives" / "full.toml").read_text()


def _study(tmp: Path, trials: int = 36, seed: int = 5, pool: int = 300) -> Path:
    f = tmp / "guided.toml"
    f.write_text(f"""
[study]
space = "{ROOT / 'spaces' / 'full.toml'}"
objectives = "{ROOT / 'objectives' / 'full.toml'}"
trials = {trials}
seed = {seed}
batch = 12
[sampler]
name = "guided"
pool = {pool}
[workload]
models = ["qwen3.5-35b-a3b"]
trace = "synthetic"
batch = 64
""")
    return f


@pytest.fixture(scope="module")
def guided_study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("guided")
    cfg = load_study(_study(tmp), storage=f"sqlite:///{tmp / 's.db'}")
    run_study(cfg)
    return cfg, load_results(cfg)


def test_every_proposal_is_a_legal_point_of_the_space(guided_study):
    cfg, res = guided_study
    base = cfg.base_env()
    assert len(res.records) == cfg.trials
    for r in res.records:
        assert draw.is_legal(cfg.space, base, r.params), f"trial {r.number}: {r.params}"


def test_is_legal_rejects_a_value_off_the_space(guided_study):
    cfg, res = guided_study
    p = dict(res.records[0].params)
    base = cfg.base_env()
    assert not draw.is_legal(cfg.space, base, {**p, "pe_groups_per_core": p["core_side"] ** 2 + 1})
    assert not draw.is_legal(cfg.space, base, {**p, "array_depth": p["array_depth"] + 1})
    assert not draw.is_legal(cfg.space, base, {k: v for k, v in p.items() if k != "tile_width"})


def test_no_proposal_is_dominated_or_infeasible_under_its_bound(guided_study):
    cfg, res = guided_study
    dirs = cfg.objectives.directions
    checked = 0
    for start in range(cfg.batch, cfg.trials, cfg.batch):
        before = [r for r in res.records if r.number < start and r.feasible and not r.screened]
        F = pareto.to_min(np.array([r.values for r in before]), dirs)
        batch = [r for r in res.records if start <= r.number < start + cfg.batch]
        B, ok, _ = guided.bound_arrays(cfg, [r.design for r in batch])
        assert ok.all(), "a proposal the closed-form bound proves infeasible"
        dominated = pareto.weakly_dominated(pareto.to_min(B, dirs), F[pareto.nondominated(F)])
        assert not dominated.any(), f"batch at {start}: proposals dominated under their bound"
        checked += len(batch)
    assert checked == cfg.trials - cfg.batch


def test_the_plan_is_a_function_of_the_seed_and_the_trials(guided_study):
    cfg, _ = guided_study
    from dse.search.storage.storage import open_study
    study, _ = open_study(cfg, create=False)
    trials = study.get_trials(deepcopy=False)[:24]
    from dse.search.storage.stored import sampler_form
    trials = [sampler_form(t) for t in trials]
    one = guided.plan(cfg, trials, np.random.default_rng(7), 12, {"pool": 200})
    two = guided.plan(cfg, trials, np.random.default_rng(7), 12, {"pool": 200})
    other = guided.plan(cfg, trials, np.random.default_rng(8), 12, {"pool": 200})
    assert one == two and len(one) == 12 and one != other
    known = {guided.param_key(t.params) for t in trials}
    assert not known & {guided.param_key(p) for p in one}       # never a design the study holds


def test_greedy_hv_takes_the_largest_gain_first_and_spreads():
    F = np.array([[0.5, 0.5]])
    E = np.array([[0.4, 0.4],      # improves the front a little
                  [0.0, 0.45],     # extends it far along the first objective
                  [0.6, 0.6],      # dominated: adds nothing
                  [0.01, 0.45]])   # almost the same as row 1
    picked = guided.greedy_hv(E, F, 3, np.random.default_rng(0), 20000)
    assert picked[0] == 1 and picked[1] == 0 and 2 not in picked[:2]


def test_a_resumed_guided_study_ends_as_an_uninterrupted_run(tmp_path):
    study = _study(tmp_path, trials=30)
    ref = load_study(study, storage=f"sqlite:///{tmp_path / 'ref.db'}")
    run_study(ref)
    storage = f"sqlite:///{tmp_path / 'cut.db'}"
    run_study(load_study(study, storage=storage, trials=17))        # stops mid-batch (batch 12)
    run_study(load_study(study, storage=storage, trials=24))        # then between batches
    cfg = load_study(study, storage=storage)
    assert run_study(cfg).notes == []
    assert outcome(cfg) == outcome(ref)


def test_a_closed_form_study_is_guided_by_its_exact_values(tmp_path):
    """On the catalog workload the closed form is the value: no proposal after the first batch
    is dominated by the front before its batch, in truth."""
    f = _study(tmp_path, trials=36)
    f.write_text(f.read_text().replace('trace = "synthetic"', 'trace = "catalog"').replace(
        f'objectives = "{ROOT / "objectives" / "full.toml"}"', 'objectives = "obj.toml"'))
    (tmp_path / "obj.toml").write_text(OBJECTIVES.split("[[objectives]]")[0] + LATENCY_POWER_OBJECTIVES)
    cfg = load_study(f, storage=f"sqlite:///{tmp_path / 'c.db'}")
    run_study(cfg)
    res = load_results(cfg)
    dirs = cfg.objectives.directions
    for r in res.records[cfg.batch:]:
        before = [x for x in res.records if x.number < r.number - r.number % cfg.batch and x.feasible]
        F = pareto.to_min(np.array([x.values for x in before]), dirs)
        assert r.feasible, f"trial {r.number} infeasible: {r.reason}"
        assert not pareto.weakly_dominated(pareto.to_min(np.array([r.values]), dirs), F).any()


def test_greedy_hv_takes_each_objectives_best_estimate_first_when_asked():
    E = np.array([[0.4, 0.4], [0.0, 0.9], [0.9, 0.05], [0.3, 0.3]])
    assert guided.greedy_hv(E, np.zeros((0, 2)), 2, np.random.default_rng(0), 5000, extremes=2) == [1, 2]
    assert guided.greedy_hv(E, np.zeros((0, 2)), 1, np.random.default_rng(0), 5000)[0] == 3


def test_greedy_hv_never_takes_an_estimate_already_there_while_another_remains():
    """With ``refine``, designs that differ only in knobs the objectives do not see (equal
    estimates): once one is picked (or on the front), the others come last."""
    F = np.array([[0.2, 0.2]])
    E = np.array([[0.1, 0.1], [0.1, 0.1], [0.2, 0.2], [0.5, 0.5]])
    picked = guided.greedy_hv(E, F, 3, np.random.default_rng(0), 5000, refine=True)
    assert picked[:2] == [0, 3] and picked[2] in (1, 2)
    assert guided.greedy_hv(E, F, 3, np.random.default_rng(0), 5000)[:2] == [0, 1]    # without: the twin
    F2 = np.array([[0.2, 0.2], [0.5, 0.05]])
    two = np.array([[0.21, 0.5], [0.3, 0.1]])    # the best objective-0 estimate does not extend the front
    assert guided.greedy_hv(two, F2, 1, np.random.default_rng(0), 5000, extremes=1) == [0]
    assert guided.greedy_hv(two, F2, 1, np.random.default_rng(0), 5000, extremes=1, refine=True) == [1]


@pytest.mark.parametrize("line,msg", [
    ("logistic = 1", "sampler.logistic = 1: must be true or false"),
    ("logistic = \"yes\"", "sampler.logistic = 'yes': must be true or false"),
    ("novelty = 2", "sampler.novelty = 2: must be true or false"),
    ("lag = 2", "sampler.lag = 2"),
    ("novelty = true\nnovel = true", "sampler.novel: unknown setting for guided (allowed: pool, mutants, explore, "
                                        "extremes, refine, samples, ridge, logistic, novelty, lag, utility); "
                                        "did you mean 'novelty'?"),
])
def test_a_bad_guided_setting_is_one_line_naming_file_key_and_allowed_values(tmp_path, line, msg):
    f = _study(tmp_path)
    f.write_text(f.read_text().replace("pool = 300", f"pool = 300\n{line}"))
    from dse.errors import ConfigError
    with pytest.raises(ConfigError) as ei:
        load_study(f)
    assert str(ei.value).startswith(f"{f}: {msg}") and "\n" not in str(ei.value)


def test_the_logistic_feasibility_is_calibrated_and_follows_its_feature():
    """Outcomes drawn with probability 0.1 where x < 0 and 0.9 where x > 0 (plus a feature of
    noise): the fit gives the rates observed in each half; 4 failures in 200 with no pattern:
    no design far from them is taken as near-certain to fail."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 2000)
    y = (rng.random(2000) < np.where(x > 0, 0.9, 0.1)).astype(float)
    X = np.column_stack([np.sign(x), rng.normal(size=2000)])
    p = estimate.logistic_model(X, y, 10.0)(np.array([[-1.0, 0.0], [1.0, 0.0]]))
    assert abs(p[0] - y[x < 0].mean()) < 0.015 and abs(p[1] - y[x > 0].mean()) < 0.015     # the observed rates
    rare = (np.arange(200) < 4).astype(float)      # 4 failures in 200: nothing is near-certain to fail
    q = estimate.logistic_model(rng.normal(size=(200, 5)), rare, 10.0)(rng.normal(size=(50, 5)) * 3)
    assert np.isfinite(q).all() and q.mean() < 0.1 and q.max() < 0.7


def test_a_resumed_study_with_the_multi_fidelity_settings_ends_as_an_uninterrupted_run(tmp_path):
    study = _study(tmp_path, trials=30)
    study.write_text(study.read_text().replace("pool = 300",
                                               "pool = 300\nlogistic = true\nnovelty = true\nexplore = 0.25"))
    ref = load_study(study, storage=f"sqlite:///{tmp_path / 'ref.db'}")
    assert ref.sampler_settings["logistic"] is True and ref.sampler_settings["novelty"] is True
    run_study(ref)
    storage = f"sqlite:///{tmp_path / 'cut.db'}"
    run_study(load_study(study, storage=storage, trials=17))
    cfg = load_study(study, storage=storage)
    assert run_study(cfg).notes == []
    assert outcome(cfg) == outcome(ref)


def test_novelty_picks_what_the_regression_knows_least_and_never_a_twin_of_a_pick():
    Xev = np.tile(0.1 * np.array([[1, 0], [-1, 0], [0, 1], [0, -1]]), (10, 1))   # evaluated: near the origin
    X = np.array([[0.0, 0.0],                            # among them: known
                  [3.0, 0.0],                            # far along the first feature
                  [3.0, 0.0],                            # its twin: known once the first is taken
                  [0.0, 2.9]])                           # far along the second
    assert estimate.leverage_picks(Xev, X, 2, 1.0) == [1, 3]
    assert estimate.leverage_picks(Xev, X, 1, 1.0) == [1]
    assert sorted(estimate.leverage_picks(Xev, X, 4, 1.0)) == [0, 1, 2, 3]


def _greedy_hv_oracle(E, F, k, rng, samples, weight=None, extremes=0, refine=False):
    """greedy_hv recomputed from scratch at every pick (every candidate's covered uncovered
    samples, its distance to the whole set): the slow reference of the incremental one."""
    k = min(k, len(E))
    ref_set = F if len(F) else E
    lo = np.minimum(E.min(axis=0), ref_set.min(axis=0))
    hi = ref_set.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    X = lo + rng.random((samples, E.shape[1])) * (hi + 0.1 * span - lo)
    X = X[~pareto.weakly_dominated(X, F)] if len(F) else X
    w = np.ones(len(E)) if weight is None else weight
    covered = np.zeros(len(X), dtype=bool)
    S = [list((f - lo) / span) for f in F]
    En = (E - lo) / span
    picked = []
    for _ in range(k):
        if len(picked) < min(extremes, E.shape[1], k):
            j = len(picked)
            best = min(range(len(E)), key=lambda i: (E[i, j], -w[i], i))
            if best not in picked and (not refine or not len(F) or E[best, j] < F[:, j].min()):
                picked.append(best)
                covered |= (E[best] <= X).all(axis=1)
                S.append(list(En[best]))
                continue
        def key(i, covered=covered):
            gain = -1.0 if i in picked else float(((E[i] <= X).all(axis=1) & ~covered).sum()) * w[i]
            dist = 0.0
            if S:
                dist = min(max(En[i][j] - s[j] for j in range(len(s))) for s in S)
                if refine and any(max(abs(En[i][j] - s[j]) for j in range(len(s))) <= guided.EPS_SAME for s in S):
                    dist = np.inf
            return (-gain, dist, i)
        best = min(range(len(E)), key=key)
        picked.append(best)
        covered |= (E[best] <= X).all(axis=1)
        S.append(list(En[best]))
    return picked


@pytest.mark.parametrize("seed", range(12))
def test_greedy_hv_equals_its_slow_oracle(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(3, 60)), int(rng.integers(2, 4))
    E = np.round(rng.random((n, m)), 1 if seed % 3 == 0 else 6)          # ties and twins on some seeds
    F = np.zeros((0, m)) if seed % 4 == 0 else E[rng.choice(n, size=min(n, 4), replace=False)] + 0.05
    F = F[pareto.nondominated(F)] if len(F) else F
    weight = None if seed % 2 else rng.random(n)
    for extremes, refine in ((0, False), (m, False), (m, True), (0, True)):
        args = (E, F, int(rng.integers(1, 12)))
        s = int(rng.integers(1 << 30))
        assert guided.greedy_hv(*args, np.random.default_rng(s), 3000, weight, extremes, refine) == \
            _greedy_hv_oracle(*args, np.random.default_rng(s), 3000, weight, extremes, refine)
