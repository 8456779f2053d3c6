"""Hypothesis fuzz of the design-point parser: any input gives a DesignPoint or a DSEError.

Inputs: arbitrary nested dicts with real and invented keys, hostile values (huge ints, nan/inf,
dates, nested arrays...), arbitrary TOML text and raw bytes in a file, and arbitrary `--set`
strings. A DSEError must be one line naming where the problem is.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
import tempfile
from pathlib import Path

import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.errors import DSEError
from dse.spec import PARAMS, PARTS, DesignPoint

KNOBS = [p.name for p in PARAMS]
SETTINGS = settings(max_examples=int(os.environ.get("DSE_FUZZ_EXAMPLES", 300)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=-(10 ** 400), max_value=10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.sampled_from(["16K", "32k", "1M", "0x10", "1e3", "nan", "inf", "", "none", " 4 "]),
    st.dates(), st.datetimes(), st.times(),
)
values = st.recursive(scalars,
                      lambda inner: (st.lists(inner, max_size=3)
                                     | st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=6)
keys = st.one_of(st.sampled_from(KNOBS), st.sampled_from(PARTS + ("metrics", "provenance")), st.text(max_size=12))
flat = st.dictionaries(keys, values, max_size=6)
sectioned = st.dictionaries(st.sampled_from(PARTS + ("metrics",)),
                            st.dictionaries(st.sampled_from(KNOBS) | st.text(max_size=8), values, max_size=4),
                            max_size=3)
# Mostly-valid points: real knobs with plausible numbers, so the cross-field checks run too.
plausible = st.dictionaries(st.sampled_from(KNOBS), st.integers(-2, 70) | st.floats(-1, 6000) | st.sampled_from(
    ["partial", "idle", "lpt", "direct", "broadcast", "fifo", "catalog", "synthetic", "h20"]), max_size=8)


def _check(fn):
    try:
        point = fn()
    except DSEError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg and len(msg) < 2000
        return None
    assert isinstance(point, DesignPoint)
    hash(point)  # frozen and hashable whatever came in
    # A valid point round-trips through its own dict.
    assert DesignPoint.from_dict(point.to_dict(sections=True)) == point
    assert point._flat() == dataclasses.asdict(point)       # every field a scalar: shallow = deep
    return point


@SETTINGS
@given(data=st.one_of(flat, sectioned, plausible, values))
def test_from_dict_gives_point_or_dse_error(data):
    _check(lambda: DesignPoint.from_dict(data, source="fuzz.toml"))


@SETTINGS
@given(overrides=st.lists(st.one_of(
    st.text(max_size=40),
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(KNOBS + [f"{p.part}.{p.name}" for p in PARAMS]),
              st.text(max_size=20) | st.integers().map(str) | st.floats().map(str))), max_size=4))
def test_overrides_give_point_or_dse_error(overrides):
    _check(lambda: DesignPoint.from_dict({}, overrides=overrides))


@SETTINGS
@given(data=st.one_of(flat, sectioned, plausible))
def test_from_file_valid_toml_gives_point_or_dse_error(data):
    try:
        text = tomli_w.dumps(data)
    except (TypeError, ValueError):  # None or an unsupported value: not expressible in TOML
        return
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "d.toml"
        f.write_text(text)
        _check(lambda: DesignPoint.from_file(f))


@SETTINGS
@given(raw=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                     st.lists(st.sampled_from(["[hardware]", "[workload]", "core_side = ", "4", "nan", "inf",
                                               "\"", "[", "]", "{", "}", "=", "\n", "x.y", "'", "1e999", "#",
                                               "[[a]]", "trace = \"", "\\u0000"]), max_size=20)
                     .map(lambda parts: "".join(parts).encode())))
def test_from_file_arbitrary_bytes_give_point_or_dse_error(raw):
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "d.toml"
        f.write_bytes(raw)
        _check(lambda: DesignPoint.from_file(f))


def test_fuzz_strategies_reach_both_outcomes():
    """Sanity: the strategies above produce valid points too, not only errors."""
    assert _check(lambda: DesignPoint.from_dict({"hardware": {"core_side": 6}}, source="x")) is not None
    assert _check(lambda: DesignPoint.from_dict({"hardware": {"core_side": dt.date(2020, 1, 1)}}, source="x")) is None
