"""The knee phase's plan: coordinate sweeps of each knee candidate, chosen on the closed form.

After its global phase a study with ``[search] knee_share`` spends its batches around the top
knee candidates of its current front (``dse.search.front.knee``; ``dse.search.propose.knee_phase``
says when). For each batch (``plan``):

1. **candidates**: the knee candidates of the feasible front of the trials before the batch,
   grouped by the study's architecture keys (``[search] knee_keys``); the top ``knee_candidates``
   of them, each represented by its best design;
2. **pool** (``sweep_pool``): the *coordinate sweep* of each candidate's design
   (``dse.search.propose.knee_sweep``): every design that differs from it in one knob other
   than the architecture keys, at every legal value of that knob; then the sweep of the top
   candidate's design in the architecture keys alone (its other knobs transplanted to every
   other core side, array depth, tile width, pooling: a run that found one of two near-equal
   architectures gets to compare them), taking turns like one more candidate; designs already
   evaluated are left out. Beside the sweeps, ``GLOBAL_SHARE`` of the pool size (``[sampler]
   pool``) comes from the guided sampler's global pool (uniform draws and mutants of the front),
   taking turns like one more candidate too: the knee is searched for over the whole space, not
   only around what the global phase found;
3. **screen and estimate** as the guided sampler does (``dse.search.propose.guided``): a design
   whose closed-form bounds violate a constraint or are weakly dominated by the front is
   dropped; the others get their estimated objectives and probability of being feasible
   (``dse.search.propose.estimate.Estimator``);
4. **pick**: turns in the order top, second, top, third, ... (the top candidate takes every other
   turn: its region is refined most); on its turn a candidate takes alternately the next design
   of its *utility queue* and the design adding most estimated hypervolume to the front
   (``guided.greedy_hv`` over its pool). The utility queue (``by_knob``) ranks the designs by
   estimated knee utility (in the front's knee coordinates) plus the log of the probability of
   being feasible (the log of the expected figure of merit, an infeasible design counting zero)
   and puts the best value of each knob first: a batch moves many different knobs once (a
   coordinate-ascent step on the trace-driven values) rather than one knob many times.

Why sweeps, not random one- or two-step moves (the earlier plan): the estimator ranks the designs
near the knee poorly (rank correlation 0.04-0.54 between estimated and trace-driven utility over
the top designs of 10 runs of ``studies/full.toml``), so the random move it picked rarely improved
the candidate; a sweep makes every knob's best estimated value an evaluated design. Over seeds
0-19 of ``studies/full.toml`` (480 evaluations each), each run's knee utility fell short of the
best design any run found by a mean of 0.144 (worst 0.389) with the random moves and 0.073 (worst
0.166) with the sweeps, at the same hypervolume share of a common union (0.926 both;
``benchmarks/HISTORY.md``, 2026-12-05).

Everything is drawn from the batch's seeded generator and the trials before the batch (the
sweeps need no generator at all): a resumed study asks the same trials.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dse.search.front import knee as kn
from dse.search.front import pareto
from dse.search.propose import draw, knee_sweep
from dse.search.propose.estimate import BoundMemo, Estimator, bound_arrays
from dse.spec import architecture_view

GLOBAL_SHARE = 0.5           # global candidates (the guided sampler's pool) beside the sweeps, per sweep design


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


def sweep_pool(cfg: Any, ev: Any, keys: Sequence[str], parents: list[dict[str, Any]]
               ) -> tuple[list[dict[str, Any]], list[int], list[str]]:
    """The coordinate sweeps (``knee_sweep.variants``) of the candidates' designs ``parents``
    (best first) in every knob but the architecture keys ``keys`` (owner: the candidate's
    position), then of the top candidate's design in the architecture keys alone (owner
    ``len(parents)``: its other knobs transplanted to every neighbouring architecture); per design
    its owner and the knob moved. Designs already evaluated are left out."""
    base, keys = cfg.base_env(), tuple(keys)
    cands = list(parents)
    rest = tuple(n for n in draw.compiled(cfg.space).names if n not in keys)
    seen, out, owner, knob = set(ev.known), [], [], []
    jobs = [(ci, c, rest) for ci, c in enumerate(cands)]
    if cands and keys:
        jobs.append((len(cands), cands[0], keys))
    for ci, parent, only in jobs:
        vs, ks = knee_sweep.variants(cfg.space, base, parent, only)
        for q, kk in zip(vs, ks):
            key = BoundMemo.key(q)
            if key not in seen:
                seen.add(key)
                out.append(q)
                owner.append(ci)
                knob.append(kk)
    return out, owner, knob


def plan(cfg: Any, ev: Any, rng: np.random.Generator, k: int, settings: Mapping[str, Any], memo: BoundMemo,
         knee_settings: Any, samples: int = 10000) -> list[dict[str, Any]] | None:
    """The ``k`` parameter sets of a knee-phase batch (module docstring); None when the front is
    empty or no move survives the screen (the caller then plans a global batch)."""
    F, fparams, fdesigns = front_of(cfg, ev)
    if not len(F):
        return None
    kc = kn.knee_candidates(F, full_designs(cfg, fdesigns), knee_settings.keys)
    n = int(settings.get("pool", 2000))
    parents = [fparams[c.index] for c in kc.candidates[:knee_settings.candidates]]
    cands, owner, knob = sweep_pool(cfg, ev, kc.keys, parents)
    if GLOBAL_SHARE > 0 and cands:                    # the knee searched for over the whole space too
        from dse.search.propose.guided import candidates
        seen = {BoundMemo.key(q) for q in cands}
        extra = [q for q in candidates(cfg, ev, rng, int(GLOBAL_SHARE * n), float(settings.get("mutants", 0.75)))
                 if BoundMemo.key(q) not in seen]
        cands, owner, knob = cands + extra, owner + [max(owner) + 1] * len(extra), knob + [""] * len(extra)
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
    picked = _round_robin(est, u, owners, F, k, rng, samples, p_ok, [knob[i] for i in idx])
    rows = idx[picked]
    memo.keep([designs[i] for i in rows], B[rows], ok[rows], H[rows])
    return [cands[i] for i in rows]


def by_knob(g: np.ndarray, u: np.ndarray, knob: Sequence[str]) -> list[int]:
    """Rows ``g`` by utility ``u`` (ties: the lower row), the best move of each knob first (a
    sweep tries one value of every knob before a second value of any; a row without a knob,
    ``""``, is in the second part), then the rest."""
    order = [int(i) for i in g[np.lexsort((g, -u[g]))]]
    first, seen = [], set()
    for i in order:
        if knob[i] and knob[i] not in seen:
            seen.add(knob[i])
            first.append(i)
    chosen = set(first)
    return first + [i for i in order if i not in chosen]


def _round_robin(est: np.ndarray, u: np.ndarray, owners: np.ndarray, F: np.ndarray, k: int,
                 rng: np.random.Generator, samples: int, p_ok: np.ndarray, knob: Sequence[str]) -> list[int]:
    """Rows of the survivors picked (module docstring, step 4): turns go to the candidates in the
    order top, second, top, third, ... (the top candidate takes every other turn)."""
    from dse.search.propose.guided import greedy_hv
    groups = [np.flatnonzero(owners == o) for o in sorted(set(owners.tolist()))]
    queues = [[by_knob(g, u, knob),
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
