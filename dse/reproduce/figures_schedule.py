"""Published figures of the MFU cascade and the scheduling mechanisms (spec sections 4-5, 8).

Computed on the default synthetic trace of Qwen3.5-35B-A3B (calibrated to the catalog's routing
statistics, ``dse trace synth``; 64 measured steps, seed 0, placement profiled on an independent
16-step run of other requests), at
the study's operating point (side 4, w = 4, LPT, broadcast pooling, FIFO fetch) unless the entry
varies a knob. The worked example of section 5 is scheduled exactly as stated.
"""
from __future__ import annotations

import functools

import numpy as np

from dse.mapping import placement as pl
from dse.mapping.scheduler import schedule
from dse.pipeline.evaluate import evaluate
from dse.reproduce.registry import figure
from dse.spec import DesignPoint

DEFAULT_MODEL = "qwen3.5-35b-a3b"
SIDES = (2, 4, 6, 8)
DRAW: dict = {}          # knobs of a model-uncertainty draw (dse.reproduce.bands), empty otherwise


@functools.cache
def m(**knobs):
    """Metrics of the published design on the default synthetic trace, some knobs changed."""
    point = DesignPoint.from_dict({"model": DEFAULT_MODEL, "trace": "synthetic", **DRAW, **knobs})
    return evaluate(point).metrics


# ---- Section IV-C worked example: 1 hot expert (40 tokens) + 3 cold (1 token), w = 4, 4 groups --
@functools.cache
def worked_example(pooling: str):
    dom = pl.domain(4, core_side=2, groups_per_core=4, die_units_x=2, die_units_y=2)   # one core, 4 groups
    loads = np.array([[[40, 1, 1, 1]]], dtype=np.int32)                               # [step, layer, expert]
    slot = pl.place("contiguous", dom, loads[0].astype(float))
    return schedule(loads, dom, slot, tile_width=4, pooling=pooling)


figure("worked_example.direct_rounds", "arithmetic")(lambda: worked_example("direct").rounds_mean)
figure("worked_example.direct_occupancy", "arithmetic")(lambda: worked_example("direct").occupancy)
figure("worked_example.broadcast_rounds", "arithmetic")(lambda: worked_example("broadcast").rounds_mean)
figure("worked_example.broadcast_occupancy", "arithmetic")(lambda: worked_example("broadcast").occupancy)

# ---- Table X: core pooling sweep, side 2 / 4 / 6 / 8 -------------------------------------------
_BCAST_NOTE = ("J / (rounds x 320 PE tiles of the die: layer_layout = interleaved); LPT placed from an independent "
               "16-step profiling run (other requests). Side 8: 320 tiles with partial edge cores; the study's 0.678 "
               "implies 256 (whole cores: core_remainder = idle gives ~0.68)")
_DIRECT_NOTE = ("direct rounds = ceil(hottest / w) ~ 7.3 on our trace (hottest ~27 tokens = 6.77 x B k / E); the "
                "study's 8.89 rounds need ~35 tokens, its occupancies imply ~7 rounds over 320 tiles")
figure("pooling_35b.ideal_mfu", "predicted", note="T / (w J) on the calibrated synthetic trace")(
    lambda: m()["ideal_mfu"])
figure("pooling_35b.occupancy_bcast", "predicted", note=_BCAST_NOTE)(
    lambda: [m(core_side=s)["occupancy"] for s in SIDES])
figure("pooling_35b.occupancy_direct", "predicted", note=_DIRECT_NOTE)(
    lambda: [m(core_side=s, pooling="direct")["occupancy"] for s in SIDES])
figure("pooling_35b.actual_mfu", "predicted", note="ideal x occupancy; " + _BCAST_NOTE)(
    lambda: [m(core_side=s)["actual_mfu"] for s in SIDES])


# ---- Table IX: ablations at the side-4 operating point (A -> B) ---------------------------------
def _ab(a: dict, b: dict) -> dict:
    ma, mb = m(**a), m(**b)
    return {k: [ma[k], mb[k]] for k in ("ideal_mfu", "occupancy", "actual_mfu", "rounds")}


figure("ablations_35b.mask_w4_to_w1_b8", {"*": "predicted", ".ideal_mfu[1]": "arithmetic"},
       note="B = 8 trace from the B = 128 calibration (the study's B = 8 capture is more skewed: gini 0.583); "
            "ideal MFU at w = 1 is 1 by definition (one token per job)")(
    lambda: _ab({"batch": 8}, {"batch": 8, "tile_width": 1}))
figure("ablations_35b.bcast_direct_to_bcast", "predicted",
       note="direct rounds = ceil(hottest / w) = 7.3: the study's 8.89 needs ~35 tokens on the hottest expert, "
            "its own hottest/mean 6.77 x B k / E gives ~27 (-18 %)")(
    lambda: _ab({"pooling": "direct"}, {}))
figure("ablations_35b.place_lpt_to_coact", "predicted",
       note="coactivation placement from the 16-step profiling window")(
    lambda: _ab({}, {"placement": "coactivation"}))
figure("ablations_35b.fetch_fifo_to_load_aware_g2", "predicted",
       note="MISS: our 2 groups of 8 tiles pool locally, so G = 2 leaves FIFO where G = 16 is (occupancy 0.54, "
            "2.01 rounds); load-aware prefetch from the next queued steps fills the idle tiles of the 2-round "
            "quantisation (1.60 rounds, 0.68). The study's FIFO ideal MFU of 1.000 (ours 0.733, a miss) implies "
            "jobs filled across steps, a fetch model the spec does not describe; ours keeps jobs per step")(
    lambda: _ab({"pe_groups_per_core": 2}, {"pe_groups_per_core": 2, "fetch": "load_aware"}))

# ---- Table VII: weight energy without pooling, B = 64 (one read-out per job) --------------------
_NOPOOL_NOTE = ("jobs per layer measured on the B = 64 synthetic trace, whose generator is fitted to the "
                "catalog's jobs_per_layer_b64 = 213.5, the number these two figures are made of")
figure("energy_35b.no_pooling_mb_per_token", "calibrated", note=_NOPOOL_NOTE)(
    lambda: m(batch=64)["no_pooling_weight_mb_per_token"])
figure("energy_35b.no_pooling_uj_per_token", "calibrated", note=_NOPOOL_NOTE)(
    lambda: m(batch=64)["no_pooling_weight_energy_uj_per_token"])

# communication.core_mesh_{p99,peak}_gbps_35b are registered by figures_network.py from our
# multicast_streams_{p99,peak} metrics (x 51.2 GB/s per stream).
