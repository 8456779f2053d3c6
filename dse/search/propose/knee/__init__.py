"""What refines the knee: the knee phase of a study (its settings, its sampler, its stop), its
plan (coordinate ascent of the knee's figure of merit on the trace, with exchange moves along the
closed form's walls) and the one verdict on the knee (clear, ambiguous, not settled).

Modules, bottom up: ``sweep`` (every design one knob away), ``front`` (the evaluated designs'
front, rivals and architectures), ``exchange`` (a wall step repaired by another knob),
``ascent`` (chains, moves, the plan), ``verdict`` (refined or not, the verdict), ``phase``
(``[search]`` settings, the knee-phase sampler, the run's tracker).
Imports ``dse.search.propose.sample`` and ``dse.search.propose.bound``.
"""
from dse.search.propose.knee.ascent import Chains
from dse.search.propose.knee.ascent import plan as knee_plan
from dse.search.propose.knee.front import front_of, full_designs, rivals_of
from dse.search.propose.knee.phase import (
                                           ATTR,
                                           CANDIDATES_ATTR,
                                           KNEE_KEYS,
                                           SEARCH_KEYS,
                                           KneeSearch,
                                           Tracker,
                                           candidates_attr,
                                           parse,
                                           resumed,
                                           track,
                                           wrap,
)
from dse.search.propose.knee.sweep import legalise, variants
from dse.search.propose.knee.verdict import CONTEST_WINDOW, Verdict, margin_words, trials_verdict

__all__ = ["Chains", "knee_plan", "front_of", "full_designs", "rivals_of", "ATTR", "CANDIDATES_ATTR", "KNEE_KEYS",
           "SEARCH_KEYS", "KneeSearch", "Tracker", "candidates_attr", "parse", "resumed", "track", "wrap",
           "legalise", "variants", "CONTEST_WINDOW", "Verdict", "margin_words", "trials_verdict"]
