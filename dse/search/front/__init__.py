"""Pareto fronts and their knees, as arithmetic on objective values.

Owns: non-dominated sorting (``ndsort``), feasible fronts, hypervolume and the knee
(``pareto``), and knee confidence under other traces or models (``robust``).

May import ``storage`` (the hypervolume adapter) and ``space`` (objective definitions).
"""
