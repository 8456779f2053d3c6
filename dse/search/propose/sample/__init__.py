"""What samples: legal points of a space drawn without optuna, the closed-form-guided global plan,
and optuna's NSGA-II and TPE with a memo of repeated designs.

Modules, bottom up: ``draw`` (uniform draws and mutants, knob by knob), ``pool`` (a pool of
candidates drawn column by column), ``guided`` (the guided sampler: screen, estimate, pick by
hypervolume and by the knee's figure of merit), ``nsga2`` and ``tpe`` (optuna's samplers answering a
repeated design from the study). Imports ``dse.search.propose.bound``.
"""
from dse.search.propose.sample.draw import compiled, is_legal, legal_float, legal_int, mutant, uniform
from dse.search.propose.sample.guided import (
    DEFAULTS,
    Evaluated,
    basis,
    candidates,
    greedy_hv,
    memo_of,
    param_key,
    utility_picks,
)
from dse.search.propose.sample.guided import make as guided_sampler
from dse.search.propose.sample.guided import plan as global_plan

__all__ = ["compiled", "is_legal", "legal_float", "legal_int", "mutant", "uniform", "DEFAULTS", "Evaluated",
           "basis", "candidates", "greedy_hv", "memo_of", "param_key", "utility_picks", "guided_sampler",
           "global_plan"]


def __getattr__(name: str):
    """optuna's samplers with a memo, imported when asked for (optuna is imported only then)."""
    if name == "MemoNSGAIISampler":
        from dse.search.propose.sample.nsga2 import MemoNSGAIISampler
        return MemoNSGAIISampler
    if name == "MemoTPESampler":
        from dse.search.propose.sample.tpe import MemoTPESampler
        return MemoTPESampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
