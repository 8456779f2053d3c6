"""The samplers a study may name: one table, name -> (factory, allowed settings).

``[sampler] name = ...`` in a study file picks a row; its other keys must be settings of that
row (``kind, low, high``). optuna is imported only when a sampler is built.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

from dse.errors import ConfigError


def _nsga2(cfg: Any, seed: int, s: dict[str, Any]):
    import optuna
    return optuna.samplers.NSGAIISampler(seed=seed, **s)


def _tpe(cfg: Any, seed: int, s: dict[str, Any]):
    import optuna
    s.setdefault("constant_liar", cfg.batch > 1)
    if s.get("group"):
        s["multivariate"] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return optuna.samplers.TPESampler(seed=seed, **s)


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


def _random(cfg: Any, seed: int, s: dict[str, Any]):
    import optuna
    return optuna.samplers.RandomSampler(seed=seed)   # random, and grid (its points are enqueued)


@dataclass(frozen=True)
class SamplerKind:
    factory: Callable[[Any, int, dict[str, Any]], Any]
    settings: dict[str, tuple[str, float, float]]     # setting -> (kind, low, high)


SAMPLERS: dict[str, SamplerKind] = {
    "nsga2": SamplerKind(_nsga2, {"population_size": ("int", 2, 10000), "mutation_prob": ("float", 0, 1),
                                  "crossover_prob": ("float", 0, 1), "swapping_prob": ("float", 0, 1)}),
    "tpe": SamplerKind(_tpe, {"n_startup_trials": ("int", 0, 100000), "n_ei_candidates": ("int", 1, 10000),
                              "multivariate": ("bool", 0, 1), "constant_liar": ("bool", 0, 1),
                              "group": ("bool", 0, 1)}),
    "gp": SamplerKind(_gp, {"n_startup_trials": ("int", 0, 100000), "deterministic_objective": ("bool", 0, 1)}),
    "random": SamplerKind(_random, {}),
    "grid": SamplerKind(_random, {}),
}


def make_sampler(cfg: Any, seed: int):
    """The study's sampler (``cfg.sampler`` with ``cfg.sampler_settings``) seeded with ``seed``."""
    return SAMPLERS[cfg.sampler].factory(cfg, seed % (2**32), dict(cfg.sampler_settings))
