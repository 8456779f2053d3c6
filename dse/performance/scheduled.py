"""Scheduled time: the FFN pool's per-token time from the rounds of the schedule (spec section 8).

Per job the spec charges max(t_compute, t_weight_read) + t_comm. Per scheduled round, the time of
its busiest PE tile (``docs/model/scheduled-time.md`` has the derivation and the limits):

    t_round(r) = max(t_mcast, n_r x t_tok) + n_r x t_io

* t_read: one pass of a unit over its own D_used columns at its own read bandwidth, plus the fixed
  pulse overhead (= ``t_layer_us``);
* n_r: tokens of the round's busiest job (``dse.mapping.rounds``: the jobs' real tokens, not a
  full w-token slot); t_tok = 2 x unit bytes / unit peak FLOPS per token of a job;
* t_io: the unit port's time per token of a job (FP8 activations in, BF16 partials out per chunk);
* t_mcast: the read part under that (step, layer)'s own multicast: t_read without a multicast
  stream, else hop factor x max(t_read, streams x unit bytes / core-mesh bisection), with the
  step's most streams on any core (instead of one p99 stretch for every round, direct pooling
  included); its ratio to t_read is the round's stretch.

A (step, layer) runs rho rounds (the scheduler's critical path) plus, once, the dispatch of its
activations and the reduction of its partials over the Die NoC, D2D and node links
(``level_comm_us``: bytes per layer over each level's provision). Layers run pipelined over the
pool's dies: the pool finishes a token every

    t_token = sum over (step, layer) of t(s, l) x tiles of the layer / (pool tiles x B x steps)

Pure functions, units in the names; the ``scheduled`` stage wires them.
"""
from __future__ import annotations

import numpy as np

from dse.units import BYTES_PER_GB, FLOPS_PER_GFLOP, US_PER_S


def job_compute_us_per_token(unit_weight_bytes: float, unit_gflops: float) -> float:
    """Time a PE tile needs per token of a job: 2 FLOP per weight byte of its unit at peak (us)."""
    return 2.0 * unit_weight_bytes / (unit_gflops * FLOPS_PER_GFLOP) * US_PER_S


def job_io_us_per_token(io_bytes_per_token: float, port_gbps: float) -> float:
    """Time the unit port needs per token of a job (activations in, partials out) (us)."""
    return io_bytes_per_token / (port_gbps * BYTES_PER_GB) * US_PER_S


def level_comm_us(loads: list[float], t_layer_us_: float) -> float:
    """Once per (step, layer): each level's bytes per layer over its provision. A level's load is
    demand / provision with demand = bytes per layer / t_layer, so its time is load x t_layer."""
    return sum(max(0.0, x) for x in loads) * t_layer_us_


def multicast_us_per_stream(unit_weight_bytes: float, provision_gbps: float) -> float:
    """Time one multicast stream's bytes (a unit's read-out) take over the core mesh's bisection (us)."""
    return unit_weight_bytes / (provision_gbps * BYTES_PER_GB) * US_PER_S


def round_read_us(read_us: float, streams_max: np.ndarray, hop_factor: float, stream_us: float) -> np.ndarray:
    """The read part of a round of every (step, layer) (us): ``read_us`` without multicast, else
    hop factor x max(read_us, streams x ``stream_us``): the deeper tree, and the bisection carrying
    that step's most concurrent streams of one core."""
    s = np.asarray(streams_max, dtype=float)
    return np.where(s > 0, hop_factor * np.maximum(read_us, s * stream_us), read_us)


def step_layer_us(leads: np.ndarray, rounds: np.ndarray, read_us: np.ndarray, compute_us_per_token: float,
                  io_us_per_token: float, level_us: float) -> np.ndarray:
    """t(s, l) [steps, layers] (us): sum over the rho rounds of t_round, plus ``level_us`` when any.

    ``leads`` [w, s, l]: K_n, rounds whose busiest job carries >= n tokens; ``rounds`` rho; a step
    keeps its first (densest) rho rounds: K_n -> min(K_n, rho). With f(n) = max(a, n b) + n c and
    every kept round leading with >= 1 token: sum_r f(n_r) = rho f(0) + sum_n K_n (f(n) - f(n-1))."""
    rho = np.asarray(rounds, dtype=float)
    a = np.asarray(read_us, dtype=float)
    if a.shape != rho.shape:
        a = a * np.ones_like(rho)
    kept = np.minimum(leads, rho)
    total, prev = rho * a, a
    for n in range(1, leads.shape[0] + 1):        # in place, in the order of n (bit for bit the same)
        f = np.maximum(a, n * compute_us_per_token)
        f += n * io_us_per_token
        d = f - prev
        d *= kept[n - 1]
        total += d
        prev = f
    return total + np.where(rho > 0, level_us, 0.0)


def ffn_us_per_token_scheduled(step_layer_us_: np.ndarray, layer_tiles: int, pool_tiles: int, batch: int) -> float:
    """Per-token time of the pool, layers pipelined over its dies: the tile-time of every (step,
    layer) over the pool's tiles, per token (us)."""
    steps = step_layer_us_.shape[0]
    return float(step_layer_us_.sum()) * layer_tiles / (pool_tiles * batch * steps)


def ffn_step_us_scheduled(step_layer_us_: np.ndarray) -> float:
    """A decode step's time through every layer, not pipelined (us): the mean over steps."""
    return float(step_layer_us_.sum(axis=1).mean())


def tokens_per_s(us_per_token: float) -> float:
    return US_PER_S / us_per_token
