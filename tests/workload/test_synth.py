"""Synthetic generator (determinism, calibration) and the trace-driven routing stage."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dse.catalog import get_model
from dse.cli import main
from dse.data import load_toml
from dse.pipeline.evaluate import evaluate
from dse.pipeline.stages import routing
from dse.spec import DesignPoint
from dse.workload import profiles, synth, window
from dse.workload.stats import flat_stats
from dse.workload.trace import check_ids, save_trace
from dse.workload.union import union_closed_form

SMALL = "olmoe-1b-7b"


def test_same_seed_same_trace_other_seed_differs():
    m = get_model(SMALL)
    a = synth.generate(m, 16, 4, seed=3, profile=None)
    b = synth.generate(m, 16, 4, seed=3, profile=None)
    c = synth.generate(m, 16, 4, seed=4, profile=None)
    assert (a.experts == b.experts).all() and a.meta == b.meta
    assert (a.experts != c.experts).any()
    check_ids(a.experts, m.experts, "synthetic")          # ids in range, top-k distinct
    p = synth.generate(m, 16, 4, seed=3, profile="olmoe-1b-7b")
    assert (p.experts != a.experts).any()


def gumbel_steps(g: synth.Generator, n_steps: int) -> np.ndarray:
    """The generator's decode steps as drawn before issue 49: every token the top k of its logits +
    Gumbel noise (E uniforms per token), the same drift and request topics (the reference law)."""
    p, m = g.params, g.model
    L, E, k, B = m.moe_layers, m.experts, m.top_k, g.B
    rng = synth._rng(m.name, g.seed, f"steps/{g.B}/{g.profile}")
    C = g.boost.shape[1]
    topic = rng.integers(C, size=B)
    drift = (p.drift * rng.standard_normal((L, E))).astype(np.float32)
    a, innov = np.float32(p.drift_corr), np.float32(p.drift * np.sqrt(max(0.0, 1.0 - p.drift_corr ** 2)))
    out = []
    for _ in range(n_steps):
        out.append(synth._gumbel_topk(g.boost[:, topic, :] + (g.base + drift)[:, None, :], k, rng))
        drift = a * drift + innov * rng.standard_normal((L, E), dtype=np.float32)
        new = rng.random(B) < p.turnover
        if new.any():
            topic[new] = rng.integers(C, size=int(new.sum()))
    return np.stack(out).astype(synth.id_dtype(E))


@pytest.mark.parametrize("model,profile", [(SMALL, None), (SMALL, "olmoe-1b-7b"), ("qwen3.5-397b-a17b", None)])
def test_traces_have_the_statistics_of_the_gumbel_top_k_generator(model, profile):
    """The generator draws each token's k experts without replacement in proportion to exp(logit)
    (``plackett_luce``), the law of the Gumbel-top-k it drew them with before: over 12 seeds, the
    mean of every routing statistic within 4 standard errors of the Gumbel generator's."""
    from dse.workload.trace import Trace
    m = get_model(model)
    B, steps, seeds = (24, 8, 12) if m.experts > 128 else (32, 16, 12)
    ours, ref = [], []
    for seed in range(seeds):
        g = synth.Generator(m, B, seed, None, profile)
        meta = synth.meta_for(m, B, steps, seed, profile, g.params)
        ours.append(flat_stats(Trace(meta, np.concatenate(list(g.steps(steps))))))
        ref.append(flat_stats(Trace(meta, gumbel_steps(synth.Generator(m, B, seed, None, profile), steps))))
    for key in ours[0]:
        a, b = np.array([o[key] for o in ours]), np.array([r[key] for r in ref])
        se = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / seeds)
        assert abs(a.mean() - b.mean()) <= 4 * se + 1e-9 * abs(b.mean()), (key, a.mean(), b.mean(), se)


# The global peak (the hottest expert of the whole trace over the mean) is an extreme value: over
# 10 seeds of the 35B's calibration trace its spread is 6 % of it, and the Gumbel-top-k generator
# the parameters were fitted with averaged 11.3 (+15 % over the catalog's 9.83; 10.5 at seed 0).
PEAK_TOLERANCE = 0.25


def test_default_calibration_is_reproduced_and_recorded():
    """synth.toml's achieved values are what the generator produces, and each is within 10 % of
    the catalog target (the calibration's worst residual: gini +9 %; the global peak within
    ``PEAK_TOLERANCE``: seed 0's draw of an extreme value, 12.0 since issue 49)."""
    m = get_model("qwen3.5-35b-a3b")
    entry = load_toml("profiles", "synth.toml")[m.name]
    params, origin = synth.params_for(m.name)
    assert origin == m.name
    ach = synth.achieved(m, 128, 64, 0, params)
    tgt = synth.targets(m)
    assert set(tgt) == set(entry["target"])
    for k, v in tgt.items():
        assert ach[k] == pytest.approx(entry["achieved"][k], rel=1e-5), k
        assert abs(ach[k] / v - 1) <= (PEAK_TOLERANCE if k == "global_peak_hottest_over_mean" else 0.10), (k, ach[k], v)


def test_layer_skew_spread_concentrates_a_few_layers_only():
    """A per-layer skew spread keeps zero-spread traces bit-identical, and at equal mean skew it
    raises the global peak (a few very skewed layers) more than the per-step mean: the shape of
    Qwen3.5-397B's statistics (global peak 47.3 vs mean 12.5 hottest/mean)."""
    m = get_model(SMALL)
    base = synth.SynthParams(skew=0.6)
    a = synth.generate(m, 64, 8, 0, base)
    assert (a.experts == synth.generate(m, 64, 8, 0, synth.SynthParams(skew=0.6, layer_skew_spread=0.0)).experts).all()
    s0 = flat_stats(a)
    s1 = flat_stats(synth.generate(m, 64, 8, 0, synth.SynthParams(skew=0.6, layer_skew_spread=0.8)))
    peak = s1["global_peak_hottest_over_mean"] / s0["global_peak_hottest_over_mean"]
    mean = s1["hottest_over_mean"] / s0["hottest_over_mean"]
    assert peak > mean and peak > 1.05
    mult = synth._layer_skews(np.random.default_rng(0), 20000, 0.5)
    assert mult.mean() == pytest.approx(1.0, abs=0.02) and (synth._layer_skews(None, 5, 0.0) == 1).all()


def test_397b_calibration_recorded_within_tolerance():
    """The recorded 397B calibration (per-layer skew spread) is within 15 % of every catalog
    target (it was 47 % short of the global peak and 13 % over the Gini with one shared skew)."""
    m = get_model("qwen3.5-397b-a17b")
    entry = load_toml("profiles", "synth.toml")[m.name]
    assert entry["params"]["layer_skew_spread"] > 0
    assert set(entry["target"]) == set(synth.targets(m))
    for k, v in entry["target"].items():
        assert abs(entry["achieved"][k] / v - 1) <= 0.15, (k, entry["achieved"][k], v)


def test_catalog_models_with_a_profile_use_it_in_closed_form():
    u, src = union_closed_form(get_model("glm-5.2"), 64)
    assert src == "profile" and u == profiles.union_from_profile("glm-5.2", 64)


def test_cli_synth_prints_achieved_vs_target(tmp_path, capsys):
    out = tmp_path / "s.npz"
    assert main(["trace", "synth", "--model", SMALL, "--batch", "16", "--steps", "4", "--seed", "2",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "achieved" in text and "target" in text and "olmoe-1b-7b" in text
    assert out.exists()
    assert main(["trace", "synth", "--model", SMALL, "--batch", "16", "--steps", "4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["targets"]["gini"] > 0 and d["steps"] == 4


# -- the routing stage on traces ------------------------------------------------------------------
def test_synthetic_default_metrics_are_consistent():
    r = evaluate(DesignPoint())
    m = r.metrics
    assert r.point.trace == "synthetic" and m["union_source"] == "synthetic"
    assert m["actual_mfu"] == pytest.approx(m["ideal_mfu"] * m["occupancy"])
    mod = get_model(r.point.model)
    mb = mod.moe_layers * (m["union_experts"] * mod.expert_bytes + mod.router_bytes) / m["run_batch"] / 1e6
    assert m["weight_mb_per_token"] == pytest.approx(mb)          # latency / energy use the trace's U(B)
    assert m["readouts_per_layer_unpooled"] == pytest.approx(m["jobs_per_layer"])
    assert m["union_experts"] <= m["readouts_per_layer_pooled"] <= m["jobs_per_layer"]
    assert m["multicast_streams_mean"] <= m["multicast_streams_p99"] <= m["multicast_streams_peak"]
    other = evaluate(DesignPoint.from_dict({"trace_seed": 1})).metrics
    assert other["union_experts"] != m["union_experts"]


def test_closed_form_catalog_path_is_untouched():
    m = evaluate(DesignPoint.from_dict({"trace": "catalog", "batch": 64})).metrics
    assert m["union_source"] == "catalog" and m["union_experts"] == pytest.approx(168.6)
    assert m["ideal_mfu"] is None and m["occupancy"] is None


def test_trace_file_evaluation_streamed_equals_in_memory(tmp_path, monkeypatch):
    m = get_model(SMALL)
    tr = synth.generate(m, 32, 12, seed=5, profile=None)
    f = save_trace(tr, tmp_path / "t.npz")
    base = {"model": SMALL, "trace": str(f), "profile_steps": 4}
    mem = evaluate(DesignPoint.from_dict(base)).metrics
    assert mem["union_source"] == "trace" and mem["trace_steps_measured"] == 8
    monkeypatch.setattr(window, "STREAM_BYTES", 1)
    monkeypatch.setattr(window, "CHUNK_STEPS", 3)
    window.WORKLOADS.clear()
    for fetch in ("fifo", "load_aware"):
        a = evaluate(DesignPoint.from_dict({**base, "fetch": fetch, "fetch_queue_depth": 2})).metrics
        window.WORKLOADS.clear()
        monkeypatch.setattr(window, "STREAM_BYTES", 1 << 40)
        b = evaluate(DesignPoint.from_dict({**base, "fetch": fetch, "fetch_queue_depth": 2})).metrics
        monkeypatch.setattr(window, "STREAM_BYTES", 1)
        window.WORKLOADS.clear()
        for k in (k for k in routing.GUARANTEED_KEYS if k != "union_source"):
            assert a[k] == pytest.approx(b[k]), k


def test_evaluate_cli_trace_options(tmp_path, capsys):
    m = get_model(SMALL)
    f = save_trace(synth.generate(m, 32, 6, seed=1, profile=None), tmp_path / "t.npz")
    assert main(["evaluate", "--trace", str(f), "--json"]) == 0         # model and batch from the trace
    d = json.loads(capsys.readouterr().out)
    assert d["model"] == SMALL and d["batch"] == 32 and d["union_source"] == "trace"
    for k in ("ideal_mfu", "occupancy", "actual_mfu", "rounds", "jobs_per_layer", "union_experts",
              "multicast_streams_p99"):
        assert isinstance(d[k], float)
    assert main(["evaluate", "--model", SMALL, "--synthetic", "--seed", "3", "--steps", "5", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["trace"], d["trace_seed"], d["trace_steps"], d["trace_steps_measured"]) == ("synthetic", 3, 5, 5)
    assert main(["evaluate", "--trace", str(f), "--model", "qwen3.5-35b-a3b", "--json"]) == 2
    assert "but the design point uses 'qwen3.5-35b-a3b'" in capsys.readouterr().err
    assert main(["evaluate", "--trace", str(tmp_path / "none.npz")]) == 2
    assert "no such file" in capsys.readouterr().err
