"""Layer time and per-token FFN-pool latency (spec sections 6, 8).

* t_layer = D_used x t_col + ``C.t_layer_fixed_us`` (61.8 us at D_used = 24576, t_col = 2.5 ns).
* Weight bytes per step = L (U(B) P_e + router bytes); the study counts routed experts only
  (its U(1) = k), so the shared expert's read is not in the per-token figure; we keep that
  convention to reproduce Tables V / VIII (it adds 1/U(B) of traffic: 2 % at B = 8).
* Per-token pool latency = max(read time, compute time) per token; read time =
  bytes per step / B / pool read BW (the published regime), compute time = 2 x routed params per
  token / pool peak FLOPS. Read bound exactly when B k / (U(B) + router / P_e) < F/2 (the roofline).
"""
from __future__ import annotations

from dse.constants import C
from dse.units import BYTES_PER_GB, FLOPS_PER_GFLOP, US_PER_NS, US_PER_S


def t_layer_us(d_used_columns: int, t_col_ns: float) -> float:
    """Time a unit needs to stream its D_used columns once, plus the fixed pulse overhead."""
    return d_used_columns * t_col_ns * US_PER_NS + C.t_layer_fixed_us


def weight_bytes_per_step(moe_layers: int, union: float, expert_bytes: float, router_bytes: float) -> float:
    """Bytes of weights read per decode step: L (U(B) P_e + router)."""
    return moe_layers * (union * expert_bytes + router_bytes)


def weight_bytes_per_token(bytes_per_step: float, batch: int) -> float:
    return bytes_per_step / batch


def read_us_per_token(bytes_per_token: float, read_gbps: float) -> float:
    """Read-bound time per token at an aggregate read bandwidth (GB/s)."""
    return bytes_per_token / (read_gbps * BYTES_PER_GB) * US_PER_S


def no_pooling_weight_bytes_per_token(moe_layers: int, jobs_per_layer: float, expert_bytes: float,
                                      router_bytes: float, batch: int) -> float:
    """Weight bytes per token without pooling: every PE job reads its expert's weights itself, so
    the jobs of a layer replace U(B) (213.5 vs 168.6 at B = 64: 420 MB instead of 331 MB)."""
    return weight_bytes_per_token(weight_bytes_per_step(moe_layers, jobs_per_layer, expert_bytes, router_bytes), batch)


def flops_per_token(moe_layers: int, top_k: int, expert_bytes: float) -> float:
    """2 FLOP per FP8 weight per routed expert per layer (shared expert excluded, as in the
    study's weight-traffic convention)."""
    return 2.0 * moe_layers * top_k * expert_bytes


def compute_us_per_token(flops: float, peak_gflops: float) -> float:
    return flops / (peak_gflops * FLOPS_PER_GFLOP) * US_PER_S


def is_read_bound(batch: int, top_k: int, union: float, balance: float, router_bytes: float = 0.0,
                  expert_bytes: float = 1.0) -> bool:
    """Roofline: tokens per expert read below F/2 means the weight stream binds. The router's
    bytes are read every step too, so they count as router / P_e more expert reads:
    B k / (U(B) + router / P_e) < F/2, exactly where the read time exceeds the compute time."""
    return batch * top_k / (union + router_bytes / expert_bytes) < balance / 2
