"""How good and how settled a study's front is: hypervolume on a stated reference point, the
knee's history over the trials, and several studies compared on one common reference.

Hypervolume (``hypervolume_on``) is computed in the objectives' own units on a *stated* reference
point, so two numbers computed on the same reference mean the same thing:

* the study's objectives file may fix it (``reference = <value>`` on every ``[[objectives]]``);
* otherwise the reference is the worst finite value of each objective over the study's finished
  trials (feasible or not; screened trials, whose values are bounds, left out); the output always
  prints the point used.

``compare`` puts several studies (models, samplers, seeds of one question) on one reference: the
union of their feasible fronts is the reference front, its nadir pushed out by 10 % of its range
is the reference point, and each run's hypervolume is measured there.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from dse.search.front import pareto


@dataclass(frozen=True)
class Reference:
    values: tuple[float, ...]        # per objective, in the objective's own direction and unit
    source: str                      # where the point comes from (printed beside the number)

    def describe(self, names: Sequence[str]) -> str:
        pts = ", ".join(f"{n}={v:.4g}" for n, v in zip(names, self.values))
        return f"{pts} ({self.source})"


def study_reference(res) -> Reference:
    """The reference point of a study: fixed by its objectives file, else its worst finite values."""
    objs = res.cfg.objectives.objectives
    fixed = [getattr(o, "reference", None) for o in objs]
    if all(v is not None for v in fixed):
        return Reference(tuple(float(v) for v in fixed), f"fixed by {res.cfg.objectives.source}")
    vals = [r.values for r in res.complete
            if r.values is not None and not r.screened and all(math.isfinite(v) for v in r.values)]
    if not vals:
        return Reference(tuple(math.nan for _ in objs), "no finished trial")
    F = pareto.to_min(np.array(vals, dtype=float), res.cfg.objectives.directions)
    worst = F.max(axis=0)
    out = tuple(float(w if o.direction == "minimize" else -w) for o, w in zip(objs, worst))
    return Reference(out, "worst finite value of each objective over the finished trials")


def hypervolume_on(res, recs, ref: Reference) -> float | None:
    """Hypervolume of ``recs`` (objective units multiplied) up to ``ref``; None without a point."""
    if not recs or not all(math.isfinite(v) for v in ref.values):
        return None
    dirs = res.cfg.objectives.directions
    F = res.F(recs)
    R = pareto.to_min(np.array([ref.values], dtype=float), dirs)[0]
    return pareto.hypervolume(F, R)


def front_of(res, recs) -> list:
    """The non-dominated subset of ``recs`` (feasible, distinct records)."""
    if not recs:
        return []
    mask = pareto.nondominated(res.F(recs))
    return [r for r, k in zip(recs, mask) if k]


def knee_of(res, recs):
    """The knee of the front of ``recs`` (None when empty)."""
    fr = front_of(res, recs)
    return fr[pareto.knee_index(res.F(fr))] if fr else None


def knee_history(res, points: int = 20) -> list[tuple[int, Any]]:
    """``[(trials seen, knee record)]`` at ``points`` evenly spaced cut-offs (trial order)."""
    cand = res.candidates()
    n = len(res.complete)
    if n == 0:
        return []
    numbers = sorted(r.number for r in res.complete)
    cuts = sorted({max(1, round(n * i / points)) for i in range(1, points + 1)})
    out = []
    for c in cuts:
        last = numbers[c - 1]
        out.append((c, knee_of(res, [r for r in cand if r.number <= last])))
    return out


def knee_moved(res) -> tuple[Any, Any] | None:
    """``(earlier knee, knee)`` when the knee's design changed during the last fifth of the
    trials (the knee is not settled), else None."""
    n = len(res.complete)
    if n < 5:
        return None
    numbers = sorted(r.number for r in res.complete)
    cut = numbers[int(math.ceil(0.8 * n)) - 1]
    cand = res.candidates()
    before = knee_of(res, [r for r in cand if r.number <= cut])
    now = knee_of(res, cand)
    if before is None or now is None or before.design_key == now.design_key:
        return None
    return before, now


def hypervolume_history(res, ref: Reference, points: int = 40) -> list[tuple[int, float]]:
    """``[(trials seen, hypervolume on ref)]`` over the study's trials."""
    cand = res.candidates()
    numbers = sorted(r.number for r in res.complete)
    n = len(numbers)
    out = []
    for c in sorted({max(1, round(n * i / points)) for i in range(1, points + 1)}) if n else []:
        last = numbers[c - 1]
        hv = hypervolume_on(res, front_of(res, [r for r in cand if r.number <= last]), ref)
        out.append((c, 0.0 if hv is None else hv))
    return out


# ---- several studies ---------------------------------------------------------------------------
@dataclass
class Comparison:
    names: list[str]
    objectives: list[str]
    reference: Reference
    hypervolume: list[float | None]
    front_sizes: list[int]
    share_of_union: list[int]            # points each run contributes to the union front
    coverage: list[list[float]]          # coverage[a][b]: share of b's front dominated by a's (or equal)
    knees: list[dict[str, Any]]          # per run: trial, params, objectives
    knob_agreement: dict[str, bool] = field(default_factory=dict)
    dominant: str | None = None          # a run whose front covers every other run's front

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.names, "objectives": self.objectives,
                "reference": dict(zip(self.objectives, self.reference.values)),
                "reference_source": self.reference.source,
                "hypervolume": dict(zip(self.names, self.hypervolume)),
                "front_sizes": dict(zip(self.names, self.front_sizes)),
                "union_front_points": dict(zip(self.names, self.share_of_union)),
                "coverage": {a: dict(zip(self.names, row)) for a, row in zip(self.names, self.coverage)},
                "knees": dict(zip(self.names, self.knees)), "knees_agree": self.knob_agreement,
                "dominant": self.dominant}


def _check_same_question(results: Sequence) -> None:
    from dse.errors import ConfigError
    first = results[0].cfg.objectives
    for r in results[1:]:
        o = r.cfg.objectives
        if [(x.name, x.direction) for x in o.objectives] != [(x.name, x.direction) for x in first.objectives]:
            raise ConfigError(f"{r.cfg.source}: objectives {o.names} differ from {first.names} of "
                              f"{results[0].cfg.source}; compare studies of the same objectives")


def _coverage(Fa: np.ndarray, Fb: np.ndarray) -> float:
    """Share of rows of ``Fb`` weakly dominated by some row of ``Fa`` (Zitzler's C metric)."""
    if len(Fb) == 0:
        return 0.0
    if len(Fa) == 0:
        return 0.0
    hit = [bool(np.any(np.all(Fa <= f, axis=1))) for f in Fb]
    return float(np.mean(hit))


def compare(results: Sequence, names: Sequence[str]) -> Comparison:
    """Compare studies asking the same question (same objectives)."""
    _check_same_question(results)
    objs = results[0].cfg.objectives.objectives
    fronts = [r.front() for r in results]
    Fs = [r.F(f) for r, f in zip(results, fronts)]
    union = np.vstack([F for F in Fs if len(F)]) if any(len(F) for F in Fs) else np.zeros((0, len(objs)))
    if len(union):
        U = union[pareto.nondominated(union)]
        R = pareto.reference_point(U)
        ref_vals = tuple(float(v if o.direction == "minimize" else -v) for o, v in zip(objs, R))
        ref = Reference(ref_vals, "nadir of the union of the runs' fronts + 10 % of its range")
    else:
        U = union
        ref = Reference(tuple(math.nan for _ in objs), "no feasible design in any run")
    hv = [hypervolume_on(r, f, ref) for r, f in zip(results, fronts)]
    share = [int(sum(bool(np.any(np.all(U == f, axis=1))) for f in F)) for F in Fs]
    cov = [[_coverage(Fa, Fb) for Fb in Fs] for Fa in Fs]
    knees = []
    for r in results:
        k = r.knee()
        knees.append({} if k is None else {"trial": k.number, "params": dict(k.params),
                                          "objectives": r.objective_values(k)})
    knobs = list(dict.fromkeys(k for kn in knees for k in kn.get("params", {})))
    agree = {k: len({repr(kn.get("params", {}).get(k)) for kn in knees}) == 1 for k in knobs}
    dominant = None
    for i, n in enumerate(names):
        if len(Fs[i]) and all(cov[i][j] == 1.0 for j in range(len(Fs)) if j != i):
            dominant = n
            break
    return Comparison(list(names), [o.name for o in objs], ref, hv, [len(f) for f in fronts], share, cov,
                      knees, agree, dominant)


# ---- knob importance ---------------------------------------------------------------------------
def knob_importance(res, seed: int = 0) -> dict[str, dict[str, float]]:
    """``{objective: {knob: importance}}`` by optuna's PED-ANOVA evaluator (no scikit-learn needed,
    unlike fANOVA) over the feasible distinct designs (infeasible and failed trials would measure
    the constraints, not the objective): how much each knob matters for reaching the best values.
    Empty when fewer than two feasible designs or no knob varies."""
    import optuna
    from dse.search.execute.runner import open_study, quiet_optuna
    keep = {r.number for r in res.candidates()}
    if len(keep) < 2:
        return {}
    with quiet_optuna():
        warnings.filterwarnings("ignore", message="PedAnovaImportanceEvaluator computes")
        study, _ = open_study(res.cfg, create=False)
        trials = [t for t in study.get_trials(deepcopy=False) if t.number in keep]
        mem = optuna.create_study(directions=res.cfg.objectives.directions)
        mem.add_trials(trials)
        out: dict[str, dict[str, float]] = {}
        for i, o in enumerate(res.cfg.objectives.objectives):
            try:   # PED-ANOVA ranks knobs by how much they matter for *low* target values
                imp = optuna.importance.get_param_importances(
                    mem, target=lambda t, i=i, sign=o.sign: sign * t.values[i],
                    evaluator=optuna.importance.PedAnovaImportanceEvaluator())
            except (RuntimeError, ValueError):   # every knob constant on these trials
                imp = {}
            out[o.name] = {k: float(v) for k, v in imp.items()}
    return out


def infeasibility_counts(res) -> list[tuple[str, int]]:
    """How many finished trials each kind of infeasibility reason stopped (numbers in the reason
    replaced by '#', so the same cause counts once), most frequent first."""
    import re
    from collections import Counter
    c: Counter = Counter()
    for r in res.complete:
        if r.feasible:
            continue
        parts = [p.strip() for p in (r.reason or "infeasible (no reason recorded)").split("; ") if p.strip()]
        kinds = {re.sub(r"(?<![A-Za-z_])-?\d+(\.\d+)?(e[-+]?\d+)?", "#", p) for p in parts}
        for k in kinds:
            c[k] += 1
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
