"""The grid sampler's queue: every distinct design of the space, in grid order, queued once.

A grid study enqueues its points as fixed parameters; a point whose design the study has already
evaluated or queued is skipped, so the set of designs (hence the front) is the same whether the
study runs in one process, is resumed, or is shared by many workers.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dse.search.execute.evaluation import design_key

if TYPE_CHECKING:
    from dse.search.study.study import StudyConfig


def waiting_params(study) -> list[dict[str, Any]]:
    """Parameters of trials already queued (e.g. re-queued after an interruption)."""
    from optuna.trial import TrialState
    return [dict(t.system_attrs.get("fixed_params", {}))
            for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))]


def point_key(cfg: StudyConfig, params: Mapping[str, Any]) -> str:
    """The ``design_key`` of a queued grid point (its searched knobs; the space's fixed ones added)."""
    fixed = {d.name: d.value for d in cfg.space.dims if d.type == "fixed"}
    return design_key(cfg, cfg.design({**fixed, **params}))


def grid_queue(cfg: StudyConfig, done_keys: Iterable[str] = (),
               queued: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """Grid points whose design is neither in ``done_keys`` (evaluated) nor ``queued``, in grid
    order, as trial parameters (searched knobs only)."""
    out = []
    seen = set(done_keys)
    for params in queued:
        seen.add(point_key(cfg, params))
    for params in cfg.space.grid(cfg.base_env()):
        key = design_key(cfg, cfg.design(params))
        if key in seen:
            continue
        seen.add(key)
        out.append({k: v for k, v in params.items()
                    if any(d.name == k and d.searched for d in cfg.space.dims)})
    return out
