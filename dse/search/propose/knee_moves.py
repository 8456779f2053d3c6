"""The knee phase's plan: neighbourhood moves around each knee candidate, chosen on the closed form.

After its global phase a study with ``[search] knee_share`` spends its batches around the top
knee candidates of its current front (``dse.search.front.knee``; ``dse.search.propose.knee_phase``
says when). For each batch (``plan``):

1. **candidates**: the knee candidates of the feasible front of the trials before the batch,
   grouped by the study's architecture keys (``[search] knee_keys``); the top ``knee_candidates``
   of them;
2. **pool** (``neighbours``): for each candidate, ``pool / C`` neighbourhood moves of the front's
   designs of its architecture (its best candidate first): 1 or 2 knobs moved *one or two steps*
   (an int or stepped knob by one or two steps, a categorical to an adjacent choice, a continuous
   knob by 10 % of its range or, on a log scale, by a factor of 1.25), the other knobs kept;
   three moves in four leave the architecture keys alone (they refine the candidate), one in four
   draws one architecture key afresh over its whole range (another architecture, the candidate's
   other knobs kept: a run that found only one of two near-equal architectures gets to compare
   them); designs already proposed are left out. Beside the moves, ``GLOBAL_SHARE`` of as many
   candidates again come from the guided sampler's global pool (uniform draws and mutants of
   the front), taking turns like one more candidate: the knee is searched for over the whole
   space too, not only around what the global phase found;
3. **screen and estimate** as the guided sampler does (``dse.search.propose.guided``): a move whose
   closed-form bounds violate a constraint or are weakly dominated by the front is dropped; the
   others get their estimated objectives and probability of being feasible
   (``dse.search.propose.estimate.Estimator``);
4. **pick**: turns in the order top, second, top, third, ... (the top candidate takes every other
   turn: its region is refined most); on its turn a candidate takes
   alternately the move of its pool with the best estimated knee utility (in the front's knee
   coordinates) plus the log of its probability of being feasible (the log of the expected
   product of objectives, an infeasible design counting zero), and the move adding most estimated
   hypervolume to the front (``guided.greedy_hv`` over its pool): the knee region is resolved and
   its stretch of front filled.

Everything is drawn from the batch's seeded generator: the plan is a function of that seed and the
trials before the batch, so a resumed study asks the same trials.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from dse.search.front import knee as kn
from dse.search.front import pareto
from dse.search.propose import draw
from dse.search.propose.estimate import BoundMemo, Estimator, bound_arrays
from dse.spec import architecture_view

ARCH_SHARE = 0.25            # share of the moves that may change the architecture keys
FLOAT_STEP = 0.10            # a continuous knob moves by this share of its range
LOG_FACTOR = 1.25            # ... or, on a log scale, by this factor
GLOBAL_SHARE = 0.5           # global candidates (the guided sampler's pool) beside the moves, per move


def front_of(cfg: Any, ev: Any) -> tuple[np.ndarray, list[dict[str, Any]], list[dict[str, Any]]]:
    """(front F in minimisation form, its params, its flat designs) of ``ev`` (guided.Evaluated)."""
    feas = np.flatnonzero(ev.feasible)
    F = pareto.to_min(ev.values[feas], cfg.objectives.directions)
    rows = feas[pareto.nondominated(F)] if len(feas) else feas
    F = pareto.to_min(ev.values[rows], cfg.objectives.directions)
    return F, [ev.params[i] for i in rows], [ev.designs[i] for i in rows]


def full_designs(cfg: Any, designs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The designs with every knob the study leaves at its default filled in (a key such as
    core_side then reads its value, not None), as architectures (``dse.spec.architecture_view``:
    pooling at one PE group per core reads ``either``)."""
    env = cfg.base_env()
    return [architecture_view({**env, **d}) for d in designs]


def _move_value(d, v: Any, choices: list, bounds: tuple | None, rng: np.random.Generator) -> Any:
    """``v`` moved one or two steps (module docstring, step 2), the other way if that leaves the
    range; None when no legal move exists."""
    n = int(rng.integers(1, 3)) * (1 if rng.random() < 0.5 else -1)
    for m in (n, -n, int(math.copysign(1, n)), -int(math.copysign(1, n))):
        x = _step(d, v, choices, bounds, m)
        if x is not None and x != v:
            return x
    return None


def _step(d, v: Any, choices: list, bounds: tuple | None, m: int) -> Any:
    """``v`` moved ``m`` steps, or None when that leaves the knob's range."""
    if d.type == "categorical":
        if v not in choices:
            return None
        i = choices.index(v) + m
        return choices[i] if 0 <= i < len(choices) else None
    lo, hi, step = bounds
    if d.type == "int":
        x = int(v) + m * (step or 1)
    elif step is not None:
        x = float(f"{float(v) + m * step:.12g}")
    elif d.log:
        x = float(v) * LOG_FACTOR ** m
    else:
        x = float(v) + m * FLOAT_STEP * (hi - lo)
    return x if lo <= x <= hi else None


def neighbour(space: Any, base: Mapping[str, Any], rng: np.random.Generator, parent: Mapping[str, Any],
              fixed: Sequence[str] = (), jump: Sequence[str] = ()) -> dict[str, Any]:
    """``parent`` with 1 or 2 searched knobs not in ``fixed`` moved one or two steps; with
    ``jump``, one knob of ``jump`` drawn afresh over its whole range instead of one of the steps;
    a knob made illegal by a moved bound is drawn afresh (``draw``'s rule)."""
    c = draw.compiled(space)
    names = [n for n in c.names if n not in fixed and n in parent] or [n for n in c.names if n in parent]
    k = min(len(names), int(rng.integers(1, 3)))
    pick = set(names[i] for i in rng.choice(len(names), size=k, replace=False)) if k else set()
    far = [n for n in c.names if n in jump and n in parent]
    redraw = far[int(rng.integers(len(far)))] if far else None
    if redraw is not None and redraw not in pick and pick:
        pick.discard(sorted(pick)[0])
    env, out = dict(base), {}
    for d, refs, choices in c.dims:
        if d.type == "fixed":
            env[d.name] = d.value
            continue
        if d.when and not d.active(env):
            continue
        b = None if d.type == "categorical" else c.bounds(d, refs, env)
        v = parent.get(d.name)
        if d.name == redraw:
            v = _fresh(d, choices, b, rng)
        elif d.name in pick and v is not None:
            moved = _move_value(d, v, choices, b, rng)
            v = v if moved is None else moved
        if d.type == "categorical":
            ok = v in choices
        elif d.type == "int":
            ok = v is not None and draw.legal_int(v, b[0], b[1], b[2] or 1)
        else:
            ok = v is not None and draw.legal_float(v, b[0], b[1], b[2])
        if not ok:
            v = _fresh(d, choices, b, rng)
        env[d.name] = out[d.name] = v
    return out


def _fresh(d, choices: list, b: tuple | None, rng: np.random.Generator) -> Any:
    if d.type == "categorical":
        return choices[int(rng.integers(len(choices)))]
    if d.type == "int":
        return draw.fresh_int(rng, b[0], b[1], b[2] or 1, d.log)
    return draw.fresh_float(rng, b[0], b[1], b[2], d.log)


def knee_pool(cfg: Any, ev: Any, kc: Any, front_params: list, front_designs: list, rng: np.random.Generator,
              n: int, top: int) -> tuple[list[dict[str, Any]], list[int]]:
    """Distinct new neighbourhood moves around the top ``top`` candidates and, per move, the
    candidate it belongs to (its position in ``kc.candidates``)."""
    base = cfg.base_env()
    keys = tuple(kc.keys)
    seen, out, owner = set(ev.known), [], []
    cands = kc.candidates[:top]
    for ci, c in enumerate(cands):
        group = [i for i, d in enumerate(front_designs) if tuple(kn._hashable(d.get(k)) for k in keys) == c.group] \
            if keys else [c.index]
        parents = [c.index] + [i for i in group if i != c.index]
        for j in range(max(1, n // len(cands))):
            p = front_params[parents[0] if j % 2 == 0 else parents[int(rng.integers(len(parents)))]]
            arch = rng.random() < ARCH_SHARE
            q = neighbour(cfg.space, base, rng, p, () if arch else keys, keys if arch else ())
            key = BoundMemo.key(q)
            if key not in seen:
                seen.add(key)
                out.append(q)
                owner.append(ci)
    return out, owner


def plan(cfg: Any, ev: Any, rng: np.random.Generator, k: int, settings: Mapping[str, Any], memo: BoundMemo,
         knee_settings: Any, samples: int = 10000) -> list[dict[str, Any]] | None:
    """The ``k`` parameter sets of a knee-phase batch (module docstring); None when the front is
    empty or no move survives the screen (the caller then plans a global batch)."""
    F, fparams, fdesigns = front_of(cfg, ev)
    if not len(F):
        return None
    fdesigns = full_designs(cfg, fdesigns)
    kc = kn.knee_candidates(F, fdesigns, knee_settings.keys)
    n = int(settings.get("pool", 2000))
    cands, owner = knee_pool(cfg, ev, kc, fparams, fdesigns, rng, n, knee_settings.candidates)
    if GLOBAL_SHARE > 0 and cands:                    # the knee searched for over the whole space too
        from dse.search.propose.guided import candidates
        seen = {BoundMemo.key(q) for q in cands}
        extra = [q for q in candidates(cfg, ev, rng, int(GLOBAL_SHARE * n), float(settings.get("mutants", 0.75)))
                 if BoundMemo.key(q) not in seen]
        cands, owner = cands + extra, owner + [max(owner) + 1] * len(extra)
    if not cands:
        return None
    designs = [cfg.design(p) for p in cands]
    B, ok, H = bound_arrays(cfg, designs)
    Bmin = pareto.to_min(np.where(np.isnan(B), np.inf, B), cfg.objectives.directions)
    ok &= np.isfinite(Bmin).all(axis=1) & ~pareto.weakly_dominated(Bmin, F)
    idx = np.flatnonzero(ok)
    if not len(idx):
        return None
    est, p_ok = Estimator(cfg, ev, float(settings.get("ridge", 10.0)), bool(settings.get("logistic", False)),
                          memo)([cands[i] for i in idx], B[idx], H[idx])
    u = kc.scale.utility(est) + np.log(np.maximum(p_ok, 1e-12))   # ln of the expected figure of merit
    owners = np.array(owner)[idx]
    picked = _round_robin(est, u, owners, F, k, rng, samples, p_ok)
    rows = idx[picked]
    memo.keep([designs[i] for i in rows], B[rows], ok[rows], H[rows])
    return [cands[i] for i in rows]


def _round_robin(est: np.ndarray, u: np.ndarray, owners: np.ndarray, F: np.ndarray, k: int,
                 rng: np.random.Generator, samples: int, p_ok: np.ndarray) -> list[int]:
    """Rows of the survivors picked (module docstring, step 4): turns go to the candidates in the
    order top, second, top, third, ... (the top candidate takes every other turn)."""
    from dse.search.propose.guided import greedy_hv
    groups = [np.flatnonzero(owners == o) for o in sorted(set(owners.tolist()))]
    queues = [[list(g[np.lexsort((g, -u[g]))]),
               list(g[greedy_hv(est[g], F, min(k, len(g)), rng, samples // max(1, len(groups)), p_ok[g])])]
              for g in groups]
    turns = [0] + [x for gi in range(1, len(groups)) for x in (gi, 0)] if len(groups) > 1 else [0]
    picked: list[int] = []
    served = [0] * len(groups)
    idle = 0
    while len(picked) < min(k, len(u)) and idle < len(turns):
        gi = turns[(sum(served) + idle) % len(turns)]
        queue = queues[gi][served[gi] % 2]
        while queue and queue[0] in picked:
            queue.pop(0)
        if not queue:
            queue = queues[gi][1 - served[gi] % 2]
            while queue and queue[0] in picked:
                queue.pop(0)
        if queue:
            picked.append(int(queue.pop(0)))
            served[gi] += 1
            idle = 0
        else:
            idle += 1
    return picked
