"""The walls of the box: numeric knobs that most of a front holds at one bound of their range.

A front that sits at the end of a knob's range says one of two things: the range is too narrow
(widen it), or the model charges nothing for that knob, so the search walks to the wall
(``docs/model/prices.md`` tables what every knob of the full space buys and costs). Where the
bound is a physical limit instead, e.g. the least array depth at which a study's model maps
(a chunk of 3d columns must fit in one unit), the report says so.

``at_bounds(space, designs, models)`` returns one ``Wall`` per (knob, bound) held by more than
``share`` (default one half) of the designs. Numeric knobs are ``int`` and ``float`` knobs and
categorical knobs whose choices are all numbers; a bound is the range's low / high end for the
design (expressions such as ``core_side**2`` are evaluated on the design itself). A knob
inactive in a design (``when``) does not count for that design.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

WALL_SHARE = 0.5


@dataclass(frozen=True)
class Wall:
    knob: str
    bound: str            # "low" | "high"
    value: Any
    share: float          # of the designs in which the knob is active
    limit: str = ""       # non-empty: the bound is a physical limit, and why

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def sentence(self) -> str:
        pct = f"{100 * self.share:.0f} %"
        if self.limit:
            return f"{self.knob} = {self.value:g} ({self.bound} end of its range) on {pct} of the front: {self.limit}"
        return (f"{self.knob} = {self.value:g} ({self.bound} end of its range) on {pct} of the front: widen the "
                f"range, or the study's objectives never pay for moving it inward (what it buys and costs: "
                f"docs/model/prices.md)")


def _numeric_range(space: Any, d: Any, env: Mapping[str, Any]) -> tuple[float, float] | None:
    if d.type == "categorical":
        vals = [v for v in d.choices if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return (min(vals), max(vals)) if len(vals) == len(d.choices) and len(vals) > 1 else None
    if d.type not in ("int", "float"):
        return None
    low, high, _ = space.bounds(d, env)
    return (low, high) if high > low else None


# Bounds that are structural limits whatever the range says (knob, bound): why.
STRUCTURAL = {("pe_groups_per_core", "high"): "one PE group per unit, the most a core can have (its read-outs "
                                               "need no sharing crossbar), not a wall"}


def mapping_limit(knob: str, bound: str, value: float, step: float | None, hiddens: Iterable[int]) -> str:
    """Why ``value`` is a physical limit of ``knob`` at ``bound`` ('' when it is not): the array
    depth's floor when one step below it no study model can map (its chunk of 3d columns does
    not fit in one unit); a structural limit of ``STRUCTURAL``."""
    if (knob, bound) in STRUCTURAL:
        return STRUCTURAL[knob, bound]
    if knob != "array_depth" or bound != "low":
        return ""
    from dse.mapping.sharding import chunk_columns
    widest = max((chunk_columns(h) for h in hiddens), default=0)
    below = value - (step or value)
    if widest and below < widest <= value:
        return (f"the mapping limit, not a wall: one step lower ({below:g}) cannot hold a chunk of "
                f"{widest} columns (3d), so no shallower design maps")
    return ""


def at_bounds(space: Any, designs: Sequence[Mapping[str, Any]], hiddens: Iterable[int] = (),
              share: float = WALL_SHARE) -> list[Wall]:
    """The (knob, bound) pairs held by more than ``share`` of ``designs``, largest share first."""
    hiddens = tuple(hiddens)
    out: list[Wall] = []
    for d in space.dims:
        if not d.searched:
            continue
        counts = {"low": 0, "high": 0}
        values: dict[str, Any] = {}
        active = 0
        step = None
        for env in designs:
            if not d.active(env) or d.name not in env:
                continue
            rng = _numeric_range(space, d, env)
            if rng is None:
                continue
            active += 1
            if d.type != "categorical":
                step = space.bounds(d, env)[2]
            v = env[d.name]
            for bound, edge in (("low", rng[0]), ("high", rng[1])):
                if v == edge:
                    counts[bound] += 1
                    values[bound] = v
        for bound in ("low", "high"):
            if active and counts[bound] / active > share:
                v = values[bound]
                out.append(Wall(d.name, bound, v, counts[bound] / active,
                                mapping_limit(d.name, bound, v, step, hiddens)))
    return sorted(out, key=lambda w: (-w.share, w.knob, w.bound))


def study_walls(res: Any, recs: Sequence[Any] | None = None, share: float = WALL_SHARE) -> list[Wall]:
    """``at_bounds`` of a study's front (or of ``recs``): its space, its designs, its models."""
    from dse.catalog import get_model
    recs = res.front() if recs is None else recs
    hiddens = [get_model(m).hidden for m in res.cfg.models]
    return at_bounds(res.cfg.space, [r.design for r in recs], hiddens, share)
