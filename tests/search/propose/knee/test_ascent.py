"""The knee phase's plan (dse/search/propose/knee/ascent.py): chains headed by the best design of
each architecture (ties: the one with more slack), their one-knob moves best first, exchange moves
over the closed form's walls with the nearest repair, turns among the chains; deterministic and
never proposing a design already evaluated."""
from __future__ import annotations

from itertools import islice
from pathlib import Path

import numpy as np

from dse.search import load_study, run_study
from dse.search.propose import sample
from dse.search.propose.bound import BoundMemo
from dse.search.propose.knee import Chains, knee_plan
from dse.search.propose.knee.ascent import _by_knob, _interleave_lazily, _turns
from dse.search.propose.knee.exchange import _nearest_repairs, _walls
from tests.studies.test_knee_phase import study

ROOT = Path(__file__).resolve().parents[4]


def _moves(values):
    """One-knob moves of a parent {a: 2, b: 10} (knob a: 0..4, knob b: 0, 10, ..., 40)."""
    vs, ks = [], []
    for k, vals in values.items():
        for v in vals:
            vs.append({"a": 2, "b": 10, k: v})
            ks.append(k)
    return vs, ks


def test_a_wall_is_the_first_value_the_closed_form_rejects_on_each_side():
    vs, ks = _moves({"a": [0, 1, 3, 4], "b": [0, 20, 30, 40]})
    ok = np.array([False, True, True, False,      # a: 0 rejected, 1 ok | 3 ok, 4 rejected
                   True, True, False, False])     # b: 0 ok | 20 ok, 30 and 40 rejected
    walls = _walls({"a": 2, "b": 10}, vs, ks, ok)
    assert sorted((ks[i], vs[i][ks[i]]) for i in walls) == [("a", 0), ("a", 4), ("b", 30)]


def test_the_nearest_admitted_repair_on_each_side_of_each_knob():
    vs, ks = _moves({"b": [0, 20, 30, 40]})
    owner = [0, 1, 2, 3]                              # pairs of one wall step with b = 0, 20, 30, 40
    ok = np.array([True, False, True, True])          # b = 20 does not bring the pair back inside
    got = _nearest_repairs({"a": 2, "b": 10}, vs, ks, owner, ok)
    assert sorted(vs[owner[t]]["b"] for t in got) == [0, 30]      # below: 0; above: 30 (20 rejected)


def test_one_move_of_each_knob_first_and_turns_give_the_top_chain_every_other_slot():
    gain = np.array([0.1, 0.3, 0.2, 0.05])
    assert _by_knob(np.arange(4), gain, ["a", "a", "b", "b"]) == [1, 2, 0, 3]
    # turns 0, 1, 0, 2, 0, then again
    assert list(islice(_turns([[0, 1, 2, 3], [10, 11], [20]]), 7)) == [0, 10, 1, 20, 2, 3, 11]
    assert list(_turns([[], [10, 11]])) == [10, 11]


def test_a_chain_with_one_turn_never_computes_its_two_knob_moves():
    asked = []

    def pairs(name):
        def make():
            asked.append(name)
            return [name + "-pair"]
        return make

    def queue(singles, two_knob):
        return _interleave_lazily(iter(singles), two_knob)

    queues = [queue(["t0", "t1", "t2"], pairs("top")), queue(["s0"], pairs("second")), queue(["u0"], pairs("third"))]
    got = list(islice(_turns(queues), 4))             # top, second, top, third
    assert got == ["t0", "s0", "top-pair", "u0"]
    assert asked == ["top"]                           # the others had one turn: their pairs never asked
    assert list(_turns([queue([], ["p0", "p1"])])) == ["p0", "p1"]     # singles exhausted: pairs alone
    assert list(_turns([queue(["a"], pairs("b"))])) == ["a", "b-pair"]


def _evaluated(tmp_path):
    cfg = load_study(study(tmp_path, "", trials=48, objectives="full.toml"), storage=f"sqlite:///{tmp_path / 'a.db'}")
    run_study(cfg)
    from dse.search.storage.storage import open_study
    st, _ = open_study(cfg, create=False)
    trials = sorted([t for t in st.get_trials() if t.state.is_finished()], key=lambda t: t.number)
    return cfg, sample.Evaluated(cfg, trials)


def test_chains_head_each_architecture_with_its_best_design(tmp_path):
    cfg, ev = _evaluated(tmp_path)
    ch = Chains(cfg, ev, cfg.knee.keys, 3)
    assert len(ch.heads) >= 2 and len({h.group for h in ch.heads}) == len(ch.heads)
    us = [h.utility for h in ch.heads]
    assert us == sorted(us, reverse=True)
    for h in ch.heads:                                 # the best of its architecture, by its utility
        assert all(ch.u[i] <= h.utility + 1e-9 for i, g in ch.group.items() if g == h.group)
    top = ch.heads[0]
    ties = [i for i, g in ch.group.items() if g == top.group and abs(ch.u[i] - top.utility) < 1e-9]
    assert ev.violation[top.row] == min(ev.violation[i] for i in ties)   # ties: the most slack


def test_a_chains_architectures_kept_in_the_memo_are_those_of_its_designs(tmp_path):
    from dse.search.front.knee import arch_key
    from dse.search.propose.knee.front import full_designs
    cfg, ev = _evaluated(tmp_path)
    feas = np.flatnonzero(ev.feasible)
    direct = {int(i): arch_key(a, cfg.knee.keys)
              for i, a in zip(feas, full_designs(cfg, [ev.designs[i] for i in feas]))}
    memo = BoundMemo()
    half = Chains(cfg, ev, cfg.knee.keys, 3, memo=memo).group   # every design's, then kept
    assert half == direct and len(memo.archs) == len({ev.keys[i] for i in feas})
    memo.archs = {k: v for j, (k, v) in enumerate(memo.archs.items()) if j % 2}   # half of them kept
    assert Chains(cfg, ev, cfg.knee.keys, 3, memo=memo).group == direct
    other = ("core_side", "tile_width")                 # other knee keys: other architectures, not the kept ones
    assert set(Chains(cfg, ev, other, 3, memo=memo).group.values()) == {
        arch_key(a, other) for a in full_designs(cfg, [ev.designs[i] for i in feas])}


def test_the_plan_is_deterministic_and_never_repeats_a_design(tmp_path):
    cfg, ev = _evaluated(tmp_path)
    settings = {**sample.DEFAULTS, "pool": 200}
    a = knee_plan(cfg, ev, np.random.default_rng(7), 8, settings, BoundMemo(), cfg.knee)
    b = knee_plan(cfg, ev, np.random.default_rng(7), 8, settings, BoundMemo(), cfg.knee)
    assert a == b and len(a) == 8
    keys = [BoundMemo.key(p) for p in a]
    assert len(set(keys)) == len(keys) and not set(keys) & ev.known
    for p in a:
        assert sample.is_legal(cfg.space, cfg.base_env(), p)
    # the top chain's moves come first: the first proposal is one or two knobs from its head
    head = ev.params[Chains(cfg, ev, cfg.knee.keys, 3).heads[0].row]
    assert 1 <= sum(a[0].get(k) != head.get(k) for k in head) <= 2


def test_chains_start_wide_and_narrow_to_knee_candidates_by_mid_phase():
    from types import SimpleNamespace

    from dse.search.propose.knee.ascent import NARROW_AT, WIDE, chains_now
    from dse.search.propose.knee.phase import KneeSearch

    cfg = SimpleNamespace(trials=1000, batch=10)
    ks = KneeSearch(share=0.5, candidates=3)
    start = ks.global_trials(cfg.trials, cfg.batch)
    assert start == 500
    widths = [chains_now(cfg, ks, n) for n in range(start, cfg.trials + 1, 10)]
    assert widths[0] == WIDE * 3                                  # wide at the phase's start
    assert all(a >= b for a, b in zip(widths, widths[1:]))        # never widens again
    assert chains_now(cfg, ks, start + int(NARROW_AT * 500)) == 3  # narrowed by mid-phase
    assert widths[-1] == 3 and chains_now(cfg, ks, 0) == WIDE * 3  # before the phase: wide


def test_the_lazy_moves_plan_what_every_move_made_at_once_plans(tmp_path, monkeypatch):
    """The chains' two-knob moves and exchanges are made as the plan takes them (issue 48's plan
    cost): the plan equals the one made with every queue whole and every wall asked at once."""
    from dse.search.propose.knee import ascent, exchange
    cfg, ev = _evaluated(tmp_path)
    settings = {**sample.DEFAULTS, "pool": 200}
    lazy = knee_plan(cfg, ev, np.random.default_rng(3), 24, settings, BoundMemo(), cfg.knee)

    lazily = ascent._interleave_lazily
    monkeypatch.setattr(ascent, "_interleave_lazily", lambda a, b: iter(list(lazily(a, b))))   # every move made first
    monkeypatch.setattr(exchange, "WALLS_AT_ONCE", 10 ** 6)
    eager = knee_plan(cfg, ev, np.random.default_rng(3), 24, settings, BoundMemo(), cfg.knee)
    monkeypatch.setattr(exchange, "WALLS_AT_ONCE", 1)
    one_by_one = knee_plan(cfg, ev, np.random.default_rng(3), 24, settings, BoundMemo(), cfg.knee)
    assert lazy == eager == one_by_one and len(lazy) == 24
