"""Where a layer's experts sit: the scheduling domain (dies -> cores -> PE groups -> units) and
the semi-static placement policies of spec section 5.

Scheduling domain (knob ``layer_layout``). Every unit holds at most one expert of the layer (its
chunks, spec section 3) and has one PE tile. Broadcast pooling is core-local, so which cores a
layer's experts occupy decides how many idle tiles can help:

* ``packed``: the layer's E experts fill ceil(E / units per core) cores, whole cores
  first ("a core holds 16 partial experts", spec s3); the domain is those cores (256 PE tiles at
  side 2, 4 and 8, 264 at side 6 on the 16 x 20 die). Units of other layers inside the last,
  partly filled core help too. This fits the study's direct occupancy (0.154 = J / (8.89 x 256))
  and its side-8 pooled occupancy (0.678 = J / (2 x 256)).
* ``interleaved`` (default): the layer runs on every PE tile of the ``ceil(E / active units per die)``
  dies holding its experts, with units of other layers interleaved in every core (320 tiles at
  side 4). This fits the study's side-4 ablation (0.510 at 2.21 rounds implies N G ~ 310) and
  gives small cores spare helpers, which is why it flattens the core-pooling sweep.

Tensor-parallel experts (TP > 1, e.g. Qwen3.5-397B at 32K: TP = 4). Die j of a TP group holds
shard j of every expert of the group, so a layer is TP identical *shard planes*: every shard of
expert e sees the same tokens, its jobs occupy one PE tile on each of the TP dies for the same
round time (each unit streams its D_used columns), and every plane runs the same schedule. The
domain is therefore one plane (``n_experts`` units of a layer, its dies' other units helping);
jobs J and tiles P are both counted per plane, so J / (rounds P) is the occupancy of all TP x P
tiles. The 397B plane (512 experts on 2 dies, 640 tiles) has the 35B's ratio of jobs to tiles at
its native batch (692 / 640 against 348 / 320), so at two rounds both are capped at
J / (2 P) ~ 0.54; what separates the two models is their routing skew, not TP.

A core is ``core_side``^2 units (edge cores of a die that ``core_side`` does not tile are smaller
when ``core_remainder = 'partial'``, absent when 'idle'). Its ``pe_groups_per_core`` groups split
its units evenly (unit i of a full core belongs to group floor(i G / side^2)); a group's PE tiles
share its experts' read-outs locally, so a group of u units runs up to u jobs of its own experts
per round. Units are numbered die-major, core-major, group-major, so every group and core is a
contiguous range (the scheduler reduces over ranges).

Placement policies (from the profiling window's mean loads, separate from the measured window):

* ``contiguous``: expert e on unit e (fills cores in order; the last cores may stay empty);
* ``lpt``: longest-processing-time first: experts by descending profiled load, each to the core
  whose load per PE tile after adding it is smallest (ties: the emptiest core), then to the least
  loaded group with a free unit of that core; hot experts spread over cores and pair with cold
  ones within a core;
* ``coactivation``: LPT whose core cost also counts the expert's expected co-firing tokens with
  the experts already on the core (``C.coactivation_weight`` x pair counts per step), so experts
  that fire together are spread over cores.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dse.constants import C
from dse.hardware.die import core_spans

POLICIES = ("contiguous", "lpt", "coactivation")


def die_core_units(core_side: int, die_units_x: int, die_units_y: int, core_remainder: str) -> list[int]:
    """Units of every core of one die, row-major over the core grid (20 x 16 at side 4 on 16 x 20)."""
    xs = core_spans(die_units_x, core_side, core_remainder)
    ys = core_spans(die_units_y, core_side, core_remainder)
    return [wx * wy for wy in ys for wx in xs]


@dataclass(frozen=True)
class Domain:
    """The PE resources one layer is scheduled on."""
    dies: int
    core_side: int
    groups_per_core: int
    core_units: tuple[int, ...]      # units (= PE tiles) of every core of the domain
    group_units: tuple[int, ...]     # units of every group, groups ordered core by core
    group_core: tuple[int, ...]      # core of every group

    @property
    def units(self) -> int:
        return sum(self.core_units)

    @property
    def n_cores(self) -> int:
        return len(self.core_units)

    @property
    def n_groups(self) -> int:
        return len(self.group_units)

    @property
    def full(self) -> int:
        """Units of a full core (the padded width of the per-core unit layout)."""
        return self.core_side ** 2

    @functools.cached_property
    def unit_pos(self) -> np.ndarray:
        """Position of every unit in the padded layout [cores, full]: core * full + index in core."""
        a = self.arrays
        idx = np.arange(self.units) - a.core_start[a.unit_core]
        return a.unit_core * self.full + idx

    @functools.cached_property
    def group_layout(self) -> tuple[np.ndarray, np.ndarray]:
        """(first unit of each group within a core, units of each group per core [cores, groups]);
        unit i of any core belongs to group floor(i G / full), so the starts are shared by all cores."""
        g = min(self.groups_per_core, self.full)
        gid = np.arange(self.full) * g // self.full
        starts = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]])
        cu = self.arrays.core_units
        per_core = np.array([[np.count_nonzero(gid[:u] == j) for j in range(len(starts))] for u in cu])
        return starts, per_core

    @functools.cached_property
    def arrays(self) -> DomainArrays:
        cu = np.array(self.core_units, dtype=np.int64)
        gu = np.array(self.group_units, dtype=np.int64)
        gc = np.array(self.group_core, dtype=np.int64)
        core_start = np.concatenate([[0], np.cumsum(cu)[:-1]])
        group_start = np.concatenate([[0], np.cumsum(gu)[:-1]])
        unit_group = np.repeat(np.arange(len(gu)), gu)
        unit_core = gc[unit_group]
        core_groups = np.bincount(gc, minlength=len(cu))
        core_group_start = np.concatenate([[0], np.cumsum(core_groups)[:-1]])
        return DomainArrays(cu, gu, gc, core_start, group_start, unit_group, unit_core, core_group_start)


@dataclass(frozen=True)
class DomainArrays:
    core_units: np.ndarray
    group_units: np.ndarray
    group_core: np.ndarray
    core_start: np.ndarray        # first unit of every core
    group_start: np.ndarray       # first unit of every group
    unit_group: np.ndarray
    unit_core: np.ndarray
    core_group_start: np.ndarray  # first group of every core


LAYOUTS = ("packed", "interleaved")


def packed_cores(n_experts: int, per_die: list[int]) -> list[list[int]]:
    """Cores (units each) that a layer of ``n_experts`` fills, die by die, whole cores first."""
    dies: list[list[int]] = []
    total = 0
    while total < n_experts:
        die: list[int] = []
        for u in sorted(per_die, reverse=True):
            die.append(u)
            total += u
            if total >= n_experts:
                break
        dies.append(die)
    return dies


@functools.lru_cache(maxsize=256)
def domain(n_experts: int, core_side: int, groups_per_core: int, die_units_x: int = 16, die_units_y: int = 20,
           core_remainder: str = "partial", layout: str = "interleaved") -> Domain:
    """The dies, cores and groups a layer of ``n_experts`` experts is scheduled on (see the module
    docstring for the two layouts)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layer layout {layout!r} (allowed: {', '.join(LAYOUTS)})")
    per_die = die_core_units(core_side, die_units_x, die_units_y, core_remainder)
    die_units = sum(per_die)
    if die_units == 0:
        raise ValueError("a die without whole cores")
    if layout == "packed":
        die_cores = packed_cores(n_experts, per_die)
    else:
        die_cores = [per_die] * max(1, math.ceil(n_experts / die_units))
    dies = len(die_cores)
    full = core_side * core_side
    g = max(1, min(groups_per_core, full))
    core_units: list[int] = []
    group_units: list[int] = []
    group_core: list[int] = []
    for cores in die_cores:
        for u in cores:
            c = len(core_units)
            core_units.append(u)
            ids = [i * g // full for i in range(u)]       # group of each unit of this core
            for grp in sorted(set(ids)):
                group_units.append(ids.count(grp))
                group_core.append(c)
    return Domain(dies, core_side, g, tuple(core_units), tuple(group_units), tuple(group_core))


# -- placement ------------------------------------------------------------------------------------
def place(policy: str, dom: Domain, profile_load: np.ndarray, coact: np.ndarray | None = None) -> np.ndarray:
    """Unit of every expert of every layer: int64 [layers, E] (a unit holds one expert per layer).

    ``profile_load`` [layers, E] is the mean tokens per step from the profiling window;
    ``coact`` [layers, E, E] (coactivation only) the mean co-firing tokens per step of each pair
    (symmetric: ``coact[l, a, b] == coact[l, b, a]``, as ``Workload.coact`` counts them)."""
    L, E = profile_load.shape
    if E > dom.units:
        raise ValueError(f"{E} experts do not fit on {dom.units} units")
    if policy == "contiguous":
        return np.broadcast_to(np.arange(E, dtype=np.int64), (L, E)).copy()
    if policy not in ("lpt", "coactivation"):
        raise ValueError(f"unknown placement {policy!r} (allowed: {', '.join(POLICIES)})")
    if policy == "coactivation" and coact is None:
        raise ValueError("coactivation placement needs pair counts")
    if coact is not None and np.asarray(coact).dtype not in (np.float32, np.float64):
        coact = np.asarray(coact, dtype=np.float64)       # float32 counts are widened exactly as added
    return _lpt(dom, np.asarray(profile_load, dtype=np.float64), None if policy == "lpt" else coact)


def _lpt(dom: Domain, load: np.ndarray, coact: np.ndarray | None) -> np.ndarray:
    """Greedy LPT over cores then groups, vectorised over layers (one pass per expert rank).

    Per rank the core choice costs O(layers x cores) and the group choice O(layers x groups per
    core) (only the chosen core's groups are scored). Co-activation sums, per core, the co-firing
    of the expert being placed with the experts already on the core: one ``bincount`` over the
    ranks placed so far, which adds them in rank order (per core, as a running total kept as
    experts are placed would, and with ``coact`` symmetric its row of the expert is its column). The
    tie-break and "full" terms of every core come from a table per (core, free units) and the
    score of every group is kept up to date for the one group a layer fills at each rank (same
    arithmetic, element by element, as scoring them all afresh), so a rank costs a handful of
    array operations."""
    a = dom.arrays
    L, E = load.shape
    N = dom.n_cores
    rows = np.arange(L)
    order = np.argsort(-load, axis=1, kind="stable")                  # experts, hottest first
    ranked = np.take_along_axis(load, order, axis=1)                  # their loads, rank by rank
    core_pes = a.core_units.astype(np.float64)
    core_load = np.zeros((L, N))
    tie_free = np.concatenate([np.arange(u + 1) for u in a.core_units])
    tie_table = _tie(tie_free, np.repeat(core_pes, a.core_units + 1))   # every (core, free units)
    tie_at = np.tile(np.cumsum(a.core_units + 1) - 1, L)               # each cell's entry: all units free
    tie = tie_table[tie_at].reshape(L, N)                             # + inf on a full core
    flat_load, flat_tie = core_load.reshape(-1), tie.reshape(-1)
    placed = np.empty((E, L), dtype=np.intp)                          # layer * N + core of each rank
    ranked_at = (order + (rows * E)[:, None]).T.copy()                # [rank, layer] -> layer * E + expert
    groups = _GroupChoice(a, L, N, dom.n_groups)
    slot = np.empty((L, E), dtype=np.int64)
    w = float(C.coactivation_weight)
    cost = np.empty((L, N))
    cells = rows * N
    for r in range(E):
        e, le = order[:, r], ranked[:, r]
        np.add(core_load, le[:, None], out=cost)
        cost /= core_pes
        if coact is not None:
            co = np.bincount(placed[:r].ravel(), np.take(coact[rows, e], ranked_at[:r]).ravel(),
                             minlength=L * N).reshape(L, N)            # sum of coact[l, e, placed experts of core]
            cost += w * co / core_pes
        cost += tie
        c = cost.argmin(axis=1)
        slot[rows, e] = groups.fill(c, le)
        k = cells + c
        if coact is not None:
            placed[r] = k
        flat_load[k] += le
        at = tie_at[k] - 1                                            # one unit fewer free
        tie_at[k] = at
        flat_tie[k] = tie_table[at]
    return slot


def _tie(free: np.ndarray, pes: np.ndarray) -> np.ndarray:
    """A core's tie-break term (the emptiest core wins a tie), or inf when it is full."""
    t = 1e-9 * (1.0 - free / pes)
    t[free == 0] = np.inf
    return t


class _GroupChoice:
    """The LPT group choice: on the chosen core, the least-loaded group (per PE tile; ties: the
    first) with a free unit. Keeps every group's score (inf when full; a padding column of inf
    for cores with fewer groups) and its next free unit."""

    def __init__(self, a: DomainArrays, L: int, N: int, G: int):
        self.pes = a.group_units.astype(np.float64)
        self.tiebreak = 1e-9 * np.arange(G)
        self.G = G
        self.load = np.zeros(L * G)
        self.next = np.tile(a.group_start, L)                          # next free unit of each group
        self.end = np.tile(a.group_start + a.group_units, L)           # ... full when it gets here
        n_groups = np.bincount(a.group_core, minlength=N)
        self.single = bool((n_groups == 1).all())                     # group of a core = its core
        j = np.arange(max(1, int(n_groups.max())))
        self.core_groups = np.where(j[None, :] >= n_groups[:, None], G, a.core_group_start[:, None] + j[None, :])
        self.core_group = self.core_groups[:, 0]
        self.score = np.tile(np.r_[0.0 / self.pes + self.tiebreak, np.inf], (L, 1))
        self.rows = np.arange(L)
        self.cells = self.rows * G

    def fill(self, c: np.ndarray, le: np.ndarray) -> np.ndarray:
        """Place one expert (load ``le``) per layer on core ``c``; returns the units taken."""
        if self.single:                                               # the core's group: nothing to score
            k = self.cells + self.core_group[c]
            unit = self.next[k]
            self.next[k] = unit + 1
            return unit
        rows = self.rows
        cg = self.core_groups[c]                                      # [L, groups per core]
        g = cg[rows, self.score[rows[:, None], cg].argmin(axis=1)]
        k = self.cells + g
        unit = self.next[k]
        self.next[k] = unit + 1
        gl = self.load[k] + le
        self.load[k] = gl
        s = gl / self.pes[g] + self.tiebreak[g]
        s[unit + 1 == self.end[k]] = np.inf
        self.score[rows, g] = s
        return unit
