"""The knee phase's exchange moves: a step beyond a wall of the closed form, repaired by another knob.

A one-knob move of a chain's head (``dse.search.propose.knee.ascent``) that the closed form
rejects (its die area, a link load: exact there) is a *wall step*; paired with, for every other
numeric knob, its admitted value nearest the head's on either side, it is an *exchange*: the
area the step needs, freed elsewhere (a faster clock for fewer units). The candidates and the
closed form's verdict on them are functions of the head alone (kept with its moves); only their
order follows the estimate of each repair's own change of the figure of merit.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from dse.search.propose.bound import BoundMemo
from dse.search.propose.knee import sweep as knee_sweep

REPAIR_STEPS = 3             # values of a repairing knob tried on each side of the head's (nearest first)
WALLS_AT_ONCE = 4            # walls whose candidates one call of the closed form asks about (speed only)


def exchanges(cfg: Any, base: Mapping[str, Any], parent: Mapping[str, Any], vs: list, ks: list, ok: np.ndarray,
              delta: np.ndarray, memo: BoundMemo, moves: Any = None) -> Iterator[dict[str, Any]]:
    """Exchange moves along the closed form's walls (die area, link loads): each one-knob move
    one step beyond a wall (``_walls``) with, for every other numeric knob, its nearest value on
    either side that brings the pair back inside (the area the step needs, freed elsewhere);
    ordered wall by wall in turn, each wall's repairs by the repair's own change of utility
    (measured, else estimated: the cheapest repair first). Yielded as the caller takes them: a
    wall's candidates are asked of the closed form when its first repair's turn comes (a chain
    that takes three exchanges asks about three walls, not every one), and kept with the
    parent's moves (``moves.walls``) for the batches after."""
    walls = moves.wall_steps if moves is not None and moves.wall_steps is not None else _walls(parent, vs, ks, ok)
    if moves is not None:
        moves.wall_steps = walls
    if not walls:
        return
    kept = moves.walls if moves is not None and moves.walls is not None else {}
    if moves is not None:
        moves.walls = kept
    lists: list[list[dict[str, Any]]] = []
    seen: set = set()
    for w, i in enumerate(walls):                         # the first repair of each wall, in turn
        if i not in kept:
            kept.update(wall_candidates(cfg, base, parent, vs, ks, ok, memo,
                                        [j for j in walls[w:] if j not in kept][:WALLS_AT_ONCE]))
        cands, owner, okq = kept[i]
        chosen = _nearest_repairs(parent, vs, ks, owner, okq)
        chosen.sort(key=lambda t: (-_finite_or_low(delta[owner[t]]), t))
        lists.append([cands[t] for t in chosen])
        if lists[w]:
            yield from _unseen(lists[w][:1], seen)
    for r in range(1, max(map(len, lists), default=0)):  # then the second of each, ...
        yield from _unseen([q[r] for q in lists if r < len(q)], seen)


def _unseen(qs: list, seen: set) -> Iterator[dict[str, Any]]:
    """Copies of the ``qs`` whose key is not in ``seen`` (added to it)."""
    for q in qs:
        key = BoundMemo.key(q)
        if key not in seen:
            seen.add(key)
            yield dict(q)                                 # a copy: the candidates are kept


def wall_candidates(cfg: Any, base: Mapping[str, Any], parent: Mapping[str, Any], vs: list, ks: list,
                    ok: np.ndarray, memo: BoundMemo, walls: list[int]) -> dict[int, tuple[list, list[int], np.ndarray]]:
    """Per wall step ``i`` of ``walls`` (rows of ``vs``): (candidates, the repair's move of each,
    whether the closed form admits each) of the exchange moves of ``parent`` over it, a function
    of the parent alone (kept with its moves). A design's closed form does not depend on the
    designs asked beside it, so the walls asked together give what each asked alone would; they
    are asked together because a call of the closed form costs about 4 ms before its first row."""
    steer = knee_sweep.steering(cfg.space)
    by: dict[str, list[int]] = {}
    for j, k in enumerate(ks):
        by.setdefault(k, []).append(j)
    sides = []                        # (wall, knob, its repairs on one side, nearest first, order)
    for i in walls:
        for k, rows in by.items():
            if k == ks[i] or not _ordered(vs, rows, k):
                continue
            near = _nearest(parent[k], vs, rows, k, REPAIR_STEPS)
            for side in ([j for j in near if vs[j][k] < parent[k]], [j for j in near if vs[j][k] > parent[k]]):
                if side:
                    sides.append((i, k, side, len(sides) * (REPAIR_STEPS + 1)))
    # only the admitted repair nearest the parent's value on each side is ever used
    # (``_nearest_repairs``): ask the closed form nearest first, one step at a time, for the
    # sides still open (the same candidates, the farther ones never asked)
    found: list[tuple[int, dict, int, int, bool]] = []    # (order, candidate, repair, wall, admitted)
    open_ = sides
    for step in range(REPAIR_STEPS):
        now = [(i, k, side, at) for i, k, side, at in open_ if step < len(side)]
        if not now:
            break
        qs = []
        for i, k, side, _ in now:
            q = {**vs[i], k: vs[side[step]][k]}
            if ks[i] in steer or k in steer:
                q = knee_sweep.legalise(cfg.space, base, q)
            qs.append(q)
        _, okn, _ = memo.arrays(cfg, [cfg.design(q) for q in qs])
        open_ = []
        for (i, k, side, at), q, o in zip(now, qs, okn):
            found.append((at + step, q, side[step], i, bool(o)))
            if not o:
                open_.append((i, k, side, at))
    found.sort(key=lambda f: f[0])
    per: dict[int, list] = {i: [] for i in walls}
    for f in found:
        per[f[3]].append(f)
    return {i: ([f[1] for f in mine], [f[2] for f in mine], np.array([f[4] for f in mine], dtype=bool))
            for i, mine in per.items()}


def _finite_or_low(x: float) -> float:
    """``np.nan_to_num(x, nan=-np.inf)`` of one number (that call costs ~10 us a scalar)."""
    x = float(x)
    if x != x:
        return -np.inf
    return min(max(x, -np.finfo(float).max), np.finfo(float).max)


def _walls(parent: Mapping[str, Any], vs: list, ks: list, ok: np.ndarray) -> list[int]:
    """The one-knob moves that are the first step beyond a wall of the closed form: for each knob,
    the nearest value on either side of the parent's that the closed form rejects (its die
    area, a link load) when every value between them is admitted (moves in ``variants`` order:
    each knob's values ascending)."""
    out, by = [], {}
    for i, k in enumerate(ks):
        by.setdefault(k, []).append(i)
    for k, rows in by.items():
        v0 = parent.get(k)
        try:
            below = [i for i in rows if vs[i][k] < v0][::-1]
            above = [i for i in rows if vs[i][k] > v0]
        except TypeError:                               # a categorical knob: no order, no wall
            continue
        for side in (below, above):
            for i in side:
                if not ok[i]:
                    out.append(i)
                    break
    return out


def _nearest(v0: Any, vs: list, rows: list[int], k: str, n: int) -> list[int]:
    """The ``n`` values of knob ``k`` nearest ``v0`` on each side (rows of its one-knob moves)."""
    below = sorted((j for j in rows if vs[j][k] < v0), key=lambda j: -vs[j][k])[:n]
    above = sorted((j for j in rows if vs[j][k] > v0), key=lambda j: vs[j][k])[:n]
    return below + above


def _ordered(vs: list, rows: list[int], k: str) -> bool:
    """Whether knob ``k``'s values compare (a numeric knob)."""
    return all(isinstance(vs[j][k], (int, float)) and not isinstance(vs[j][k], bool) for j in rows)


def _nearest_repairs(parent: Mapping[str, Any], vs: list, ks: list, owner: list[int], ok: np.ndarray) -> list[int]:
    """Of the candidate pairs (index t: a wall step with the one-knob move ``owner[t]``), for
    every knob and side of the parent's value, the admitted one nearest the parent's value."""
    best: dict[tuple[str, bool], tuple[float, int]] = {}
    for t, j in enumerate(owner):
        if not ok[t]:
            continue
        k = ks[j]
        d = float(vs[j][k]) - float(parent[k])
        side = (k, d > 0)
        if side not in best or abs(d) < best[side][0]:
            best[side] = (abs(d), t)
    return sorted(t for _, t in best.values())
