"""The DSE engine: declarative spaces, objective sets and studies; optuna ask/tell runs fanned out
to worker processes; feasible Pareto fronts, hypervolume and knees; exported designs.

Typical use::

    from dse.search import load_study, run_study, load_results
    cfg = load_study("studies/quickstart.toml")
    run_study(cfg, jobs=2)
    res = load_results(cfg)
    res.knee().params

The names are loaded on first use, so importing a light module of the package (``dse.search.expr``,
``dse.search.space``) does not import optuna.

Modules, bottom up: ``expr``, ``space``, ``objectives``, ``samplers``, ``storage``, ``study``
(files and settings); ``optuna_compat`` (every private optuna API, in one place); ``evaluation``
(evaluate a design, design keys, the process pool); ``trials`` (the one trial lifecycle,
recording, the design cache); ``grid_queue`` (the grid sampler's queue); ``mirror`` (the sampler's in-memory study); ``runner``
(``dse run``); ``grid`` (``dse grid``: exhaustive vectorised search); ``pareto``, ``results``,
``export`` (reading a study back).
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {"load_study": "dse.search.study", "run_study": "dse.search.runner", "load_results": "dse.search.results"}

__all__ = ["load_study", "run_study", "load_results"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dse.search' has no attribute {name!r}")
