"""The driver's warm state: one design per scheduling domain and LPT / co-activation policy of a
small trace-driven space (none for a closed-form or a large space); warming fills the placement
cache; a --jobs 2 run whose placements were warmed gives the trials of --jobs 1."""
from __future__ import annotations

from pathlib import Path

from dse.mapping import warm_cache
from dse.search.execute.runner import run_study
from dse.search.execute.warm import MAX_WARM_DOMAINS, domain_designs, warm_placements
from dse.search.study.results import load_results
from dse.search.study.study import load_study

ROOT = Path(__file__).resolve().parents[3]
STUDY = """
[study]
space = "space.toml"
objectives = "{root}/objectives/latency-silicon.toml"
trials = 12
seed = 1
batch = 6
[sampler]
name = "random"
[workload]
models = ["qwen3.5-35b-a3b"]
{workload}
"""
SPACE = """
[params]
core_side = {{ type = "int", low = {lo}, high = {hi} }}
placement = {{ type = "categorical", choices = ["contiguous", "lpt", "coactivation"] }}
pe_groups_per_core = {{ type = "int", low = 1, high = "core_side**2", when = {{ placement = "lpt" }} }}
tile_width = {{ type = "categorical", choices = [2, 4] }}
"""
TRACE = 'batch = 32\ntrace = "synthetic"\ntrace_steps = 4\nprofile_steps = 4'


class InlinePool:
    """The pool interface (submit, result), evaluating in this process."""

    def submit(self, fn, design, models, group=None):
        return fn(design, models)

    def result(self, handle):
        return handle


def _cfg(d: Path, lo=2, hi=3, workload=TRACE):
    d.mkdir(parents=True, exist_ok=True)
    (d / "space.toml").write_text(SPACE.format(lo=lo, hi=hi))
    (d / "s.toml").write_text(STUDY.format(root=ROOT, workload=workload))
    # on the catalog its trace-driven objectives are refused when metrics are checked: not here
    return load_study(d / "s.toml", check_metrics=workload == TRACE)


def test_one_design_per_domain_and_policy(tmp_path):
    designs = domain_designs(_cfg(tmp_path / "a"))
    # side 2: 4 group counts (lpt) + 1 (coactivation); side 3: 9 + 1
    assert len(designs) == 15
    assert {d["placement"] for d in designs} == {"lpt", "coactivation"}
    assert all(d["trace"] == "synthetic" for d in designs)


def test_no_warm_designs_for_closed_form_or_large_spaces(tmp_path):
    assert domain_designs(_cfg(tmp_path / "b", workload="trace = \"catalog\"")) == []
    assert domain_designs(_cfg(tmp_path / "c", lo=1, hi=8)) == []      # 204 lpt + 8 co > the cap
    assert MAX_WARM_DOMAINS < 204


def test_warmed_parallel_run_equals_serial(tmp_path, monkeypatch):
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path / "cache"))
    serial = _cfg(tmp_path / "serial")
    run_study(serial, jobs=1)
    par = _cfg(tmp_path / "par")
    run_study(par, jobs=2)
    rows = lambda c: [(r.number, r.params, r.values) for r in load_results(c).records]  # noqa: E731
    assert rows(par) == rows(serial) and len(rows(par)) == 12


def test_warm_placements_fill_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path / "cache"))
    warm_cache.clear()                   # placements of earlier tests stay out of this process's memory
    assert warm_placements(_cfg(tmp_path / "w"), InlinePool()) == 15
    assert len(list((tmp_path / "cache" / "placements").glob("*.npy"))) == 15


def test_warm_traces_on_a_pool_fill_the_trace_cache(tmp_path, monkeypatch):
    """Each window (measured, profiling) is its own task: both land in the on-disk trace cache."""
    from dse.search.execute.warm import warm_traces
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path / "cache"))
    submitted = []

    class Recording(InlinePool):
        def submit(self, fn, design, models, group=None):
            submitted.append(fn.keywords["window"])
            return fn(design, models)

    from dse.workload import synth_cache
    synth_cache.cached.cache_clear()             # generated here, not found in this process
    warm_traces(_cfg(tmp_path / "t"), Recording())
    assert sorted(submitted) == ["measured", "profile"]
    traces = {p.name for p in (tmp_path / "cache").rglob("*.npy") if "placements" not in p.parts}
    assert len(traces) == 2


def test_a_worker_given_the_warm_placements_computes_none_and_gets_the_cold_metrics(tmp_path, monkeypatch):
    """The driver's warm-up ships every placement through the disk cache: a process that starts
    with an empty memory (``warm_cache.clear``) and evaluates the space's designs then computes no
    placement (counted) and returns, metric for metric, what a computation without any cache does."""
    from dse.mapping import placement as pl
    from dse.search.execute.evaluation import evaluate_design
    cfg = _cfg(tmp_path / "s")
    designs = domain_designs(cfg)
    calls = []
    real = pl._lpt
    monkeypatch.setattr(pl, "_lpt", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setenv("DSE_CACHE_DIR", "off")
    warm_cache.clear()
    cold = [evaluate_design(d, cfg.models) for d in designs]
    assert len(calls) == len(designs) == 15                   # computed, once each
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path / "cache"))
    warm_cache.clear()
    assert warm_placements(cfg, InlinePool()) == 15           # the driver's warm-up (here inline)
    warm_cache.clear()                                        # a worker: nothing in its memory
    calls.clear()
    assert [evaluate_design(d, cfg.models) for d in designs] == cold
    assert calls == []                                        # every placement came from the warm state
