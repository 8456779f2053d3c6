"""k distinct experts per token, drawn one after another in proportion to exp(logit) among those
not drawn yet (Plackett-Luce sampling without replacement), from a few random numbers per token.

This is the distribution of the k largest of logits + Gumbel noise (the Gumbel-top-k trick:
Vieira 2014; Kool, van Hoof & Welling, ICML 2019), which the synthetic generator drew before issue
49 with E uniforms per token (E = 128-512 experts: 6.3 M numbers per decode step of the 397B).

* A row of logits is tabulated once (``Table``): its cumulative distribution and a guide table
  (Chen & Asau 1974: bucket j of ``GUIDE`` starts at the first expert whose cumulative
  probability passes j / GUIDE). A draw is one uniform: its bucket, then a step or two along the
  cumulative distribution.
* The generator's tokens draw from a layer's row with a request topic's few experts boosted by
  one factor (``Boosted``): a mixture of the layer's row and of the boosted experts alone, in the
  proportion of their weights, so only one row per layer is tabulated per decode step.
* A draw that repeats an expert the token holds is rejected (the same law as renormalising over
  the experts left), so a token takes about k + a few draws. Tokens that ``ROUNDS`` rounds leave
  short (a very skewed row rejects often) are completed exactly by the Gumbel-top-k of the
  experts they lack.

``tests/workload/test_plackett_luce.py`` checks the set frequencies against the exact
Plackett-Luce probabilities and against the Gumbel-top-k.
"""
from __future__ import annotations

import numpy as np

GUIDE = 1024                 # guide-table buckets per row at most (powers of two: u x G is exact)
EXTRA_DRAWS = 1              # draws per token beyond those it still needs, per round
ROUNDS = 4                   # rejection rounds before the Gumbel-top-k completes a short token
GUMBEL_U_FLOOR = 1e-12       # uniforms clipped here so -log(-log u) stays finite
NO_LOGIT = -1e30             # the padding of a topic's boosted experts (no weight, a finite row)
BELOW_ONE = np.nextafter(1.0, 0.0)


class Table:
    """Rows of logits [S, E] tabulated for drawing: cumulative probabilities and guide tables.
    ``weight``: exp(logit - the row's largest), ``total``: each row's sum of them."""

    def __init__(self, logits: np.ndarray) -> None:
        a = np.asarray(logits)
        if a.dtype not in (np.float32, np.float64):
            a = a.astype(np.float64)
        self.S, self.E = a.shape
        self.weight = np.exp(a - a.max(axis=1, keepdims=True))      # each row's largest logit finite
        cdf = np.cumsum(self.weight, axis=1, dtype=np.float64)
        self.total = cdf[:, -1].copy()
        cdf /= cdf[:, -1:]                            # the last entry exactly 1: every u < 1 lands
        self.cdf = cdf.reshape(-1)
        # bucket j of a row starts at or before the first expert whose cumulative probability
        # exceeds j / G: the count of entries below j / G, those with floor(cdf x G) < j (the
        # draw's walk passes entries equal to j / G); kept as a position in ``cdf``
        G = self.G = min(GUIDE, 1 << max(1, int(self.E) * 2 - 1).bit_length())    # about 2 per entry
        low = (cdf * G).astype(np.int64)
        low += (np.arange(self.S) * (G + 1))[:, None]
        counts = np.bincount(low.reshape(-1), minlength=self.S * (G + 1)).reshape(self.S, G + 1)[:, :G]
        guide = np.cumsum(counts, axis=1) - counts
        guide += (np.arange(self.S) * self.E)[:, None]
        self.guide = guide.reshape(-1)

    def draw(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The expert each uniform ``u`` in [0, 1) picks from its row (``rows`` broadcasts with
        ``u``)."""
        j = (u * self.G).astype(np.int64)
        j += rows * self.G
        pos = np.take(self.guide, j).reshape(-1)
        uu = np.broadcast_to(u, j.shape).reshape(-1)
        walk = np.flatnonzero(np.take(self.cdf, pos) <= uu)
        while walk.size:                            # a step or two along the cumulative distribution
            pos[walk] += 1
            walk = walk[np.take(self.cdf, pos[walk]) <= uu[walk]]
        return pos.reshape(j.shape) - rows * self.E


class Plain:
    """Tokens drawing from rows of one ``Table``: token t from row ``rows[t]``."""

    def __init__(self, logits: np.ndarray, rows: np.ndarray) -> None:
        self.table, self.rows, self.logits = Table(logits), np.asarray(rows), np.asarray(logits)
        self.E = self.table.E

    def draw(self, tokens: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.table.draw(self.rows[tokens], u)

    def row_logits(self, tokens: np.ndarray) -> np.ndarray:
        return self.logits[self.rows[tokens]].astype(np.float64)


class Topics:
    """The boosted experts of every (layer, topic) of ``boost`` ([L, C, E]: zero, or one value per
    (layer, topic)), padded to the most any has: ``ids`` [L x C, m], ``valid``, and the factor
    exp(b) - 1 their weights gain (fixed for a generator: computed once)."""

    def __init__(self, boost: np.ndarray) -> None:
        L, C, E = boost.shape
        self.boost, self.L, self.C, self.E = boost, L, C, E
        on = boost != 0
        self.m = int(on.sum(axis=2).max(initial=0))
        order = np.argsort(~on, axis=2, kind="stable")[:, :, :self.m]      # boosted ids first, ascending
        self.ids = order.reshape(L * C, self.m)
        self.valid = np.take_along_axis(on, order, axis=2).reshape(L * C, self.m)
        self.layer_ids = self.ids + (np.arange(L) * E).repeat(C)[:, None]    # into a [L, E] array, flat
        first = np.take_along_axis(boost, order[:, :, :1], axis=2).reshape(L * C) if self.m else np.zeros(L * C)
        self.factor = np.expm1(first.astype(np.float64))


class Boosted:
    """Tokens of layer ``layer[t]`` and topic ``topic[t]`` drawing from the layer's logits
    ``base[l]`` with the topic's experts raised by their boost (``Topics``): weights w_e, plus
    (exp(b) - 1) w_e on the boosted experts, a mixture of the layer's row (weight sum Z) and of its
    boosted experts alone (sum (exp(b) - 1) x their w), drawn by one uniform: below the boosted
    share, a boosted expert. Only the layers' rows and the few boosted experts are tabulated."""

    def __init__(self, base: np.ndarray, topics: Topics, layer: np.ndarray, topic: np.ndarray) -> None:
        self.base, self.topics, self.E = base, topics, topics.E
        self.layer, self.row = np.asarray(layer), np.asarray(layer) * topics.C + np.asarray(topic)
        self.table = Table(base)                                  # one row per layer
        self.mixed = topics.m > 0
        if not self.mixed:
            return
        w = np.where(topics.valid, np.take(self.table.weight, topics.layer_ids), 0.0)
        extra = topics.factor * w.sum(axis=1, dtype=np.float64)
        share = extra / (extra + np.repeat(self.table.total, topics.C))     # P(a boosted expert)
        self.share, self.rest = share, 1.0 / (1.0 - share)
        with np.errstate(divide="ignore"):                       # a weight that underflowed: never drawn
            logw = np.log(w, out=np.full(w.shape, NO_LOGIT, dtype=w.dtype), where=topics.valid)
        self.boosted = Table(logw)

    def draw(self, tokens: np.ndarray, u: np.ndarray) -> np.ndarray:
        if not self.mixed:
            return self.table.draw(self.layer[tokens], u)
        row = self.row[tokens]
        share = self.share[row]
        ui = (u - share) * self.rest[row]                         # above the boosted share: the layer's row
        np.clip(ui, 0.0, BELOW_ONE, out=ui)
        out = self.table.draw(self.layer[tokens], ui)
        r, c = np.nonzero(u < share)
        if r.size:
            rows = row[c]
            uh = np.minimum(u[r, c] / share[c], BELOW_ONE)
            out[r, c] = self.topics.ids[rows, self.boosted.draw(rows, uh)]
        return out

    def row_logits(self, tokens: np.ndarray) -> np.ndarray:
        t = self.topics
        return (t.boost[self.layer[tokens], self.row[tokens] % t.C] + self.base[self.layer[tokens]]).astype(np.float64)


def sample(source, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """[n, k] distinct experts per token (ascending ids), token t drawn from ``source`` (``Plain``
    or ``Boosted``) without replacement in proportion to exp(logit)."""
    E = source.E
    if k >= E:
        return np.broadcast_to(np.arange(E), (n, E)).copy()
    # slot-major (a slot of every token contiguous); rows k.. take what a token does not keep
    chosen = np.full((k + k + EXTRA_DRAWS, n), -1, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    words = (E + 63) // 64
    held = np.zeros(n * words, dtype=np.uint64)        # each token's experts, one bit each
    short = np.arange(n)
    for _ in range(ROUNDS):
        if not short.size:
            break
        _round(source, chosen, count, held, words, short, k, rng)
        short = short[count[short] < k]
    out = np.ascontiguousarray(chosen[:k].T)
    if short.size:
        _gumbel_complete(source, out, count, short, k, rng)
    out.sort(axis=1)
    return out


def _round(source, chosen: np.ndarray, count: np.ndarray, held: np.ndarray, words: int, who: np.ndarray, k: int,
           rng: np.random.Generator) -> None:
    """One round of draws for the tokens ``who``: each draws what it lacks plus ``EXTRA_DRAWS``
    experts, and keeps, in draw order, those it does not hold yet, up to k (``held``: a bit per
    token and expert, set as experts are drawn)."""
    have = count[who]
    r = int(k - have.min()) + EXTRA_DRAWS
    cand = source.draw(who, rng.random((r, len(who))))          # [r, m]: draw j of every token
    word = (cand >> 6) + who * words
    bit = np.left_shift(np.uint64(1), (cand & 63).astype(np.uint64))
    new = np.empty(cand.shape, dtype=bool)
    for j in range(r):                               # in draw order: a repeat finds its bit set
        w, b = word[j], bit[j]
        cur = np.take(held, w)
        np.equal(cur & b, 0, out=new[j])
        np.put(held, w, cur | b)
    slot = np.cumsum(new, axis=0)
    slot += have - 1                                  # where each new expert goes: a row of chosen
    count[who] = np.minimum(k, slot[-1] + 1)
    dest = np.where(new, slot, len(chosen) - 1)       # repeats, and news past k, to the spare rows
    dest *= chosen.shape[1]
    dest += who
    np.put(chosen, dest, cand)


def _gumbel_complete(source, chosen: np.ndarray, count: np.ndarray, who: np.ndarray, k: int,
                     rng: np.random.Generator) -> None:
    """Tokens still short after the rounds: the experts they lack, exactly, as the largest of
    logit + Gumbel noise over the experts they do not hold (the rest of a Plackett-Luce draw is
    a Plackett-Luce draw over what is left)."""
    g = source.row_logits(who)
    g[~np.isfinite(g)] = NO_LOGIT                  # no weight: after every expert with some
    have = chosen[who]
    ii, jj = np.nonzero(have >= 0)
    g[ii, have[ii, jj]] = -np.inf
    u = np.maximum(rng.random(g.shape), GUMBEL_U_FLOOR)
    g -= np.log(-np.log(u))
    order = np.argsort(-g, axis=1, kind="stable")
    for t in range(len(who)):
        c = int(count[who[t]])
        chosen[who[t], c:] = order[t, :k - c]
    count[who] = k
