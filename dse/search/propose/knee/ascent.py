"""The knee phase's plan: coordinate ascent of the knee utility on the trace, from several starts.

The knee of a front is its interior design of highest knee utility (``dse.search.front.knee``:
with relative coordinates, ``u = -sum_j ln |f_j|``, maximised objectives inverted): a scalar of
the trace-driven objectives. Runs of ``studies/catalog.toml`` differed in their knees by 0.1-0.5
in ``u`` while their fronts agreed (issue 48): the global phase covers the front, and what is
left is to *maximise u* where the front bulges. Around the best design of an architecture the
closed-form estimate ranks designs poorly (its error there, ~0.07 in ``u``, is larger than the
differences that decide the knee), while a trace-driven evaluation of a design that shares its
scheduling domain with one already evaluated costs 25-50 ms (its placement and job tables are
cached). So the knee phase climbs on the trace itself, the estimate only choosing which move to
try first:

1. **chains**: the feasible designs evaluated so far, grouped by architecture (``knee_keys``);
   the best design of each of the ``chains`` best architectures (by ``u``) is a *head* (heads
   move whenever a better design of their architecture is found, and the set of heads whenever
   the order of the architectures changes: independent starts, pooled in one run);
2. **moves** of a head: every design one knob away from it (``knee_sweep.variants``: every
   legal value of every searched knob, the architecture keys included, so a chain may walk into
   a neighbouring architecture), and its two-knob moves (a gain that needs two knobs to move
   together, e.g. a faster clock and the area it costs, is out of reach of single moves): the
   *exchanges* (a one-knob move the closed form rejects at a wall, die area or a link load, with
   another knob's nearest value that brings it back: ``dse.search.propose.knee.exchange``) and
   the *additive pairs* (each knob's ``PAIR_VALUES`` best values with every other knob's),
   ``PAIR_BUDGET`` of them at most. A chain takes its one-knob and two-knob moves in turn; once
   every one of them is evaluated and none is better, the head has *converged* (``Chains``);
3. **order**: each head's moves are estimated (``estimate.Estimator``: closed-form bounds times a
   learnt ratio, the log of the probability of being feasible added) and ranked by the estimated
   gain over the head's own estimate (a difference of two estimates: their common error cancels);
   the best move of each knob first (a sweep tries one value of every knob before a second value
   of any), then the rest;
4. **turns**: the batch's slots go to the heads in turns top, second, top, third, ... (the top
   takes every other slot; a converged head's turn passes to the next); a share
   ``GLOBAL_SHARE`` of the slots goes to the guided sampler's global plan (uniform draws and
   mutants of the front, by hypervolume): the phase keeps looking beyond its chains.

Nothing here draws a random number but the global share (from the batch's seeded generator);
the plan is a function of the trials before the batch: a resumed study asks the same trials.
``Chains.state`` says, for the study's verdict (``dse.search.review.verdict``), which heads have
converged.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any

import numpy as np

from dse.search.front import knee as kn
from dse.search.front import pareto
from dse.search.propose.bound import BoundMemo, Estimator
from dse.search.propose.knee import sweep as knee_sweep
from dse.search.propose.knee.exchange import exchanges

PAIR_VALUES = 3              # values of each knob (its best one-knob moves) paired with every other knob's
PAIR_BUDGET = 48             # two-knob moves of a head, best estimated first
PAIR_CHUNK = 2 * PAIR_BUDGET  # additive two-knob moves checked on the closed form at a time
GLOBAL_SHARE = 1 / 8         # share of a knee-phase batch planned by the global (hypervolume) plan
WIDE = 3                     # chains at the knee phase's start, in multiples of knee_candidates
NARROW_AT = 0.5              # share of the knee phase by which they narrow to knee_candidates
GLOBAL_POOL = 500            # candidates the global share draws (a few designs of each batch)
GAIN_TOL = 1e-9              # a move must beat its head by more than this to count as better
MOVES_KEPT = 256             # parents whose moves a study's memo keeps (oldest dropped first)


@dataclass
class _Moves:
    """What a parent's neighbourhood owes to the parent alone (``Chains._moves``)."""
    parent_key: tuple
    vs: list                               # one-knob moves (``knee_sweep.variants``)
    ks: list                               # the knob each moves
    keys: list                             # their ``BoundMemo.key``
    arrays: tuple | None                   # closed-form (B, ok, H) of the moves, then the parent
    walls: dict | None = None              # exchange candidates per wall step (``exchange.wall_candidates``)
    wall_steps: list | None = None         # its one-knob moves one step beyond a wall (``exchange._walls``)
    legal: dict = field(default_factory=dict)   # a steering pair (i, j) of ``vs``, legalised (``Chains._additive``)


@dataclass
class Head:
    """The best evaluated design of one architecture, and where its chain stands."""
    row: int                               # row of the evaluated designs (``guided.Evaluated``)
    group: tuple                           # its architecture (values of the knee keys)
    utility: float                         # its knee utility
    stage: str = "single"                  # "single", "pairs" (singles exhausted), "converged"


class Chains:
    """The heads of the study's chains (module docstring, steps 1-2) given the evaluated designs
    ``ev`` (``guided.Evaluated``) and their knee ``scale`` (the current front's)."""

    def __init__(self, cfg: Any, ev: Any, keys: Sequence[str], chains: int, scale: kn.Scale | None = None,
                 memo: BoundMemo | None = None):
        from dse.search.propose.knee.front import front_of
        self.cfg, self.ev, self.keys = cfg, ev, tuple(keys)
        self.base, self.chains, self.memo = cfg.base_env(), chains, memo or BoundMemo()
        F, _, _ = front_of(cfg, ev)
        self.heads: list[Head] = []
        if not len(F):
            return
        self.scale = scale if scale is not None else kn.Scale.of(F)
        feas = np.flatnonzero(ev.feasible)
        u = self.scale.utility(pareto.to_min(ev.values[feas], cfg.objectives.directions))
        self.u = dict(zip(feas.tolist(), u.tolist()))
        self.group = _groups(cfg, ev, feas, self.keys, self.memo)
        self.index = {ev.keys[i]: int(i) for i in feas}
        seen: set[tuple] = set()
        slack = ev.violation[feas]                         # its tightest constraint (<= 0: feasible)
        for j in np.lexsort((feas, slack, -np.round(u, 9))).tolist():   # best first; ties: more slack, earlier
            i = int(feas[j])
            g = self.group[i]
            if g in seen:
                continue
            seen.add(g)
            self.heads.append(Head(i, g, float(u[j])))

    def moves_left(self, row: int, memo: BoundMemo | None = None) -> int:
        """How many moves of the design at ``row`` (one-knob, then two-knob: ``neighbourhood``)
        are left to evaluate: 0 once it is *refined* (``dse.search.propose.knee.verdict``)."""
        h = Head(row, self.group.get(row, ()), self.u.get(row, -np.inf))
        singles, pairs = self.neighbourhood(h, None, memo or self.memo)
        return len(singles) + len(pairs)

    def neighbourhood(self, h: Head, est: Estimator | None, memo: BoundMemo, pairs_too: bool = False,
                      lazy: bool = False) -> tuple[list, Any]:
        """(its one-knob moves, its two-knob moves) not evaluated yet, each best first by
        estimated gain over the head; moves the closed form proves infeasible (die area, a
        mapping, a closed-form link load: exact there) are left out. One-knob moves: the best of
        each knob first. Two-knob moves (only once the one-knob ones are exhausted, unless
        ``pairs_too``): the exchanges along the closed form's walls and the additive pairs (module
        docstring, step 2), interleaved, ``PAIR_BUDGET`` of them at most. With ``lazy``
        and one-knob moves left, the two-knob moves come as a function that computes them (most
        chains of a batch get a turn or two: their pairs, exchanges above all, are never asked)."""
        parent = self.ev.params[h.row]
        moves = self._moves(parent, memo)
        vs, ks, vkeys = moves.vs, moves.ks, moves.keys
        desire, gain, ok = self._estimate(est, parent, vs, moves.arrays)
        known = np.array([k in self.ev.known for k in vkeys], dtype=bool)
        true = np.array([self.u.get(self.index.get(k, -1), -np.inf) - h.utility for k in vkeys])
        score = np.where(known, true, gain)
        singles = [dict(vs[i]) for i in _by_knob(np.flatnonzero(~known & ok), score, ks)]   # copies: vs is kept
        if singles and not pairs_too:
            return singles, []
        if singles and lazy:
            return singles, partial(self._pairs, parent, moves, score, known, true, gain, ok, memo)
        return singles, list(self._pairs(parent, moves, score, known, true, gain, ok, memo))

    def _pairs(self, parent: Mapping[str, Any], moves: _Moves, score: np.ndarray, known: np.ndarray,
               true: np.ndarray, gain: np.ndarray, ok: np.ndarray, memo: BoundMemo) -> Iterator[dict[str, Any]]:
        """The two-knob moves of ``parent`` (``neighbourhood``), best first, as the caller takes
        them (exchanges and additive pairs interleaved, ``PAIR_BUDGET`` at most)."""
        vs, ks = moves.vs, moves.ks
        order = np.lexsort((np.arange(len(vs)), -score)).tolist()
        best: dict[str, list[int]] = {}
        for i in order:
            if np.isfinite(score[i]) and len(best.setdefault(ks[i], [])) < PAIR_VALUES:
                best[ks[i]].append(i)
        # a move's change of utility: measured where evaluated and feasible, else estimated
        delta = np.where(known, np.where(np.isfinite(true), true, np.nan), np.where(ok, gain, np.nan))
        names = list(best)
        additive = [(i, j) for x in range(len(names)) for y in range(x + 1, len(names))
                    for i in best[names[x]] for j in best[names[y]]]
        known_keys = self.ev.known
        exchange = (q for q in exchanges(self.cfg, self.base, parent, vs, ks, ok, delta, memo, moves)
                    if BoundMemo.key(q) not in known_keys)
        return islice(_interleave_lazily(exchange, self._additive(moves, additive, delta, memo)), PAIR_BUDGET)

    def _additive(self, moves: _Moves, additive: list[tuple[int, int]], delta: np.ndarray, memo: BoundMemo
                  ) -> Iterator[dict[str, Any]]:
        """The ``additive`` pairs of one-knob moves (rows of ``moves.vs``) as designs, best first by
        the sum of their ``delta``, those the closed form admits, asked ``PAIR_CHUNK`` at a time
        as the caller takes them."""
        if not additive:
            return
        vs, ks = moves.vs, moves.ks
        # A pair moving a steering knob is legalised (a bound or condition moved with it) and may
        # land on another pair or a one-knob move: those are made at once, the first of equal
        # ones kept. A pair of two other knobs is the parent with two knobs changed, unlike any
        # other move: it is made only when its turn comes, best first (about 1,700 pairs a
        # head, of which the closed form is asked about a few hundred: issue 48's plan cost).
        steer = knee_sweep.steering(self.cfg.space)
        seen = {moves.parent_key, *moves.keys}
        made: dict[int, dict] = {}                   # steering pairs kept, by their rank in ``additive``
        legal = moves.legal                          # a function of the parent's moves: kept with them
        for a, (i, j) in enumerate(additive):
            if ks[i] in steer or ks[j] in steer:
                got = legal.get((i, j))
                if got is None:
                    q = knee_sweep.legalise(self.cfg.space, self.base, {**vs[i], ks[j]: vs[j][ks[j]]})
                    got = legal[(i, j)] = (q, BoundMemo.key(q))
                q, key = got
                if key not in seen and key not in self.ev.known:
                    seen.add(key)
                    made[a] = dict(q)                # a copy: the legalised pair is kept
        ii, jj = np.array(additive).T
        r = np.nan_to_num(delta[ii] + delta[jj], nan=-np.inf)
        order = [int(a) for a in np.lexsort((np.arange(len(r)), -r)) if np.isfinite(r[a])]
        chunk: list[dict] = []
        for n, a in enumerate(order):                # best first, the closed form asked only as far as needed
            i, j = additive[a]
            if a in made:
                chunk.append(made[a])
            elif not (ks[i] in steer or ks[j] in steer):
                q = {**vs[i], ks[j]: vs[j][ks[j]]}
                if BoundMemo.key(q) not in self.ev.known:
                    chunk.append(q)
            if len(chunk) == PAIR_CHUNK or (n == len(order) - 1 and chunk):
                pok = memo.arrays(self.cfg, [self.cfg.design(q) for q in chunk])[1]
                yield from (q for q, o in zip(chunk, pok) if o)
                chunk = []

    def _moves(self, parent: Mapping[str, Any], memo: BoundMemo) -> _Moves:
        """The one-knob moves of ``parent``, their keys and closed-form rows (and, once asked,
        its exchange candidates): functions of the parent alone, kept in ``memo`` so that a head
        that stays a head over several batches is not swept again (the plan's cost, issue 48)."""
        pk = BoundMemo.key(parent)
        got = memo.neighbours.get(pk)
        if got is None:
            vs, ks = knee_sweep.variants(self.cfg.space, self.base, parent)
            ps = list(vs) + [dict(parent)]
            arrays = memo.arrays(self.cfg, [self.cfg.design(p) for p in ps]) if vs else None
            got = _Moves(pk, vs, ks, [BoundMemo.key(v) for v in vs], arrays)
            if len(memo.neighbours) >= MOVES_KEPT:
                memo.neighbours.pop(next(iter(memo.neighbours)))
            memo.neighbours[pk] = got
        return got

    def _estimate(self, est: Estimator | None, parent: Mapping[str, Any], moves: list,
                  arrays: tuple | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(desire, gain, ok) of ``moves`` over ``parent``: the estimated gain of knee utility
        ignoring the constraints, the estimated gain of utility plus the log of the estimated
        probability of being feasible (-inf where the closed form proves the move infeasible),
        and whether the closed form admits the move; ``arrays``: the closed form's rows of the
        moves, then the parent (``_moves``: None when there is no move)."""
        if not moves:
            return np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool)
        ps = list(moves) + [dict(parent)]
        B, ok, H = arrays
        if est is None:                                  # what is left, not in which order (the verdict)
            z = np.where(ok[:-1], 0.0, -np.inf)
            return np.zeros(len(moves)), z, ok[:-1]
        E, p_ok = est(ps, B, H)
        with np.errstate(all="ignore"):
            u = self.scale.utility(E)
            eu = u + np.log(np.maximum(p_ok, 1e-12))
        u = np.where(np.isfinite(u), u, -np.inf)
        eu = np.where(ok & np.isfinite(eu), eu, -np.inf)
        desire = u[:-1] - (u[-1] if np.isfinite(u[-1]) else 0.0)
        return desire, eu[:-1] - (eu[-1] if np.isfinite(eu[-1]) else 0.0), ok[:-1]

    def open_heads(self, est: Estimator, memo: BoundMemo) -> list[tuple[Head, list, Any]]:
        """The first ``chains`` heads with moves left, best first, each with its one-knob and
        two-knob moves (``neighbourhood``; the two-knob ones as a function that computes them
        while one-knob moves are left); a head without any has converged (its ``stage``), and
        the next architecture's head takes its place."""
        out = []
        for h in self.heads:
            if len(out) >= self.chains:
                break
            singles, pairs = self.neighbourhood(h, est, memo, pairs_too=True, lazy=True)
            h.stage = "single" if singles else "pairs" if pairs else "converged"
            if singles or pairs:
                out.append((h, singles, pairs))
        return out

    def state(self, est: Estimator, memo: BoundMemo, n: int | None = None) -> list[dict[str, Any]]:
        """The first ``n`` (default ``chains``) heads as JSON: architecture, utility, stage and
        the moves it has left."""
        out = []
        for h in self.heads[: n or self.chains]:
            singles, pairs = self.neighbourhood(h, est, memo)
            h.stage = "single" if singles else "pairs" if pairs else "converged"
            out.append({"architecture": dict(zip(self.keys, h.group)), "utility": round(h.utility, 6),
                        "stage": h.stage, "moves_left": len(singles) + len(pairs)})
        return out


def _groups(cfg: Any, ev: Any, rows: np.ndarray, keys: tuple[str, ...], memo: BoundMemo) -> dict[int, tuple]:
    """The architecture (``keys``' values, every default filled in) of each evaluated design at
    ``rows`` of ``ev``, kept in ``memo`` by its parameters' key: a design's architecture is its
    own, and each plan and verdict asked every feasible design's again (issue 48)."""
    from dse.search.propose.knee.front import full_designs
    kept = memo.archs
    if len(kept) > memo.MAX_ROWS:
        kept.clear()
    miss = [int(i) for i in rows if (keys, ev.keys[i]) not in kept]
    for i, a in zip(miss, full_designs(cfg, [ev.designs[i] for i in miss])):
        kept[(keys, ev.keys[i])] = kn.arch_key(a, keys)
    return {int(i): kept[(keys, ev.keys[i])] for i in rows}


def plan(cfg: Any, ev: Any, rng: np.random.Generator, k: int, settings: Mapping[str, Any], memo: BoundMemo,
         knee_settings: Any) -> list[dict[str, Any]] | None:
    """The ``k`` parameter sets of a knee-phase batch (module docstring); None when the front is
    empty or every chain has converged and nothing else is left (the caller then plans a global
    batch)."""
    chains = Chains(cfg, ev, knee_settings.keys, chains_now(cfg, knee_settings, len(ev.trials)), memo=memo)
    if not chains.heads:
        return None
    est = ev.estimator(cfg, float(settings.get("ridge", 10.0)), bool(settings.get("logistic", False)), memo)
    queues = [_interleave_lazily(iter(singles), pairs) for _head, singles, pairs in chains.open_heads(est, memo)]
    n_global = int(round(GLOBAL_SHARE * k))
    out, seen = [], set()
    for q in _turns(queues):
        key = BoundMemo.key(q)
        if key not in seen:
            seen.add(key)
            out.append(q)
            if len(out) >= k - n_global:
                break
    if len(out) < k:
        from dse.search.propose.sample import global_plan
        known = ev.known | seen
        local = {**settings, "pool": min(int(settings.get("pool", 2000)), GLOBAL_POOL)}
        extra = [q for q in global_plan(cfg, ev.trials, rng, k - len(out), local, memo, pending=out)
                 if BoundMemo.key(q) not in known]
        out += extra[: k - len(out)]
    return out


def chains_now(cfg: Any, knee_settings: Any, finished: int) -> int:
    """Chains of a knee-phase batch planned after ``finished`` trials: ``WIDE`` x
    ``knee_candidates`` at the phase's start, narrowing linearly to ``knee_candidates`` at the
    share ``NARROW_AT`` of the phase (successive halving over architectures: an architecture shows
    its worth only once refined, so many get a start, and the best of them the rest)."""
    c = max(1, int(knee_settings.candidates))
    start = knee_settings.global_trials(cfg.trials, cfg.batch)
    span = max(1, cfg.trials - start)
    progress = min(1.0, max(0.0, (finished - start) / span))
    return max(c, int(round(c * (1 + (WIDE - 1) * max(0.0, 1.0 - progress / NARROW_AT)))))


def _by_knob(rows: np.ndarray, gain: np.ndarray, knob: Sequence[str]) -> list[int]:
    """``rows`` by estimated gain (ties: the lower row), the best move of each knob first."""
    order = [int(i) for i in rows[np.lexsort((rows, -gain[rows]))]]
    first, seen = [], set()
    for i in order:
        if knob[i] not in seen:
            seen.add(knob[i])
            first.append(i)
    chosen = set(first)
    return first + [i for i in order if i not in chosen]


_END = object()


def _interleave_lazily(a: Iterator, b: Any) -> Iterator:
    """a[0], b[0], a[1], b[1], ... then the rest of the longer, item by item as they are taken;
    ``b`` may be a function that gives it, called when its first item is wanted."""
    b_it = None
    while True:
        got = False
        x = next(a, _END)
        if x is not _END:
            got = True
            yield x
        if b_it is None:
            b_it = iter(b() if callable(b) else b)
        y = next(b_it, _END)
        if y is not _END:
            got = True
            yield y
        if not got:
            return


def _turns(queues: Sequence[Iterable[Any]]) -> Iterator[Any]:
    """The queues' items in turns top, second, top, third, ... (an empty queue's turn passes
    on), as far as the caller takes them: a queue is read only when its turn comes (a chain's
    ``_interleave_lazily`` queue computes its two-knob moves only then)."""
    if not queues:
        return
    its = [iter(q) for q in queues]
    turns = [0] + [x for q in range(1, len(its)) for x in (q, 0)] if len(its) > 1 else [0]
    live = set(range(len(its)))
    t = 0
    while live:
        q = turns[t % len(turns)]
        t += 1
        if q not in live:
            continue
        x = next(its[q], _END)
        if x is _END:
            live.discard(q)
        else:
            yield x
