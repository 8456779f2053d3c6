"""Warm state of a trace-driven study, prepared by the driver before its workers evaluate.

* Traces: the study's synthetic traces are generated once before the first batch, each window
  (measured, profiling) of each model as its own task on the workers (side by side, while the
  other workers start), into the on-disk trace cache; the other worker processes load them.
* Placements: when the space has few scheduling domains (the knobs that shape a domain and the
  placement policy take at most ``MAX_WARM_DOMAINS`` combinations), every LPT / co-activation
  placement is computed once, spread over the workers, into the on-disk placement cache
  (:mod:`dse.mapping.warm_cache`), queued ahead of the first batch (not waited for: the first
  evaluations start as soon as a worker is free); each worker then loads a placement instead of
  computing it again. A larger space shares placements through the same cache as
  the workers meet them.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from dse.errors import ConfigError, DSEError

DOMAIN_KNOBS = ("core_side", "pe_groups_per_core", "die_units_x", "die_units_y", "core_remainder",
                "layer_layout", "placement")
MAX_WARM_DOMAINS = 64
TRACE_WINDOWS = ("measured", "profile")


def domain_key(design: Mapping[str, Any]) -> tuple:
    """What a design's scheduling domain and placement are (``DOMAIN_KNOBS``): an evaluation
    pool keeps designs of one key on one worker, whose caches hold that domain."""
    return tuple(str(design.get(k)) for k in DOMAIN_KNOBS)


def layout_domain(design: Mapping[str, Any], model: str) -> tuple | None:
    """What the unit layout that evaluating ``design`` on ``model`` builds is keyed by, as the
    shared warm state counts domains (``dse.mapping.trace_mapping.shared_layout``, one workload):
    (model, scheduling domain, placement policy); None for a design the spec rejects."""
    from dse.catalog import get_model
    from dse.mapping import placement as pl
    from dse.spec import DesignPoint
    try:
        p = DesignPoint.from_dict({**design, "model": model})
        dom = pl.domain(get_model(model).experts, p.core_side, p.groups, p.die_units_x, p.die_units_y,
                        p.core_remainder, p.layer_layout)
    except (DSEError, ValueError):
        return None
    return model, dom, p.placement


def warm_traces(cfg, pool=None) -> None:
    """Generate the study's synthetic traces once (on-disk cache) before the first batch: each
    window (measured, profiling) of each model as its own task on ``pool``'s workers, side by
    side, or one after the other in this process without a pool."""
    if pool is None:
        for m, w in _trace_tasks(cfg):
            warm_trace({**cfg.base, "model": m}, (m,), w)
        return
    wait(submit_traces(cfg, pool), pool)


def submit_traces(cfg, pool) -> list:
    """Hand each trace window of each model to the pool's workers; returns the handles."""
    return [pool.submit(functools.partial(warm_trace, window=w), {**cfg.base, "model": m}, (m,))
            for m, w in _trace_tasks(cfg)]


def wait(handles: list, pool) -> None:
    """Wait for warm-up tasks handed to ``pool``."""
    for h in handles:
        pool.result(h)


def _trace_tasks(cfg) -> list[tuple[str, str]]:
    return [(m, w) for m in cfg.models for w in TRACE_WINDOWS]


def warm_trace(design: Mapping[str, Any], models: Sequence[str], window: str) -> dict:
    """Generate (or find) one trace window of ``design`` (its model) into the caches; may run
    in a worker process. An unusable workload surfaces, with its reason, per trial."""
    from dse.spec import DesignPoint
    from dse.workload.window import warm
    try:
        warm(DesignPoint.from_dict(dict(design)), (window,))
    except DSEError:
        pass
    return {}


def domain_designs(cfg) -> list[dict[str, Any]]:
    """One design per (scheduling domain, LPT / co-activation policy) of the space, or [] if the
    study is not trace-driven, searches a workload knob, or has more than MAX_WARM_DOMAINS."""
    from dse.spec import DesignPoint
    from dse.spec.params import BY_NAME
    try:
        if DesignPoint.from_dict({**cfg.base, "model": cfg.models[0]}).trace == "catalog":
            return []
    except ConfigError:
        return []
    dims = [d for d in cfg.space.dims if d.name in DOMAIN_KNOBS]
    if any(BY_NAME[d.name].part == "workload" for d in cfg.space.dims if d.searched):
        return []
    refs = set()
    for d in dims:
        refs |= {k for k, _ in d.when}
        for b in (d.low, d.high, d.step):
            refs |= b.refs if b is not None else set()
    if not refs <= set(DOMAIN_KNOBS):
        return []
    combos = _enumerate(cfg.space, dims, cfg.base_env())
    out = []
    for params in combos or []:
        design = cfg.design(params)
        if design.get("placement", cfg.base_env().get("placement")) != "contiguous":
            out.append(design)
    return out


def _enumerate(space, dims, env: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Every combination of ``dims`` (conditions and dependent bounds honoured); None beyond the cap."""
    out: list[dict[str, Any]] = []

    def rec(i: int, env: dict[str, Any], chosen: dict[str, Any]) -> bool:
        if i == len(dims):
            out.append(dict(chosen))
            return len(out) <= MAX_WARM_DOMAINS
        d = dims[i]
        if d.type != "fixed" and not d.active(env):
            return rec(i + 1, env, chosen)
        values = [d.value] if d.type == "fixed" else list(d.choices) if d.type == "categorical" \
            else space._values(d, env)
        return all(rec(i + 1, {**env, d.name: v}, {**chosen, d.name: v}) for v in values)

    try:
        return out if rec(0, dict(env), {}) else None
    except ConfigError:
        return None


def warm_placement(design: Mapping[str, Any], models: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Compute (or find) the placement of ``design`` on every model; runs in a worker process."""
    from dse.catalog import get_model
    from dse.mapping import placement as pl
    from dse.mapping.trace_mapping import placement_for
    from dse.spec import DesignPoint
    from dse.workload.window import workload
    for m in models:
        try:
            p = DesignPoint.from_dict({**design, "model": m})
            model = get_model(m)
            dom = pl.domain(model.experts, p.core_side, p.groups, p.die_units_x, p.die_units_y,
                            p.core_remainder, p.layer_layout)
            placement_for(workload(p, model), dom, p.placement)
        except (DSEError, ValueError):
            pass                      # an invalid design surfaces, with its reason, as a trial
    return {}


def submit_placements(cfg, pool) -> list:
    """Hand the placements of ``domain_designs`` to the pool's workers (ahead of any evaluation
    submitted later); returns the handles (keep them: a dropped dask future is cancelled)."""
    return [pool.submit(warm_placement, d, cfg.models, group=domain_key(d)) for d in domain_designs(cfg)]


def warm_placements(cfg, pool) -> int:
    """Spread the placements of ``domain_designs`` over the pool's workers and wait for them."""
    handles = submit_placements(cfg, pool)
    for h in handles:
        pool.result(h)
    return len(handles)
