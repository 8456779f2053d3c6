"""The spread of a synthetic trace around its calibration across measured workloads (issue 33).

The generator (:mod:`dse.workload.synth`) is calibrated to one measured run of a model (the
catalog's ``[model.routing]``: Alpaca decode, seed 0). The catalog's ``campaign`` lists the same
routing statistics measured on other workloads and seeds at the same batch (35B at B = 128:
Gini 0.471 - 0.522 around the calibration run's 0.491). How skewed the serving workload is, is
therefore an input the model cannot know, and the campaign says by how much it moves.

``C.routing_campaign_position`` (a model-uncertainty unknown, ``dse/data/model_uncertainty.toml``)
places the trace in that spread: t in [-1, 1], 0 = the calibration run (the trace unchanged),
-1 / +1 = the campaign's least / most skewed run at the calibration batch. The generator's skew is
scaled so that the trace's Gini moves by the campaign's offset from the calibration target:

    Gini(trace at scale s_lo) = Gini(calibrated trace) + (campaign min - calibration target)
    Gini(trace at scale s_hi) = Gini(calibrated trace) + (campaign max - calibration target)

(the offset, not the level: the calibrated trace's own residual, 0.536 against 0.491 for the 35B,
stays as it is), and t maps linearly onto 1 .. s_lo or 1 .. s_hi. The scales are found by a
deterministic monotone search on the generator itself (Gini rises with the skew), on the
calibration trace of ``dse/data/profiles/synth.toml`` (its batch, steps and seed), cached per
process. A model without campaign rows at its calibration batch (or routed from a measured profile)
keeps scale 1: the unknown does not move it.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, replace

import numpy as np
import tomli_w

from dse.catalog import MoEModel, get_model
from dse.constants import C
from dse.data import load_toml
from dse.workload import synth
from dse.workload.stats import gini
from dse.workload.trace import Trace, loads

GINI_TOLERANCE = 5e-4          # |Gini(trace at the found scale) - target| the search stops at
SEARCH_ITERS = 24              # iterations of the bracketed secant (Illinois) search, at most
BRACKET_STEP = 0.25            # relative step widening the search bracket around scale 1
DEFAULT_STEPS, DEFAULT_SEED = 64, 0     # calibration trace when synth.toml does not say
SCALES_FILE = ("profiles", "campaign_scales.toml")     # recorded answers of the search
SCALE_FORMAT = 2                # bump when the search's answer changes meaning (2: issue 49 sampler)
KEY_HEX_CHARS = 32
SCALES_HEADER = ("# Skew scales of the campaign positions -1 / +1 (dse/workload/campaign.py, scale_range), recorded\n"
                 "# so a run need not search them (22 s of CPU for the 397B). Used only while `key` matches the\n"
                 "# model, its calibration window and generator parameters. Regenerate with:\n"
                 "#   python -c \"from dse.workload.campaign import scales_toml, recordable; "
                 "print(scales_toml(recordable()), end='')\" > dse/data/profiles/campaign_scales.toml\n")
_CALIBRATED_ON = re.compile(r"B=(\d+), (\d+) steps, seed (\d+)")


@dataclass(frozen=True)
class GiniWindow:
    """The campaign's Gini at the calibration batch: its min and max, and the calibration target."""
    batch: int
    steps: int
    seed: int
    target: float                # the catalog's routing gini (what the generator was fitted to)
    low: float                   # campaign min at the calibration batch
    high: float                  # campaign max at the calibration batch
    rows: int                    # campaign rows at that batch


def calibration_run(model: MoEModel) -> tuple[int, int, int]:
    """(batch, steps, seed) of the model's calibration trace (``synth.toml``'s ``calibrated_on``)."""
    entry = synth.calibration_table().get(model.name) or {}
    m = _CALIBRATED_ON.search(entry.get("calibrated_on", ""))
    if m:
        return int(m.group(1)), int(m.group(2)), int(m.group(3))
    return int(model.native_batch), DEFAULT_STEPS, DEFAULT_SEED


def gini_window(model: MoEModel) -> GiniWindow | None:
    """The campaign's spread at the calibration batch, or None (no campaign there, no calibration of
    its own, no catalog Gini, or routed from a measured profile)."""
    r = model.routing or {}
    if (r.get("gini") is None or model.name not in synth.calibration_table()
            or synth.default_profile(model) is not None):
        return None
    batch, steps, seed = calibration_run(model)
    g = [float(row["gini"]) for row in r.get("campaign", ()) if int(row.get("batch", -1)) == batch
         and row.get("gini") is not None]
    if len(g) < 2:
        return None
    return GiniWindow(batch, steps, seed, float(r["gini"]), min(g), max(g), len(g))


def scaled_params(model: MoEModel, scale: float) -> synth.SynthParams:
    p = synth.params_for(model.name)[0]
    return replace(p, skew=p.skew * scale)


@functools.lru_cache(maxsize=64)
def trace_gini(model_name: str, scale: float, batch: int, steps: int, seed: int) -> float:
    """Mean per-layer Gini of the expert loads of the synthetic trace at ``scale`` x the skew."""
    model = get_model(model_name)
    tr = synth.generate(model, batch, steps, seed, scaled_params(model, scale))
    return float(gini(loads(tr.experts, model.experts).sum(axis=0)).mean())


def scale_for_gini(model: MoEModel, target: float, w: GiniWindow) -> float:
    """The skew scale whose trace has Gini ``target`` (monotone: a bracket, then Illinois steps)."""
    def f(s: float) -> float:
        return trace_gini(model.name, round(s, 12), w.batch, w.steps, w.seed) - target
    a, fa = 1.0, f(1.0)
    if abs(fa) <= GINI_TOLERANCE:
        return 1.0
    step = -BRACKET_STEP if fa > 0 else BRACKET_STEP
    b, fb = a, fa
    while fb * fa > 0:                               # widen until the sign changes
        a, fa = b, fb
        b = max(b * (1 + step), 1e-6)
        fb = f(b)
        if b <= 1e-6 and fb * fa > 0:
            return b
    side = 0
    for _ in range(SEARCH_ITERS):
        c = (a * fb - b * fa) / (fb - fa)
        fc = f(c)
        if abs(fc) <= GINI_TOLERANCE:
            return c
        if fc * fb < 0:
            a, fa = b, fb
            side = 0
        else:
            fa = fa / 2 if side == 1 else fa          # Illinois: halve the stale end
            side = 1
        b, fb = c, fc
    return b


def search_scale_range(model: MoEModel, w: GiniWindow) -> tuple[float, float]:
    """(s_lo, s_hi) found by the search on the generator (seconds: whole calibration traces)."""
    g_cal = trace_gini(model.name, 1.0, w.batch, w.steps, w.seed)
    return (scale_for_gini(model, g_cal + (w.low - w.target), w),
            scale_for_gini(model, g_cal + (w.high - w.target), w))


def scale_key(model: MoEModel, w: GiniWindow) -> str:
    """Digest of everything the search's answer depends on: the model's shape, its calibration
    window and campaign spread, the generator's parameters and the search's settings."""
    parts = (SCALE_FORMAT, model.name, model.experts, model.top_k, model.moe_layers, repr(w),
             repr(synth.params_for(model.name)[0]), GINI_TOLERANCE, SEARCH_ITERS, BRACKET_STEP)
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:KEY_HEX_CHARS]


def recorded_scales() -> dict:
    """The answers recorded in the package data (``SCALES_FILE``), per model name."""
    try:
        return load_toml(*SCALES_FILE)
    except FileNotFoundError:
        return {}


@functools.cache
def scale_range(model_name: str) -> tuple[float, float] | None:
    """(s_lo, s_hi): the skew scales moving the calibrated trace's Gini by the campaign's offsets.

    The search generates whole calibration traces (22 s of CPU for the 397B), so its answer is
    taken, in this order, from this process, from the package data (``SCALES_FILE``, when its
    key still matches), from the on-disk cache (``synth_cache.cache_dir``), or searched and then
    stored on disk. ``tests/workload/test_campaign.py`` checks a recorded answer against a new search."""
    model = get_model(model_name)
    w = gini_window(model)
    if w is None:
        return None
    key = scale_key(model, w)
    rec = recorded_scales().get(model.name)
    if rec is not None and rec.get("key") == key:
        return float(rec["low"]), float(rec["high"])
    from dse.workload import synth_cache
    d = synth_cache.cache_dir()
    file = None if d is None else d.parent / "campaign" / f"{key}-{np.__version__}.json"
    if file is not None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            got = json.loads(file.read_text())
            return float(got["low"]), float(got["high"])
    lo, hi = search_scale_range(model, w)
    if file is not None:
        with contextlib.suppress(OSError):
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"model": model.name, "low": lo, "high": hi}))
            os.replace(tmp, file)
    return lo, hi


def scales_toml(names) -> str:
    """``SCALES_FILE`` text for the models ``names`` (each searched anew)."""
    out = {}
    for name in names:
        model = get_model(name)
        w = gini_window(model)
        if w is not None:
            lo, hi = search_scale_range(model, w)
            out[name] = {"key": scale_key(model, w), "low": lo, "high": hi,
                         "window": f"B={w.batch}, {w.steps} steps, seed {w.seed}; Gini target {w.target}, "
                                   f"campaign {w.low} - {w.high} ({w.rows} rows)"}
    return SCALES_HEADER + tomli_w.dumps(out)


def recordable() -> list[str]:
    """Catalog models whose campaign moves their trace (those ``SCALES_FILE`` records)."""
    from dse.catalog import catalog
    return [m.name for m in catalog().values() if gini_window(m) is not None]


def skew_scale(model: MoEModel, position: float | None = None) -> float:
    """The generator's skew scale at campaign position t (default ``C.routing_campaign_position``):
    1 at t = 0 or for a model without a campaign; linear onto s_lo (t = -1) and s_hi (t = +1)."""
    t = float(C.routing_campaign_position if position is None else position)
    if t == 0.0:
        return 1.0
    rng = scale_range(model.name)
    if rng is None:
        return 1.0
    t = min(1.0, max(-1.0, t))
    return 1.0 + abs(t) * ((rng[0] if t < 0 else rng[1]) - 1.0)


@functools.lru_cache(maxsize=8)
def _scaled_trace(model_name: str, batch: int, steps: int, seed: int, scale: float) -> Trace:
    model = get_model(model_name)
    return synth.generate(model, batch, steps, seed, scaled_params(model, scale), synth.default_profile(model))


def synthetic_trace(model: MoEModel, batch: int, steps: int, seed: int, scale: float = 1.0) -> Trace:
    """The default synthetic trace (through the trace caches) or, at scale != 1, its skew scaled."""
    from dse.workload import synth_cache
    if scale == 1.0:
        return synth_cache.cached(model.name, batch, steps, seed, "auto", 0)[0]
    return _scaled_trace(model.name, batch, steps, seed, float(scale))


# -- profile correlation ---------------------------------------------------------------------------
def mixed_profile(profile: np.ndarray, measured: np.ndarray, target: float) -> tuple[np.ndarray, float]:
    """The profiling window's mean loads [L, E] mixed with the measured window's, (1 - a) p + a m,
    with the smallest a in [0, 1] whose load correlation (``stats.load_correlation``) reaches
    ``target`` (bisection: the correlation rises from the profile's own to 1 as a goes to 1).
    (profile, 0.0) unchanged when it already correlates that much; returns (mixed, a)."""
    from dse.workload.stats import load_correlation
    p, m = np.asarray(profile, dtype=np.float64), np.asarray(measured, dtype=np.float64)
    if target <= 0 or load_correlation(p, m) >= target:
        return profile, 0.0
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if load_correlation((1 - mid) * p + mid * m, m) >= target:
            hi = mid
        else:
            lo = mid
    return ((1 - hi) * p + hi * m).astype(profile.dtype, copy=False), hi
