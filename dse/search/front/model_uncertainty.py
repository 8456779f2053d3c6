"""How sure is the knee when the model's unknowns are drawn (``dse front --robust
--model-uncertainty N``).

Each of N seeded Latin-hypercube draws of ``dse/data/model_uncertainty.toml`` (its constants set,
its knobs - the synthetic trace's seed - replacing the designs') is one variant of
``robust.robust_knees``: the designs around the front are re-evaluated under it and its front
and knee recomputed. Reported per design: how often it stays on the front and how often it is
the knee. The draw's constants travel with each task (``CONSTANTS_KEY``), so worker processes
set them too.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from dse.pipeline.uncertainty import CONSTANTS_KEY, draws, evaluate_drawn, unknowns
from dse.search.front.robust import RobustKnees, RunMany, Variant, robust_knees


def variants(n: int, models: Sequence[str], seed: int = 0) -> list[Variant]:
    """One variant per draw: its knobs as overrides, its constants under ``CONSTANTS_KEY``."""
    kinds = {u.name: u.kind for u in unknowns()}
    out = []
    for i, d in enumerate(draws(n, seed)):
        knobs = {k: v for k, v in d.items() if kinds[k] == "knob"}
        consts = {k: v for k, v in d.items() if kinds[k] == "constant"}
        label = f"draw {i}: " + ", ".join(f"{k}={v}" if isinstance(v, int) else f"{k}={v:.6g}" for k, v in d.items())
        out.append(Variant(label, {**knobs, CONSTANTS_KEY: consts}, tuple(models)))
    return out


class ModelUncertaintyKnees(RobustKnees):
    """``RobustKnees`` whose JSON also says how often each design stays on the front."""

    def front_frequency(self) -> dict[int, float]:
        n = len(self.fronts)
        return {r.number: (sum(r.number in f for f in self.fronts) / n if n else 0.0) for r in self.designs}

    def to_json(self, res) -> dict[str, Any]:
        out = super().to_json(res)
        ff = self.front_frequency()
        for row in out["knee_frequency"]:
            row["front_frequency"] = ff[row["trial"]]
        return out


def model_uncertainty_knees(res, n: int, evaluate: Callable, *, seed: int = 0, run_many: RunMany | None = None,
                            max_designs: int = 48) -> ModelUncertaintyKnees:
    """``robust_knees`` over N draws of the model's unknowns (``run_many``: as there)."""
    rk = robust_knees(res, variants(n, res.cfg.models, seed), functools.partial(evaluate_drawn, evaluate),
                      max_designs=max_designs, run_many=run_many)
    return ModelUncertaintyKnees(**vars(rk))
