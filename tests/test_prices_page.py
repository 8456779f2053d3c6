"""docs/model/prices.md: every knob of spaces/full.toml has a row (what it buys, what it costs, the
constants), and every constant a row names is a constant of the model."""
from __future__ import annotations

import re
from pathlib import Path

from dse.constants import C
from dse.search.space.space_file import load_space

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "model" / "prices.md"


def rows() -> dict[str, list[str]]:
    out = {}
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`(\w+)`", cells[0]) if len(cells) == 4 else None
        if m:
            out[m.group(1)] = cells
    return out


def test_every_knob_of_the_full_space_has_a_price_row():
    table = rows()
    knobs = [d.name for d in load_space(ROOT / "spaces" / "full.toml").dims if d.searched]
    missing = [k for k in knobs if k not in table]
    assert not missing, f"docs/model/prices.md has no row for {missing}"
    for k in knobs:
        _, buys, costs, _ = table[k]
        assert buys and costs, k


def test_every_constant_a_row_names_exists():
    known = {c.name for c in C.all()}
    for knob, (_, _, _, consts) in rows().items():
        for name in re.findall(r"`(\w+)`", consts):
            assert name in known, f"prices.md row {knob}: no constant {name!r} in dse/data/constants.toml"
