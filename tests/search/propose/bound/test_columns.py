"""The guided sampler's screen on columns (``bound_table.bound_arrays``) equals its per-design
path (``estimate.bound_arrays_reference``: a dict of bound metrics per design and workload, scored one by
one), bit for bit: bounds, verdicts and hints, over random designs and mutants of
``spaces/full.toml`` (invalid ones included), one or two workloads, every shipped objective set
with bounds in its directions and aggregates over the workloads."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.search.propose.bound import estimate
from dse.search.propose.sample import draw
from dse.search.space.objectives import ObjectiveSet, load_objectives
from dse.search.study.study import load_study

ROOT = Path(__file__).resolve().parents[4]
FULL = load_study(ROOT / "studies" / "full.toml")
OBJECTIVES = [load_objectives(p) for p in sorted((ROOT / "objectives").glob("*.toml"))]


def _designs(cfg, seed: int, n: int = 120) -> list[dict]:
    rng = np.random.default_rng(seed)
    base = cfg.base_env()
    out = [cfg.design(draw.uniform(cfg.space, base, rng)) for _ in range(n)]
    out += [cfg.design(draw.mutant(cfg.space, base, rng, out[i % 9])) for i in range(n)]
    out[3] = {**out[3], "pe_groups_per_core": 1000}          # invalid: cfg.points refuses it
    return out


def _assert_equal(cfg, designs) -> None:
    slow = estimate.bound_arrays_reference(cfg, designs)
    fast = estimate.bound_arrays(cfg, designs)
    for name, a, b in zip(("bounds", "ok", "hints"), slow, fast):
        assert a.shape == b.shape and a.dtype == b.dtype, name
        same = (a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype != bool else a == b
        bad = np.argwhere(~same)
        assert not len(bad), f"{name} differ at {bad[:3].tolist()}: {[(a[tuple(i)], b[tuple(i)]) for i in bad[:3]]}"


def _aggregated(objs: ObjectiveSet, aggregate: str) -> ObjectiveSet:
    return replace(objs, objectives=tuple(replace(o, aggregate=aggregate) for o in objs.objectives))


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), objs=st.sampled_from(OBJECTIVES),
       models=st.sampled_from([("qwen3.5-35b-a3b",), ("qwen3.5-35b-a3b", "qwen3-30b-a3b")]),
       aggregate=st.sampled_from(["worst", "max", "min", "sum", "mean"]),
       batch=st.sampled_from([None, 16, 128]))
def test_columns_equal_the_per_design_path(seed, objs, models, aggregate, batch):
    base = {**FULL.base, **({"batch": batch} if batch else {})}
    cfg = replace(FULL, objectives=_aggregated(objs, aggregate), models=models, base=base)
    _assert_equal(cfg, _designs(cfg, seed))


def test_a_closed_form_study_goes_the_per_design_way_and_agrees():
    cfg = replace(FULL, base={**FULL.base, "trace": "catalog"})
    _assert_equal(cfg, _designs(cfg, 3, 40))


def test_no_valid_design():
    B, ok, H = estimate.bound_arrays(FULL, [{"pe_groups_per_core": 1000}])
    assert np.isnan(B).all() and not ok.any() and not H.any()


def test_a_design_row_is_the_same_computed_alone_or_among_others_and_the_memo_returns_it():
    designs = _designs(FULL, 11, 60)
    whole = estimate.bound_arrays(FULL, designs)
    memo = estimate.BoundMemo()
    memo.keep(designs[::3], *estimate.bound_arrays(FULL, designs[::3]))      # some kept before, in their own batch
    got = memo.arrays(FULL, designs)                                          # the rest computed now
    again = estimate.BoundMemo().arrays(FULL, designs[5:9])
    for a, b in zip(whole, got):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype != bool)
    for a, b in zip(whole, again):
        assert np.array_equal(a[5:9], b, equal_nan=a.dtype != bool)
    assert len(memo.rows) == len({memo.key(d) for d in designs})


def test_a_design_key_identifies_exactly_the_sorted_name_repr_pairs():
    designs = _designs(FULL, 11, 30)
    designs += [dict(reversed(list(d.items()))) for d in designs[:10]]          # other orders of the names
    designs += [{**d, "core_side": float(d["core_side"])} for d in designs[:5]]  # 4.0 is not 4
    designs += [{**d, "core_side": True} for d in designs[:2]] + [{**d, "core_side": 1} for d in designs[:2]]
    designs += [{k: v for k, v in d.items() if k != "fetch"} for d in designs[:3]]

    def oracle(d):
        return tuple(sorted((k, repr(v)) for k, v in d.items()))
    for a in designs:
        for b in designs:
            assert (estimate.BoundMemo.key(a) == estimate.BoundMemo.key(b)) == (oracle(a) == oracle(b))
    assert len({estimate.BoundMemo.key(d) for d in designs}) == len({oracle(d) for d in designs}) < len(designs)


def test_three_workloads_with_a_summed_objective_take_the_columns_and_agree():
    """The catalog study's shape (three trace-driven models, cost summed): the column path, not the
    per-design one, equal to it bit for bit (math.fsum of three values, row by row)."""
    cfg = load_study(ROOT / "studies" / "catalog.toml")
    designs = _designs(cfg, 5, 60)
    _assert_equal(cfg, designs)
    calls = []
    estimate.bound_table.bound_arrays(cfg, designs, estimate.HINT_METRICS,
                                      lambda *a: calls.append(1) or estimate.bound_arrays_reference(*a))
    assert not calls


def test_the_designs_are_validated_once_for_every_model():
    """``valid_rows`` validates a design's knobs once, whatever the number of models (the catalog
    study validated each design three times): per model, the verdict and values of
    ``validate_flat`` with that model, invalid designs and a model the knob refuses included."""
    from dse.search.propose.bound.columns import _per_model
    from dse.spec.many import validate_flat
    cfg = load_study(ROOT / "studies" / "catalog.toml")
    designs = _designs(cfg, 11, 40)
    for models in (cfg.models, (cfg.models[0], "no-such-model", cfg.models[1])):
        got = _per_model(designs, models)
        for m, (ok, values) in zip(models, got):
            want_ok, want = validate_flat(designs, {"model": m})
            assert (ok == want_ok).all() and list(values) == list(want)
            assert all(values[k] == want[k] for k in want), m
        assert not got[1][0].any() if "no-such-model" in models else got[1][0].any()
