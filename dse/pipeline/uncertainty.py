"""Model-uncertainty bands: what the model cannot know, drawn by a seeded Latin hypercube.

The parameters are one table of package data (``dse/data/model_uncertainty.toml``: name, kind,
nominal, range, source of the range). A draw sets every sampled constant (``C.overridden``) and
knob; ``bands`` evaluates a design once per draw and reports, for every numeric metric, the 5th,
50th and 95th percentile over the draws. Deterministic for a given seed.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.constants import C
from dse.data import load_toml

TABLE = "model_uncertainty.toml"
QUANTILES = {"p5": 5.0, "p50": 50.0, "p95": 95.0}
# Unknowns that move only a synthetic trace's workload (``dse.workload.window``: its seed, and the
# campaign position and profile correlation of ``dse.workload.campaign``), not a trace file's.
WORKLOAD_UNKNOWNS = ("trace_seed", "routing_campaign_position", "profile_load_correlation")


@dataclass(frozen=True)
class Unknown:
    """One parameter the model cannot know."""
    name: str
    kind: str            # constant | knob | input
    nominal: float
    low: float
    high: float
    unit: str
    sampled: bool
    source: str


def unknowns() -> list[Unknown]:
    """Every row of the table, in file order."""
    return [Unknown(k, v["kind"], v["nominal"], v["low"], v["high"], v.get("unit", ""), bool(v["sampled"]),
                    v["source"]) for k, v in load_toml(TABLE).items()]


def latin_hypercube(n: int, dims: int, seed: int) -> np.ndarray:
    """[n, dims] points in [0, 1): every dimension has exactly one point in each of its n strata
    (a random place within the stratum, strata randomly paired across dimensions)."""
    rng = np.random.default_rng(seed)
    u = (np.arange(n)[:, None] + rng.random((n, dims))) / n
    for j in range(dims):
        u[:, j] = u[rng.permutation(n), j]
    return u


def draws(n: int, seed: int = 0) -> list[dict[str, float]]:
    """N draws of the sampled unknowns (integer knobs floored)."""
    rows = [u for u in unknowns() if u.sampled]
    pts = latin_hypercube(n, len(rows), seed)
    out = []
    for p in pts:
        d = {}
        for u, x in zip(rows, p):
            v = u.low + x * (u.high - u.low)
            d[u.name] = int(math.floor(v)) if isinstance(u.nominal, int) else float(v)
        out.append(d)
    return out


@contextmanager
def applied(draw: Mapping[str, float]) -> Iterator[dict[str, Any]]:
    """Inside the block the draw's constants are set; yields its knobs (for the caller's design)."""
    kinds = {u.name: u.kind for u in unknowns()}
    consts = {k: v for k, v in draw.items() if kinds[k] == "constant"}
    with C.overridden(consts):
        yield {k: v for k, v in draw.items() if kinds[k] == "knob"}


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def quantiles(samples: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """{metric: {p5, p50, p95}} of every metric numeric in every sample."""
    keys = [k for k in samples[0] if all(is_number(s.get(k)) for s in samples)]
    return {k: {q: float(np.percentile([float(s[k]) for s in samples], p)) for q, p in QUANTILES.items()}
            for k in keys}


def bands(run: Callable[[dict[str, Any]], Mapping[str, Any]], n: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """``run(knobs)`` (the draw's knobs; its constants set) once per draw -> quantiles."""
    out = []
    for d in draws(n, seed):
        with applied(d) as knobs:
            out.append(dict(run(knobs)))
    return quantiles(out)


CONSTANTS_KEY = "__model_constants__"      # a task's drawn constants, carried with its design


def evaluate_drawn(evaluate: Callable[[Mapping[str, Any], Sequence[str]], dict], design: Mapping[str, Any],
                   models: Sequence[str]) -> dict:
    """``evaluate(design, models)`` with the draw's constants (``design[CONSTANTS_KEY]``) set:
    a task another process can run (module level: picklable)."""
    design = dict(design)
    consts = design.pop(CONSTANTS_KEY, {})
    with C.overridden(consts):
        return evaluate(design, models)


def evaluate_flat(design: Mapping[str, Any], models: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{model: metrics}`` of a design given as flat knobs."""
    from dse.pipeline.evaluate import evaluate
    from dse.spec import DesignPoint
    return {m: dict(evaluate(DesignPoint.from_dict({**design, "model": m})).metrics) for m in models}


RunMany = Callable[[Callable[[Mapping[str, Any], Sequence[str]], dict], list], list[dict]]


def point_bands(point, n: int, seed: int = 0, run_many: RunMany | None = None) -> dict[str, dict[str, float]]:
    """Bands of every numeric metric of one design (a catalog-trace design keeps its trace).

    A design on a trace file or on the catalog's unions keeps its workload in every draw (the
    workload unknowns move only a synthetic trace), so when the other sampled unknowns are all
    arithmetic after the schedule, its placement and schedule are computed once and only the
    later stages run per draw (``evaluate.evaluate_arithmetic_draws``). A synthetic-trace design
    generates each draw's trace: with ``run_many(fn, tasks)`` (the CLI's ``--jobs``: the engine's
    worker processes) the draws are evaluated side by side, each exactly as here."""
    from dse.pipeline.evaluate import POST_SCHEDULE_CONSTANTS, evaluate, evaluate_arithmetic_draws

    sampled = [u.name for u in unknowns() if u.sampled]
    if point.trace != "synthetic" and set(sampled) <= set(WORKLOAD_UNKNOWNS) | set(POST_SCHEDULE_CONSTANTS):
        ds = draws(n, seed)

        def run_draw(i: int, f: Callable[[], Any]) -> dict[str, Any]:
            with applied(ds[i]):
                return dict(f().metrics)
        return quantiles(evaluate_arithmetic_draws(point, run_draw, n))

    if run_many is not None and point.trace == "synthetic" and n > 1:
        kinds = {u.name: u.kind for u in unknowns()}
        tasks = [({**point.to_dict(), **{k: v for k, v in d.items() if kinds[k] == "knob"},
                   CONSTANTS_KEY: {k: v for k, v in d.items() if kinds[k] == "constant"}}, (point.model,))
                 for d in draws(n, seed)]
        return quantiles([r[point.model] for r in run_many(functools.partial(evaluate_drawn, evaluate_flat), tasks)])

    def run(knobs: dict[str, Any]) -> Mapping[str, Any]:
        kn = knobs if point.trace == "synthetic" else {k: v for k, v in knobs.items() if k != "trace_seed"}
        return evaluate(point.with_(**kn) if kn else point).metrics
    return bands(run, n, seed)
