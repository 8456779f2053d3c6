"""Export a chosen design (TOML) or every trial (parquet / CSV / JSON).

A design file has ``[hardware]``, ``[workload]``, ``[mapping]`` (every knob, derived defaults
resolved, so it re-creates the point on any catalog), ``[metrics]`` (the evaluation of exactly
that point, as ``dse evaluate design.toml`` prints it) and ``[provenance]`` (study, trial, seed,
sampler, package version, workload(s), objective values). No timestamps or paths: the same
seeded study exports byte-identical files. ``DesignPoint.from_file`` ignores ``[metrics]`` and
``[provenance]``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from dse.errors import ConfigError
from dse.search.study.results import StudyResults, TrialRecord

TABLE_FORMATS = (".parquet", ".csv", ".json")


def pick(res: StudyResults, *, knee: bool = False, trial: int | None = None) -> TrialRecord:
    """The knee of the feasible front, or trial ``trial`` (ConfigError when impossible)."""
    src = res.cfg.source.name
    if knee:
        k = res.knee()
        if k is None:
            raise ConfigError(f"{src}: study {res.cfg.name!r} has no feasible finished trial; no knee to export")
        return k
    assert trial is not None
    try:
        r = res.record(trial)
    except KeyError:
        last = max((x.number for x in res.records), default=-1)
        raise ConfigError(f"--trial {trial}: no such trial in study {res.cfg.name!r} (trials 0..{last})") from None
    if not r.complete:
        raise ConfigError(f"--trial {trial}: trial is {r.state.lower()}, not finished; pick a finished trial")
    return r


def design_document(res: StudyResults, r: TrialRecord, workload: str | None = None) -> dict[str, Any]:
    """The TOML document (as a dict) of trial ``r`` on one workload model."""
    from dse.pipeline.evaluate import evaluate
    from dse.spec import DesignPoint
    from dse.version import __version__
    cfg = res.cfg
    model = workload or cfg.models[0]
    if model not in cfg.models:
        raise ConfigError(f"--workload {model!r}: not a workload of study {cfg.name!r} "
                          f"(one of {', '.join(cfg.models)})")
    point = DesignPoint.from_dict({**r.design, "model": model}, source=f"trial {r.number}")
    metrics = evaluate(point).metrics
    stored = r.metrics.get(model)
    doc: dict[str, Any] = point.to_dict(sections=True, resolved=True)
    doc["metrics"] = _toml_clean(metrics)
    prov: dict[str, Any] = {
        "study": cfg.name,
        "study_file": cfg.source.name,
        "trial": r.number,
        "seed": cfg.seed,
        "sampler": cfg.sampler,
        "package_version": __version__,
        "workload": model,
        "workloads": list(cfg.models),
        "design_key": r.design_key,
        "feasible": r.feasible,
        "objectives": _toml_clean(res.objective_values(r)),
        "stored_metrics_match": stored is not None and _same(stored, metrics),
    }
    if r.reason:
        prov["reason"] = r.reason
    doc["provenance"] = prov
    return doc


def write_design(res: StudyResults, r: TrialRecord, out: str | Path, workload: str | None = None) -> Path:
    import tomli_w
    doc = design_document(res, r, workload)
    path = Path(out)
    header = (f"# Exported by `dse export` from study {res.cfg.name!r}, trial {r.number}.\n"
              f"# Re-evaluate with `dse evaluate {path.name}` (it ignores [metrics] and [provenance]).\n")
    _write_text(path, header + tomli_w.dumps(doc))
    return path


def write_table(res: StudyResults, out: str | Path) -> Path:
    """Every trial as a table; the format follows the extension (.parquet, .csv, .json)."""
    path = Path(out)
    ext = path.suffix.lower()
    if ext not in TABLE_FORMATS:
        raise ConfigError(f"-o {out}: unknown table format {ext or '(none)'!r} (allowed: {', '.join(TABLE_FORMATS)})")
    df = res.dataframe()
    _mkdir(path)
    try:
        if ext == ".parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise ConfigError("-o *.parquet needs pyarrow (pip install 'rexpert-dse[parquet]'); "
                                  "or write .csv / .json") from None
            df.to_parquet(path, index=False)
        elif ext == ".csv":
            df.to_csv(path, index=False)
        else:
            df.to_json(path, orient="records", indent=2)
    except OSError as exc:
        raise ConfigError(f"-o {out}: cannot write ({exc.strerror})") from None
    return path


def _write_text(path: Path, text: str) -> None:
    _mkdir(path)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"-o {path}: cannot write ({exc.strerror})") from None


def _mkdir(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"-o {path}: cannot create the folder ({exc.strerror})") from None


def _toml_clean(d: dict[str, Any]) -> dict[str, Any]:
    """TOML has no null: drop None (and None inside lists); keep everything else."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if v is None:
            continue
        if hasattr(v, "item") and callable(v.item):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            continue
        if isinstance(v, dict):
            v = _toml_clean(v)
        elif isinstance(v, (list, tuple)):
            if any(x is None for x in v):
                continue
            v = list(v)
        out[k] = v
    return out


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    from dse.search.execute.evaluation import jsonable
    return jsonable(a) == jsonable(b)
