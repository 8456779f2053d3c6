"""Which designs a study asks for next.

Owns: the sampler registry (``samplers``) with optuna's TPE and NSGA-II wrappers (``tpe``,
``nsga2``), the closed-form-guided sampler (``guided``, ``draw``, ``estimate``), closed-form
objective bounds (``bounds``, ``bound_table``) and the multi-fidelity screen (``fidelity``).

May import ``storage``, ``space`` and ``front``.
"""
