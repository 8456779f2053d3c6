"""What a clock costs: the supply voltage a clock needs, and what that voltage and any extra
pipelining do to energy per operation, leakage and area (12 nm FinFET class).

The relation is the alpha-power law (Sakurai & Newton, IEEE JSSC 25(2), 1990): a logic path's
delay goes as V / (V - Vt)^alpha, so the clock a block reaches at supply V is

    f(V) / f(V_nom) = [(V - Vt)^alpha / V] / [(V_nom - Vt)^alpha / V_nom].

Each clock domain is anchored at its published clock running at the node's nominal supply
(``C.vdd_nominal_v``; the paper's 200 MHz macros, 400 MHz PEs and 1 GHz network, so every figure
of the published operating point is unchanged: every factor below is exactly 1 there).

* A slower clock lowers the supply down to ``C.vdd_min_v`` (retention and sense margins), and no
  further: below the clock reached at V_min a slower clock saves no energy per operation.
* A faster clock raises it up to ``C.vdd_max_v`` (the node's overdrive limit); beyond the clock
  reached there, timing closes only by cutting the logic into more pipeline stages. A cycle is
  the logic of a stage plus the latch overhead (Hartstein & Puzak, ISCA 2002: t = t_logic / n +
  t_o, t_o a fraction ``C.latch_overhead_fraction`` of the cycle at f(V_max)), so the depth
  needed grows as (1 - h) / (f(V_max) / f - h) and no depth reaches f(V_max) / h; each stage
  adds its registers (``C.pipeline_register_area_fraction`` of the block's area at the
  published depth).

Energy per operation goes as C V^2 (the switched capacitance growing with the added registers);
leakage power as V x I_off(V), I_off rising by drain-induced barrier lowering
(10^(DIBL x dV / S), ``C.dibl_v_per_v``, ``C.subthreshold_mv_per_decade``) and with the area.
A block whose published energy per operation lumps both (the PE's pJ/FLOP, the read path's pJ/B)
takes ``energy_per_op_factor``: its leakage share (``C.leakage_energy_share``) is leakage power
over the operation rate, so below the clock reached at V_min an operation costs more, not less
(the minimum-energy point: Calhoun & Chandrakasan, IEEE JSSC 40(9), 2005).
All functions take scalars or numpy arrays (the vectorised path calls them on columns).
"""
from __future__ import annotations

import functools

import numpy as np

from dse.constants import C

# The supply a clock needs: the alpha-power law tabulated over [V_min, V_max] (monotone in V above
# Vt), inverted by linear interpolation and polished by one Newton step, elementwise. It replaced a
# 60-step bisection per distinct clock behind a row sort of the clock columns (np.unique), which was
# 82 % of the catalog study's planner and 86 % of a `dse grid` (issues 48, 49).
SCALAR_CLOCKS = 4096         # scalar clocks kept (``at``)
TABLE_POINTS = 4097          # interpolation error ~1e-8 V; one Newton step takes it to ~1e-16 V

_TABLES: dict[tuple[float, ...], _Table] = {}


def _out(x):
    """A Python float for a scalar result, the array otherwise."""
    return float(x) if np.ndim(x) == 0 else x


def _speed(v: np.ndarray) -> np.ndarray:
    """Relative speed (V - Vt)^alpha / V of logic at supply ``v``."""
    return (v - C.vth_v) ** C.alpha_power / v


def clock_ratio_at(v: float | np.ndarray) -> float | np.ndarray:
    """Clock reached at supply ``v`` over the clock reached at the nominal supply."""
    r = _speed(np.asarray(v, dtype=float)) / _speed(np.asarray(C.vdd_nominal_v, dtype=float))
    return float(r) if np.ndim(r) == 0 else r


class _Table:
    """The law tabulated: ``TABLE_POINTS`` supplies ``v`` from V_min to V_max and their clock ratios
    ``r`` (increasing), read by ``interp``: ``np.interp(x, r, v)`` to the last bit, with the
    interval of x found through buckets of equal width in r (a few gathers) instead of a binary
    search per value (the search was most of a clock column's price)."""

    def __init__(self, v: np.ndarray) -> None:
        r = np.asarray(clock_ratio_at(v))
        self.r, self.v = r, v
        self.slope = np.append((v[1:] - v[:-1]) / (r[1:] - r[:-1]), 0.0)   # as np.interp computes them
        self.width = float(np.min(np.diff(r))) / 2          # a bucket holds at most one table point
        self.lo = r[0]
        buckets = int(np.ceil((r[-1] - r[0]) / self.width)) + 2
        edges = r[0] + (np.arange(buckets) - 1) * self.width  # each bucket's left edge, one bucket back
        self.first = np.clip(np.searchsorted(r, edges, side="right") - 1, 0, len(r) - 1)
        self.r_pad = np.append(r, [np.inf, np.inf])

    def interp(self, x: np.ndarray) -> np.ndarray:
        """``np.interp(x, self.r, self.v)``, bit for bit (finite, infinite and NaN x)."""
        x = np.asarray(x, dtype=float)
        b = np.fmin(np.fmax((x - self.lo) / self.width, 0.0), len(self.first) - 1.0)   # NaN -> bucket 0
        j = np.take(self.first, b.astype(np.intp))
        j = j + (np.take(self.r_pad, j + 1) <= x)             # at most two table points past the bucket's
        j = j + (np.take(self.r_pad, j + 1) <= x)
        j = np.minimum(j, len(self.r) - 1)
        with np.errstate(invalid="ignore"):               # 0 x inf past the last point: replaced below
            y = np.take(self.slope, j) * (x - np.take(self.r, j)) + np.take(self.v, j)
        y = np.where(x < self.r[0], self.v[0], y)
        return np.where(x >= self.r[-1], self.v[-1], y)


def _table() -> _Table:
    """The law tabulated at the current constants (a constants override, e.g. a model-uncertainty
    draw, gets its own)."""
    key = (float(C.vth_v), float(C.alpha_power), float(C.vdd_min_v), float(C.vdd_max_v), float(C.vdd_nominal_v))
    hit = _TABLES.get(key)
    if hit is None:
        if len(_TABLES) >= 64:
            _TABLES.clear()
        hit = _TABLES[key] = _Table(np.linspace(key[2], key[3], TABLE_POINTS))
    return hit


def _solve_v(ratio: np.ndarray) -> np.ndarray:
    """The supply at which logic runs ``ratio`` x its clock at V_nom, clamped to [V_min, V_max]:
    the table's interpolation, then one Newton step on (V - Vt)^alpha / V = ratio x its value at
    V_nom (within 1e-15 V of the exact root; ``tests/hardware/test_clock.py``)."""
    v = _table().interp(ratio)
    g = np.asarray(clock_ratio_at(v))
    dg = g * (C.alpha_power / (v - C.vth_v) - 1.0 / v)     # d/dV of the ratio
    return np.clip(v - (g - ratio) / dg, C.vdd_min_v, C.vdd_max_v)


class Clock:
    """One clock domain at ``f`` against its published clock ``f_ref`` (scalars or arrays): every
    factor below, each computed once, on first use. The module's functions build one per call; a
    vectorised caller builds one per clock column and passes it to every function pricing that
    domain (``at``), so the supply is solved once per column, not once per factor."""

    def __init__(self, f: float | np.ndarray, f_ref: float | np.ndarray) -> None:
        self.f, self.f_ref = f, f_ref
        self._memo: dict[str, np.ndarray] = {}

    def _get(self, name: str, make) -> np.ndarray:
        hit = self._memo.get(name)
        if hit is None:
            hit = self._memo[name] = make()
        return hit

    @property
    def ratio(self) -> np.ndarray:
        """f / f_ref."""
        return self._get("ratio", lambda: np.asarray(self.f, dtype=float) / np.asarray(self.f_ref, dtype=float))

    @property
    def supply_v(self) -> np.ndarray:
        """The supply the clock needs, within [V_min, V_max]; exactly V_nom at ``f_ref`` and V_min
        at or below the clock V_min reaches."""
        def make():
            ratio = self.ratio
            v = np.where(ratio <= clock_ratio_at(C.vdd_min_v), C.vdd_min_v, _solve_v(ratio))
            return np.where(np.abs(ratio - 1.0) <= 1e-12, C.vdd_nominal_v, v)
        return self._get("supply_v", make)

    @property
    def pipeline_depth(self) -> np.ndarray:
        """Pipeline depth over the published one: 1 up to the clock reached at V_max, then
        (1 - h) / (f(V_max) / f - h); infinite at and above f(V_max) / h (no pipeline reaches it)."""
        def make():
            h = C.latch_overhead_fraction
            over = self.ratio / clock_ratio_at(C.vdd_max_v)
            with np.errstate(divide="ignore", invalid="ignore"):
                need = np.where(1.0 / over > h, (1.0 - h) / (1.0 / over - h), np.inf)
            return np.where(over <= 1.0, 1.0, need)
        return self._get("pipeline_depth", make)

    @property
    def area(self) -> np.ndarray:
        """Area of the clocked block over its published area: the registers of the extra stages."""
        return self._get("area", lambda: 1.0 + C.pipeline_register_area_fraction * (self.pipeline_depth - 1.0))

    @property
    def dynamic_energy(self) -> np.ndarray:
        """Energy per operation over the published one: (V / V_nom)^2 x switched capacitance."""
        return self._get("dynamic_energy", lambda: (self.supply_v / C.vdd_nominal_v) ** 2 * self.area)

    @property
    def leakage(self) -> np.ndarray:
        """Leakage power over the published one: V x I_off(V) (DIBL) x area."""
        def make():
            v = self.supply_v
            i_off = 10.0 ** (C.dibl_v_per_v * (v - C.vdd_nominal_v) / (C.subthreshold_mv_per_decade * 1e-3))
            return v / C.vdd_nominal_v * i_off * self.area
        return self._get("leakage", make)

    @property
    def clocked_power(self) -> np.ndarray:
        """Clock-tree power over the published one: C V^2 f (the tree grows with the area)."""
        return self._get("clocked_power", lambda: self.dynamic_energy * np.asarray(self.f, dtype=float)
                         / np.asarray(self.f_ref, dtype=float))

    @property
    def energy_per_op(self) -> np.ndarray:
        """Energy per operation of a block whose energy lumps switching and leakage: (1 - s) x the
        dynamic factor + s x the leakage factor x f_ref / f."""
        def make():
            s = C.leakage_energy_share
            inv = np.asarray(self.f_ref, dtype=float) / np.asarray(self.f, dtype=float)
            return (1 - s) * self.dynamic_energy + s * self.leakage * inv
        return self._get("energy_per_op", make)

    @property
    def interleave(self) -> np.ndarray:
        """Banks a memory array is read across: 1 up to the clock its access reaches at V_max (an
        access is sensing-limited and not pipelined), then f / f(V_max) banks read in turn."""
        return self._get("interleave", lambda: np.maximum(1.0, self.ratio / clock_ratio_at(C.vdd_max_v)))


class Spread:
    """A ``Clock`` of a few distinct clocks read per row: ``rows[i]`` is row i's index into
    ``clock.f``; each factor is computed on the distinct clocks and then gathered (a column of a
    design grid holds a handful of clocks for thousands of rows)."""

    def __init__(self, clock: Clock, rows: np.ndarray) -> None:
        self.clock, self.rows, self.f_ref = clock, rows, clock.f_ref
        self._memo: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("_") or not isinstance(getattr(Clock, name, None), property):
            raise AttributeError(name)
        hit = self._memo.get(name)
        if hit is None:
            hit = self._memo[name] = np.take(getattr(self.clock, name), self.rows)
        return hit


def at(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> Clock | Spread:
    """``f`` itself when it is already a ``Clock`` (or ``Spread``) against ``f_ref``, else a new
    one (the functions below take either: a caller pricing one domain many ways passes one)."""
    if isinstance(f, (Clock, Spread)):
        if f.f_ref is not f_ref and np.any(f.f_ref != f_ref):
            raise ValueError(f"a clock against {f.f_ref} priced against {f_ref}")
        return f
    if isinstance(f, (int, float)) and isinstance(f_ref, (int, float)):
        return _scalar_clock(float(f), float(f_ref), _law())
    return Clock(f, f_ref)


def _law() -> tuple[float, ...]:
    """The constants the factors read (a model-uncertainty draw may override them)."""
    return (C.vth_v, C.alpha_power, C.vdd_min_v, C.vdd_max_v, C.vdd_nominal_v, C.latch_overhead_fraction,
            C.pipeline_register_area_fraction, C.dibl_v_per_v, C.subthreshold_mv_per_decade, C.leakage_energy_share)


@functools.lru_cache(maxsize=SCALAR_CLOCKS)
def _scalar_clock(f: float, f_ref: float, law: tuple[float, ...]) -> Clock:
    """One clock of the scalar path, kept: a design prices each of its clocks many times (every
    router of its floorplan) and a study's designs share a few clocks."""
    return Clock(f, f_ref)


def supply_v(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> float | np.ndarray:
    """Supply voltage a block needs at clock ``f``, anchored at ``f_ref`` = V_nom (same units),
    within [V_min, V_max]; exactly V_nom at ``f_ref`` and V_min at or below the clock V_min reaches."""
    return _out(at(f, f_ref).supply_v)


def pipeline_depth_factor(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> float | np.ndarray:
    """Pipeline depth over the published one that clock ``f`` needs (``Clock.pipeline_depth``)."""
    return _out(at(f, f_ref).pipeline_depth)


def area_factor(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> float | np.ndarray:
    """Area of a clocked block at ``f`` over its area at ``f_ref`` (``Clock.area``)."""
    return _out(at(f, f_ref).area)


def dynamic_energy_factor(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> float | np.ndarray:
    """Energy per operation at ``f`` over the published one (``Clock.dynamic_energy``)."""
    return _out(at(f, f_ref).dynamic_energy)


def leakage_factor(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> float | np.ndarray:
    """Leakage power at ``f`` over the published one (``Clock.leakage``)."""
    return _out(at(f, f_ref).leakage)


def clocked_power_factor(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> float | np.ndarray:
    """Clock-tree power at ``f`` over the published one (``Clock.clocked_power``)."""
    return _out(at(f, f_ref).clocked_power)


def energy_per_op_factor(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> float | np.ndarray:
    """Energy per operation at ``f`` over the published one for a block whose energy lumps
    switching and leakage (``Clock.energy_per_op``)."""
    return _out(at(f, f_ref).energy_per_op)


def interleave_factor(f: float | np.ndarray | Clock | Spread, f_ref: float | np.ndarray) -> float | np.ndarray:
    """Banks a memory array is read across at clock ``f`` (``Clock.interleave``)."""
    return _out(at(f, f_ref).interleave)
