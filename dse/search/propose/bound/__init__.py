"""What bounds: the closed form's bounds on trace-driven metrics, on columns, the multi-fidelity
screen, and estimates of the trace-driven objectives learnt from the evaluated designs.

Modules, bottom up: ``metrics`` (which metric the closed form bounds, and how), ``fidelity`` (the
screen of ``[search] fidelity = "multi"``), ``columns`` (the bounds of many designs as numpy
columns, bit for bit the per-design path), ``estimate`` (bounds times a learnt ratio; the bound
memo and the chunks handed to the workers).
"""
from dse.search.propose.bound.estimate import (
                                               BoundMemo,
                                               ChunkedBounds,
                                               Estimator,
                                               bound_arrays,
                                               bound_arrays_reference,
                                               offloading,
)
from dse.search.propose.bound.fidelity import (
                                               FIDELITIES,
                                               Screen,
                                               check_fidelity,
                                               closed_form_bounds,
                                               closed_form_bounds_many,
                                               record_screened,
                                               screen_for,
)
from dse.search.propose.bound.metrics import HINTS, KINDS

__all__ = ["BoundMemo", "ChunkedBounds", "Estimator", "bound_arrays", "bound_arrays_reference", "offloading",
           "FIDELITIES", "Screen", "check_fidelity", "closed_form_bounds", "closed_form_bounds_many",
           "record_screened", "screen_for", "HINTS", "KINDS"]
