"""The DSE engine: declarative spaces, objective sets and studies; optuna ask/tell runs fanned out
to worker processes; feasible Pareto fronts, hypervolume and knees; exported designs.

Typical use::

    from dse.search import load_study, run_study, load_results
    cfg = load_study("studies/quickstart.toml")
    run_study(cfg, jobs=2)
    res = load_results(cfg)
    res.knee().params

The names are loaded on first use, so importing a light module of the package (``dse.search.space.expr``,
``dse.search.space.space``) does not import optuna.

Sub-packages, bottom up (each imports only those before it; ``tests/test_import_graph.py``
holds the order):

* ``storage``: storages, the stored form of a trial, every private optuna API;
* ``space``: the design space, derived knobs and objective sets (pure: no optuna);
* ``front``: Pareto fronts, hypervolume, knees and knee confidence;
* ``grid``: ``dse grid``, the exhaustive vectorised search;
* ``propose``: samplers (TPE, NSGA-II, the closed-form-guided sampler), bounds, multi-fidelity;
* ``study``: the study file (``load_study``) and a study read back (``load_results``);
* ``execute``: ``dse run`` (``run_study``): trials, evaluation, worker pools, warm state, progress;
* ``review``: exported designs and the quality of a front.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {"load_study": "dse.search.study.study", "run_study": "dse.search.execute.runner",
         "load_results": "dse.search.study.results"}

__all__ = ["load_study", "run_study", "load_results"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dse.search' has no attribute {name!r}")
