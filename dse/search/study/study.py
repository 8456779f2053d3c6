"""Studies: ``studies/*.toml`` loader and validator, and the optuna study they address.

::

    [study]
    name = "quickstart"                    # default: the file name without .toml
    description = "..."
    space = "../spaces/quickstart.toml"    # path relative to this file, or an inline table
    objectives = "../objectives/latency-silicon.toml"   # idem
    trials = 40                            # target number of finished trials (re-running resumes)
    seed = 0
    batch = 8                              # trials asked per ask/tell batch (independent of --jobs)
    storage = "sqlite:///..."              # optional; default: results/<file name>.db beside this file
    heartbeat = 10                         # seconds; RDB storages: a trial silent for 3 heartbeats
                                           # is failed and re-queued (dse worker --heartbeat overrides)

    [sampler]
    name = "nsga2"                         # nsga2 | tpe | gp | random | grid
    population_size = 16                   # sampler settings (see dse.search.propose.samplers)

    [search]
    fidelity = "single"                    # single | multi: screen proposals with closed-form
                                           # bounds first (dse.search.propose.bound.fidelity)

    [workload]
    models = ["qwen3.5-35b-a3b"]           # one or several catalog models, or "all"
    batch = 128                            # any workload knob: batch, context, trace, ...

    [base]                                 # knobs fixed for the whole study (flat or sectioned)
    tile_width = 4

A design is evaluated on every workload model; objectives aggregate over them (see
``dse.search.space.objectives``). ``--model`` / ``--seed`` overrides address a sibling study whose
name carries them (``quickstart[model=glm-5.2,seed=3]``), so ``dse run``, ``dse front``,
``dse plot`` and ``dse export`` given the same file and overrides always meet the same study.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dse.errors import ConfigError, DSEError
from dse.errors import suggest as _suggest
from dse.search.propose.knee import SEARCH_KEYS as KNEE_KEYS
from dse.search.propose.knee import KneeSearch
from dse.search.propose.knee import parse as parse_knee
from dse.search.propose.samplers import SAMPLERS
from dse.search.space.objectives import ObjectiveSet, load_objectives, objectives_from_dict
from dse.search.space.space import Space
from dse.search.space.space_file import load_space, space_from_dict
from dse.search.storage.storage import HEARTBEAT_INTERVAL_S
from dse.spec import DesignPoint, default_pe_groups
from dse.spec.params import BY_NAME, coerce, names
from dse.tomlfile import read_toml

TOP_KEYS = ("study", "sampler", "search", "workload", "base")
SEARCH_KEYS = ("fidelity",) + KNEE_KEYS
STUDY_KEYS = ("name", "description", "space", "objectives", "trials", "seed", "batch", "storage", "results",
              "heartbeat")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")


@dataclass(frozen=True)
class StudyConfig:
    """A validated study file with its overrides applied."""
    source: Path
    name: str                          # optuna study name (with the override suffix)
    base_name: str
    space: Space
    objectives: ObjectiveSet
    models: tuple[str, ...]
    base: dict[str, Any] = field(hash=False)   # flat knobs under the space (workload knobs included)
    sampler: str = "nsga2"
    sampler_settings: dict[str, Any] = field(default_factory=dict, hash=False)
    trials: int = 40
    seed: int = 0
    batch: int = 8
    storage: str | None = None
    heartbeat_s: int = HEARTBEAT_INTERVAL_S   # RDB storages: heartbeat interval of running trials
    results_dir: Path = Path("results")
    description: str = ""
    overrides: tuple[tuple[str, Any], ...] = ()
    fidelity: str = "single"           # [search] fidelity: single | multi (dse.search.propose.bound.fidelity)
    knee: KneeSearch = KneeSearch()    # [search] knee phase and stop rule (dse.search.propose.knee.phase)

    # -- designs -------------------------------------------------------------------------
    def base_env(self) -> dict[str, Any]:
        """Knob values the space's bounds and conditions see for knobs it does not set."""
        env = DesignPoint.from_dict({**self.base, "model": self.models[0]}).to_dict()
        if env["pe_groups_per_core"] is None:
            env["pe_groups_per_core"] = default_pe_groups(env["core_side"])
        return env

    def design(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Flat knobs (without the model) of the design a trial's values describe."""
        d = {**self.base, **values}
        d.pop("model", None)
        return d

    def points(self, design: Mapping[str, Any]) -> dict[str, DesignPoint]:
        """The design point on each workload model (raises ConfigError if the knobs are invalid)."""
        return {m: DesignPoint.from_dict({**design, "model": m}, source=f"{self.source} (trial design)")
                for m in self.models}

    def fingerprint(self) -> str:
        """Digest of what defines the study's trials (space, objectives, workloads, base)."""
        blob = json.dumps({"space": self.space.canonical(), "objectives": self.objectives.canonical(),
                           "models": list(self.models), "base": self.base}, sort_keys=True, default=str)
        return hashlib.sha1(blob.encode()).hexdigest()[:16]

    def command_args(self) -> str:
        """The study path and the identity flags as the user typed them (password masked; a storage
        ``DSE_STORAGE`` gives is left out, the environment gives it again), for hints such as
        ``dse front <command_args>``."""
        import os
        import shlex

        from dse.search.storage.storage import mask_url
        path = str(self.source)
        try:
            rel = os.path.relpath(path)
            path = rel if not rel.startswith("..") else path
        except ValueError:  # another drive (Windows)
            pass
        out = [shlex.quote(path)]
        if self.storage and self.storage != os.environ.get("DSE_STORAGE", "").strip():   # else from there again
            out.append(f"--storage {shlex.quote(mask_url(self.storage))}")
        for k, v in self.overrides:
            out.append(f"--{k} {shlex.quote(str(v))}")
        return " ".join(out)

    def with_overrides(self, *, model: str | None = None, seed: int | None = None, trials: int | None = None,
                       storage: str | None = None) -> StudyConfig:
        """Apply CLI overrides; ``model``/``seed`` change the study's identity (name)."""
        cfg = self
        ov = dict(self.overrides)
        if model is not None:
            m = coerce(BY_NAME["model"], model, "--model", "model")
            if (m,) != cfg.models:
                ov["model"] = m
            cfg = replace(cfg, models=(m,))
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
                raise ConfigError(f"--seed {seed!r}: must be an integer in [0, 4294967295]")
            if seed != cfg.seed:
                ov["seed"] = seed
            cfg = replace(cfg, seed=seed)
        if trials is not None:
            if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
                raise ConfigError(f"--trials {trials!r}: must be a positive integer")
            cfg = replace(cfg, trials=trials)
        if storage:
            cfg = replace(cfg, storage=storage)
        items = tuple(sorted(ov.items()))
        name = cfg.base_name + ("[" + ",".join(f"{k}={v}" for k, v in items) + "]" if items else "")
        return replace(cfg, overrides=items, name=name)

    def check_metrics(self) -> None:
        """Fail early on an objective / constraint metric the evaluation does not produce, or
        that a closed-form-only study never computes (``dse.search.study.study_metrics``)."""
        from dse.search.study.study_metrics import check_study_metrics
        check_study_metrics(self)


# ---- loading ---------------------------------------------------------------------------
def load_study(path: str | Path, *, model: str | None = None, seed: int | None = None,
               trials: int | None = None, storage: str | None = None, check_metrics: bool = True) -> StudyConfig:
    """Read and validate a study file, apply overrides, and check its metrics exist."""
    p = Path(path)
    data = read_toml(p)
    cfg = study_from_dict(data, source=p)
    cfg = cfg.with_overrides(model=model, seed=seed, trials=trials, storage=storage)
    if check_metrics:
        cfg.check_metrics()
    return cfg


def study_from_dict(data: Mapping[str, Any], source: Path) -> StudyConfig:
    src = str(source)
    for k in data:
        if k not in TOP_KEYS:
            raise ConfigError(f"{src}: {k}: unknown section (allowed: {', '.join(TOP_KEYS)}){_suggest(k, TOP_KEYS)}")
    st = _table(data, "study", src, required=True)
    for k in st:
        if k not in STUDY_KEYS:
            raise ConfigError(f"{src}: study.{k}: unknown key (allowed: {', '.join(STUDY_KEYS)})"
                              f"{_suggest(k, STUDY_KEYS)}")
    name = st.get("name", source.stem)
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigError(f"{src}: study.name = {name!r}: must be 1-100 characters of letters, digits, '_', '-', '.'")
    desc = st.get("description", "")
    if not isinstance(desc, str):
        raise ConfigError(f"{src}: study.description: must be a string")
    space = _component(st, "space", src, source, load_space, space_from_dict)
    objectives = _component(st, "objectives", src, source, load_objectives, objectives_from_dict)
    seed = _int(st.get("seed", 0), src, "study.seed", 0, 2**32 - 1)
    batch = _int(st.get("batch", 8), src, "study.batch", 1, 10000)
    heartbeat = _int(st.get("heartbeat", HEARTBEAT_INTERVAL_S), src, "study.heartbeat", 1, 3600)
    storage = st.get("storage")
    if storage is not None and (not isinstance(storage, str) or not storage.strip()):
        raise ConfigError(f"{src}: study.storage: must be a storage URL "
                          f"(sqlite:///..., postgresql://..., journal:FILE)")
    results = st.get("results", "results")
    if not isinstance(results, str) or not results:
        raise ConfigError(f"{src}: study.results: must be a folder path")
    results_dir = (source.parent / results).resolve() if not Path(results).is_absolute() else Path(results)
    sname, settings = _sampler(data, src)
    models, base = _workload_and_base(data, src, source)
    fidelity = _search(data, src, base)
    for d in space.dims:
        if d.name in base:
            raise ConfigError(f"{src}: {d.name}: set both by the space ({space.source}) and by the study; "
                              f"keep one")
    trials_default = 40
    if "trials" in st:
        trials = _int(st["trials"], src, "study.trials", 1, 10_000_000)
    else:
        trials = trials_default
    cfg = StudyConfig(source=source.resolve(), name=name, base_name=name, space=space, objectives=objectives,
                      models=models, base=base, sampler=sname, sampler_settings=settings, trials=trials,
                      seed=seed, batch=batch, storage=_storage_url(storage, source), heartbeat_s=heartbeat,
                      results_dir=results_dir, description=desc, fidelity=fidelity,
                      knee=parse_knee(_table(data, "search", src), src))
    # Validate the base design once (one line naming the study file on a bad combination).
    DesignPoint.from_dict({**base, "model": models[0]}, source=f"{src} [workload]/[base]")
    if sname == "grid" and "trials" not in st:
        cfg = replace(cfg, trials=max(1, len(space.grid(cfg.base_env()))))
    return cfg


def _sampler(data: Mapping[str, Any], src: str) -> tuple[str, dict[str, Any]]:
    """``[sampler]``: its name and checked settings."""
    sm = _table(data, "sampler", src)
    sname = sm.get("name", "nsga2")
    if sname not in SAMPLERS:
        raise ConfigError(f"{src}: sampler.name = {sname!r}: must be one of {', '.join(SAMPLERS)}")
    settings = {}
    allowed = SAMPLERS[sname].settings
    for k, v in sm.items():
        if k == "name":
            continue
        if k not in allowed:
            ok = ", ".join(allowed) or "none"
            raise ConfigError(f"{src}: sampler.{k}: unknown setting for {sname} (allowed: {ok}){_suggest(k, allowed)}")
        kind, lo, hi = allowed[k]
        settings[k] = _setting(v, kind, lo, hi, src, f"sampler.{k}")
    return sname, settings


def _search(data: Mapping[str, Any], src: str, base: Mapping[str, Any]) -> str:
    """``[search]``: how proposals are evaluated (``fidelity``, see ``dse.search.propose.bound.fidelity``)."""
    from dse.search.propose.bound import check_fidelity
    se = _table(data, "search", src)
    for k in se:
        if k not in SEARCH_KEYS:
            raise ConfigError(f"{src}: search.{k}: unknown key (allowed: {', '.join(SEARCH_KEYS)})"
                              f"{_suggest(k, SEARCH_KEYS)}")
    return check_fidelity(se.get("fidelity", "single"), src, base.get("trace", BY_NAME["trace"].default))


def _workload_and_base(data: Mapping[str, Any], src: str, source: Path) -> tuple[tuple[str, ...], dict[str, Any]]:
    """``[workload]`` and ``[base]``: the workload models and the flat knobs fixed for the study."""
    wl = dict(_table(data, "workload", src))
    models = _models(wl, src)
    base: dict[str, Any] = {}
    for k, v in wl.items():
        if k not in BY_NAME or BY_NAME[k].part != "workload":
            allowed_w = ["models"] + [n for n in names("workload") if n != "model"]
            raise ConfigError(f"{src}: workload.{k}: unknown key (allowed: {', '.join(allowed_w)})"
                              f"{_suggest(k, allowed_w)}")
        base[k] = coerce(BY_NAME[k], v, src, f"workload.{k}")
    if isinstance(base.get("trace"), str) and base["trace"] not in ("catalog", "synthetic") \
            and not Path(base["trace"]).is_absolute():
        base["trace"] = str((source.parent / base["trace"]).resolve())
    # base design
    bd = _table(data, "base", src)
    if bd:
        flat = _flatten_base(bd, src)
        if "model" in flat:
            raise ConfigError(f"{src}: base.model: set the model(s) in [workload] models")
        for k, v in flat.items():
            if k in base:
                raise ConfigError(f"{src}: base.{k}: already set in [workload]")
            base[k] = v
    return models, base


def _component(st: Mapping[str, Any], key: str, src: str, source: Path, loader, from_dict):
    v = st.get(key)
    if isinstance(v, str) and v:
        p = Path(v)
        path = Path(os.path.normpath(p if p.is_absolute() else source.parent / p))
        try:
            return loader(path)
        except DSEError as exc:   # name both files and the key: study.toml: study.space = '...': <error>
            msg = str(exc)
            msg = msg[len(str(path)) + 2:] if msg.startswith(f"{path}: ") else msg
            raise ConfigError(f"{src}: study.{key} = {v!r}: {msg}") from None
    if isinstance(v, Mapping):
        return from_dict(v, source=f"{src} [study.{key}]")
    raise ConfigError(f"{src}: study.{key}: missing; expected a path to a {key} file (relative to the study "
                      f"file) or an inline table")


def _storage_url(text: str | None, source: Path) -> str | None:
    """study.storage as a URL; a plain file path is relative to the study file."""
    from dse.search.storage.storage import normalise_url
    if not text or not text.strip():
        return None
    text = text.strip()
    url = normalise_url(text)
    if url != text and not Path(text).expanduser().is_absolute():
        url = normalise_url(str(source.parent / text))
    return url


def _table(data: Mapping[str, Any], key: str, src: str, required: bool = False) -> Mapping[str, Any]:
    v = data.get(key)
    if v is None:
        if required:
            raise ConfigError(f"{src}: [{key}]: missing section")
        return {}
    if not isinstance(v, Mapping):
        raise ConfigError(f"{src}: {key}: must be a table ([{key}])")
    return v


def _models(wl: dict[str, Any], src: str) -> tuple[str, ...]:
    from dse.catalog import model_names
    allowed = list(model_names())
    if "models" in wl and "model" in wl:
        raise ConfigError(f"{src}: workload: give either model or models, not both")
    raw = wl.pop("models", None)
    if raw is None:
        raw = [wl.pop("model")] if "model" in wl else [BY_NAME["model"].default]
    if raw == "all":
        return tuple(allowed)
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{src}: workload.models: must be a non-empty list of catalog models or \"all\"")
    out = []
    for i, m in enumerate(raw):
        if m not in allowed:
            raise ConfigError(f"{src}: workload.models[{i}] = {m!r}: must be one of {', '.join(map(repr, allowed))}")
        if m in out:
            raise ConfigError(f"{src}: workload.models[{i}] = {m!r}: listed twice")
        out.append(m)
    return tuple(out)


def _flatten_base(bd: Mapping[str, Any], src: str) -> dict[str, Any]:
    from dse.spec.params import PARTS
    out: dict[str, Any] = {}
    for k, v in bd.items():
        if k in PARTS and isinstance(v, Mapping):
            for sub, sv in v.items():
                if sub not in names(k):
                    raise ConfigError(f"{src}: base.{k}.{sub}: unknown key (allowed in [{k}]: {', '.join(names(k))})"
                                      f"{_suggest(sub, names(k))}")
                out[sub] = coerce(BY_NAME[sub], sv, src, f"base.{k}.{sub}")
        elif k in BY_NAME:
            out[k] = coerce(BY_NAME[k], v, src, f"base.{k}")
        else:
            raise ConfigError(f"{src}: base.{k}: unknown knob (see `dse params`){_suggest(k, names())}")
    return out


def _int(v: Any, src: str, key: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ConfigError(f"{src}: {key} = {v!r}: must be an integer in [{lo}, {hi}]")
    return v


def _setting(v: Any, kind: str, lo: float, hi: float, src: str, key: str) -> Any:
    if kind == "bool":
        if not isinstance(v, bool):
            raise ConfigError(f"{src}: {key} = {v!r}: must be true or false")
        return v
    if kind == "int":
        return _int(v, src, key, int(lo), int(hi))
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
        raise ConfigError(f"{src}: {key} = {v!r}: must be a number in [{lo:g}, {hi:g}]")
    return float(v)


