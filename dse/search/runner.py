"""Run a study: optuna ask/tell in batches, evaluation fanned out to joblib process workers.

The driver (this process) alone talks to the storage: it asks a batch of trials, turns each
into a design (``StudyConfig.design``), evaluates the designs not seen before on every
workload model in worker processes (joblib / loky), and tells the results back in trial order.
Hence a seeded study gives the same trials whatever ``jobs`` is (the batch size is a study
setting, never derived from ``jobs``).

Per trial the storage keeps two user attributes (few writes: each costs a transaction):

* ``design_key``  digest of the resolved design (cache key: a design is evaluated once per
                  study; a repeated proposal is told the cached result)
* ``dse``         ``{"design": flat knobs without the model, "metrics": {model: metrics},
                  "feasible": bool, "reason": str}``, plus ``"duplicate_of": first trial`` for a
                  repeated design (metrics then live with the first) or ``"error"`` for a failed one
and the constraint values optuna's samplers read (``Trial.set_constraint``, <= 0 satisfied):
``infeasible_workloads`` then ``c0``, ``c1``, ... in the order of the objective file.

Resume: ``trials`` is a target count of finished trials; re-running the same study continues
until the target. Ctrl-C fails the in-flight trials and re-queues their parameters, so the next
run evaluates them first; a driver killed outright leaves RUNNING trials whose heartbeat
expires, and the next run fails and re-queues them (``RetryFailedTrialCallback``).
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from dse.errors import ConfigError
from dse.search.objectives import score
from dse.search.storage import mask_url, open_storage
from dse.search.study import StudyConfig

Evaluator = Callable[[Mapping[str, Any], Sequence[str]], dict[str, dict[str, Any]]]


# ---- evaluation (runs in worker processes) -----------------------------------------------
def evaluate_design(design: Mapping[str, Any], models: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Evaluate one design on every model: ``{model: metrics}`` (JSON-able). A knob combination
    the spec rejects is an infeasible result, not an error."""
    from dse.model.evaluate import evaluate
    from dse.spec import DesignPoint
    out: dict[str, dict[str, Any]] = {}
    for m in models:
        try:
            pt = DesignPoint.from_dict({**design, "model": m})
        except ConfigError as exc:
            out[m] = {"feasible": False, "infeasible_reason": f"invalid design: {exc}"}
            continue
        out[m] = jsonable(evaluate(pt).metrics)
    return out


def _safe_eval(fn: Evaluator, design: Mapping[str, Any], models: Sequence[str]) -> tuple[str, Any]:
    try:
        return "ok", fn(design, models)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # a model bug: the trial fails with the error recorded, the study goes on
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return "error", tb


def jsonable(m: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in m.items():
        if hasattr(v, "item") and callable(v.item):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        if isinstance(v, (list, tuple)):
            v = [x.item() if hasattr(x, "item") else x for x in v]
        if v is None or isinstance(v, (bool, int, float, str, list, dict)):
            out[k] = v
    return out


def design_key(cfg: StudyConfig, design: Mapping[str, Any]) -> str:
    """Digest of a design: knobs resolved (derived PE groups filled), model excluded."""
    from dse.spec import DesignPoint
    try:
        d = DesignPoint.from_dict({**design, "model": cfg.models[0]}).to_dict()
        d["pe_groups_per_core"] = d["pe_groups_per_core"] or d["core_side"] ** 2
        d.pop("model")
    except ConfigError:
        d = dict(design)
    blob = json.dumps(d, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


# ---- samplers ----------------------------------------------------------------------------
def make_sampler(cfg: StudyConfig, n_existing: int):
    """The study's sampler, seeded from the study seed and the number of trials already in the
    study (a fresh study uses the seed itself; a resumed one does not replay its first proposals)."""
    import optuna
    seed = (cfg.seed + n_existing) % (2**32)
    s = dict(cfg.sampler_settings)
    if cfg.sampler == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, **s)
    if cfg.sampler == "tpe":
        s.setdefault("constant_liar", cfg.batch > 1)
        if s.get("group"):
            s["multivariate"] = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return optuna.samplers.TPESampler(seed=seed, **s)
    if cfg.sampler == "gp":
        try:
            import scipy  # noqa: F401
            import torch  # noqa: F401
        except ImportError:
            raise ConfigError(f"{cfg.source}: sampler.name = 'gp': needs torch and scipy "
                              f"(pip install 'rexpert-dse[gp]'); or use nsga2, tpe, random, grid") from None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return optuna.samplers.GPSampler(seed=seed, **s)
    return optuna.samplers.RandomSampler(seed=seed)   # random, and grid (its points are enqueued)


def storage_label(cfg: StudyConfig) -> str:
    """Where the study lives, safe to print (password masked)."""
    return mask_url(cfg.storage) if cfg.storage else str(cfg.results_dir / f"{cfg.base_name}.db")


# ---- opening the study -------------------------------------------------------------------
def open_study(cfg: StudyConfig, *, create: bool, n_existing_hint: int | None = None):
    """Open (or create) the optuna study of ``cfg``; check it was made by the same space,
    objectives, workloads and base design."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(cfg.storage, cfg.name, cfg.results_dir, stem=cfg.base_name)
    where = storage_label(cfg)
    try:
        sid = storage.get_study_id_from_name(cfg.name)
    except KeyError:
        sid = None
    if sid is None and not create:
        raise ConfigError(f"{cfg.source}: no study {cfg.name!r} in {where}; run `dse run {cfg.source.name}` "
                          f"first (with the same --storage/--model/--seed)")
    n_existing = 0 if sid is None else storage.get_n_trials(sid)
    sampler = make_sampler(cfg, n_existing)
    study = optuna.create_study(study_name=cfg.name, storage=storage, sampler=sampler,
                                directions=cfg.objectives.directions, load_if_exists=True)
    fp = cfg.fingerprint()
    attrs = study.user_attrs
    if "dse_fingerprint" not in attrs:
        from dse import __version__
        study.set_user_attr("dse", {"study_file": str(cfg.source), "objectives": cfg.objectives.names,
                                    "directions": cfg.objectives.directions,
                                    "constraints": [c.name for c in cfg.objectives.constraints],
                                    "models": list(cfg.models), "seed": cfg.seed, "version": __version__})
        study.set_user_attr("dse_fingerprint", fp)
    elif attrs["dse_fingerprint"] != fp:
        raise ConfigError(f"{cfg.source}: study {cfg.name!r} in {where} was created from a different space, "
                          f"objectives, workloads or base design; give [study] a new name, pass another "
                          f"--storage, or delete the old results")
    return study, storage


# ---- the run loop -------------------------------------------------------------------------
@dataclass
class RunSummary:
    study: str
    storage: str
    target: int
    complete: int                 # finished trials in the study after the run
    new_trials: int               # trials told by this run
    evaluations: int              # designs actually evaluated by this run
    duplicates: int               # trials answered from the cache
    feasible: int                 # feasible trials in the study
    errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0
    interrupted: bool = False
    exhausted: bool = False       # grid: every point done
    extra: dict[str, Any] = field(default_factory=dict)


class _Heartbeat:
    """Record heartbeats of in-flight trials while a batch evaluates (RDB storages only)."""

    def __init__(self, storage, trial_ids: list[int]):
        from optuna.storages._heartbeat import BaseHeartbeat, is_heartbeat_enabled
        self.ok = isinstance(storage, BaseHeartbeat) and is_heartbeat_enabled(storage)
        self.storage, self.ids = storage, trial_ids
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def beat(self) -> None:
        for tid in self.ids:
            try:
                self.storage.record_heartbeat(tid)
            except Exception:  # a missed beat is not fatal; the grace period covers it
                pass

    def __enter__(self):
        if self.ok:
            self.beat()
            interval = self.storage.get_heartbeat_interval() or 10
            self.thread = threading.Thread(target=self._loop, args=(interval,), daemon=True)
            self.thread.start()
        return self

    def _loop(self, interval: float) -> None:
        while not self.stop.wait(interval):
            self.beat()

    def __exit__(self, *exc):
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=5)


def run_study(cfg: StudyConfig, *, jobs: int = 1, progress: bool = False,
              evaluator: Evaluator | None = None, max_batches: int | None = None) -> RunSummary:
    """Run (or resume) ``cfg`` until it has ``cfg.trials`` finished trials.

    ``evaluator`` replaces :func:`evaluate_design` (tests); ``max_batches`` stops early.
    """
    with quiet_optuna():
        return _run_study(cfg, jobs=jobs, progress=progress, evaluator=evaluator, max_batches=max_batches)


class quiet_optuna(warnings.catch_warnings):
    """Silence optuna's experimental-feature and ask/tell-heartbeat notices (not user problems)."""

    def __enter__(self):
        out = super().__enter__()
        import optuna
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        return out


def _run_study(cfg: StudyConfig, *, jobs: int, progress: bool, evaluator: Evaluator | None,
               max_batches: int | None) -> RunSummary:
    import optuna
    t0 = time.perf_counter()
    study, storage = open_study(cfg, create=True)
    optuna.storages.fail_stale_trials(study)
    fn = evaluator or evaluate_design
    cache, complete, feasible = _load_cache(study)
    target = cfg.trials
    env = cfg.base_env()
    grid, waiting = None, 0
    if cfg.sampler == "grid":
        waiting_params = _waiting_params(study)
        waiting = len(waiting_params)
        grid = _grid_queue(cfg, cache, waiting_params)
        target = min(target, complete + waiting + len(grid))
    summary = RunSummary(cfg.name, storage_label(cfg), target,
                         complete, 0, 0, 0, feasible)
    bar = _progress(progress, target, complete, cfg.name)
    pool = _Pool(jobs)
    batches = 0
    try:
        while complete < target and (max_batches is None or batches < max_batches):
            k = min(cfg.batch, target - complete)
            if grid is not None:
                n_new = max(0, k - waiting)
                for params in grid[:n_new]:
                    study.enqueue_trial(params)
                del grid[:n_new]
                k = min(k, waiting + n_new)
                waiting = max(0, waiting - k)
                if k == 0:
                    break
            trials = [study.ask() for _ in range(k)]
            inflight = list(trials)
            with _Heartbeat(storage, [t._trial_id for t in trials]):
                try:
                    designs, keys = [], []
                    for t in trials:
                        values = cfg.space.suggest(t, env)
                        d = cfg.design(values)
                        designs.append(d)
                        keys.append(design_key(cfg, d))
                    todo: dict[str, dict[str, Any]] = {}
                    for key, d in zip(keys, designs):
                        if key not in cache and key not in todo:
                            todo[key] = d
                    results = pool.map(fn, list(todo.values()), cfg.models)
                    fresh = dict(zip(todo.keys(), results))
                    summary.evaluations += len(todo)
                    for t, key, d in zip(trials, keys, designs):
                        if key in cache:
                            rec = cache[key]
                            _tell(study, cfg, t, key, d, rec["status"], rec["result"], duplicate_of=rec["trial"])
                            summary.duplicates += 1
                            status, res = rec["status"], rec["result"]
                        else:
                            status, res = fresh[key]
                            _tell(study, cfg, t, key, d, status, res)
                            if status == "ok":
                                cache[key] = {"trial": t.number, "status": status, "result": res}
                        inflight.remove(t)
                        summary.new_trials += 1
                        if status == "ok":
                            complete += 1
                            if score(res, cfg.objectives).feasible:
                                feasible += 1
                        else:
                            summary.errors += 1
                            summary.first_error = summary.first_error or str(res)
                        if bar is not None:
                            bar.update(1 if status == "ok" else 0)
                            bar.set_postfix(feasible=feasible, refresh=False)
                except BaseException:
                    _requeue(study, inflight)
                    raise
            batches += 1
            if summary.errors and summary.errors >= max(10, summary.new_trials // 2):
                raise ConfigError(f"{cfg.source}: {summary.errors} of {summary.new_trials} evaluations failed "
                                  f"(first: {summary.first_error}); stopping")
    except KeyboardInterrupt:
        summary.interrupted = True
        raise
    finally:
        pool.close()
        if bar is not None:
            bar.close()
        summary.complete, summary.feasible = complete, feasible
        summary.elapsed_s = time.perf_counter() - t0
    summary.exhausted = grid is not None and not grid
    return summary


def _tell(study, cfg: StudyConfig, trial, key: str, design: Mapping[str, Any], status: str, res: Any,
          duplicate_of: int | None = None) -> None:
    """Store the trial's record (two user attributes, to keep storage writes few) and tell it."""
    from optuna.trial import TrialState
    rec: dict[str, Any] = {"design": dict(design)}
    if duplicate_of is not None:
        rec["duplicate_of"] = duplicate_of
    trial.set_user_attr("design_key", key)
    if status != "ok":
        rec["error"] = str(res)
        trial.set_user_attr("dse", rec)
        study.tell(trial, state=TrialState.FAIL)
        return
    sc = score(res, cfg.objectives)
    if duplicate_of is None:
        rec["metrics"] = res
    rec["feasible"], rec["reason"] = sc.feasible, sc.reason
    trial.set_user_attr("dse", rec)
    for name, v in zip(constraint_keys(cfg), sc.constraints):
        trial.set_constraint(name, v)
    study.tell(trial, values=sc.values)


def constraint_keys(cfg: StudyConfig) -> list[str]:
    """Names of the constraint values given to optuna (``Trial.set_constraint``)."""
    return ["infeasible_workloads"] + [f"c{i}" for i in range(len(cfg.objectives.constraints))]


def _requeue(study, trials: list) -> None:
    """Fail the in-flight trials of an interrupted batch and queue their parameters again."""
    from optuna.trial import TrialState
    for t in trials:
        try:
            if t.params:
                study.enqueue_trial(dict(t.params), user_attrs={"requeued_from": t.number})
            study.tell(t, state=TrialState.FAIL)
        except Exception:
            pass


def _load_cache(study) -> tuple[dict[str, dict[str, Any]], int, int]:
    """Designs already evaluated in the study (first trial of each), and trial counts."""
    from optuna.trial import TrialState
    cache: dict[str, dict[str, Any]] = {}
    complete = feasible = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        complete += 1
        rec = t.user_attrs.get("dse", {})
        if rec.get("feasible"):
            feasible += 1
        key = t.user_attrs.get("design_key")
        if key and "metrics" in rec and key not in cache:
            cache[key] = {"trial": t.number, "status": "ok", "result": rec["metrics"]}
    return cache, complete, feasible


def _waiting_params(study) -> list[dict[str, Any]]:
    """Parameters of trials already queued (e.g. re-queued after an interruption)."""
    from optuna.trial import TrialState
    return [dict(t.system_attrs.get("fixed_params", {}))
            for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))]


def _grid_queue(cfg: StudyConfig, cache: Mapping[str, Any],
                waiting: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """Grid points whose design the study has neither evaluated nor queued, in grid order."""
    out = []
    seen = set(cache)
    fixed = {d.name: d.value for d in cfg.space.dims if d.type == "fixed"}
    for params in waiting:
        seen.add(design_key(cfg, cfg.design({**fixed, **params})))
    for params in cfg.space.grid(cfg.base_env()):
        key = design_key(cfg, cfg.design(params))
        if key in seen:
            continue
        seen.add(key)
        out.append({k: v for k, v in params.items()
                    if any(d.name == k and d.searched for d in cfg.space.dims)})
    return out


def _progress(enabled: bool, total: int, initial: int, name: str):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, unit="trial", desc=name, dynamic_ncols=True, smoothing=0.1)


class _Pool:
    """joblib process pool (loky) kept for the whole run; ``jobs == 1`` evaluates in-process."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.par = None

    def map(self, fn: Evaluator, designs: list[dict[str, Any]], models: Sequence[str]) -> list[tuple[str, Any]]:
        if not designs:
            return []
        if self.jobs == 1 or len(designs) == 1:
            return [_safe_eval(fn, d, models) for d in designs]
        from joblib import Parallel, delayed
        if self.par is None:
            self.par = Parallel(n_jobs=self.jobs, backend="loky")
            self.par.__enter__()
        return list(self.par(delayed(_safe_eval)(fn, d, models) for d in designs))

    def close(self) -> None:
        if self.par is not None:
            self.par.__exit__(None, None, None)
            self.par = None
