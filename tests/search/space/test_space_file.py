"""The space file's validator (dse/search/space/space_file.py): every bad file gets one exact line naming
the file, the key path and what is allowed."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dse.errors import ConfigError
from dse.search.space.space_file import load_space


def _write(tmp_path: Path, text: str, name: str = "space.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


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
