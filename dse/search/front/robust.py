"""How sure is the knee: re-evaluate a study's designs under other workloads and count knees.

``robust_knees(res, variants)`` re-evaluates the designs around the front (the front itself
plus the nearest feasible designs off it, up to ``max_designs``; every feasible design when the
study has fewer) under each variant (another synthetic-trace seed, another catalog model or a
real trace), recomputes the feasible front and its knee among those designs each time, and
counts how often each design is the knee. A design that is the knee under every variant is a
settled choice; a spread of knees means the choice depends on the workload sample.

The re-evaluations run in this process, or through ``run_many(evaluate, tasks)`` when the caller
passes one: the CLI passes the engine's (``dse.search.execute.pool.evaluate_all``: loky workers,
one scheduling domain per worker, gone with their driver), which this layer cannot import.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dse.search.front import pareto
from dse.search.space.objectives import score


@dataclass(frozen=True)
class Variant:
    label: str                       # "trace_seed=3", "model=glm-5.2", "trace=run.npz"
    overrides: dict[str, Any]        # knobs replaced in every design
    models: tuple[str, ...]          # workloads the designs are evaluated on


@dataclass
class RobustKnees:
    designs: list[Any]                                  # TrialRecords re-evaluated
    variants: list[Variant]
    knees: list[int | None]                             # per variant: trial number of its knee
    fronts: list[list[int]]                             # per variant: trial numbers on its front
    counts: dict[int, int] = field(default_factory=dict)

    def frequency(self) -> dict[int, float]:
        n = len(self.variants)
        return {r.number: (self.counts.get(r.number, 0) / n if n else 0.0) for r in self.designs}

    def to_json(self, res) -> dict[str, Any]:
        freq = self.frequency()
        return {"variants": [v.label for v in self.variants],
                "knees": [{"variant": v.label, "knee_trial": k, "front": f}
                          for v, k, f in zip(self.variants, self.knees, self.fronts)],
                "knee_frequency": [{"trial": r.number, "params": dict(r.params), "frequency": freq[r.number],
                                    "knee_count": self.counts.get(r.number, 0)}
                                   for r in sorted(self.designs, key=lambda r: (-freq[r.number], r.number))]}


def seed_variants(cfg, n: int, seeds: Sequence[int] | None = None) -> list[Variant]:
    """``n`` synthetic-trace seeds other than the study's own (or the seeds given)."""
    own = int(cfg.base.get("trace_seed", 0) or 0)
    if seeds is None:
        seeds, s = [], 0
        while len(seeds) < n:
            s += 1
            if s != own:
                seeds.append(s)
    return [Variant(f"trace_seed={s}", {"trace_seed": int(s)}, tuple(cfg.models)) for s in seeds]


def model_variants(models: Sequence[str]) -> list[Variant]:
    return [Variant(f"model={m}", {}, (m,)) for m in models]


def trace_variant(path: str) -> list[Variant]:
    return [Variant(f"trace={path}", {"trace": str(path)}, ())]


def pick_designs(res, max_designs: int = 48) -> list[Any]:
    """The front plus the feasible designs nearest to it (normalised objectives), at most
    ``max_designs`` (every feasible design when there are fewer)."""
    cand = res.candidates()
    if len(cand) <= max_designs:
        return cand
    front = res.front()
    keys = {r.number for r in front}
    N = pareto.normalise(res.F(cand))
    Nf = N[[i for i, r in enumerate(cand) if r.number in keys]]
    dist = np.array([np.min(np.linalg.norm(Nf - x, axis=1)) for x in N])
    order = [i for i in np.argsort(dist, kind="stable") if cand[i].number not in keys]
    extra = [cand[i] for i in order[: max(0, max_designs - len(front))]]
    chosen = {r.number for r in front} | {r.number for r in extra}
    return [r for r in cand if r.number in chosen]


Task = tuple[dict[str, Any], tuple[str, ...]]
RunMany = Callable[[Callable[[Mapping[str, Any], Sequence[str]], dict], list[Task]], list[dict]]


def robust_knees(res, variants: Sequence[Variant], evaluate: Callable[[Mapping[str, Any], Sequence[str]], dict],
                 *, max_designs: int = 48, run_many: RunMany | None = None) -> RobustKnees:
    """Re-evaluate the designs around ``res``'s front under every variant; count the knees
    (``run_many(evaluate, tasks)``: the evaluations, in task order; None: in this process)."""
    designs = pick_designs(res, max_designs)
    tasks = []
    for v in variants:
        models = v.models or tuple(res.cfg.models)
        for r in designs:
            tasks.append(({**r.design, **v.overrides}, models))
    if run_many is None or len(tasks) < 2:
        results = [evaluate(d, m) for d, m in tasks]
    else:
        results = run_many(evaluate, tasks)
    knees: list[int | None] = []
    fronts: list[list[int]] = []
    counts: Counter = Counter()
    for vi in range(len(variants)):
        out = results[vi * len(designs):(vi + 1) * len(designs)]
        ok = [(r, score(m, res.cfg.objectives)) for r, m in zip(designs, out)]
        ok = [(r, s.values) for r, s in ok if s.feasible and all(np.isfinite(s.values))]
        if not ok:
            knees.append(None)
            fronts.append([])
            continue
        F = pareto.to_min(np.array([v for _, v in ok], dtype=float), res.cfg.objectives.directions)
        mask = pareto.nondominated(F)
        front = [r for (r, _), k in zip(ok, mask) if k]
        knee = front[pareto.knee_index(F[mask])]
        knees.append(knee.number)
        fronts.append([r.number for r in front])
        counts[knee.number] += 1
    return RobustKnees(designs, list(variants), knees, fronts, dict(counts))
