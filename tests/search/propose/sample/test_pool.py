"""The pool drawn column by column (``draw_pool.pool``) against the design-by-design draw
(``draw_pool.sequential``: ``draw.uniform`` / ``draw.mutant``): every point legal, the same pool
from the same seed, the same marginal distribution of every knob (a two-sample chi-square), the
parent's knobs kept by a mutant, and the keys of ``BoundMemo.key`` honoured."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dse.search.propose.bound.estimate import BoundMemo
from dse.search.propose.sample import draw
from dse.search.propose.sample import pool as draw_pool
from dse.search.space.space_file import load_space, space_from_dict
from dse.search.study.study import load_study
from tests.search.propose.sample.test_draw import ODD_PARAMS

ROOT = Path(__file__).resolve().parents[4]
BASE = load_study(ROOT / "studies" / "full.toml").base_env()
FULL = load_space(ROOT / "spaces" / "full.toml")
# log int and float, floats without a step, expression bounds on two earlier knobs, a stepped
# float with an expression bound, a fixed knob, conditions on a categorical and on an int knob, and
# a bound on a conditional knob (absent: the base value)
ODD = space_from_dict({"params": {**ODD_PARAMS,
    "n_macros": {"type": "int", "low": 4, "high": "fetch_queue_depth + 4", "step": 4},
    "tile_width": {"type": "categorical", "choices": [1, 2, 4, 8], "when": {"core_side": [1, 2, 3]}},
    "read_bw_scale": {"type": "categorical", "choices": [0.5, 1.0, 2.0]},
}}, source="odd")
SPACES = {"full": FULL, "odd": ODD}


def _parents(space, n: int, seed: int = 99) -> list[dict]:
    return draw_pool.sequential(space, BASE, np.random.default_rng(seed), n, 0.0, [])


def _distinct(points: list[dict]) -> list[dict]:
    seen, out = set(), []
    for p in points:
        k = BoundMemo.key(p)
        if k not in seen:
            seen.add(k)
            out.append(p)
    return out


@pytest.mark.parametrize("name", sorted(SPACES))
@pytest.mark.parametrize("mutants", [0.0, 0.75, 1.0])
def test_every_point_is_legal_and_of_the_draw_types(name, mutants):
    space = SPACES[name]
    pool = draw_pool.pool(space, BASE, np.random.default_rng(3), 600, mutants, _parents(space, 5), set())
    ref = _parents(space, 200, seed=4)
    types = {k: type(v) for p in ref for k, v in p.items()}
    assert len(pool) > 300
    for p in pool:
        assert draw.is_legal(space, BASE, p), p
        assert all(type(v) is types[k] for k, v in p.items()), p
        assert list(p) == [k for k in space.searched_names if k in p]      # the space's order, as draw's


def test_same_seed_same_pool_and_another_seed_another():
    parents = _parents(FULL, 7)
    a, b, c = (draw_pool.pool(FULL, BASE, np.random.default_rng(s), 500, 0.75, parents, set()) for s in (5, 5, 6))
    assert a == b
    assert [list(p.items()) for p in a] == [list(p.items()) for p in b]
    assert a != c


def test_duplicates_and_known_keys_are_left_out_by_bound_memo_key():
    parents = _parents(FULL, 2)                     # few parents: many duplicate mutants
    full = draw_pool.pool(FULL, BASE, np.random.default_rng(8), 800, 1.0, parents, set())
    assert len({BoundMemo.key(p) for p in full}) == len(full) < 800
    known = {BoundMemo.key(p) for p in full[::3]} | {BoundMemo.key(parents[0])}
    again = draw_pool.pool(FULL, BASE, np.random.default_rng(8), 800, 1.0, parents, known)
    assert again == [p for p in full if BoundMemo.key(p) not in known]


def _bins(a: list, b: list) -> tuple[list, list]:
    """Each value's bin: itself, or one of 10 bins between the quantiles of both samples if
    they are numbers of more than 40 values."""
    both = a + b
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in both)
    if len(set(both)) <= 40 or not numbers:
        return [repr(v) for v in a], [repr(v) for v in b]
    edges = np.quantile(np.array(both, dtype=float), np.linspace(0, 1, 11)[1:-1])
    return [int(np.searchsorted(edges, v)) for v in a], [int(np.searchsorted(edges, v)) for v in b]


def chi2_z(a: list, b: list) -> float:
    """A two-sample chi-square test of the binned values ``a`` and ``b`` (bins under 10 counts
    merged), as a normal deviate (Wilson-Hilferty): above 4, p < 3e-5 that they share a law."""
    keys = sorted(set(a) | set(b), key=repr)
    ca = np.array([a.count(k) for k in keys], dtype=float)
    cb = np.array([b.count(k) for k in keys], dtype=float)
    small = ca + cb < 10
    ca = np.append(ca[~small], ca[small].sum())
    cb = np.append(cb[~small], cb[small].sum())
    keep = ca + cb > 0
    ca, cb = ca[keep], cb[keep]
    if len(ca) < 2:
        return 0.0
    A, B = ca.sum(), cb.sum()
    x = float(((ca * math.sqrt(B / A) - cb * math.sqrt(A / B)) ** 2 / (ca + cb)).sum())
    df = len(ca) - 1
    return ((x / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))


def _marginals(points: list[dict], names: list[str], parent: dict) -> dict[str, list]:
    """Each knob's values ("absent": inactive), a joint pair, the number of active knobs, and the
    number of knobs that differ from ``parent``."""
    out = {k: [p.get(k, "absent") for p in points] for k in names}
    out["core_side, pe_groups_per_core"] = [(p["core_side"], p["pe_groups_per_core"]) for p in points]
    out["knobs"] = [len(p) for p in points]
    out["changed"] = [sum(p.get(k) != parent.get(k) for k in names) for p in points]
    return out


def _worst_z(space, mutants: float, n_parents: int, n: int = 3000, seed: int = 11) -> tuple[float, str]:
    parents = _parents(space, n_parents)
    fast = draw_pool.pool(space, BASE, np.random.default_rng(seed), n, mutants, parents, set())
    slow = _distinct(draw_pool.sequential(space, BASE, np.random.default_rng(seed + 1), n, mutants, parents))
    names = space.searched_names
    parent = parents[0] if parents else _parents(space, 1)[0]
    mf, ms = _marginals(fast, names, parent), _marginals(slow, names, parent)
    z = {k: chi2_z(*_bins(mf[k], ms[k])) for k in mf}
    worst = max(z, key=z.get)
    return z[worst], worst


@pytest.mark.parametrize("name", sorted(SPACES))
@pytest.mark.parametrize("mutants, n_parents", [(0.0, 0), (1.0, 1), (0.75, 6)])
def test_marginals_agree_with_the_sequential_draw(name, mutants, n_parents):
    z, worst = _worst_z(SPACES[name], mutants, n_parents)
    assert z < 4.0, f"{worst}: chi-square deviate {z:.1f}"


def test_a_mutant_keeps_the_parent_knobs_it_does_not_draw():
    """A space without conditions or dependent bounds: every other knob is the parent's."""
    space = space_from_dict({"params": {k: v for k, v in {
        "core_side": {"type": "int", "low": 1, "high": 8},
        "macro_mhz": {"type": "log", "low": 100, "high": 400},
        "noc_ghz": {"type": "float", "low": 0.5, "high": 2.0, "step": 0.25},
        "fetch": {"type": "categorical", "choices": ["fifo", "load_aware"]},
        "die_units_x": {"type": "int", "low": 8, "high": 24, "step": 4},
        "pe_mhz": {"type": "float", "low": 200, "high": 800}}.items()}}, source="flat")
    parent = _parents(space, 1)[0]
    cols = draw_pool.columns(space, BASE, np.random.default_rng(2), 2000, 1.0, [parent])
    changed = np.array([[v != parent[name] for v in vals.tolist()] for name, vals, _, _ in cols]).sum(axis=0)
    assert changed.max() <= 3 and changed.min() == 0
    assert np.mean(changed == 3) > 0.2           # macro_mhz, pe_mhz: a fresh value always differs


@pytest.mark.parametrize("space", [FULL, ODD])
def test_a_bound_that_depends_on_a_drawn_knob_is_computed_per_group(space):
    pool = draw_pool.pool(space, BASE, np.random.default_rng(0), 1500, 0.0, [], set())
    by_side: dict[int, set] = {}
    for p in pool:
        by_side.setdefault(p["core_side"], set()).add(p["pe_groups_per_core"])
    lo = (lambda c: 1) if space is FULL else (lambda c: max(1, c - 1))
    hi = (lambda c: c * c) if space is FULL else (lambda c: min(c * c, 24))
    for c, seen in by_side.items():
        assert min(seen) >= lo(c) and max(seen) <= hi(c)
    assert max(by_side[8]) > 16                   # the high bound of core_side 8 is reached beyond 4**2
