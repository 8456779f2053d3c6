"""Published communication, depth, stretch and area / power figures.

The physics is in `dse.hardware.{unit,core,die,package,node,network}` and the stages of
`dse.pipeline.stages.network`; each figure below names the design point it evaluates. Every note
explains a residual larger than the entry's tolerance, or where an entry's reading had to be
reconstructed.
"""
from __future__ import annotations

import functools

from dse.pipeline.evaluate import evaluate
from dse.reproduce.registry import figure
from dse.spec import DesignPoint

DEFAULT_MODEL = "qwen3.5-35b-a3b"
SIDES = (2, 4, 6, 8)


@functools.cache
def m(**knobs):
    """Metrics of the published design with some knobs changed (closed-form unions by default)."""
    point = DesignPoint.from_dict({"model": DEFAULT_MODEL, "trace": "catalog", **knobs})
    return evaluate(point).metrics


def glm(**knobs):
    """GLM-5.2 at B = 128, a reading of Table IV chosen after the fact because it fits the D2D and
    node-residual figures (so those two are tagged calibrated; the catalog's native batch is 205)."""
    return m(model="glm-5.2", batch=128, **knobs)


def side(s: int):
    """The pooling sweep (Table X): default model, B = 128, trace-driven scheduling."""
    return m(core_side=s, batch=128, trace="synthetic")


# ---- Table IV / section V: per-level demand ----------------------------------------------------
figure("communication.unit_io_demand_gbps", "arithmetic",
       note="4 chunks x (4d FP8 in + 8d BF16 out) per 4-token job / 61.81 us = 1.59 GB/s")(
    lambda: m()["unit_io_gbps"])
figure("communication.core_mesh_provision_gbps_per_core", "arithmetic",
       note="core_side bisection links x 64 GB/s")(lambda: m()["core_mesh_provision_gbps"])
figure("communication.core_mesh_p99_gbps_35b", "predicted",
       note="p99 concurrent multicast streams (scheduler, synthetic trace) x 51.2 GB/s: 5 streams vs the "
            "study's 4; LPT placed from a separate profiling run leaves more hot experts sharing a core (the "
            "closed-form fallback C.core_mesh_p99_streams_per_unit, used only without a trace, is calibrated "
            "to this entry)")(
    lambda: side(4)["core_mesh_p99_gbps"])
figure("communication.core_mesh_peak_gbps_35b", "predicted",
       note="peak concurrent streams (scheduler, synthetic trace) x 51.2 GB/s (the closed-form fallback, "
            "used only without a trace, is calibrated to this entry)")(
    lambda: side(4)["core_mesh_peak_gbps"])
figure("communication.unicast_source_port_factor", "arithmetic")(lambda: m()["unicast_source_port_factor"])
figure("communication.unicast_traffic_factor", "predicted",
       note="MISS: ours counts link traversals on both sides, unicast sum of XY distances over the K-1 links of "
            "a multicast tree to the whole core, 2.67 at side 4; the study's 3.6 is matched (3.67) only by also "
            "counting one ejection hop per unicast copy, which a consistent count does not allow")(
    lambda: m()["unicast_traffic_factor"])
figure("communication.die_noc_busiest_link_gbps_glm", "predicted",
       note="MISS: activation multicast + partial reduction trees over XY routes from 2 edge ports with all 9 of "
            "a token's experts on the die (the packing that reproduces the D2D figures); the trees of the two ports "
            "overlap (35.1 GB/s EP-first) and TP-first carries one partial per expert (122.7). The study's "
            "24.68 / 24.81 (about B/2 x 3d / t_layer, order-insensitive) implies about one expert per token per die, "
            "i.e. layers interleaved over dies, which contradicts its own TP-only D2D span")(
    lambda: [glm()["die_noc_busiest_link_gbps"], glm(reduction_order="tp_first")["die_noc_busiest_link_gbps"]])
figure("communication.d2d_demand_gbps_per_die", "calibrated",
       note="read as GLM-5.2 at B = 128, all cross-die merge traffic per die, (16-1)/16 x B x 3d / t_layer "
            "(D2D 38.1 + node 9.5); +1.3 % like every GLM figure (a t_layer overhead proportional to d, "
            "0.37 us x d / 2048, would close it)")(
    lambda: glm()["cross_die_gbps_per_die"])
figure("communication.node_residual_demand_gbps", "calibrated",
       note="GLM-5.2 at B = 128: B x d FP8 residual per layer time (16.9)")(lambda: glm()["node_residual_gbps"])
figure("communication.tp_first_d2d_penalty_glm", "predicted",
       note="(d + 2kd) / 3d = 17/3 at k = 8 routed experts; in-package D2D 38.1 -> 215.9 GB/s (study 37.6 -> 213.1)")(
    lambda: glm(reduction_order="tp_first")["d2d_demand_gbps_per_die"] / glm()["d2d_demand_gbps_per_die"])

# ---- Section V-D: D2D vs array depth -------------------------------------------------------------
figure("depth_35b.d2d_gbps_per_die_32k", "arithmetic")(lambda: m(array_depth=32768)["d2d_demand_gbps_per_die"])
figure("depth_35b.d2d_gbps_per_die_16k", "predicted",
       note="TP = 2 inside a package: B x 3d x 1/2 / 31.09 us")(lambda: m(array_depth=16384)["d2d_demand_gbps_per_die"])

# ---- Table X: the core-pooling sweep (sides 2 / 4 / 6 / 8) ---------------------------------------
figure("pooling_35b.round_stretch", {"*": "predicted", "[1]": "calibrated"},
       note="(1 + 0.0575 x extra tree hops over side 2) x max(1, p99 streams x 51.2 / (side x 64)); "
            "C.stretch_per_hop is calibrated at side 4, sides 6 and 8 are predictions")(
    lambda: [side(s)["round_stretch"] for s in SIDES])
figure("pooling_35b.effective_mfu", "predicted", note="actual MFU (scheduler) / our round stretch")(
    lambda: [side(s)["effective_mfu"] for s in SIDES])
figure("pooling_35b.network_mm2", "predicted",
       note="MISS by design: our DSENT-style model is calibrated to Table XII (core mesh 35.6 + Die NoC 2.2 "
            "= 37.8 mm2 at side 4), which the study's own sweep contradicts (28.4 at side 4); no non-negative "
            "combination of router / link counts fits the sweep's rise to side 6 and drop at side 8")(
    lambda: [side(s)["network_area_mm2"] for s in SIDES])
figure("pooling_35b.mm2_per_occupancy", "predicted",
       note="ours = network mm2 / delivered occupancy (occupancy / stretch). MISS: no definition built from "
            "Table X's own columns reproduces 11.96 / 7.56 / 10.88 / 11.27 (network / occupancy gives 79 / 55 / "
            "58 / 37); the knee at side 4 is what we reproduce")(
    lambda: [side(s)["mm2_per_occupancy"] for s in SIDES])

# ---- Table XII: network and IO silicon -----------------------------------------------------------
figure("area_power.core_mesh_area_mm2", "calibrated", note="C.noc_router_overhead is calibrated to this entry")(
    lambda: m()["core_mesh_area_mm2"])
figure("area_power.core_mesh_power_w", "calibrated", note="C.noc_static_w_per_mm2 is calibrated to this entry")(
    lambda: m()["core_mesh_power_w"])
figure("area_power.die_noc_area_mm2", "predicted", note="prediction: 20 routers + core-pitch links")(
    lambda: m()["die_noc_area_mm2"])
figure("area_power.die_noc_power_w", "predicted",
       note="MISS: static power at the core mesh's W/mm2 plus 25 GB/s-scale link traffic gives 0.6 W; the "
            "study's 1.8 W (0.82 W/mm2) is denser than its own core mesh (0.53 W/mm2)")(
    lambda: m()["die_noc_power_w"])
figure("area_power.d2d_io_area_mm2", "arithmetic",
       note="MISS: 96 GB/s D2D on UCIe-2D (66 GB/s/mm2) + 34 GB/s node links on SerDes (16 GB/s/mm2) = "
            "3.6 mm2. The study's 12 mm2 and 3.0 W both match 768 'GB/s' (= 96 GB/s x 8, a bits/bytes "
            "slip?): 768 / 66 = 11.6 mm2, 768 x 8 x 0.5 pJ = 3.07 W (docs/model/prices.md, D2D)")(
    lambda: m()["d2d_io_area_mm2"])
figure("area_power.d2d_io_power_w", "arithmetic",
       note="MISS: see d2d_io_area_mm2 (ours 96 GB/s x 8 b x 0.5 pJ/b UCIe + 34 GB/s x 8 b x 4 pJ/b SerDes)")(
    lambda: m()["d2d_io_power_w"])
figure("area_power.die_power_w", "predicted",
       note="3.3 ReRAM + 19.5 PE + 19.0 core mesh + 0.6 Die NoC + 1.5 D2D/IO: the D2D/IO and Die-NoC "
            "misses (above) take 3.2 W off the study's 47 W")(lambda: m()["die_power_w"])
figure("area_power.pool_power_kw_35b", "predicted",
       note="25 x 43.8 W; the residual is the D2D/IO and Die-NoC power (see those entries)")(
    lambda: m()["pool_power_w"] / 1e3)
