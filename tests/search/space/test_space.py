"""Search spaces: loading, validation against PARAMS (exact one-line errors), conditional bounds,
grid enumeration against a hand-written oracle, and suggestions through real optuna trials."""
from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import optuna
import pytest

from dse.errors import ConfigError
from dse.search.space.space_file import load_space, space_from_dict


def _write(tmp_path: Path, text: str, name: str = "space.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


BASE = {"core_side": 4, "pe_groups_per_core": 16, "fetch": "fifo", "tile_width": 4}


def test_load_and_grid_with_conditional_bounds_and_when(tmp_path):
    p = _write(tmp_path, """
        description = "test"
        [params]
        core_side = { type = "int", low = 1, high = 3 }
        pe_groups_per_core = { type = "int", low = 1, high = "core_side**2", step = 2 }
        fetch = { type = "categorical", choices = ["fifo", "load_aware"] }
        fetch_queue_depth = { type = "int", low = 4, high = 12, step = 4, when = { fetch = "load_aware" } }
        array_depth = { type = "categorical", choices = ["16K", "32K"] }
        pooling = { type = "fixed", value = "broadcast" }
    """)
    sp = load_space(p)
    assert sp.searched_names == ["core_side", "pe_groups_per_core", "fetch", "fetch_queue_depth", "array_depth"]
    grid = sp.grid(BASE)
    # oracle: plain nested loops
    expect = []
    for side in (1, 2, 3):
        for g in range(1, side * side + 1, 2):
            for fetch in ("fifo", "load_aware"):
                depths = [4, 8, 12] if fetch == "load_aware" else [None]
                for q, d in itertools.product(depths, (16384, 32768)):
                    pt = {"core_side": side, "pe_groups_per_core": g, "fetch": fetch, "array_depth": d,
                          "pooling": "broadcast"}
                    if q is not None:
                        pt["fetch_queue_depth"] = q
                    expect.append(pt)
    key = lambda d: sorted(d.items())  # noqa: E731
    assert sorted(map(key, grid)) == sorted(map(key, expect))
    assert len(grid) == len(expect)


def test_suggest_respects_dependent_bounds_with_real_trials():
    sp = space_from_dict({"params": {
        "core_side": {"type": "int", "low": 1, "high": 6},
        "pe_groups_per_core": {"type": "int", "low": 1, "high": "min(core_side*core_side, 20)"},
        "noc_ghz": {"type": "log", "low": 0.25, "high": 4.0},
        "die_noc_link_bits": {"type": "int", "low": 64, "high": 1024, "step": 64},
    }})
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(60):
        t = study.ask()
        v = sp.suggest(t, BASE)
        assert 1 <= v["pe_groups_per_core"] <= min(v["core_side"] ** 2, 20)
        assert 0.25 <= v["noc_ghz"] <= 4.0
        assert v["die_noc_link_bits"] % 64 == 0
        study.tell(t, 0.0)


def test_dependent_bound_out_of_knob_range_is_reported_when_evaluated():
    sp = space_from_dict({"params": {
        "core_side": {"type": "int", "low": 4, "high": 8},
        "pe_groups_per_core": {"type": "int", "low": 1, "high": "core_side**3"},
    }}, source="s.toml")
    with pytest.raises(ConfigError) as ei:
        sp.grid(BASE)
    assert str(ei.value) == ("s.toml: params.pe_groups_per_core.high = 'core_side**3' evaluates to 512 "
                             "(with core_side = 8): must be an integer in [1, 400]")


def test_float_grid_needs_step():
    sp = space_from_dict({"params": {"noc_ghz": {"type": "float", "low": 0.5, "high": 2.0}}}, source="s.toml")
    with pytest.raises(ConfigError,
                       match=r"^s\.toml: params\.noc_ghz: a float knob needs a 'step' for the grid sampler$"):
        sp.grid(BASE)


def test_float_grid_values_are_clean():
    sp = space_from_dict({"params": {"noc_ghz": {"type": "float", "low": 0.5, "high": 2.0, "step": 0.1}}})
    vals = [g["noc_ghz"] for g in sp.grid(BASE)]
    assert vals[0] == 0.5 and vals[-1] == 2.0 and len(vals) == 16
    assert vals[3] == 0.8   # not 0.8000000000000002


def test_bounds_are_kept_per_value_of_the_knobs_they_refer_to():
    """``Space.bounds`` keeps its values: the same as evaluating them afresh for every design of
    the dependent-bound space, each value of core_side its own entry, constant bounds one entry."""
    sp = space_from_dict({"params": {
        "core_side": {"type": "int", "low": 1, "high": 8},
        "pe_groups_per_core": {"type": "int", "low": 1, "high": "min(core_side**2, 20)"},
        "die_noc_link_bits": {"type": "int", "low": 64, "high": 1024, "step": 64},
    }}, source="s.toml")
    core, groups, link = sp.dims
    for side in [3, 1, 8, 3, 5, 1]:
        env = {**BASE, "core_side": side}
        assert sp.bounds(groups, env) == sp._evaluate_bounds(groups, env) == (1, min(side * side, 20), None)
        assert sp.bounds(link, env) == (64, 1024, 64)
    assert groups.bound_refs == ("core_side",) and link.bound_refs == () and core.bound_refs == ()
    assert sorted(k for k in sp._bounds if k[0] == "pe_groups_per_core") == \
        [("pe_groups_per_core", (int, v)) for v in (1, 3, 5, 8)]
    assert [k for k in sp._bounds if k[0] == "die_noc_link_bits"] == [("die_noc_link_bits",)]


def test_a_bound_that_fails_fails_every_time():
    sp = space_from_dict({"params": {
        "core_side": {"type": "int", "low": 4, "high": 8},
        "pe_groups_per_core": {"type": "int", "low": 1, "high": "core_side**3"},
    }}, source="s.toml")
    for _ in range(2):
        with pytest.raises(ConfigError, match="evaluates to 512"):
            sp.bounds(sp.dims[1], {**BASE, "core_side": 8})
    assert sp.bounds(sp.dims[1], {**BASE, "core_side": 4}) == (1, 64, None)
