"""Closed-form bounds on the trace-driven metrics: the screen of multi-fidelity search.

A trace-driven evaluation schedules a routing trace; the closed form (``trace = 'catalog'``,
``dse.vector``) does not. For a metric the search screens on, ``bound_metrics`` gives a
closed-form value that is never better than the trace-driven one of the same design:

* **exact**: the metric reads neither the trace nor the schedule (mapping, dies, t_layer, area,
  die / pool cost, peak compute time, the unit-port, Die-NoC, D2D and node loads): the closed-form
  value is the trace-driven value.
* **exact from the trace's statistics** (design-independent, computed once per workload and tile
  width by ``trace_stats``): U(B) = mean experts with a token per (step, layer), hence the read
  time, weight traffic and published latency (the closed form rescaled from the catalog's U(B) to
  the trace's), and ideal MFU = T / (w J) (T token-expert pairs, J = sum ceil(n_e / w) jobs).
* **bounded** through the MFU cascade (spec section 5, Eq. 2), with P the PE tiles of the layer's
  scheduling domain (``dse.mapping.placement.domain``):

  - occupancy = J / (P R), with R the rounds summed over the window (``rounds_bound``): with FIFO
    fetch each (step, layer) with a job takes at least max(1, ceil(J / P), ceil(j_hot / u))
    rounds (every round runs at most P jobs; the hottest expert's j_hot jobs run only on the u
    tiles of its group when direct, of its core when broadcast); load-aware fetch pulls jobs of a
    resource's own experts into its idle slots of earlier steps, so only each layer's sums hold:
    R_layer >= max(sum J / P, max_e sum j_e / u) (work conservation);
  - actual MFU = ideal MFU x occupancy <= ideal MFU x occupancy bound;
  - round stretch = hop factor x contention factor >= hop factor (contention is max(1, ...));
  - effective MFU <= actual-MFU bound / hop factor; delivered FLOPS <= peak x that;
  - delivered latency = max(read, FLOPs / delivered FLOPS) >= max(read, peak-compute time /
    effective-MFU bound);
  - die power >= the power of its fabrics at rest: core-mesh static power and unit-port traffic,
    Die NoC and D2D / IO exactly (ReRAM read and PE power are >= 0, multicast streams >= 0);
    pool power = dies x that;
  - energy per token at the delivered rate >= that floor x the delivered-time bound + the PE and
    ReRAM energy of one token (``delivered_energy_floor_uj``); $/Mtok (capex x time per token +
    energy per token, both increasing) >= its value at those lower bounds;
  - comm_violation = max over levels of load - 1 >= the maximum over the closed-form levels
    (core-mesh load >= 0); mm2 per occupancy >= network mm2 x hop factor / occupancy bound.

**Assumption** (tested over random designs of ``spaces/full.toml`` in
``tests/search/propose/test_bounds.py``): the trace-driven evaluation runs the same closed-form stages
as ``dse.vector`` on every metric named exact, and schedules the whole measured window of the
design's workload with every expert of a layer placed in its domain (so T, U and J are the
trace's). Bounds carry a relative slack of ``SLACK`` against floating-point rounding.

Metrics not listed in ``KINDS`` have no bound: the screen never uses them.
"""
from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from dse.catalog import MoEModel
from dse.hardware import cost, network, power
from dse.mapping import placement
from dse.performance import latency
from dse.workload.window import BoundedCache, workload

SLACK = 1e-9          # relative margin of every bound, in its safe direction
EXACT, LOWER, UPPER = "exact", "lower", "upper"

EXACT_METRICS = (
    "dies", "tp_degree", "d_used_columns", "t_layer_us", "ffn_compute_us_per_token", "pool_pflops",
    "die_area_mm2", "die_area_budget_mm2", "die_area_slack_mm2", "network_area_mm2", "core_mesh_area_mm2",
    "die_noc_area_mm2", "reram_area_mm2", "pe_area_mm2", "d2d_io_area_mm2", "die_cost_usd", "pool_cost_usd",
    "unit_io_gbps", "unit_io_load", "die_noc_busiest_link_gbps", "die_noc_load", "d2d_demand_gbps_per_die",
    "d2d_provision_gbps_per_die", "d2d_load", "node_demand_gbps", "node_load", "die_noc_power_w",
    "d2d_io_power_w", "stretch_hop_factor", "union_experts", "ffn_read_us_per_token", "ffn_latency_us_per_token",
    "weight_mb_per_token", "weight_energy_uj_per_token",
)
# metric -> how its bound relates to the trace-driven value (lower: bound <= value)
KINDS: dict[str, str] = {
    **{m: EXACT for m in EXACT_METRICS},
    "ffn_us_per_token_delivered": LOWER, "usd_per_mtok_delivered": LOWER, "usd_per_mtok": LOWER,
    "pool_power_w": LOWER, "die_power_w": LOWER, "round_stretch": LOWER, "comm_violation": LOWER,
    "mm2_per_occupancy": LOWER, "pool_energy_uj_per_token": LOWER,
    "ideal_mfu": UPPER, "occupancy": UPPER, "actual_mfu": UPPER, "effective_mfu": UPPER,
    "effective_occupancy": UPPER, "delivered_pflops": UPPER, "delivered_tokens_per_s": UPPER,
    "ffn_us_per_token_scheduled": LOWER, "usd_per_mtok_scheduled": LOWER, "scheduled_tokens_per_s": UPPER,
}
CLOSED_FORM_LEVELS = ("unit_io", "die_noc", "d2d", "node")     # the core mesh needs the schedule
# Closed-form values of metrics the schedule recomputes, kept as ``closed_form_<metric>``: hints
# (neither bounds nor values) that a sampler may learn from; the screen never reads them.
HINTS = ("core_mesh_load", "stretch_contention_factor")

_STATS: BoundedCache[tuple, TraceStats] = BoundedCache(64)


@dataclass(frozen=True)
class TraceStats:
    """Design-independent statistics of a workload's measured window at one tile width w
    (arrays over its (step, layer) samples, or over its layers)."""
    tile_width: int
    union_experts: float          # mean experts with a token per (step, layer)
    tokens: float                 # token-expert pairs T, summed over the window
    jobs: np.ndarray              # [samples] jobs J = sum_e ceil(n_e / w) of each (step, layer)
    hottest_jobs: np.ndarray      # [samples] max_e ceil(n_e / w) of each (step, layer)
    layer_jobs: np.ndarray        # [layers] J summed over the steps
    layer_hottest_jobs: np.ndarray  # [layers] max_e of the jobs of expert e summed over the steps

    @functools.cached_property
    def total_jobs(self) -> float:
        """J summed over the window."""
        return float(self.jobs.sum())

    @functools.cached_property
    def ideal_mfu(self) -> float:
        """T / (w J) of the window (the scheduler's ratio of sums)."""
        return self.tokens / (self.tile_width * max(1.0, self.total_jobs))

    def occupancy(self, pe_tiles: int, expert_tiles: int, fetch: str) -> float:
        """``occupancy_bound`` of this window, memoised (few distinct domains among many designs)."""
        key = (pe_tiles, expert_tiles, fetch)
        hit = self._occupancy.get(key)
        if hit is None:
            hit = self._occupancy[key] = occupancy_bound(self, pe_tiles, expert_tiles, fetch)
        return hit

    @functools.cached_property
    def _occupancy(self) -> dict[tuple, float]:
        return {}


class DomainExtent(NamedTuple):
    """What the bounds read of a layer's scheduling domain (``dse.mapping.placement.Domain``)."""
    units: int                    # PE tiles P
    max_group_units: int          # units of its largest PE group
    max_core_units: int           # units of its largest core

    @classmethod
    def of(cls, dom) -> DomainExtent:
        return cls(dom.units, max(dom.group_units), max(dom.core_units))


@functools.lru_cache(maxsize=1 << 14)
def domain_extent(n_experts: int, core_side: int, groups_per_core: int, die_units_x: int, die_units_y: int,
                  core_remainder: str, layout: str) -> DomainExtent:
    """``DomainExtent.of(placement.domain(...))`` without building the domain's unit lists: its cores
    are ``placement.domain``'s, and a core of u units has groups of the sizes of the runs of
    floor(i G / side^2), i < u."""
    per_die = placement.die_core_units(core_side, die_units_x, die_units_y, core_remainder)
    if layout not in placement.LAYOUTS or sum(per_die) == 0:        # raises as the domain does
        return DomainExtent.of(placement.domain(n_experts, core_side, groups_per_core, die_units_x,
                                                die_units_y, core_remainder, layout))
    if layout == "packed":
        cores = [u for die in placement.packed_cores(n_experts, per_die) for u in die]
    else:
        cores = per_die * max(1, math.ceil(n_experts / sum(per_die)))
    full = core_side * core_side
    g = max(1, min(groups_per_core, full))
    largest = max(max(Counter(i * g // full for i in range(u)).values(), default=0) for u in set(cores))
    return DomainExtent(sum(cores), largest, max(cores))


def trace_stats(point, model: MoEModel) -> TraceStats:
    """U, T and the job counts of the design's workload at its tile width (cached per workload
    and width)."""
    wl = workload(point, model)
    w = int(point.tile_width)

    def make() -> TraceStats:
        union, tokens = 0.0, 0.0
        jobs, hot, layer_e = [], [], None
        for loads in wl.chunks():                       # [steps, layers, E]
            union += float(np.count_nonzero(loads, axis=2).sum())
            tokens += float(loads.sum(dtype=np.int64))
            j = (loads.astype(np.int64) + (w - 1)) // w
            jobs.append(j.sum(axis=2).ravel())
            hot.append(j.max(axis=2).ravel())
            layer_e = j.sum(axis=0) if layer_e is None else layer_e + j.sum(axis=0)
        J = np.concatenate(jobs).astype(float)
        return TraceStats(w, union / J.size, tokens, J, np.concatenate(hot).astype(float),
                          layer_e.sum(axis=1).astype(float), layer_e.max(axis=1).astype(float))
    return _STATS.get_or_make((wl.key, w), make)


def rounds_bound(stats: TraceStats, pe_tiles: int, expert_tiles: int, fetch: str) -> float:
    """Lower bound of the rounds R summed over the window, with P = ``pe_tiles`` PE tiles in the
    domain and at most ``expert_tiles`` of them able to run one expert's jobs (its group when
    direct, its core when broadcast). FIFO: every (step, layer) with a job takes at least
    max(1, ceil(J / P), ceil(hottest / expert_tiles)) rounds. Load-aware fetch moves jobs between
    steps of a layer (never between resources), so only each layer's sums are bounded."""
    if fetch == "fifo":
        r = np.maximum(np.ceil(stats.jobs / pe_tiles), np.ceil(stats.hottest_jobs / expert_tiles))
        return float(np.where(stats.jobs > 0, np.maximum(r, 1.0), 0.0).sum())
    per_layer = np.maximum(stats.layer_jobs / pe_tiles, stats.layer_hottest_jobs / expert_tiles)
    return float(np.ceil(per_layer).sum())


def occupancy_bound(stats: TraceStats, pe_tiles: int, expert_tiles: int, fetch: str) -> float:
    """Upper bound of occupancy J / (P R) (see ``rounds_bound``); at most 1."""
    r = rounds_bound(stats, pe_tiles, expert_tiles, fetch)
    return min(1.0, stats.total_jobs / (pe_tiles * r)) if r > 0 else 0.0


def die_power_floor_w(cf: Mapping[str, Any], active_units: int, core_side: int, noc_ghz: float | None = None) -> float:
    """Die power with the PEs, arrays and multicast streams idle: core-mesh static power and
    unit-port traffic at the network clock, Die NoC and D2D / IO as computed (lower bound of the
    traced die power)."""
    unit_hops = network.unit_io_bit_hops_per_s(active_units, cf["unit_io_gbps"], core_side)
    mesh_w = network.fabric_power_w(cf["core_mesh_area_mm2"], network.core_mesh_bit_hops_per_s(0.0, unit_hops), noc_ghz)
    return (mesh_w + cf["die_noc_power_w"] + cf["d2d_io_power_w"]
            + power.reram_power_w(cf["die_read_gbps"], 0.0) + power.pe_power_w(cf["die_gflops"], 0.0))


def delivered_energy_floor_uj(cf: Mapping[str, Any], pool_floor_w: float, t_delivered_us: float,
                              ideal_mfu: float, pe_mhz=None, macro_mhz=None) -> float:
    """Lower bound of the pool's energy per token at the delivered rate (uJ): the idle-fabric floor
    for the delivered-time bound, plus the PE and ReRAM energy a token needs whatever the schedule.
    PE power scales with effective MFU e and the delivered time is >= t_peak / e (t_peak: FLOPs at
    peak), so PE energy >= PE power at MFU 1 x t_peak; ReRAM power scales with effective occupancy
    a = e / ideal MFU, so ReRAM energy >= ReRAM power at activity 1 x t_peak / ideal MFU."""
    t_peak = cf["ffn_compute_us_per_token"]
    busy_w = cf["dies"] * (power.pe_power_w(cf["die_gflops"], 1.0, pe_mhz)
                           + power.reram_power_w(cf["die_read_gbps"], 1.0, macro_mhz) / ideal_mfu)
    return pool_floor_w * t_delivered_us + busy_w * t_peak


def jobs_per_token(stats: TraceStats, layers: int, batch: int) -> float:
    """Jobs of every layer of a decode step per token of the batch, over the window."""
    return stats.total_jobs * layers / (max(1, stats.jobs.size) * batch)


def scheduled_floor_us(t_layer_us, tp_degree, jobs_per_token_, occupancy, pool_tiles, compute_us, fifo):
    """Lower bound of ``ffn_us_per_token_scheduled`` (``dse.performance.scheduled``), numpy-friendly.

    Read: every round costs a tile at least t_layer (its pass over its weights) and a window takes
    R >= max(rounds bound, J / P) >= J / (P x occupancy bound) rounds per layer (work conservation,
    load-aware fetch included); with tile-time R t_layer P TP over the pool's tiles per token of
    the batch, P cancels: t_layer x TP x jobs per token / (occupancy bound x pool tiles). Compute
    (FIFO only: with load-aware fetch a pulled job runs in an idle slot timed by its host round):
    every job of n tokens holds its tile >= n t_tok, which sums to the FLOPs per token at pool peak."""
    read = t_layer_us * tp_degree * jobs_per_token_ / (occupancy * pool_tiles)
    return np.where(np.asarray(fifo) & (compute_us > read), compute_us, read)


def bound_metrics(cf: Mapping[str, Any], point, model: MoEModel, stats: TraceStats, extent: DomainExtent
                  ) -> dict[str, Any]:
    """Closed-form bounds (see ``KINDS``) of the trace-driven metrics of ``point`` on ``model``,
    from its closed-form metrics ``cf`` (a ``dse.vector`` row), the workload's statistics and the
    ``extent`` of the layer's scheduling domain; an infeasible design keeps only its feasibility
    and the metrics its closed form has."""
    out: dict[str, Any] = {"feasible": cf["feasible"], "infeasible_reason": cf.get("infeasible_reason", "")}
    out.update({m: cf[m] for m in EXACT_METRICS if cf.get(m) is not None})
    out.update({f"closed_form_{h}": cf[h] for h in HINTS if cf.get(h) is not None})
    if "ffn_read_us_per_token" in cf:
        out.update(_union_rescaled(cf, model, stats.union_experts))
    if "stretch_hop_factor" not in cf:
        return out
    hop = cf["stretch_hop_factor"]
    ideal = stats.ideal_mfu
    expert_tiles = extent.max_group_units if point.pooling == "direct" else extent.max_core_units
    occ = stats.occupancy(extent.units, expert_tiles, point.fetch)
    eff = ideal * occ / hop
    if eff <= 0:                                       # a window without a token: nothing to bound
        return out
    t_del = max(out["ffn_read_us_per_token"], cf["ffn_compute_us_per_token"] / eff)
    upper = {"ideal_mfu": ideal, "occupancy": occ, "actual_mfu": ideal * occ, "effective_mfu": eff,
             "effective_occupancy": occ / hop, "delivered_pflops": cf["pool_pflops"] * eff,
             "delivered_tokens_per_s": 1e6 / t_del}
    t_sch = float(scheduled_floor_us(cf["t_layer_us"], cf["tp_degree"],
                                     jobs_per_token(stats, model.moe_layers, point.run_batch), occ,
                                     cf["dies"] * cf["die_active_units"], cf["ffn_compute_us_per_token"],
                                     point.fetch == "fifo"))
    upper["scheduled_tokens_per_s"] = 1e6 / t_sch
    lower = {"ffn_us_per_token_delivered": t_del, "ffn_us_per_token_scheduled": t_sch, "round_stretch": hop,
             "comm_violation": max([cf[f"{lvl}_load"] for lvl in CLOSED_FORM_LEVELS] + [0.0]) - 1.0,
             "mm2_per_occupancy": cf["network_area_mm2"] * hop / occ}
    if "die_area_mm2" in cf:
        die_w = die_power_floor_w(cf, cf["die_active_units"], point.core_side, point.noc_ghz)
        pool_w = power.pool_power_w(cf["dies"], die_w)
        t_pub = out["ffn_latency_us_per_token"]
        lower.update(die_power_w=die_w, pool_power_w=pool_w,
                     pool_energy_uj_per_token=cost.pool_energy_uj_per_token(pool_w, t_pub))
        if cf.get("pool_cost_usd") is not None:        # the cost stage ran (the design is feasible)
            e_uj = delivered_energy_floor_uj(cf, pool_w, t_del, ideal, point.pe_mhz, point.macro_mhz)
            lower.update(usd_per_mtok=cost.usd_per_mtok(cf["pool_cost_usd"], pool_w, t_pub),
                         usd_per_mtok_delivered=cost.usd_per_mtok(cf["pool_cost_usd"], e_uj / t_del, t_del),
                         usd_per_mtok_scheduled=cost.usd_per_mtok(cf["pool_cost_usd"], pool_w, t_sch))
    out.update({k: _safe(v, LOWER) for k, v in lower.items()})
    out.update({k: _safe(v, UPPER) for k, v in upper.items()})
    return out


def _union_rescaled(cf: Mapping[str, Any], model: MoEModel, union_trace: float) -> dict[str, float]:
    """The U(B)-dependent closed-form metrics at the trace's U(B) instead of the catalog's: the
    weight bytes per step scale by L (U P_e + router), the rest is unchanged."""
    ratio = (latency.weight_bytes_per_step(model.moe_layers, union_trace, model.expert_bytes, model.router_bytes)
             / latency.weight_bytes_per_step(model.moe_layers, cf["union_experts"], model.expert_bytes,
                                             model.router_bytes))
    read = cf["ffn_read_us_per_token"] * ratio
    return {"union_experts": union_trace, "ffn_read_us_per_token": read,
            "ffn_latency_us_per_token": max(read, cf["ffn_compute_us_per_token"]),
            "weight_mb_per_token": cf["weight_mb_per_token"] * ratio,
            "weight_energy_uj_per_token": cf["weight_energy_uj_per_token"] * ratio}


def _safe(v: float, kind: str) -> float:
    """``v`` moved by ``SLACK`` in the bound's safe direction (lower bounds down, upper up)."""
    if not math.isfinite(v):
        return v
    return v - SLACK * abs(v) if kind == LOWER else v + SLACK * abs(v)
