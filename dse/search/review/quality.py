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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

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


def knee_keys(res) -> tuple[str, ...]:
    """The knobs that name an architecture for the study's knee candidates (``[search] knee_keys``)."""
    from dse.search.propose.knee import KNEE_KEYS
    knee = getattr(res.cfg, "knee", None)
    return tuple(knee.keys) if knee is not None else KNEE_KEYS


def knee_candidates(res, recs=None):
    """``(front records, KneeCandidates)`` of the front of ``recs`` (default: the study's
    candidates), grouped by ``knee_keys``; see ``dse.search.front.knee``."""
    from dse.search.front.knee import knee_candidates as kc
    from dse.search.propose.knee import full_designs
    recs = res.candidates() if recs is None else recs
    fr = front_of(res, recs)
    rivals = (res.F(recs), full_designs(res.cfg, [r.design for r in recs])) if recs else None
    out = kc(res.F(fr), full_designs(res.cfg, [r.design for r in fr]), knee_keys(res), rivals=rivals)
    if out.rival is not None:           # its row: the front's, then the rivals'
        i = out.rival.row
        out.rival.trial = (fr[i] if i < len(fr) else recs[i - len(fr)]).number
    return fr, out


def study_verdict(res, fr=None, kc=None):
    """The one verdict on the knee of a study read back (pooled studies too): *clear*,
    *ambiguous* or *not settled* (``dse.search.propose.knee.verdict``), from the same evaluated designs
    as ``dse run`` judges them; ``fr``, ``kc``: unused (kept for the callers that have them)."""
    from dse.search.propose.knee import trials_verdict
    return trials_verdict(res.cfg, [_Told(r) for r in res.complete])


class _Told:
    """A trial record read back, as the sampler was told it (what ``guided.Evaluated`` reads)."""

    class _State:
        name = "COMPLETE"

    state = _State()

    def __init__(self, r) -> None:
        self.number, self.params, self.values, self.constraints = r.number, r.params, r.values, r.constraints
        dse = {"design": r.design, "feasible": r.feasible}
        if r.duplicate_of is not None:
            dse["duplicate_of"] = r.duplicate_of
        self.user_attrs = {"dse": dse, **({"screened": r.screened} if r.screened else {})}


def candidates_json(res, fr, kc, n: int = 3) -> dict[str, Any]:
    """The top ``n`` knee candidates as JSON: per candidate its rank, trial, architecture (the
    key knobs), params, objectives, score and margin; ``ambiguous`` and its threshold."""
    rows = []
    for i, c in enumerate(kc.candidates[:n], 1):
        r = fr[c.index]
        rows.append({"rank": i, "trial": r.number, "architecture": dict(zip(kc.keys, c.group)),
                     "params": dict(r.params), "objectives": res.objective_values(r), "score": c.score,
                     "margin": c.margin, "designs": len(c.members),
                     "equivalent": [dict(zip(kc.keys, g)) for g in c.equivalent]})
    return {"ambiguous": kc.ambiguous, "threshold": kc.threshold, "keys": list(kc.keys),
            "count": len(kc.candidates), "candidates": rows, "architectures": architectures(res, kc, n),
            "rival": None if kc.rival is None else kc.rival.to_json(kc.keys)}


def architectures(res, kc, n: int = 3) -> list[dict[str, Any]]:
    """The ``n`` architectures (``kc.keys``) whose best evaluated design (feasible, distinct, on
    the front or not) scores highest, each with that score and how many of its designs the study
    evaluated. A run refines the architecture it leads with far more than the others (on
    ``studies/full.toml`` 90-120 designs against 1-10, docs/guide/knees.md), so an architecture
    with few designs may score below what it could reach: its score is a floor."""
    from dse.search.front.knee import arch_key
    from dse.search.propose.knee import full_designs
    recs = res.candidates()
    if not recs or not kc.keys:
        return []
    u = kc.scale.utility(res.F(recs))
    best: dict[tuple, list] = {}
    for r, a, ui in zip(recs, full_designs(res.cfg, [r.design for r in recs]), u):
        g = arch_key(a, kc.keys)
        row = best.setdefault(g, [-np.inf, 0, None])
        row[1] += 1
        if ui > row[0]:
            row[0], row[2] = float(ui), r.number
    top = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:n]
    return [{"architecture": dict(zip(kc.keys, g)), "best_score": b, "best_trial": t, "designs": c}
            for g, (b, c, t) in top]


def describe_architectures(rows: list[dict[str, Any]]) -> str:
    """``architectures`` in one line (``dse front``)."""
    parts = [f"{', '.join(f'{k}={v}' for k, v in a['architecture'].items())}: best score {a['best_score']:.3f} "
             f"(trial {a['best_trial']}), {a['designs']} design{'s' * (a['designs'] != 1)}" for a in rows]
    return ("best evaluated design per architecture (an architecture with few designs is barely refined: its "
            "score is a floor; merge several seeds to compare): " + "; ".join(parts))


def describe_candidates(res, fr, kc, n: int = 3) -> list[str]:
    """One line per top candidate (``dse front``, ``dse report``), then the verdict."""
    out = []
    for i, c in enumerate(kc.candidates[:n], 1):
        r = fr[c.index]
        arch = ", ".join(f"{k}={v}" for k, v in zip(kc.keys, c.group))
        obj = ", ".join(f"{k}={v:.4g}" for k, v in res.objective_values(r).items() if v is not None)
        margin = "-" if c.margin is None else f"{c.margin:.3f}"
        alt = "".join(f" (or {', '.join(f'{k}={v}' for k, v in zip(kc.keys, g) if v != dict(zip(kc.keys, c.group))[k])}"
                      f": same objectives)" for g in c.equivalent)
        out.append(f"{i}. trial {r.number} (score {c.score:.3f}, margin {margin}): {arch}{alt}; {obj}")
    out.append(study_verdict(res, fr, kc).line())
    return out


def utility_words(kc) -> str:
    """What a knee candidate's score is, in words (``dse front``, the report)."""
    lin = int((~kc.scale.log & (kc.scale.span > 0)).sum())
    words = "score: -sum of ln |objective|, maximised ones inverted (each objective weighed by its relative change)"
    return words + (f"; {lin} objective(s) without one sign on the front scaled by its 10-90 % quantiles"
                    if lin else "")


def verdict(kc) -> str:
    """Whether the top knee candidate is a clear or an ambiguous choice, in words."""
    if not kc.candidates:
        return "no knee candidate"
    if kc.margin is None:
        return "one architecture on the front: the knee is not contested"
    from dse.search.propose.knee import margin_words
    return f"knee choice {'ambiguous' if kc.ambiguous else 'clear'}: {margin_words(kc)}"


def knee_settledness(res) -> dict[str, Any]:
    """The study's one verdict on its knee (``dse.search.review.verdict``) as ``{"settled",
    "verdict", "reason", "unrefined"}``: settled when clear, or ambiguous with every contender
    refined (more trials of this run would not change the footing of the choice)."""
    v = study_verdict(res)
    return {"settled": v.settled, "verdict": v.word, "reason": v.reason, "unrefined": v.unrefined}


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
