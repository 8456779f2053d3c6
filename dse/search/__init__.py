"""The DSE engine: declarative spaces, objective sets and studies; optuna ask/tell runs fanned out
to joblib workers; feasible Pareto fronts, hypervolume and knees; exported designs.

Typical use::

    from dse.search import load_study, run_study, load_results
    cfg = load_study("studies/quickstart.toml")
    run_study(cfg, jobs=2)
    res = load_results(cfg)
    res.knee().params
"""
from dse.search.results import load_results
from dse.search.runner import run_study
from dse.search.study import load_study

__all__ = ["load_study", "run_study", "load_results"]
