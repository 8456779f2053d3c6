"""Routing statistics of a trace (spec section 4), with the key names of ``models.toml``.

Definitions (chosen so that the catalog's published numbers are mutually consistent; n_e is the
tokens routed to expert e in one (step, layer), B k / E the mean load over all E experts):

* ``hottest_over_mean``: max_e n_e / (B k / E) per (step, layer), averaged (35B: 6.77);
* ``global_peak_hottest_over_mean`` / ``hottest_tokens_per_step``: the largest max_e n_e over
  all (step, layer), as a ratio and in tokens (35B: 9.83 and 39.3 = 9.83 x 4, which pins the mean
  load to B k / E = 4 rather than the mean over active experts);
* ``gini``, ``top8_slot_share``, ``top16_slot_share``: per layer over the trace's aggregated
  counts, averaged over layers (per-step Gini cannot be below 1 - U/E: at B = 8, 0.75 > the
  published 0.583, so the study aggregates over steps); uniform reference of a top-m share: m / E;
* ``hot_set_persistence``: per layer, the fraction of steps whose hottest expert (lowest id on a
  tie) is the layer's modal hottest expert, averaged over layers;
* ``union`` {b: U(b)}: distinct experts of b consecutive tokens of a step (B // b slices per step),
  averaged over slices, steps and layers; ``union_sliced_b8`` = U(8) sliced this way;
* ``jobs_per_layer_b64``: sum_e ceil(n_e / 4) over 64-token slices (w = 4);
* ``coactivation``: per layer over all tokens, pair counts c_ij of experts in one token's top-k,
  lift = c_ij N / (c_i c_j); summary over pairs seen >= 5 times: share with lift > 1.5, mean lift of
  the 64 most frequent pairs, and the strongest pair's lift (averaged over layers).

All accumulators work chunk by chunk, so a million-token trace is summarised in bounded memory.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from dse.workload.trace import Trace, TraceMeta
from dse.workload.trace import loads as loads_of

PAIR_MIN_COUNT = 5
TOP_PAIRS = 64


def gini(x: np.ndarray) -> np.ndarray:
    """Gini coefficient along the last axis (0 = uniform, -> 1 = one expert takes all)."""
    s = np.sort(np.asarray(x, dtype=np.float64), axis=-1)
    n = s.shape[-1]
    tot = s.sum(axis=-1)
    i = np.arange(1, n + 1)
    g = (2.0 * (s * i).sum(axis=-1) / np.where(tot > 0, tot, 1.0) - (n + 1)) / n
    return np.where(tot > 0, g, 0.0)


def top_share(x: np.ndarray, m: int) -> np.ndarray:
    """Share of the total held by the m largest entries (last axis)."""
    s = -np.sort(-np.asarray(x, dtype=np.float64), axis=-1)
    tot = s.sum(axis=-1)
    return s[..., :m].sum(axis=-1) / np.where(tot > 0, tot, 1.0)


def load_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over layers of the Pearson correlation of two per-expert load tables [layers, E].

    Used as ``profile_load_correlation``: how much the profiling window's loads (which a semi-static
    placement sees) tell about the measured window's (which it serves). ~0: the placement is
    uninformed (an independent batch of other requests); 1: it saw the measured loads. Layers where
    either side has no variance carry no information and are skipped; with none left it is 0.0."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    ok = den > 0
    if not ok.any():
        return 0.0
    return float(((x * y).sum(axis=-1)[ok] / den[ok]).mean())


def slice_sizes(batch: int) -> list[int]:
    """Sub-batch sizes whose U(b) is reported: powers of two below B, and B."""
    out = [1 << i for i in range(int(math.log2(batch)) + 1) if (1 << i) < batch]
    return out + [batch]


class Accumulator:
    """Collects everything the statistics need, one chunk of steps at a time."""

    def __init__(self, meta: TraceMeta, coactivation: bool = True):
        self.meta = meta
        L, E = meta.layers, meta.n_experts
        self.counts = np.zeros((L, E), dtype=np.int64)
        self.hottest: list[np.ndarray] = []       # [s, L] max load
        self.argmax: list[np.ndarray] = []        # [s, L] hottest expert
        self.union_per_step: list[np.ndarray] = []  # [s, L] U(B)
        self.jobs_w4: list[np.ndarray] = []       # [s, L] jobs at w = 4, full batch
        self.sizes = slice_sizes(meta.batch)
        self.union_sum = {b: 0.0 for b in self.sizes}
        self.union_n = {b: 0 for b in self.sizes}
        self.jobs64_sum, self.jobs64_n = 0.0, 0
        self.pairs = np.zeros((L, E * E), dtype=np.int32) if coactivation else None

    def add(self, ids: np.ndarray) -> None:
        m = self.meta
        E = m.n_experts
        n = loads_of(ids, E)                                     # [s, L, E]
        self.counts += n.sum(axis=0)
        self.hottest.append(n.max(axis=2))
        self.argmax.append(n.argmax(axis=2))
        self.union_per_step.append(np.count_nonzero(n, axis=2))
        self.jobs_w4.append((-(-n // 4)).sum(axis=2))
        s, L, B, k = ids.shape
        for b in self.sizes:
            nsl = B // b
            if b == B:
                u = self.union_per_step[-1]
                self.union_sum[b] += float(u.sum())
                self.union_n[b] += u.size
                continue
            sub = ids[:, :, :nsl * b].reshape(s, L, nsl, b * k)
            if b == 1:
                self.union_sum[b] += float(k * s * L * nsl)
            else:
                srt = np.sort(sub, axis=-1)
                distinct = 1 + (srt[..., 1:] != srt[..., :-1]).sum(axis=-1)
                self.union_sum[b] += float(distinct.sum())
            self.union_n[b] += s * L * nsl
        if B >= 64:
            nsl = B // 64
            sub = ids[:, :, :nsl * 64].reshape(s, L * nsl, 64, k)
            n64 = loads_of(sub, E)
            self.jobs64_sum += float((-(-n64 // 4)).sum())
            self.jobs64_n += s * L * nsl
        if self.pairs is not None and k > 1:
            i, j = np.triu_indices(k, 1)
            a = ids[..., i].astype(np.int64)
            b_ = ids[..., j].astype(np.int64)
            lo, hi = np.minimum(a, b_), np.maximum(a, b_)
            code = lo * E + hi + (np.arange(L, dtype=np.int64) * E * E)[None, :, None, None]
            self.pairs += np.bincount(code.ravel(), minlength=L * E * E).reshape(L, E * E)

    # -- results ---------------------------------------------------------------------------
    def per_layer(self) -> dict[str, np.ndarray]:
        m = self.meta
        E, k, B = m.n_experts, m.top_k, m.batch
        mean_load = B * k / E
        hot = np.concatenate(self.hottest, axis=0)              # [S, L]
        am = np.concatenate(self.argmax, axis=0)
        modal = np.array([np.bincount(am[:, layer], minlength=E).argmax() for layer in range(m.layers)])
        return {
            "gini": gini(self.counts),
            "hottest_over_mean": hot.mean(axis=0) / mean_load,
            "top8_slot_share": top_share(self.counts, 8),
            "top16_slot_share": top_share(self.counts, 16),
            "hot_set_persistence": (am == modal[None, :]).mean(axis=0),
            "union": np.concatenate(self.union_per_step, axis=0).mean(axis=0),
        }

    def per_step(self) -> dict[str, np.ndarray]:
        m = self.meta
        mean_load = m.batch * m.top_k / m.n_experts
        hot = np.concatenate(self.hottest, axis=0)
        return {"hottest_over_mean": hot.mean(axis=1) / mean_load,
                "union": np.concatenate(self.union_per_step, axis=0).mean(axis=1),
                "jobs_w4": np.concatenate(self.jobs_w4, axis=0).mean(axis=1)}

    def coactivation(self) -> dict[str, float] | None:
        if self.pairs is None or self.meta.top_k < 2:
            return None
        m = self.meta
        E = m.n_experts
        N = float(m.steps * m.batch)
        frac, top_lift, best = [], [], []
        for layer in range(m.layers):
            c = self.pairs[layer]
            nz = np.flatnonzero(c >= PAIR_MIN_COUNT)
            if nz.size == 0:
                continue
            i, j = nz // E, nz % E
            ci, cj = self.counts[layer, i].astype(np.float64), self.counts[layer, j].astype(np.float64)
            lift = c[nz] * N / np.maximum(ci * cj, 1.0)
            frac.append(float((lift > 1.5).mean()))
            order = np.argsort(-c[nz], kind="stable")[:TOP_PAIRS]
            top_lift.append(float(lift[order].mean()))
            best.append(float(lift[order[0]]))
        if not frac:
            return {"pairs_seen": 0, "lift_gt_1_5_share": 0.0, "top_pairs_mean_lift": 0.0, "top_pair_lift": 0.0}
        return {"pairs_seen": int((self.pairs >= PAIR_MIN_COUNT).sum()),
                "lift_gt_1_5_share": float(np.mean(frac)), "top_pairs_mean_lift": float(np.mean(top_lift)),
                "top_pair_lift": float(np.mean(best))}

    def summary(self) -> dict[str, Any]:
        m = self.meta
        pl = self.per_layer()
        hot = np.concatenate(self.hottest, axis=0)
        mean_load = m.batch * m.top_k / m.n_experts
        union = {b: self.union_sum[b] / self.union_n[b] for b in self.sizes if self.union_n[b]}
        out: dict[str, Any] = {
            "model": m.model, "batch": m.batch, "steps": m.steps, "layers": m.layers, "top_k": m.top_k,
            "experts": m.n_experts, "tokens": m.tokens, "source": m.source,
            "gini": float(pl["gini"].mean()),
            "hottest_over_mean": float(pl["hottest_over_mean"].mean()),
            "global_peak_hottest_over_mean": float(hot.max() / mean_load),
            "hottest_tokens_per_step": float(hot.max()),
            "top8_slot_share": float(pl["top8_slot_share"].mean()),
            "top8_uniform": min(1.0, 8 / m.n_experts),
            "top16_slot_share": float(pl["top16_slot_share"].mean()),
            "top16_uniform": min(1.0, 16 / m.n_experts),
            "hot_set_persistence": float(pl["hot_set_persistence"].mean()),
            "union": union,
            "jobs_per_layer_w4": float(np.concatenate(self.jobs_w4, axis=0).mean()),
        }
        if 8 in union:
            out["union_sliced_b8"] = union[8]
        if self.jobs64_n:
            out["jobs_per_layer_b64"] = self.jobs64_sum / self.jobs64_n
        co = self.coactivation()
        if co is not None:
            out["coactivation"] = co
        return out


def accumulate(meta: TraceMeta, chunks: Iterable[np.ndarray], coactivation: bool = True) -> Accumulator:
    acc = Accumulator(meta, coactivation)
    for c in chunks:
        acc.add(c)
    return acc


def trace_stats(trace: Trace, coactivation: bool = True) -> dict[str, Any]:
    return accumulate(trace.meta, trace.chunks(16), coactivation).summary()


def flat(summary: dict[str, Any]) -> dict[str, float]:
    """Scalar statistics with union points as ``union_<b>`` (the calibration keys)."""
    out = {k: float(v) for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for b, u in summary.get("union", {}).items():
        out[f"union_{b}"] = float(u)
    return out


def flat_stats(trace: Trace) -> dict[str, float]:
    return flat(trace_stats(trace, coactivation=False))
