"""The samplers a study may name: one table, name -> (factory, allowed settings, resume promise).

``[sampler] name = ...`` in a study file picks a row; its other keys must be settings of that
row (``kind, low, high``). optuna is imported only when a sampler is built.

Batch *i* of a study is asked from a sampler seeded with ``batch_seed(seed, i)`` (see
``dse.search.execute.runner``), so a resumed study ends with the trials of an uninterrupted one. Per
sampler (``not_resumable`` is the reason a sampler cannot promise it, empty when it can):

* nsga2, tpe, random, guided: exact (the proposals are a function of the seed and the trials so far);
* grid: exact (the queue order decides, not randomness);
* gp: not promised (its Gaussian-process fit runs in torch, not guaranteed bit-reproducible
  across runs and thread counts); ``dse run`` says so when it resumes a gp study.

``blind``: the sampler's proposals do not depend on the trials' results (random: only on its
seed), or not on the results of the batch before (guided with ``lag = 1``: batch *i* is planned
from the trials before batch *i - 1*; ``lagged``). ``dse run`` then asks batch *i + 1* while
batch *i* is still being evaluated, so that workers never wait at the batch barrier and the
driver's plan runs while they evaluate; the trials are those of asking after the barrier (the
sampler is told its batch's position, ``make_sampler(..., position)``, and plans from the
trials before ``position - lag x batch`` whatever else the study holds by then).
"""
from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dse.errors import ConfigError


def _nsga2(cfg: Any, seed: int, s: dict[str, Any]):
    from dse.search.propose.sample import MemoNSGAIISampler
    return MemoNSGAIISampler(seed=seed, **s)


def _tpe(cfg: Any, seed: int, s: dict[str, Any]):
    from dse.search.propose.sample import MemoTPESampler
    s.setdefault("constant_liar", cfg.batch > 1)
    if s.get("group"):
        s["multivariate"] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MemoTPESampler(seed=seed, **s)


def _gp(cfg: Any, seed: int, s: dict[str, Any]):
    import optuna
    try:
        import scipy  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        raise ConfigError(f"{cfg.source}: sampler.name = 'gp': needs torch and scipy "
                          f"(pip install 'rexpert-dse[gp]'); or use nsga2, tpe, random, grid") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return optuna.samplers.GPSampler(seed=seed, **s)


def _guided(cfg: Any, seed: int, s: dict[str, Any], position: int | None = None, lag: int = 0):
    from dse.search.propose.sample import guided_sampler
    return guided_sampler(cfg, seed, s, position, lag)


def _random(cfg: Any, seed: int, s: dict[str, Any]):
    import optuna
    return optuna.samplers.RandomSampler(seed=seed)   # random, and grid (its points are enqueued)


@dataclass(frozen=True)
class SamplerKind:
    factory: Callable[[Any, int, dict[str, Any]], Any]
    settings: dict[str, tuple[str, float, float]]     # setting -> (kind, low, high)
    not_resumable: str = ""                            # why a resumed study may differ ("" : it does not)
    blind: bool = False                                # proposals independent of the results (see above)
    lag_setting: str = ""                              # a setting that, at 1, makes it blind to the last batch


SAMPLERS: dict[str, SamplerKind] = {
    "nsga2": SamplerKind(_nsga2, {"population_size": ("int", 2, 10000), "mutation_prob": ("float", 0, 1),
                                  "crossover_prob": ("float", 0, 1), "swapping_prob": ("float", 0, 1)}),
    "tpe": SamplerKind(_tpe, {"n_startup_trials": ("int", 0, 100000), "n_ei_candidates": ("int", 1, 10000),
                              "multivariate": ("bool", 0, 1), "constant_liar": ("bool", 0, 1),
                              "group": ("bool", 0, 1)}),
    "gp": SamplerKind(_gp, {"n_startup_trials": ("int", 0, 100000), "deterministic_objective": ("bool", 0, 1)},
                      not_resumable="its Gaussian-process fit (torch) is not guaranteed bit-reproducible"),
    "random": SamplerKind(_random, {}, blind=True),
    "grid": SamplerKind(_random, {}),
    "guided": SamplerKind(_guided, {"pool": ("int", 10, 100000), "mutants": ("float", 0, 1),
                                    "explore": ("float", 0, 1), "extremes": ("bool", 0, 1), "refine": ("bool", 0, 1),
                                    "samples": ("int", 100, 1000000), "ridge": ("float", 0, 1e6),
                                    "logistic": ("bool", 0, 1), "novelty": ("bool", 0, 1), "lag": ("int", 0, 1),
                                    "utility": ("float", 0, 1)},
                          lag_setting="lag"),
}


def lagged(cfg: Any) -> int:
    """Batches the study's sampler plans behind (``lag``: 0, or 1 for guided with ``lag = 1``)."""
    kind = SAMPLERS[cfg.sampler]
    return int(cfg.sampler_settings.get(kind.lag_setting, 0)) if kind.lag_setting else 0


def blind(cfg: Any) -> bool:
    """Whether batch *i + 1* may be asked before batch *i* is told (module docstring)."""
    return SAMPLERS[cfg.sampler].blind or lagged(cfg) > 0


def make_sampler(cfg: Any, seed: int, position: int | None = None):
    """The study's sampler (``cfg.sampler`` with ``cfg.sampler_settings``) seeded with ``seed``;
    ``position``: finished trials before the batch it asks (a lagged sampler plans from the first
    ``position - lag x batch`` of them; None: all the study's finished trials come before it)."""
    kind, lag = SAMPLERS[cfg.sampler], lagged(cfg)
    settings = dict(cfg.sampler_settings)
    if kind.lag_setting:
        settings.pop(kind.lag_setting, None)
        sampler = kind.factory(cfg, seed % (2**32), settings, position, lag)
    else:
        sampler = kind.factory(cfg, seed % (2**32), settings)
    knee = getattr(cfg, "knee", None)
    if knee is not None and knee.share > 0 and cfg.sampler != "grid":   # [search] knee_share: a knee phase
        from dse.search.propose.knee import wrap
        return wrap(cfg, seed % (2**32), sampler, position, lag)
    return sampler


def batch_seed(seed: int, batch_index: int) -> int:
    """Sampler seed of batch ``batch_index`` of a study seeded with ``seed``."""
    digest = hashlib.sha256(f"dse-batch:{seed}:{batch_index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")
