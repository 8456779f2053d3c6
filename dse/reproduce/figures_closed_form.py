"""Published figures computed by the closed-form model (spec sections 1-3, 7-9).

Every function names the reference entry it reproduces; the physics is in the modules it calls.
"""
from __future__ import annotations

import functools

from dse.catalog import get_gpu, get_model
from dse.hardware.core import link_gbps
from dse.hardware.unit import roofline_cap
from dse.performance import balance
from dse.pipeline.evaluate import evaluate
from dse.reproduce.registry import figure
from dse.spec import DesignPoint

DEFAULT_MODEL = "qwen3.5-35b-a3b"


@functools.cache
def m(**knobs):
    """Metrics of the published design with some knobs changed (closed-form unions)."""
    point = DesignPoint.from_dict({"model": DEFAULT_MODEL, "trace": "catalog", **knobs})
    return evaluate(point).metrics


# ---- Table I: machine balance (dse/performance/balance.py) ----------------------------------------
def _gpu_balance(key: str) -> float:
    g = get_gpu(key)
    return balance.flop_per_byte(g.flops, g.read_bps)


def _knee(key: str) -> float:
    mod = get_model(DEFAULT_MODEL)
    return balance.knee_batch(_gpu_balance(key), mod.experts, mod.top_k)


figure("machine_balance.h20_flop_per_byte", "arithmetic")(lambda: _gpu_balance("h20"))
figure("machine_balance.h20_tokens_per_read", "arithmetic")(lambda: balance.tokens_per_read(_gpu_balance("h20")))
figure("machine_balance.h20_knee_batch_35b", "arithmetic")(lambda: _knee("h20"))
figure("machine_balance.h100_flop_per_byte", "arithmetic")(lambda: _gpu_balance("h100"))
figure("machine_balance.h100_tokens_per_read", "arithmetic")(lambda: balance.tokens_per_read(_gpu_balance("h100")))
figure("machine_balance.h100_knee_batch_35b", "arithmetic")(lambda: _knee("h100"))

# ---- Table III: hierarchy (dse/hardware/{unit,core,die,package,node}.py) ----------------------
figure("hierarchy.unit_read_gbps", "arithmetic")(lambda: m()["unit_read_gbps"])
figure("hierarchy.unit_gflops", "calibrated",
       note="C.pe_peak_derate (400 / 409.6) is the study's rounding of this very figure")(lambda: m()["unit_gflops"])
figure("hierarchy.core_read_gbps", "arithmetic")(lambda: m()["core_read_gbps"])
figure("hierarchy.die_read_tbps", "arithmetic")(lambda: m()["die_read_gbps"] / 1e3)
figure("hierarchy.die_tflops", "arithmetic")(lambda: m()["die_gflops"] / 1e3)
figure("hierarchy.die_capacity_gib", "arithmetic")(lambda: m()["die_capacity_mib"] / 1024)
figure("hierarchy.package_read_tbps", "arithmetic")(lambda: m()["package_read_gbps"] / 1e3)
figure("hierarchy.node_read_tbps", "arithmetic")(lambda: m()["node_read_gbps"] / 1e3)
figure("hierarchy.bytes_per_flop", "arithmetic")(lambda: m()["bytes_per_flop"])
figure("hierarchy.pool_dies_35b", "arithmetic")(lambda: m()["dies"])
figure("hierarchy.pool_pflops_35b", "arithmetic")(lambda: m()["pool_pflops"])
figure("hierarchy.pool_read_tbps_35b", "arithmetic")(lambda: m()["pool_read_tbps"])

# ---- Section IV-D: roofline cap per tile width on the published unit (dse/hardware/unit.py) --
for _w in (1, 2, 4):
    figure(f"tile.roofline_cap_w{_w}", "arithmetic")(lambda w=_w: roofline_cap(w, m()["balance_flop_per_byte"]))

# ---- Section V-D: array depth (dse/mapping/sharding.py, dse/performance/latency.py) ----------------
figure("depth_35b.t_layer_us_32k", "calibrated", note="C.t_layer_fixed_us (0.37 us) is fitted on this figure")(
    lambda: m(array_depth=32768)["t_layer_us"])
figure("depth_35b.t_layer_us_16k", "arithmetic", note="D_used x t_col + the 0.37 us fitted at 32K")(
    lambda: m(array_depth=16384)["t_layer_us"])
figure("depth_35b.dies_32k", "arithmetic")(lambda: m(array_depth=32768)["dies"])
figure("depth_35b.dies_16k", "arithmetic")(lambda: m(array_depth=16384)["dies"])
figure("depth_35b.array_utilization_24k", "arithmetic")(lambda: m(array_depth=24576)["array_utilization"])

# ---- Tables V, VIII: per-token latency and GPU baselines (dse/performance/{latency,baselines}.py) --
figure("latency_35b.rexpert_us_b8", "arithmetic")(lambda: m(batch=8)["ffn_latency_us_per_token"])
figure("latency_35b.rexpert_us_b64", "arithmetic")(lambda: m(batch=64)["ffn_latency_us_per_token"])
figure("latency_35b.h20_dies_iso_compute", "arithmetic")(lambda: m()["h20_dies_iso_compute"])
figure("latency_35b.h20_us_b8", "arithmetic")(lambda: m(batch=8)["h20_us_per_token"])
figure("latency_35b.h20_us_b64", "arithmetic")(lambda: m(batch=64)["h20_us_per_token"])
figure("latency_35b.h100_dies_iso_compute", "arithmetic")(lambda: m()["h100_dies_iso_compute"])
figure("latency_35b.h100_us_b8", "arithmetic")(lambda: m(batch=8)["h100_us_per_token"])
figure("latency_35b.h100_us_b64", "arithmetic")(lambda: m(batch=64)["h100_us_per_token"])
figure("latency_35b.speedup_vs_h20", "arithmetic")(lambda: m(batch=8)["speedup_vs_h20"])
figure("latency_35b.speedup_vs_h100", "arithmetic")(lambda: m(batch=8)["speedup_vs_h100"])
figure("latency_35b.h20_dies_iso_bandwidth", "arithmetic")(lambda: m()["h20_dies_iso_bandwidth"])
figure("latency_35b.h100_dies_iso_bandwidth", "arithmetic")(lambda: m()["h100_dies_iso_bandwidth"])
figure("latency_35b.bw_sensitivity_h20_gap_b8", "arithmetic")(
    lambda: [m(batch=8, read_bw_scale=0.5)["speedup_vs_h20"], m(batch=8, read_bw_scale=2.0)["speedup_vs_h20"]])

# ---- Table VII: weight-movement energy at B = 64 (dse/performance/energy.py) -----------------------
figure("energy_35b.weight_mb_per_token", "arithmetic")(lambda: m(batch=64)["weight_mb_per_token"])
figure("energy_35b.hbm_uj_per_token", "arithmetic")(lambda: m(batch=64)["h20_weight_energy_uj_per_token"])
figure("energy_35b.rexpert_uj_per_token", "arithmetic")(lambda: m(batch=64)["weight_energy_uj_per_token"])

# ---- Table XI: AF serving (dse/performance/serving.py) ----------------------------------------------
_AF = {"b8_4k": (8, 4096), "b8_32k": (8, 32768), "b64_4k": (64, 4096), "b64_32k": (64, 32768)}
for _k, (_b, _ctx) in _AF.items():
    figure(f"af_serving_35b.{_k}", {"*": "calibrated", ".t_ffn_us": "arithmetic"},
           note="attention shape (models.toml) fitted to the four t_attn points; TPOT and gain are sums and "
                "ratios with that t_attn; t_FFN is Table V's arithmetic")(
        lambda b=_b, ctx=_ctx: {
            "t_attn_us": m(batch=b, context=ctx)["t_attn_us"],
            "t_ffn_us": m(batch=b, context=ctx)["ffn_latency_us_per_token"],
            "tpot_af_us": m(batch=b, context=ctx)["tpot_af_us"],
            "tpot_h20_us": m(batch=b, context=ctx)["tpot_gpu_only_us"],
            "gain": m(batch=b, context=ctx)["af_gain"],
        })
figure("af_serving_35b.attention_over_ffn_dies_32k_b8", "calibrated",
       note="10.8 H20 dies x the fitted t_attn (B = 8, 32K) / t_FFN / 25 FFN dies")(
    lambda: m(batch=8, context=32768)["attention_over_ffn_dies"])

# ---- Table IV: link and provision figures that are closed form -------------------------------
figure("communication.link_512b_1ghz_gbps", "arithmetic")(lambda: link_gbps(512, 1.0))
figure("communication.core_mesh_stream_gbps", "arithmetic")(lambda: m()["unit_read_gbps"])
figure("communication.d2d_provision_gbps_per_die", "input", note="the knob's default echoed back")(
    lambda: DesignPoint().d2d_gbps_per_die)
figure("communication.node_residual_provision_gbps", "input", note="the knob's default echoed back")(
    lambda: DesignPoint().node_gbps)

# ---- Table XII: area and power (dse/hardware/{area,power,network}.py) ------------------------
figure("area_power.die_area_mm2", "predicted",
       note="sum of the modelled components: ReRAM + PE + core mesh are calibrated to Table XII (385 of our "
            "389 mm2, so the pass says little beyond them), Die NoC predicted, D2D/IO misses (2.0 vs 12)")(
    lambda: m()["die_area_mm2"])
figure("area_power.reram_area_mm2", "calibrated",
       note="C.reram_array_efficiency = 1 (bit cells only) is read off this figure")(lambda: m()["reram_area_mm2"])
figure("area_power.reram_power_w", "arithmetic")(lambda: m()["reram_power_w"])
figure("area_power.pe_area_mm2", "calibrated", note="C.pe_area_mm2_per_unit_w4 = 82 / 320 is this figure")(
    lambda: m()["pe_area_mm2"])
figure("area_power.pe_power_w", "arithmetic")(lambda: m()["pe_power_w"])
# die_power_w and pool_power_kw_35b are registered (with their notes) by figures_network.py.
figure("area_power.h20_pool_power_kw_iso_compute", "arithmetic")(lambda: m()["h20_pool_power_w_iso_compute"] / 1e3)
