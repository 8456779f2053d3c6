"""Which designs a study asks for next: three sub-packages, each with one way in (its
``__init__``), bottom up, and the registry that composes them.

* ``bound``: what bounds. The closed form's bounds on the trace-driven metrics (``metrics``),
  computed on columns over many designs (``columns``), the multi-fidelity screen (``fidelity``)
  and the estimates learnt from the evaluated designs (``estimate``).
* ``sample``: what samples. Legal points drawn without optuna (``draw``, ``pool``), the
  closed-form-guided global plan (``guided``), optuna's NSGA-II and TPE with a memo (``nsga2``,
  ``tpe``). Imports ``bound``.
* ``knee``: what refines the knee. The knee phase's settings, sampler and stop (``phase``), its
  plan, coordinate ascent with exchange moves on the trace (``ascent``, over ``sweep``'s one-knob
  moves), the front seen as architectures (``front``) and the one verdict on the knee
  (``verdict``). Imports ``sample`` and ``bound``.
* ``samplers``: the table a study's ``[sampler] name`` picks from; wraps a sampler in the knee
  phase when the study has one.

Code outside a sub-package imports its names from the sub-package (``from
dse.search.propose.knee import trials_verdict``), never from its modules
(``tests/search/propose/test_layout.py``). May import ``storage``, ``space`` and ``front``.
"""
