"""Package data: catalog, GPU baselines, constants, reference figures, routing profiles.

Everything is read through importlib.resources, so behaviour never depends on the
working directory and a fresh clone (or wheel) carries all it needs.
"""
from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Any


def path(*parts: str):
    """A Traversable for a file inside dse/data."""
    p = resources.files("dse.data")
    for part in parts:
        p = p / part
    return p


@functools.cache
def load_toml(*parts: str) -> dict[str, Any]:
    """Parse a TOML file of the package data (cached; treat the result as read-only)."""
    with path(*parts).open("rb") as fh:
        return tomllib.load(fh)
