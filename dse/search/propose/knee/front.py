"""The knee phase's view of the evaluated designs: the feasible front, the rivals of its knee, and
designs as architectures (every knob the study leaves at its default filled in).

(Before issue 48 this module also planned the knee phase around sweeps of the top candidates;
coordinate ascent with exchange moves replaced that plan: ``dse.search.propose.knee.ascent``.)
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dse.search.front import pareto
from dse.spec import architecture_view


def front_of(cfg: Any, ev: Any) -> tuple[np.ndarray, list[dict[str, Any]], list[dict[str, Any]]]:
    """(front F in minimisation form, its params, its flat designs) of ``ev`` (guided.Evaluated)."""
    feas = np.flatnonzero(ev.feasible)
    F = pareto.to_min(ev.values[feas], cfg.objectives.directions)
    rows = feas[pareto.nondominated(F)] if len(feas) else feas
    F = pareto.to_min(ev.values[rows], cfg.objectives.directions)
    return F, [ev.params[i] for i in rows], [ev.designs[i] for i in rows]


def rivals_of(cfg: Any, ev: Any) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """(F in minimisation form, full designs) of every feasible design of ``ev``
    (guided.Evaluated): the rivals the top knee margin is measured against
    (``dse.search.front.knee``, "Rivals")."""
    feas = np.flatnonzero(ev.feasible)
    return pareto.to_min(ev.values[feas], cfg.objectives.directions), full_designs(cfg, [ev.designs[i] for i in feas])


def full_designs(cfg: Any, designs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The designs with every knob the study leaves at its default filled in (a key such as
    core_side then reads its value, not None), as architectures (``dse.spec.architecture_view``:
    pooling at one PE group per core reads ``either``)."""
    env = cfg.base_env()
    return [architecture_view({**env, **d}) for d in designs]


def knee_of(cfg: Any, ev: Any, keys: Sequence[str]) -> tuple[np.ndarray, list[dict[str, Any]], Any]:
    """(front F, its params, ``knee_candidates`` of it grouped by ``keys`` with every feasible
    design a rival) of ``ev`` (guided.Evaluated); learnt once for the same trials (after a knee
    batch the signature and the verdict read the same ones)."""
    from dse.search.front import knee as kn
    derived = getattr(ev, "derived", None)
    got = derived.get(("knee", tuple(keys))) if derived is not None else None
    if got is None:
        F, params, designs = front_of(cfg, ev)
        kc = kn.knee_candidates(F, full_designs(cfg, designs), tuple(keys), rivals=rivals_of(cfg, ev)) \
            if len(F) else None
        got = (F, params, kc)
        if derived is not None:
            derived[("knee", tuple(keys))] = got
    return got
