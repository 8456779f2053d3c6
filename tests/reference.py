"""The published reference figures (the packaged copy in dse/data/reference) and the check every
reproduction test applies: the entry's tolerance class, widened only to the published rounding."""
from __future__ import annotations

from dse.data import load_toml
from dse.pipeline.evaluate import evaluate
from dse.reproduce.registry import judge
from dse.spec import DesignPoint

REF = load_toml("reference", "rexpert-35b.toml")


def check(section: str, key: str, ours: float, index: int | None = None) -> None:
    """Assert that ``ours`` reproduces the published ``section.key`` (element ``index`` of a list)."""
    e = REF[section][key]
    pub = e["value"] if index is None else e["value"][index]
    _, status = judge(float(pub), float(ours), e["cls"])
    assert status in ("pass", "rounding"), f"{section}.{key}: published {pub}, ours {ours} ({status})"


def metrics(**knobs) -> dict:
    """Metrics of the default design with ``knobs`` on the closed-form (catalog) workload."""
    return evaluate(DesignPoint.from_dict({"trace": "catalog", **knobs})).metrics
