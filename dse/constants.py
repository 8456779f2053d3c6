"""Named model constants, loaded from ``dse/data/constants.toml`` (the one place they live).

Use as ``from dse.constants import C`` then ``C.t_layer_fixed_us``. ``C.describe(name)``
returns value, unit, class and source; ``dse constants`` prints them all.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dse.data import load_toml


@dataclass(frozen=True)
class Constant:
    name: str
    value: float
    unit: str
    cls: str
    source: str
    fitted_on: tuple[str, ...] = ()      # `dse reproduce` rows a calibrated constant was fitted on


class _Constants:
    def __init__(self) -> None:
        table = load_toml("constants.toml")
        self._all: dict[str, Constant] = {}
        for name, entry in table.items():
            c = Constant(name, entry["value"], entry.get("unit", ""), entry["cls"], entry["source"],
                         tuple(entry.get("fitted_on", ())))
            self._all[name] = c
            object.__setattr__(self, name, c.value)

    def __getattr__(self, name: str) -> Any:  # only called when the attribute is missing
        raise AttributeError(f"no model constant named {name!r} in dse/data/constants.toml")

    def describe(self, name: str) -> Constant:
        return self._all[name]

    def all(self) -> list[Constant]:
        return list(self._all.values())

    @contextmanager
    def overridden(self, values: Mapping[str, float]) -> Iterator[None]:
        """Named constants set to ``values`` inside the block, restored after it (the model
        uncertainty draws of ``dse.pipeline.uncertainty``; not thread-safe)."""
        unknown = [k for k in values if k not in self._all]
        if unknown:
            raise AttributeError(f"no model constant named {unknown[0]!r} in dse/data/constants.toml")
        old = {k: getattr(self, k) for k in values}
        try:
            for k, v in values.items():
                object.__setattr__(self, k, v)
            yield
        finally:
            for k, v in old.items():
                object.__setattr__(self, k, v)


C = _Constants()
