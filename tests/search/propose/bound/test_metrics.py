"""The closed-form bounds of multi-fidelity search are never better than the trace-driven value.

Designs are drawn by hypothesis from ``spaces/full.toml`` (every knob, its own bounds and
conditions) on two catalog models and two batches; each is evaluated trace-driven (the reference)
and bounded from the vectorised closed form (``dse.search.propose.bound.fidelity.closed_form_bounds``). Every
metric the shipped studies' objectives and constraints read has a bound in the right direction."""
from __future__ import annotations

import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.mapping.placement import domain
from dse.search.execute.evaluation import evaluate_design
from dse.search.propose.bound import metrics as bounds
from dse.search.propose.bound.fidelity import (
    bound_value,
    closed_form_bounds,
    closed_form_bounds_many,
    closed_form_bounds_reference,
    constraint_view,
    design_bound,
    valid_for_constraint,
    valid_for_objective,
)
from dse.search.space.objectives import load_objectives, score
from dse.search.space.space_file import load_space
from dse.spec import DesignPoint
from tests.draw import DrawTrial

ROOT = Path(__file__).resolve().parents[4]
FULL = load_space(ROOT / "spaces" / "full.toml")
EXACT_REL = 1e-9


def _shipped_objective_sets():
    return [load_objectives(p) for p in sorted((ROOT / "objectives").glob("*.toml"))]


def test_every_metric_of_the_shipped_studies_has_a_bound():
    """The shipped objectives (all but the closed-form-only ones) can be screened on."""
    for objs in _shipped_objective_sets():
        for o in objs.objectives:
            assert valid_for_objective(o), f"{objs.source}: {o.metric} ({o.direction}) has no bound"
        for c in objs.constraints:
            assert valid_for_constraint(c), f"{objs.source}: {c.name} has no bound"


def _check(name: str, bound: float, value: float, where: str) -> None:
    kind = bounds.KINDS[name]
    if kind == bounds.EXACT:
        assert math.isclose(bound, value, rel_tol=EXACT_REL, abs_tol=1e-12), f"{where}: {name} {bound} != {value}"
    elif kind == bounds.LOWER:
        assert bound <= value, f"{where}: {name}: lower bound {bound} > trace-driven {value}"
    else:
        assert bound >= value, f"{where}: {name}: upper bound {bound} < trace-driven {value}"


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_bounds_are_never_better_than_the_trace_driven_value(data):
    model = data.draw(st.sampled_from(["qwen3.5-35b-a3b", "qwen3-30b-a3b"]), label="model")
    workload = {"batch": data.draw(st.sampled_from([16, 128]), label="batch"), "trace": "synthetic"}
    design = {**FULL.suggest(DrawTrial(data), {**workload, "model": model}), **workload}
    point = DesignPoint.from_dict({**design, "model": model})
    traced = evaluate_design(design, [model])[model]
    bound = closed_form_bounds({model: point})[model]
    assert bound["feasible"] == traced["feasible"], (bound["infeasible_reason"], traced["infeasible_reason"])
    checked = 0
    for name, b in bound.items():
        if name in ("feasible", "infeasible_reason") or traced.get(name) is None:
            continue
        _check(name, b, traced[name], f"{design}")
        checked += 1
    assert checked >= 20 or not traced["feasible"]


def _same(a, b, where: str) -> None:
    assert list(a) == list(b), f"{where}: keys differ: {sorted(set(a) ^ set(b))}"
    for k, x in a.items():
        y = b[k]
        assert type(x) is type(y), f"{where}: {k}: {x!r} vs {y!r}"
        assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), f"{where}: {k}: {x!r} vs {y!r}"


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_many_designs_at_once_equal_the_row_by_row_reference(data):
    """``closed_form_bounds_many`` (columns converted at once, memoised domain extents and window
    statistics) equals ``closed_form_bounds_reference`` bit for bit, on mixed workloads, layouts
    and closed-form (catalog) points, in one table; and so does ``design_bound`` of every shipped
    objective set."""
    designs = []
    for _ in range(data.draw(st.integers(1, 12), label="designs")):
        workload = {"batch": data.draw(st.sampled_from([16, 128, None]), label="batch"),
                    "trace": data.draw(st.sampled_from(["synthetic", "catalog"]), label="trace"),
                    "layer_layout": data.draw(st.sampled_from(["interleaved", "packed"]), label="layout")}
        workload = {k: v for k, v in workload.items() if v is not None}
        models = data.draw(st.lists(st.sampled_from(["qwen3.5-35b-a3b", "qwen3-30b-a3b"]), min_size=1,
                                    max_size=2, unique=True), label="models")
        design = {**FULL.suggest(DrawTrial(data), {**workload, "model": models[0]}), **workload}
        designs.append({m: DesignPoint.from_dict({**design, "model": m}) for m in models})
    fast, ref = closed_form_bounds_many(designs), closed_form_bounds_reference(designs)
    assert len(fast) == len(ref) == len(designs)
    for i, (a, b) in enumerate(zip(ref, fast)):
        assert list(a) == list(b)
        for m in a:
            _same(a[m], b[m], f"design {i} on {m}")
        for objs in _shipped_objective_sets():          # design_bound, set up once per objective set
            assert design_bound(objs, b) == (
                [bound_value(o, [x.get(o.metric) for x in a.values()]) for o in objs.objectives],
                score({k: constraint_view(objs, x) for k, x in a.items()}, objs)), f"design {i}, {objs.source}"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(experts=st.sampled_from([8, 128, 256, 512]), side=st.integers(1, 8), groups=st.integers(1, 70),
       x=st.sampled_from([8, 12, 16, 20, 24]), y=st.sampled_from([8, 12, 16, 20, 24]),
       rem=st.sampled_from(["partial", "idle"]), layout=st.sampled_from(["interleaved", "packed"]))
def test_domain_extent_equals_the_built_domain(experts, side, groups, x, y, rem, layout):
    dom = domain(experts, side, groups, x, y, rem, layout)
    assert bounds.domain_extent(experts, side, groups, x, y, rem, layout) == (
        dom.units, max(dom.group_units), max(dom.core_units))
