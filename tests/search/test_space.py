"""Search spaces: loading, validation against PARAMS (exact one-line errors), conditional bounds,
grid enumeration against a hand-written oracle, and suggestions through real optuna trials."""
from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import optuna
import pytest

from dse.errors import ConfigError
from dse.search.space import load_space, space_from_dict


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


# (space text, exact error after "<file>: ")
BAD_SPACES = [
    ('[params]\ncore_sid = { type = "int", low = 1, high = 4 }\n',
     "params.core_sid: unknown knob (see `dse params`); did you mean 'core_side'?"),
    ('[params]\ncore_side = { type = "int", low = 1, high = 30 }\n',
     "params.core_side.high = 30: must be an integer in [1, 20]"),
    ('[params]\ncore_side = { type = "float", low = 1, high = 4 }\n',
     "params.core_side.type = 'float': core_side is an integer knob; use type = \"int\", \"log\", "
     "\"categorical\" or \"fixed\""),
    ('[params]\ncore_side = { type = "range", low = 1, high = 4 }\n',
     "params.core_side.type = 'range': must be one of int, float, log, categorical, fixed"),
    ('[params]\npooling = { type = "categorical", choices = ["direct", "multicast"] }\n',
     "params.pooling.choices[1] = 'multicast': must be one of 'direct', 'broadcast'"),
    ('[params]\nmodel = { type = "categorical", choices = ["glm-5.2"] }\n',
     "params.model: not allowed in a space (the model is chosen by the study's [workload] models, not by the space)"),
    ('[params]\ncore_side = { type = "int", low = 1, high = "__import__(\'os\')" }\n',
     "params.core_side.high = \"__import__('os')\": only min() and max() may be called (allowed: numbers, "
     "knob names, + - * / // % **, parentheses, min(), max())"),
    ('[params]\npe_groups_per_core = { type = "int", low = 1, high = "core_side**2" }\n'
     'core_side = { type = "int", low = 1, high = 4 }\n',
     "params.pe_groups_per_core.high = 'core_side**2': refers to 'core_side', which the space lists later; "
     "list core_side before pe_groups_per_core"),
    ('[params]\ncore_mesh_link_bits = { type = "int", low = 64, high = 1024, step = 12 }\n',
     "params.core_mesh_link_bits.step: core_mesh_link_bits must stay a multiple of 8; give a constant step "
     "that is a multiple of 8 (or use categorical choices)"),
    ('[params]\nnoc_ghz = { type = "float", low = 0.5, high = 2, step = 0.5, log = true }\n',
     "params.noc_ghz.step: not allowed with a log scale (remove step or log)"),
    ('[params]\ncore_side = { type = "int", low = 6, high = 2 }\n',
     "params.core_side: low 6 > high 2: must be low <= high"),
    ('[params]\npooling = { type = "fixed" }\n',
     "params.pooling.value: missing (a fixed knob needs a value, one of 'direct', 'broadcast')"),
    ('[params]\ncore_side = { type = "int", low = 1, high = 4, stride = 2 }\n',
     "params.core_side.stride: unknown key for type 'int' (allowed: doc, high, log, low, step, type, when); "
     "did you mean 'step'?"),
    ('[params]\ncore_side = { type = "int", low = 1, high = 4, when = { pooling = "direct" } }\n',
     "params.core_side.when.pooling: must name a knob listed earlier in the space (earlier: none)"),
    ('[parms]\n', "parms: unknown key (allowed: description, params); did you mean 'params'?"),
    ('[params]\npooling = { type = "fixed", value = "broadcast" }\n',
     "params: every knob is fixed; a space needs at least one searched knob"),
]


@pytest.mark.parametrize("text,msg", BAD_SPACES)
def test_bad_space_exact_one_line_error(tmp_path, text, msg):
    p = _write(tmp_path, text)
    with pytest.raises(ConfigError) as ei:
        load_space(p)
    assert str(ei.value) == f"{p}: {msg}"
    assert "\n" not in str(ei.value)


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
    with pytest.raises(ConfigError, match=r"^s\.toml: params\.noc_ghz: a float knob needs a 'step' for the grid sampler$"):
        sp.grid(BASE)


def test_float_grid_values_are_clean():
    sp = space_from_dict({"params": {"noc_ghz": {"type": "float", "low": 0.5, "high": 2.0, "step": 0.1}}})
    vals = [g["noc_ghz"] for g in sp.grid(BASE)]
    assert vals[0] == 0.5 and vals[-1] == 2.0 and len(vals) == 16
    assert vals[3] == 0.8   # not 0.8000000000000002
