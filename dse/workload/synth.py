"""Seeded synthetic routing traces calibrated to a model's measured routing statistics.

Generative model (per MoE layer; layers are independent, as measured cross-layer co-activation
is near uniform):

* popularity: a static per-layer log-popularity, ``skew`` x N(0, 1) per expert (log-normal expert
  popularity), or the log of a measured profile's heat (``profile``), corrected so that top-k
  sampling reproduces the measured selection frequencies;
* layer heterogeneity: the skew of layer l is ``skew`` x exp(s z_l - s^2 / 2), z_l ~ N(0, 1),
  s = ``layer_skew_spread`` (mean multiplier 1). Routers of one model are not equally skewed
  (measured profiles: per-layer Gini from about 0.2 to 0.7, see ``dse/data/profiles``): a few layers
  carry a dominant expert while most are mild. One shared skew cannot reproduce a model whose
  global peak hottest/mean is far above its per-step mean (Qwen3.5-397B: 47.3 vs 12.5, a layer
  where ~190 of 205 tokens pick one expert) together with its aggregate Gini: fitting the mean
  with one skew over-concentrates every layer (Gini 0.60 for a 0.534 target) and still misses
  the peak by half;
* persistence: a drifting log-popularity, an AR(1) process per expert with stationary std
  ``drift`` and step-to-step correlation ``drift_corr`` (a slowly moving hot set);
* coactivation: each of the B batch slots is one request with a topic (``topics`` topics; a
  request ends with probability ``turnover`` per step and a new one draws a new topic); a topic
  boosts ``topic_experts`` experts per layer by ``topic_boost`` in log-popularity, so the experts
  of one topic fire together (random sets, or grown from the profile's measured top pairs);
* routing: each token takes k experts without replacement from the softmax of its logits
  (Plackett-Luce), distinct by construction: the law of the top-k of log-popularity + Gumbel
  noise, drawn since issue 49 from a few uniforms per token (``dse.workload.plackett_luce``)
  instead of E (the profile fit below still takes the Gumbel top-k).

The parameters of each catalog model with published routing statistics are calibrated
(:func:`calibrate`, ``dse trace synth --calibrate``) and stored with their targets and achieved
values in ``dse/data/profiles/synth.toml``; other models use the default (Qwen3.5-35B) parameters,
with their measured profile when one is shipped. Same (model, B, steps, seed, profile, params) ->
same trace, bit for bit.
"""
from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, replace
from statistics import NormalDist

import numpy as np
import tomli_w

from dse.data import load_toml
from dse.errors import ConfigError
from dse.workload import plackett_luce
from dse.workload.topk import topk
from dse.workload.trace import Trace, TraceMeta, id_dtype

SYNTH_FILE = ("profiles", "synth.toml")
DEFAULT_CALIBRATION = "qwen3.5-35b-a3b"

# Numerical settings of the generator and its calibration (algorithm choices, not physics).
GUMBEL_U_FLOOR = 1e-12          # uniform draws clipped here so -log(-log u) stays finite
FIT_ITERS = 4                   # fixed-point iterations fitting a profile's selection frequencies
FIT_TOKENS = 512                # sampled tokens per fit iteration
FIT_FREQ_FLOOR = 0.25           # frequencies floored at a quarter of one sampled token (log of 0)
FIT_DAMPING = 0.8               # step of the log-frequency correction (under-relaxed for stability)
DRIFT_CORR_MAX = 0.99           # calibration keeps the AR(1) drift stationary
CALIBRATION_STEP = {            # relative step of the coordinate search per parameter (round 0)
    "skew": 0.25, "tail_cap": 0.25, "layer_skew_spread": 0.5, "drift": 0.4, "topic_boost": 0.3,
    "drift_corr": 0.05, "turnover": 0.5, "topic_experts": 0.4, "topics": 0.5}
INTEGER_PARAMS = ("topics", "topic_experts")
SIG_DIGITS = 6                  # significant digits of the calibration table's values


@dataclass(frozen=True)
class SynthParams:
    skew: float = 1.4            # scale of the static per-layer log-popularity (normal scores)
    tail_cap: float = 2.0        # normal scores capped at this many std (a flat hot set, no lone giant)
    layer_skew_spread: float = 0.0   # log-normal spread of the skew over layers (0: every layer alike)
    drift: float = 0.6           # stationary std of the drifting log-popularity
    drift_corr: float = 0.9      # step-to-step correlation of the drift
    topics: int = 16             # request topics
    topic_experts: int = 16      # experts a topic boosts per layer
    topic_boost: float = 1.5     # log-popularity boost of a topic's experts
    turnover: float = 0.02       # per-step probability that a request is replaced

    def check(self) -> SynthParams:
        bad = [f.name for f in fields(self) if not math.isfinite(getattr(self, f.name)) or getattr(self, f.name) < 0]
        if bad or not 0 <= self.drift_corr < 1 or self.topics < 1 or not 0 <= self.turnover <= 1:
            raise ConfigError(f"synthetic parameters {asdict(self)}: skew, drift, topic_boost >= 0, "
                              f"0 <= drift_corr < 1, topics >= 1, 0 <= turnover <= 1")
        return self


@functools.cache
def calibration_table() -> dict:
    try:
        return load_toml(*SYNTH_FILE)
    except FileNotFoundError:
        return {}


def params_for(model_name: str) -> tuple[SynthParams, str]:
    """Calibrated parameters of a model, else the default model's; (params, where from)."""
    table = calibration_table()
    entry = table.get(model_name)
    src = model_name
    if entry is None:
        entry, src = table.get(DEFAULT_CALIBRATION), f"{DEFAULT_CALIBRATION} (default)"
    if entry is None:
        return SynthParams(), "built-in defaults (uncalibrated)"
    names = {f.name for f in fields(SynthParams)}
    return SynthParams(**{k: v for k, v in entry.get("params", {}).items() if k in names}), src


def _rng(model: str, seed: int, stream: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(model.encode()), zlib.crc32(stream.encode())])


def _topic_sets_random(rng, C: int, L: int, E: int, m: int) -> np.ndarray:
    m = min(m, E)
    keys = rng.random((C, L, E))
    idx = np.argpartition(keys, m - 1, axis=2)[:, :, :m] if m < E else np.broadcast_to(np.arange(E), (C, L, E))
    mask = np.zeros((C, L, E), dtype=bool)
    np.put_along_axis(mask, idx, True, axis=2)
    return mask


def _topic_sets_profile(rng, prof, layer_rows: np.ndarray, C: int, E: int, m: int) -> np.ndarray:
    """Topic sets grown from measured pairs: a seed pair, then its strongest neighbours."""
    L = len(layer_rows)
    mask = np.zeros((C, L, E), dtype=bool)
    rand = _topic_sets_random(rng, C, L, E, m)
    for layer, row in enumerate(layer_rows):
        sel = prof.pairs[:, 0] == row
        pr, lift = prof.pairs[sel, 1:], prof.pair_lift[sel]
        if len(pr) == 0:
            mask[:, layer] = rand[:, layer]
            continue
        for c in range(C):
            i, j = pr[rng.integers(len(pr))]
            chosen = {int(i), int(j)}
            nb = [(lift[q], int(a) if int(b) in chosen else int(b)) for q, (a, b) in enumerate(pr)
                  if (int(a) in chosen) != (int(b) in chosen)]
            for _, e in sorted(nb, reverse=True):
                if len(chosen) >= m:
                    break
                chosen.add(e)
            fill = [e for e in np.flatnonzero(rand[c, layer]) if e not in chosen]
            chosen.update(fill[:max(0, m - len(chosen))])
            mask[c, layer, list(chosen)[:m]] = True
    return mask


def _normal_scores(rng, L: int, E: int, cap: float) -> np.ndarray:
    """Expected normal order statistics (quantiles (r + 1/2) / E), capped at ``cap``, permuted per
    layer: every layer has the same popularity shape, only the expert ids differ."""
    nd = NormalDist()
    q = np.array([nd.inv_cdf((r + 0.5) / E) for r in range(E)])
    q = np.minimum(q, cap)
    return np.stack([q[rng.permutation(E)] for _ in range(L)])


def _layer_skews(rng, L: int, spread: float) -> np.ndarray:
    """Per-layer skew multipliers exp(s z - s^2 / 2) (log-normal, mean 1); all ones at s = 0, so a
    zero spread leaves the random stream and the trace exactly as without it."""
    if spread <= 0:
        return np.ones(L)
    z = _rng_child(rng).standard_normal(L)
    return np.exp(spread * z - spread * spread / 2)


def _rng_child(rng: np.random.Generator) -> np.random.Generator:
    """An independent stream drawn from ``rng`` (one integer), for optional draws."""
    return np.random.default_rng(int(rng.integers(2 ** 63)))


def _gumbel_topk(logits: np.ndarray, k: int, rng: np.random.Generator, work: np.ndarray | None = None,
                 scratch: np.ndarray | None = None) -> np.ndarray:
    """The k largest of logits + Gumbel noise per row (ascending ids; ``topk.topk``): the profile
    fit's sampler (the decode steps draw the same law with ``plackett_luce``). ``work``,
    ``scratch``: float32 buffers of the logits' shape reused between calls (no fresh pages)."""
    u = rng.random(logits.shape, dtype=np.float32, out=work)
    np.maximum(u, np.float32(GUMBEL_U_FLOOR), out=u)      # -log(-log u), in place: the same values
    np.log(u, out=u)
    np.negative(u, out=u)
    np.log(u, out=u)
    if logits.dtype == np.float32:
        return topk(np.subtract(logits, u, out=u), k, scratch)
    return topk(logits - u, k)


class Generator:
    """Streams synthetic decode steps of one (model, B, seed, params, profile)."""

    def __init__(self, model, batch: int, seed: int = 0, params: SynthParams | None = None,
                 profile: str | None = None):
        from dse.workload import profiles
        self.model, self.B, self.seed = model, int(batch), int(seed)
        self.params = (params or params_for(model.name)[0]).check()
        self.profile = profile
        p, E, L, k = self.params, model.experts, model.moe_layers, model.top_k
        # The static structure (which experts are popular, the topic sets) is drawn per seed, so the
        # independent profiling run of a semi-static placement (another seed) shares no router with
        # the measured run and the placement is uninformed. This is what the 35B's Table X needs at
        # side 2 (0.305 for 0.328; a shared router gives 0.516 and moves the knee to side 2) and
        # what costs the 397B most (side 4: 0.416; shared router: 0.540, the two-round cap J / 2P):
        # its skew is higher, so an informed placement gains more. The catalog's statistics are
        # all within one run and cannot separate router-static from request-driven skew; a
        # measured profile-vs-measured-window load correlation would.
        rng = _rng(model.name, seed, f"layers/{profile}")
        C = max(1, int(p.topics))
        if profile is not None:
            prof = profiles.load(profile)
            if prof.experts != E or prof.top_k != k:
                raise ConfigError(f"routing profile {profile!r}: {prof.experts} experts, top-{prof.top_k}; model "
                                  f"{model.name} has {E} experts, top-{k} (pick a profile of this model)")
            rows = prof.layer_map(L)
            mask = _topic_sets_profile(rng, prof, rows, C, E, int(p.topic_experts))
            boost = p.topic_boost * mask.astype(np.float32)
            base = self._fit_profile(prof.heat[rows], boost, rng)
        else:
            base = (p.skew * _layer_skews(rng, L, p.layer_skew_spread)[:, None]
                    * _normal_scores(rng, L, E, p.tail_cap)).astype(np.float32)
            mask = _topic_sets_random(rng, C, L, E, int(p.topic_experts))
            boost = p.topic_boost * mask.astype(np.float32)
        self.base = base.astype(np.float32)
        self.boost = np.ascontiguousarray(boost.transpose(1, 0, 2), dtype=np.float32)   # [L, C, E]

    def _fit_profile(self, heat: np.ndarray, boost: np.ndarray, rng, iters: int = FIT_ITERS,
                     n: int = FIT_TOKENS) -> np.ndarray:
        """Log-popularity whose top-k selection frequencies (with topics and drift) match ``heat``."""
        p, k = self.params, self.model.top_k
        L, E = heat.shape
        target = np.maximum(heat, FIT_FREQ_FLOOR / max(1.0, n))
        logit = np.log(target).astype(np.float32)
        for _ in range(iters):
            topics = rng.integers(boost.shape[0], size=n)
            drift = (p.drift * rng.standard_normal((L, 1, E))).astype(np.float32)
            lg = logit[:, None, :] + drift + boost[topics].transpose(1, 0, 2)
            ids = _gumbel_topk(lg, k, rng)
            freq = np.zeros((L, E))
            np.add.at(freq, (np.arange(L)[:, None, None], ids), 1.0)
            freq = np.maximum(freq / n, FIT_FREQ_FLOOR / n)
            logit += np.log(target / freq).astype(np.float32) * FIT_DAMPING
        return logit

    def steps(self, n_steps: int, chunk: int = 16) -> Iterator[np.ndarray]:
        """Yield id arrays [<= chunk, layers, B, k] for ``n_steps`` consecutive decode steps."""
        p, m = self.params, self.model
        L, E, k, B = m.moe_layers, m.experts, m.top_k, self.B
        rng = _rng(m.name, self.seed, f"steps/{self.B}/{self.profile}")
        C = self.boost.shape[1]
        topic = rng.integers(C, size=B)
        drift = (p.drift * rng.standard_normal((L, E))).astype(np.float32)
        a = np.float32(p.drift_corr)
        innov = np.float32(p.drift * math.sqrt(max(0.0, 1.0 - p.drift_corr ** 2)))
        dt = id_dtype(E)
        layer = np.repeat(np.arange(L), B)
        topics = plackett_luce.Topics(self.boost)
        done = 0
        while done < n_steps:
            n = min(chunk, n_steps - done)
            out = np.empty((n, L, B, k), dtype=dt)
            for s in range(n):
                # a token's logits: its layer's base + drift, its request topic's experts boosted; k
                # experts without replacement in proportion to exp(logit) (``plackett_luce``)
                rows = plackett_luce.Boosted(self.base + drift, topics, layer, np.tile(topic, L))
                out[s] = plackett_luce.sample(rows, L * B, k, rng).reshape(L, B, k)
                drift = a * drift + innov * rng.standard_normal((L, E), dtype=np.float32)
                new = rng.random(B) < p.turnover
                if new.any():
                    topic[new] = rng.integers(C, size=int(new.sum()))
            done += n
            yield out


def meta_for(model, batch: int, steps: int, seed: int, profile: str | None, params: SynthParams) -> TraceMeta:
    prof = f", profile {profile}" if profile else ""
    src = f"synthetic seed={seed}{prof} " + " ".join(f"{k}={v}" for k, v in asdict(params).items())
    return TraceMeta(model.name, batch, steps, model.moe_layers, model.top_k, model.experts, src, "")


def generate(model, batch: int, steps: int, seed: int = 0, params: SynthParams | None = None,
             profile: str | None = None) -> Trace:
    """A synthetic trace of ``steps`` decode steps (in memory; refused beyond the memory budget)."""
    from dse.workload.limits import check_trace_memory
    check_trace_memory(model, batch, steps)
    g = Generator(model, batch, seed, params, profile)
    ids = np.concatenate(list(g.steps(steps)), axis=0)
    return Trace(meta_for(model, batch, steps, seed, profile, g.params), ids)


def default_profile(model) -> str | None:
    """The measured profile the generator uses for a model without calibrated statistics."""
    from dse.workload import profiles
    if model.routing and model.routing.get("gini") is not None:
        return None
    return profiles.for_model(model)


# -- calibration ----------------------------------------------------------------------------------
def targets(model, batch: int | None = None, catalog_only: bool = False) -> dict[str, float]:
    """Flat calibration targets from the catalog's routing table (union points as union_B); for a
    model without one, the aggregate statistics of its shipped measured profile (gini, top-8 /
    top-16 share of the per-layer heat, U(B) of independent tokens at ``batch``)."""
    r = model.routing or {}
    if not r.get("gini") and not catalog_only and default_profile(model):
        from dse.workload import profiles
        from dse.workload.stats import gini, top_share
        heat = profiles.load(default_profile(model)).heat_for(model.moe_layers)
        out = {"gini": float(gini(heat).mean()), "top8_slot_share": float(top_share(heat, 8).mean()),
               "top16_slot_share": float(top_share(heat, 16).mean())}
        b = batch or model.native_batch
        out[f"union_{b}"] = profiles.union_independent(heat, b)
        return out
    out: dict[str, float] = {}
    for key in ("gini", "hottest_over_mean", "global_peak_hottest_over_mean", "top8_slot_share",
                "top16_slot_share", "hot_set_persistence", "union_sliced_b8", "jobs_per_layer_b64"):
        if key in r:
            out[key] = float(r[key])
    for b, u in (r.get("union") or {}).items():
        if int(b) > 1:
            out[f"union_{int(b)}"] = float(u)
    return out


def achieved(model, batch: int, steps: int, seed: int, params: SynthParams, profile: str | None = None) -> dict:
    """The calibration statistics of a generated trace, flat keys as in :func:`targets`."""
    from dse.workload.stats import flat_stats
    tr = generate(model, batch, steps, seed, params, profile)
    return flat_stats(tr)


def loss(ach: dict, tgt: dict) -> float:
    """Mean squared relative error over the targets the trace can measure."""
    errs = [(ach[k] / v - 1.0) ** 2 for k, v in tgt.items() if k in ach and v]
    return float(np.mean(errs)) if errs else 0.0


def calibrate(model, batch: int | None = None, steps: int = 32, seed: int = 0, rounds: int = 3,
              start: SynthParams | None = None, log=None,
              names: tuple[str, ...] | None = None) -> tuple[SynthParams, dict, float]:
    """Coordinate search of the parameters ``names`` (default: all) minimising :func:`loss`
    (deterministic)."""
    B = batch or model.native_batch
    tgt = targets(model, catalog_only=True)
    if not tgt:
        raise ConfigError(f"model {model.name}: no routing statistics in the catalog ([{model.name}.routing]) to "
                          f"calibrate to; it uses its shipped measured profile, if any, with the default parameters")
    best = start or params_for(model.name)[0]
    best_ach = achieved(model, B, steps, seed, best)
    best_loss = loss(best_ach, tgt)
    for rnd in range(rounds):
        for name, rel in CALIBRATION_STEP.items():
            if names is not None and name not in names:
                continue
            for sign in (+1, -1):
                val = _step(name, getattr(best, name), sign * rel / (1 + rnd))
                if val is None:
                    continue
                cand = replace(best, **{name: val})
                a = achieved(model, B, steps, seed, cand)
                ls = loss(a, tgt)
                if log:
                    log(f"round {rnd} {name}={val:.4g}: loss {ls:.5f} (best {best_loss:.5f})")
                if ls < best_loss:
                    best, best_ach, best_loss = cand, a, ls
                    break
    return best, best_ach, best_loss


def _step(name: str, cur, rel: float):
    """One coordinate-search move of parameter ``name`` by relative step ``rel`` (None: no move)."""
    if name == "drift_corr":
        return min(DRIFT_CORR_MAX, max(0.0, cur + rel))
    if name in INTEGER_PARAMS:
        val = max(1, int(round(cur * (1 + rel))))
        return None if val == cur else val
    if not cur:
        return abs(rel) if rel > 0 else None
    return max(0.0, cur * (1 + rel))


def _sig(v):
    return int(v) if isinstance(v, int) else float(f"{float(v):.{SIG_DIGITS}g}")


def calibration_entry(model, batch: int, steps: int, seed: int, params: SynthParams, ach: dict,
                      ls: float) -> dict:
    """A ``synth.toml`` table: parameters, then targets and achieved values (provenance)."""
    tgt = targets(model, catalog_only=True)
    return {
        "calibrated_on": f"synthetic trace B={batch}, {steps} steps, seed {seed}; targets: catalog "
                         f"[{model.name}.routing] (models.toml)",
        "loss": _sig(ls),
        "params": {k: _sig(v) for k, v in asdict(params).items()},
        "target": {k: _sig(v) for k, v in tgt.items()},
        "achieved": {k: _sig(ach[k]) for k in tgt if k in ach},
    }


def calibration_toml(model, batch: int, steps: int, seed: int, params: SynthParams, ach: dict, ls: float) -> str:
    """The ``synth.toml`` entry of :func:`calibration_entry` as TOML text (loss = mean squared
    relative error over the targets)."""
    return tomli_w.dumps({model.name: calibration_entry(model, batch, steps, seed, params, ach, ls)})
