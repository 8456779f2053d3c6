"""Layer layout (packed vs interleaved scheduling domain) and the independent profiling run."""
from __future__ import annotations

from dse.mapping import placement as pl
from dse.mapping.routing_stage import profile_seed, workload
from dse.spec import DesignPoint
from dse.workload import synth
from dse.workload.catalog import get_model


def test_packed_domain_holds_exactly_the_layer():
    # spec s3: a side-4 core holds 16 experts -> 256 experts fill 16 whole cores
    d = pl.domain(256, 4, 16, layout="packed")
    assert (d.n_cores, d.units, d.dies) == (16, 256, 1)
    # side 6 on 16 x 20: six whole 36-unit cores (216) then the largest partial cores (24 each)
    d6 = pl.domain(256, 6, 36, layout="packed")
    assert d6.core_units == (36,) * 6 + (24, 24) and d6.units == 264
    # 512 experts at side 4: one full die (20 cores, 320 units) + 12 cores of a second die
    d2 = pl.domain(512, 4, 16, layout="packed")
    assert (d2.dies, d2.n_cores, d2.units) == (2, 32, 512)


def test_interleaved_domain_is_every_tile_of_the_dies():
    d = pl.domain(256, 4, 16, layout="interleaved")
    assert (d.n_cores, d.units) == (20, 320)
    assert pl.domain(256, 4, 16) == d          # the function's default


def test_layout_knob_changes_the_schedule_domain():
    from dse.model.evaluate import evaluate
    a = evaluate(DesignPoint.from_dict({"layer_layout": "packed", "trace_steps": 8})).metrics
    b = evaluate(DesignPoint.from_dict({"layer_layout": "interleaved", "trace_steps": 8})).metrics
    assert a["schedule_pe_tiles"] == 256 and b["schedule_pe_tiles"] == 320
    assert a["jobs_per_layer"] == b["jobs_per_layer"]          # same trace, same jobs


def test_profiling_run_is_independent_of_the_measured_requests():
    assert profile_seed(0) != 0 and profile_seed(0) == profile_seed(0)
    p = DesignPoint.from_dict({"trace_steps": 8, "profile_steps": 8})
    wl = workload(p, get_model(p.model))
    measured, _ = synth.cached(p.model, p.run_batch, 8, p.trace_seed, "auto", 0)
    assert wl.profile_ids.shape == measured.experts.shape
    # a different request stream: not the measured window, not a prefix of the same stream
    assert (wl.profile_ids != measured.experts).mean() > 0.5
