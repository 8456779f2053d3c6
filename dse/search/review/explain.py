"""Why design B beats design A: `dse explain STUDY --from A --to B`.

Each objective's change from A to B is split into per-knob contributions, Shapley values over the
knobs that differ (``dse.search.review.shapley``): a knob's contribution is the mean, over orders
of switching the differing knobs from A's value to B's one at a time, of the change when that knob
is switched. Every hybrid design (some knobs from A, the others from B) is evaluated exactly as
the study evaluates a trial (the study's evaluation function on its workload and models, scored by
its aggregates, objectives and constraints), each once per call, on `dse run`'s evaluation pool
(``jobs`` processes, each scheduling domain on one of them).

Rules, stated in the output (``rules``):

* Players. A knob is a player, except that ``core_side`` and ``pe_groups_per_core`` are one player
  when both differ (a hybrid with B's groups on A's side may exceed ``core_side**2``, which is no
  design). A's and B's derived defaults are resolved first (``pe_groups_per_core`` unset means
  ``core_side**2``), so a default and its explicit value are the same knob value.
* Scale. ``log`` (contributions of the change of ln(objective), adding up to ln(B/A)) when every
  objective of A and B is finite and positive, else ``linear``; ``scale`` chooses.
* Infeasible hybrids count: their objectives are what the model computes. A hybrid whose objective
  is not finite (a design the model cannot map, price or build; <= 0 on the log scale) takes, with
  ``nonfinite = "worst"`` (the default), the worst finite value of that objective over the hybrids
  evaluated (A and B are finite, so the contributions still add up to the change);
  ``nonfinite`` names the objective, the count and an example. With ``nonfinite = "skip"`` that
  objective is not attributable: its contributions are null.
* Feasibility. The contributions of the feasibility indicator (1 feasible, 0 not; overall and per
  model) are Shapley values too (they add up to feasible(B) - feasible(A)), and ``flips`` lists,
  per knob and model, the switches along the orders that made a design feasible or infeasible,
  with the constraints violated on the infeasible side.
* Exact over the 2^n coalitions up to ``exact_max`` players, else ``orders`` sampled orders
  (seeded) with standard errors; either way each objective's contributions add up to its change.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.report import fmt
from dse.search.execute.evaluation import evaluate_design
from dse.search.review import shapley
from dse.search.review.reference import Endpoint, Evaluated, resolved, scored
from dse.spec.params import names

SCALES = ("auto", "log", "linear")
NONFINITE = ("worst", "skip")
LINKED = (("core_side", "pe_groups_per_core"),)     # switched together when both differ


def players(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The players: knobs whose resolved values differ, linked knobs as one (module docstring)."""
    differ = [k for k in a if a[k] != b.get(k)]
    out: list[tuple[str, ...]] = []
    taken: set[str] = set()
    for k in differ:
        if k in taken:
            continue
        group = next((g for g in LINKED if k in g and all(x in differ for x in g)), (k,))
        taken.update(group)
        out.append(tuple(group))
    return out


def hybrid(a: Mapping[str, Any], b: Mapping[str, Any], switched: frozenset, plist: Sequence[tuple[str, ...]]) -> dict:
    """A's knobs with the players in ``switched`` at B's values."""
    d = dict(a)
    for i in switched:
        for k in plist[i]:
            d[k] = b[k]
    return d


def _outputs(cfg, ev: Evaluated, log: bool) -> np.ndarray:
    objs = [(math.log(v) if v > 0 else math.nan) if log else v for v in ev.values]
    objs = [v if math.isfinite(v) else math.nan for v in objs]
    feas = [float(ev.feasible)] + [float(ev.per_model[m][0]) for m in cfg.models]
    return np.array(objs + feas, dtype=float)


def _evaluate_all(cfg, designs: list[dict], evaluator, pool) -> list[Evaluated]:
    """Evaluate ``designs`` on the study's pool (``dse run``'s: each scheduling domain on one
    worker, whose caches it keeps); a failed evaluation scores as no metrics (non-finite)."""
    from dse.search.execute.warm import domain_key
    handles = [pool.submit(evaluator, d, cfg.models, group=domain_key(d)) for d in designs]
    out = []
    for h in handles:
        r = pool.result(h)
        out.append(scored(cfg, r.metrics if r.ok else {m: {"feasible": False, "infeasible_reason": r.error}
                                                        for m in cfg.models}))
    return out


class _Hybrids:
    """The hybrids of A and B, each evaluated once (``values``: the outputs of coalitions, non-finite
    objectives filled with the worst finite value under ``nonfinite = "worst"``)."""

    def __init__(self, cfg, ra, rb, work, plist, use_log, nonfinite, evaluator, pool):
        self.cfg, self.ra, self.rb, self.work, self.plist = cfg, ra, rb, work, plist
        self.use_log, self.nonfinite, self.evaluator, self.pool = use_log, nonfinite, evaluator, pool
        self.cache: dict[frozenset, Evaluated] = {}
        self.filled: dict[int, list[frozenset]] = {}
        self.ends_out = np.zeros((2, 0))

    def values(self, coalitions):
        cfg = self.cfg
        todo = [c for c in coalitions if c not in self.cache]
        designs = [{**self.work, **hybrid(self.ra, self.rb, c, self.plist)} for c in todo]
        self.cache.update(zip(todo, _evaluate_all(cfg, designs, self.evaluator, self.pool)))
        V = np.array([_outputs(cfg, self.cache[c], self.use_log) for c in coalitions])
        if self.nonfinite == "worst":
            for j, o in enumerate(cfg.objectives.objectives):
                holes = ~np.isfinite(V[:, j])
                if holes.any() and np.all(np.isfinite(self.ends_out[:, j])):   # else: no total to split
                    V[holes, j] = np.nanmax(V[:, j]) if o.direction == "minimize" else np.nanmin(V[:, j])
                    self.filled[j] = [c for c, h in zip(coalitions, holes) if h]
        return list(V)


def explain(res, a: Endpoint, b: Endpoint, *, scale: str = "auto", exact_max: int = 10, orders: int = 64,
            seed: int = 0, jobs: int = 1, nonfinite: str = "worst",
            evaluator: Callable = evaluate_design) -> dict[str, Any]:
    """The explanation of B against A as JSON (see `dse explain --json`, docs/guide/explain.md)."""
    cfg = res.cfg
    if scale not in SCALES:
        raise ConfigError(f"--scale {scale!r}: must be one of {', '.join(SCALES)}")
    if nonfinite not in NONFINITE:
        raise ConfigError(f"--nonfinite {nonfinite!r}: must be one of {', '.join(NONFINITE)}")
    ra, rb = resolved(cfg, a.design), resolved(cfg, b.design)
    work = {k: v for k, v in cfg.base.items() if k in set(names("workload"))}
    plist = players(ra, rb)
    labels = ["+".join(p) for p in plist]
    from dse.search.execute.pool import make_pool
    pool = make_pool(jobs, affinity=True)
    try:
        ends = _evaluate_all(cfg, [{**work, **ra}, {**work, **rb}], evaluator, pool)
        finite_pos = all(math.isfinite(v) and v > 0 for e in ends for v in e.values)
        use_log = finite_pos if scale == "auto" else scale == "log"
        h = _Hybrids(cfg, ra, rb, work, plist, use_log, nonfinite, evaluator, pool)
        h.cache[frozenset()], h.cache[frozenset(range(len(plist)))] = ends
        h.ends_out = np.array([_outputs(cfg, e, use_log) for e in ends])
        att = shapley.shapley(len(plist), h.values, exact_max=exact_max, orders=orders, seed=seed)
    finally:
        pool.close()
    cache, filled = h.cache, h.filled
    onames = cfg.objectives.names
    m = len(onames)
    bad = {j: next(c for c, v in att.values.items() if not math.isfinite(v[j]))
           for j in range(m) if not np.all(np.isfinite(att.phi[:, j]))}

    def num(x):
        return float(x) if math.isfinite(x) else None

    out: dict[str, Any] = {
        "scale": "log" if use_log else "linear",
        "from": _end(cfg, a, ra, ends[0]), "to": _end(cfg, b, rb, ends[1]),
        "total": {n: num(att.total[j]) for j, n in enumerate(onames)},
        "contributions": {lab: {n: (None if j in bad else num(att.phi[i, j])) for j, n in enumerate(onames)}
                          for i, lab in enumerate(labels)},
        "players": [list(p) for p in plist],
        "method": {"exact": att.exact, "orders": att.orders, "seed": seed if not att.exact else None,
                   "evaluations": len(cache), "exact_max": exact_max},
        "feasibility": _feasibility(cfg, att, plist, labels, cache),
        "rules": rules(use_log, plist, att, nonfinite),
    }
    if att.stderr is not None:
        out["stderr"] = {lab: {n: num(att.stderr[i, j]) for j, n in enumerate(onames)} for i, lab in enumerate(labels)}
    if bad:
        out["not_attributable"] = {onames[j]: _example(ra, rb, c, plist, cache) for j, c in bad.items()}
    if filled:
        out["nonfinite"] = {onames[j]: {"hybrids": len(cs), "value": "the worst finite value over the hybrids",
                                        "example": _example(ra, rb, cs[0], plist, cache)}
                            for j, cs in filled.items()}
    return out


def _example(ra, rb, c, plist, cache) -> dict[str, Any]:
    """A hybrid named by the knobs switched to B's values, with why it is infeasible."""
    return {"switched": ["+".join(plist[i]) for i in sorted(c)], "reason": cache[c].reason}


def _end(cfg, ep: Endpoint, params: dict, ev: Evaluated) -> dict[str, Any]:
    return {"label": ep.label, "trial": ep.trial, "params": params,
            "objectives": {n: (v if math.isfinite(v) else None) for n, v in zip(cfg.objectives.names, ev.values)},
            "feasible": ev.feasible, "reason": ev.reason,
            "per_model": {k: {"feasible": f, "violated": ev.violated.get(k, [])} for k, (f, _) in ev.per_model.items()}}


def _feasibility(cfg, att, plist, labels, cache) -> dict[str, Any]:
    """Shapley shares of the feasibility indicators and the switches that flip them."""
    m = len(cfg.objectives.names)
    keys = ["all"] + list(cfg.models)
    shares = {lab: {k: float(att.phi[i, m + j]) for j, k in enumerate(keys)} for i, lab in enumerate(labels)}
    flips: dict[str, list[dict[str, Any]]] = {}
    steps = [sum(1 for i, _ in att.edges if i == p) for p in range(len(plist))]
    for i, s in att.edges:
        before, after = cache[s], cache[s | {i}]
        for model in cfg.models:
            fb, fa = before.per_model[model][0], after.per_model[model][0]
            if fb == fa:
                continue
            bad = after if fb else before
            entry = next((e for e in flips.setdefault(labels[i], [])
                          if e["model"] == model and e["makes"] == ("infeasible" if fb else "feasible")), None)
            if entry is None:
                entry = {"model": model, "makes": "infeasible" if fb else "feasible", "switches": 0,
                         "of": steps[i], "violated": []}
                flips[labels[i]].append(entry)
            entry["switches"] += 1
            for v in bad.violated.get(model, []):
                if v not in entry["violated"]:
                    entry["violated"].append(v)
    return {"contributions": {k: v for k, v in shares.items() if any(abs(x) > 1e-12 for x in v.values())},
            "flips": flips}


def rules(use_log: bool, plist, att, nonfinite: str = "worst") -> list[str]:
    """The rules this explanation follows, in words."""
    out = ["contributions of ln(objective) changes, adding up to ln(B/A) per objective" if use_log else
           "contributions of objective changes in the objective's units, adding up to B - A"]
    linked = [p for p in plist if len(p) > 1]
    if linked:
        out.append("switched together as one player (a hybrid of them may be no design): "
                   + "; ".join("+".join(p) for p in linked))
    out.append(f"exact Shapley values over all {2 ** len(plist)} hybrids" if att.exact else
               f"Shapley values estimated from {att.orders} sampled orders (seeded), with standard errors; "
               f"every order telescopes, so the contributions still add up to the change")
    out.append("infeasible hybrids count with the objectives the model computes; " + (
        "a hybrid whose objective is not finite takes the worst finite value of that objective over the hybrids"
        if nonfinite == "worst" else "an objective that is not finite on a hybrid is not attributable"))
    return out


# ---- the explanation as tables (dse explain, dse report) ----
def contribution_table(out) -> tuple[list[str], list[list]]:
    """Headers and rows: one row per knob (sorted by its largest share), then the total; sampled
    contributions carry +- their standard error."""
    onames = list(out["total"])
    se = out.get("stderr", {})

    def cell(knob, n):
        v = out["contributions"][knob][n]
        if v is None:
            return "-"
        return f"{fmt(v)} ± {fmt(se[knob][n])}" if knob in se and se[knob][n] is not None else fmt(v)
    total = out["total"]
    order = sorted(out["contributions"], key=lambda k: -max(
        (abs(v) / (abs(total[n]) or 1) for n, v in out["contributions"][k].items() if v is not None), default=0))
    unit = "ln change" if out["scale"] == "log" else "change"
    rows = [[k] + [cell(k, n) for n in onames] for k in order]
    rows.append(["total (B vs A)"] + [fmt(total[n]) for n in onames])
    if out["scale"] == "log":
        rows.append(["ratio B/A"] + [fmt(2.718281828459045 ** total[n]) if total[n] is not None else "-"
                                     for n in onames])
    return [f"knob ({unit})"] + onames, rows


def short(text: str, n: int = 160) -> str:
    """``text`` cut to ``n`` characters."""
    return text if len(text) <= n else text[:n - 3] + "..."


def feasibility_table(out) -> tuple[list[str], list[list]]:
    """One row per knob with a share of the feasibility change (overall and per model)."""
    f = out["feasibility"]
    models = list(out["from"]["per_model"])
    rows = [[k, f"{sh.get('all', 0):+.3g}"] + [f"{sh.get(m, 0):+.3g}" for m in models]
            for k, sh in sorted(f["contributions"].items(), key=lambda kv: -abs(kv[1].get("all", 0)))]
    return ["knob", "all"] + models, rows


def flip_lines(out) -> list[str]:
    """Per model: the constraints violated on the infeasible side of the switches that flip its
    feasibility, and the knobs flipping it most often (--json: every flip)."""
    by_model: dict[str, dict] = {}
    for knob, flips in out["feasibility"]["flips"].items():
        for e in flips:
            d = by_model.setdefault(e["model"], {"violated": [], "knobs": {}})
            d["violated"] += [v for v in e["violated"] if v not in d["violated"]]
            key = f"{knob} to {e['makes']}"
            d["knobs"][key] = d["knobs"].get(key, 0) + e["switches"]
    lines = []
    for model, d in by_model.items():
        top = sorted(d["knobs"].items(), key=lambda kv: -kv[1])[:4]
        lines.append(f"{model}: flipped where {'; '.join(d['violated']) or 'the model'} is violated; most often by "
                     + ", ".join(f"{k} ({n} switches)" for k, n in top))
    return lines
