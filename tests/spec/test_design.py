"""The validated design point: defaults, parsing, overrides and one-line errors."""
from __future__ import annotations

import pytest

from dse.errors import ConfigError
from dse.spec import PARAMS, DesignPoint, parse_int


def test_defaults_are_the_published_design():
    p = DesignPoint()
    assert (p.core_side, p.tile_width, p.array_depth) == (4, 4, 32768)
    assert p.groups == 16                       # default side^2
    assert p.run_batch == 128                   # native batch of the default model
    assert (p.n_macros, p.macro_width_bits, p.macro_mhz, p.pe_mhz) == (16, 128, 200.0, 400.0)
    assert p.reduction_order == "ep_first"


@pytest.mark.parametrize("text,value", [("32K", 32768), ("32k", 32768), ("16Ki", 16384), ("1M", 1 << 20),
                                        ("24576", 24576), ("1.5K", 1536)])
def test_parse_int_suffixes(text, value):
    assert parse_int(text) == value


def test_sections_flat_and_overrides_agree():
    a = DesignPoint.from_dict({"hardware": {"core_side": 2, "array_depth": "16K"}, "workload": {"batch": 8}})
    b = DesignPoint.from_dict({"core_side": 2, "array_depth": 16384, "batch": 8})
    c = DesignPoint.from_dict({}, overrides=["hardware.core_side=2", "array_depth=16K", "batch=8"])
    assert a == b == c and hash(a) == hash(c)
    assert a.groups == 4


def test_round_trip_through_sections():
    p = DesignPoint.from_dict({"core_side": 6, "model": "glm-5.2", "placement": "coactivation"})
    q = DesignPoint.from_dict(p.to_dict(sections=True, resolved=True))
    assert q.to_dict(resolved=True) == p.to_dict(resolved=True)


@pytest.mark.parametrize("data,needle", [
    ({"core_side": 0}, "core_side = 0: must be an integer in [1, 20]"),
    ({"core_side": 2.5}, "core_side = 2.5: must be an integer"),
    ({"core_side": True}, "must be an integer"),
    ({"macro_mhz": float("nan")}, "not finite"),
    ({"macro_mhz": float("inf")}, "macro_mhz = inf"),
    ({"read_bw_scale": 0}, "in (0, 16]"),
    ({"macro_width_bits": 100}, "a multiple of 8"),
    ({"reduction_order": "tp"}, "one of 'ep_first', 'tp_first'"),
    ({"model": "gpt-5"}, "one of 'qwen3.5-35b-a3b'"),
    ({"core_sid": 4}, "did you mean 'core_side'"),
    ({"hardware": {"pooling": "direct"}}, "hardware.pooling: unknown key (allowed in [hardware]"),
    ({"hardware": 3}, "must be a table"),
    ({"pe_groups_per_core": 17}, "pe_groups_per_core = 17: must be an integer in [1, 16]"),
    ({"core_side": 21}, "in [1, 20]"),
])
def test_bad_values_name_key_and_allowed(data, needle):
    with pytest.raises(ConfigError) as exc:
        DesignPoint.from_dict(data, source="d.toml")
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg
    assert msg.startswith("d.toml: ")


def test_bad_override_syntax():
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        DesignPoint.from_dict({}, overrides=["core_side"])
    with pytest.raises(ConfigError, match="unknown section 'hw'"):
        DesignPoint.from_dict({}, overrides=["hw.core_side=2"])


def test_from_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        DesignPoint.from_file(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[hardware\ncore_side = 4\n")
    with pytest.raises(ConfigError, match="bad.toml: TOML syntax error"):
        DesignPoint.from_file(bad)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="not a UTF-8 text file"):
        DesignPoint.from_file(binary)


def test_trace_path_in_file_is_relative_to_the_file(tmp_path):
    d = tmp_path / "sub"
    d.mkdir()
    f = d / "design.toml"
    f.write_text('[workload]\ntrace = "traces/t.npz"\n')
    p = DesignPoint.from_file(f)
    assert p.trace == str((d / "traces" / "t.npz").resolve())


def test_export_sections_are_ignored_on_input(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text("[hardware]\ncore_side = 2\n[metrics]\nt_layer_us = 1.0\n[provenance]\nstudy = 'x'\n")
    assert DesignPoint.from_file(f).core_side == 2


def test_every_param_documents_itself():
    for p in PARAMS:
        assert p.doc and p.part in ("hardware", "workload", "mapping")
        assert p.allowed()


def test_pooling_is_moot_at_one_pe_group_per_core_and_the_architecture_view_says_so():
    """``architecture_view`` shows pooling as ``either`` only where the model cannot tell the two
    poolings apart: one PE group per core gives identical metrics, more groups do not."""
    from dse.pipeline.evaluate import evaluate
    from dse.spec import EITHER, architecture_view

    def metrics(**kw):
        out = evaluate(DesignPoint.from_dict({"trace_steps": 32, "batch": 32, **kw}))
        return {k: v for k, v in out.metrics.items() if isinstance(v, (int, float))}

    for side, groups in ((4, 1), (3, 1)):
        a = metrics(core_side=side, pe_groups_per_core=groups, pooling="direct")
        b = metrics(core_side=side, pe_groups_per_core=groups, pooling="broadcast")
        assert a == b
        view = architecture_view({"core_side": side, "pe_groups_per_core": groups, "pooling": "direct"})
        assert view["pooling"] == EITHER
    a = metrics(core_side=4, pe_groups_per_core=4, pooling="direct")
    b = metrics(core_side=4, pe_groups_per_core=4, pooling="broadcast")
    assert a != b
    assert architecture_view({"core_side": 4, "pe_groups_per_core": 4, "pooling": "direct"})["pooling"] == "direct"
    assert architecture_view({"core_side": 1, "pooling": "broadcast"})["pooling"] == EITHER      # default 1 group
    assert architecture_view({"core_side": 4, "pooling": "broadcast"})["pooling"] == "broadcast"  # default 16
