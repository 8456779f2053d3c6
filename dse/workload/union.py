"""U(B): the number of distinct experts a decode step of B tokens activates in one layer.

Closed-form source (until a trace is given): the catalog's measured union points, interpolated
as a power law between neighbours (linear in log U vs log B, so U(B) <= B k holds whenever it holds
at the measured points, and U stays monotone); above the last point the miss fraction (E - U)/E decays as for
independent tokens, (miss at B_max)^(B / B_max), so U stays monotone and below E. A model without
measured points uses its routing profile's popularity (independent tokens) when one is shipped,
else the uniform-routing bound E (1 - (1 - k/E)^B), which over-estimates U for skewed routers.
"""
from __future__ import annotations

import functools
import math

from dse.catalog import MoEModel


def union_uniform(experts: int, top_k: int, batch: float) -> float:
    """U(B) for independent, uniform top-k routing: E (1 - (1 - k/E)^B)."""
    return experts * (1.0 - (1.0 - top_k / experts) ** batch)


def union_from_table(table: dict[int, float], experts: int, batch: float) -> float:
    """Interpolate measured {B: U} points log-log (power law between neighbours);
    independent-token tail above the last point."""
    bs = sorted(table)
    if batch <= bs[0]:
        return table[bs[0]] * batch / bs[0]
    for lo, hi in zip(bs, bs[1:]):
        if batch <= hi:
            f = (math.log(batch) - math.log(lo)) / (math.log(hi) - math.log(lo))
            return math.exp(math.log(table[lo]) + f * (math.log(table[hi]) - math.log(table[lo])))
    b_max, u_max = bs[-1], table[bs[-1]]
    miss = max(0.0, (experts - u_max) / experts)
    return experts - (experts - u_max) * miss ** (batch / b_max - 1.0)


@functools.lru_cache(maxsize=4096)
def union_closed_form(model: MoEModel, batch: int) -> tuple[float, str]:
    """(U(B), source) for the closed-form model: 'catalog', 'profile' or 'uniform-estimate'."""
    table = model.union_table
    if table:
        return union_from_table(table, model.experts, batch), "catalog"
    if model.routing_profile:
        try:
            from dse.workload.profiles import union_from_profile
        except ImportError:  # profiles not shipped in this build
            union_from_profile = None
        if union_from_profile is not None:
            u = union_from_profile(model.routing_profile, batch)
            if u is not None:
                return u, "profile"
    return union_uniform(model.experts, model.top_k, batch), "uniform-estimate"
