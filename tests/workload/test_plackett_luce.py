"""k experts without replacement in proportion to exp(logit) (dse/workload/plackett_luce.py): the
frequencies of the drawn sets equal the exact Plackett-Luce probabilities (enumerated), which are
those of the top k of logits + Gumbel noise, the generator's law before issue 49."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from dse.workload import plackett_luce as pl

DRAWS = 60_000
Z_MAX = 4.5                    # |frequency - probability| in standard errors, over every set


def exact_sets(logits: np.ndarray, k: int) -> dict[tuple[int, ...], float]:
    """P(set) of k draws without replacement, each in proportion to exp(logit) of what is left."""
    w = np.exp(logits - logits.max())
    out: dict[tuple[int, ...], float] = {}
    for perm in itertools.permutations(range(len(w)), k):
        p, rest = 1.0, w.sum()
        for e in perm:
            p *= w[e] / rest
            rest -= w[e]
        key = tuple(sorted(perm))
        out[key] = out.get(key, 0.0) + p
    return out


def worst_z(got: np.ndarray, logits: np.ndarray, k: int) -> float:
    keys, counts = np.unique(got, axis=0, return_counts=True)
    freq = {tuple(s): c / len(got) for s, c in zip(keys.tolist(), counts)}
    exact = exact_sets(np.asarray(logits, dtype=np.float64), k)
    assert set(freq) <= set(exact)                          # distinct, in range, sorted
    return max(abs(freq.get(s, 0.0) - p) / np.sqrt(max(p * (1 - p), 1e-12) / len(got)) for s, p in exact.items())


ROWS = [([3.0, 0.0, -1.0, 1.5, 2.9, -4.0], 3),            # mixed weights
        ([0.0, 0.1, 5.0, 0.2, -0.3, 0.0, 1.0], 2),        # one heavy expert
        ([0.0] * 6, 4),                                    # all equal
        ([9.0, 0.0, 0.0, 0.0, 0.0], 3),                    # so skewed that rejection gives up: Gumbel completes
        ([1.0, -np.inf, 0.5, 0.0, -np.inf], 2)]            # experts with no weight


@pytest.mark.parametrize("logits,k", ROWS)
def test_drawn_sets_have_the_exact_plackett_luce_law(logits, k):
    rng = np.random.default_rng(11)
    row = np.array([logits])
    got = pl.sample(pl.Plain(row, np.zeros(DRAWS, dtype=np.int64)), DRAWS, k, rng)
    assert got.shape == (DRAWS, k) and (np.diff(got, axis=1) > 0).all()
    assert worst_z(got, row[0], k) < Z_MAX


def test_boosted_rows_are_the_law_of_the_summed_logits():
    """A layer's row with a topic's experts boosted (the generator's tokens), drawn as a mixture:
    the law of the row base + boost, for every (layer, topic), including a topic boosting none."""
    base = np.array([[3.0, 0.0, -1.0, 1.5, 2.9, -4.0], [0.0, 0.5, 0.2, -2.0, 1.0, 0.3]], dtype=np.float32)
    boost = np.zeros((2, 2, 6), dtype=np.float32)
    boost[0, 0, [1, 2]] = boost[0, 1, [5]] = boost[1, 0, [0, 3, 4]] = 1.9
    rng = np.random.default_rng(5)
    topics = pl.Topics(boost)
    for layer, topic in itertools.product(range(2), range(2)):
        src = pl.Boosted(base, topics, np.full(DRAWS, layer), np.full(DRAWS, topic))
        got = pl.sample(src, DRAWS, 3, rng)
        assert worst_z(got, base[layer] + boost[layer, topic], 3) < Z_MAX, (layer, topic)


def test_inclusion_frequencies_match_the_gumbel_top_k_on_a_wide_skewed_row():
    """512 experts, top 10, a log-normal popularity as the 397B's (exact enumeration is out of
    reach): each expert's inclusion frequency against the Gumbel-top-k's, two samples."""
    rng = np.random.default_rng(7)
    E, k, n = 512, 10, 20_000
    logits = (1.3 * rng.standard_normal(E)).astype(np.float32)
    ours = pl.sample(pl.Plain(logits[None, :], np.zeros(n, dtype=np.int64)), n, k, rng)
    g = logits[None, :] - np.log(-np.log(rng.random((n, E))))
    gumbel = np.argpartition(-g, k - 1, axis=1)[:, :k]
    a = np.bincount(ours.ravel(), minlength=E) / n
    b = np.bincount(gumbel.ravel(), minlength=E) / n
    se = np.sqrt((a * (1 - a) + b * (1 - b)) / n) + 1e-12
    assert np.max(np.abs(a - b) / se) < 5.0
    assert a.sum() == pytest.approx(k)


def test_a_bucket_off_by_one_would_be_seen():
    """The check is sharp: a guide table one bucket late (an inclusive count where the exclusive
    one belongs) skews the law beyond it at 4x the draws."""
    rng = np.random.default_rng(11)
    row = np.array([ROWS[0][0]])
    src = pl.Plain(row, np.zeros(4 * DRAWS, dtype=np.int64))
    g = src.table.guide.reshape(1, src.table.G)
    src.table.guide = np.concatenate([g[:, 1:], g[:, -1:]], axis=1).reshape(-1)
    assert worst_z(pl.sample(src, 4 * DRAWS, 3, rng), row[0], 3) > Z_MAX


def test_same_stream_same_draws_and_every_expert_when_k_is_e():
    row = np.array([[0.3, 1.0, -0.5, 2.0]])
    a = pl.sample(pl.Plain(row, np.zeros(50, dtype=np.int64)), 50, 2, np.random.default_rng(3))
    b = pl.sample(pl.Plain(row, np.zeros(50, dtype=np.int64)), 50, 2, np.random.default_rng(3))
    assert (a == b).all()
    every = pl.sample(pl.Plain(row, np.zeros(5, dtype=np.int64)), 5, 4, np.random.default_rng(3))
    assert (every == np.arange(4)).all()
    # fewer experts with weight than k: those, then others, never one twice
    few = pl.sample(pl.Plain(np.array([[0.0, -np.inf, -np.inf, 0.0]]), np.zeros(50, dtype=np.int64)), 50, 3,
                    np.random.default_rng(3))
    assert (np.diff(few, axis=1) > 0).all() and ((few == 0).any(axis=1) & (few == 3).any(axis=1)).all()
