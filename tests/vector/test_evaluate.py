"""The vectorised closed-form evaluator equals the scalar pipeline (the reference), row by row:
same keys, same types, floats within 1e-12 relative, same infeasible reasons."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.catalog import gpu_names, model_names
from dse.pipeline.evaluate import evaluate
from dse.search.space.space_file import load_space
from dse.spec import DesignPoint
from dse.vector import Columns, evaluate_chunks, evaluate_columns
from tests.draw import DrawTrial as _DrawTrial

FULL = Path(__file__).resolve().parents[2] / "spaces" / "full.toml"
REL = 1e-12


def _design(data, space, base) -> DesignPoint:
    workload = {
        "model": data.draw(st.sampled_from(model_names()), label="model"),
        "batch": data.draw(st.sampled_from([1, 3, 8, 24, 64, 128, 256, 1024]), label="batch"),
        "context": data.draw(st.sampled_from([512, 4096, 32768]), label="context"),
        "attn_gpu": data.draw(st.sampled_from(gpu_names()), label="attn_gpu"),
    }
    values = space.suggest(_DrawTrial(data), {**base, **workload})
    return DesignPoint.from_dict({**values, **workload, "trace": "catalog"})


def assert_same(scalar: dict, vector: dict, where: str = "") -> None:
    assert set(scalar) == set(vector), f"{where}: keys differ: {sorted(set(scalar) ^ set(vector))}"
    for k, a in scalar.items():
        b = vector[k]
        assert type(a) is type(b), f"{where}: {k}: {a!r} vs {b!r}"
        if isinstance(a, float):
            assert a == b or abs(a - b) <= REL * max(abs(a), abs(b)), f"{where}: {k}: {a!r} vs {b!r}"
        else:
            assert a == b, f"{where}: {k}: {a!r} vs {b!r}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_designs_of_the_full_space_equal_the_scalar_path(data):
    space = load_space(FULL)
    base = DesignPoint().to_dict()
    base["pe_groups_per_core"] = 16
    n = data.draw(st.integers(1, 12), label="points")
    points = [_design(data, space, base) for _ in range(n)]
    table = evaluate_columns(Columns.from_points(points))
    for i, p in enumerate(points):
        assert_same(evaluate(p).metrics, table.row(i), f"row {i} {p}")


def test_both_infeasible_reasons_and_feasible_rows_match():
    points = [DesignPoint.from_dict({"trace": "catalog", "model": "glm-5.2", "array_depth": "16K"}),
              DesignPoint.from_dict({"trace": "catalog", "array_depth": "64K"}),
              DesignPoint.from_dict({"trace": "catalog"}),
              DesignPoint.from_dict({"trace": "catalog", "core_side": 6, "core_remainder": "idle", "batch": 8})]
    table = evaluate_columns(Columns.from_points(points))
    reasons = [table.row(i)["infeasible_reason"] for i in range(4)]
    assert reasons[0].startswith("chunk of 18432 columns") and reasons[1].startswith("die area")
    assert list(table.feasible) == [False, False, True, True]
    for i, p in enumerate(points):
        assert_same(evaluate(p).metrics, table.row(i), f"row {i}")


def test_chunks_equal_one_table():
    rng = np.random.default_rng(1)
    n = 500
    cols = Columns.from_values({"core_side": rng.integers(1, 9, n), "array_depth": rng.integers(2, 17, n) * 4096,
                                "model": rng.integers(0, len(model_names()), n)}, n)
    whole = evaluate_columns(cols)
    for start, part in evaluate_chunks(cols, chunk=128):
        for name in ("ffn_latency_us_per_token", "die_area_mm2", "usd_per_mtok"):
            np.testing.assert_array_equal(part.column(name), whole.column(name)[start:start + part.n])
        np.testing.assert_array_equal(part.feasible, whole.feasible[start:start + part.n])


def test_skipped_parts_leave_every_needed_metric_equal():
    from dse.vector.evaluate import OPTIONAL, optional_metrics, skipped
    made = optional_metrics()
    assert all(made[p] for p in OPTIONAL) and "usd_per_mtok" in made["cost"] and "h20_us_per_token" in made["gpu"]
    assert skipped(["ffn_latency_us_per_token", "pool_power_w"]) == frozenset(OPTIONAL)
    assert skipped(["usd_per_mtok"]) == {"serving"} and skipped(None) == frozenset()
    rng = np.random.default_rng(4)
    cols = Columns.from_values({"core_side": rng.choice([1, 2, 4, 8], 300),
                                "array_depth": rng.choice([16384, 32768], 300),
                                "model": rng.integers(0, len(model_names()), 300),
                                "batch": rng.choice([1, 64, 256], 300),
                                "macro_mhz": rng.uniform(100, 400, 300)}, 300)
    full = evaluate_columns(cols)
    for need in (["ffn_latency_us_per_token", "pool_power_w", "die_area_mm2"], ["usd_per_mtok", "t_layer_us"],
                 ["tpot_af_us"]):
        part = evaluate_columns(cols, need=need)
        assert set(need) <= set(part.values) < set(full.values)
        np.testing.assert_array_equal(part.feasible, full.feasible)
        for k in part.values:
            if part.kinds[k] != "str":
                np.testing.assert_array_equal(part.column(k), full.column(k), err_msg=k)


def test_per_key_results_kept_across_tables_follow_an_override_of_the_constants():
    """Per-key results are kept between tables (``Models.kept``) under the constants they were
    computed with: a drawn ``stretch_per_hop`` gives its own stretch, and the nominal comes back."""
    from dse.constants import C
    cols = Columns.from_values({"core_side": [2, 4, 8]}, 3)
    nominal = evaluate_columns(cols).column("stretch_hop_factor")
    with C.overridden({"stretch_per_hop": C.stretch_per_hop * 2}):
        drawn = evaluate_columns(cols).column("stretch_hop_factor")
        scalar = [evaluate(cols.point(i)).metrics["stretch_hop_factor"] for i in range(3)]
    assert list(drawn) == scalar and (drawn >= nominal).all() and (drawn > nominal).any()
    assert list(evaluate_columns(cols).column("stretch_hop_factor")) == list(nominal)
