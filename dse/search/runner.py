"""Run a study: optuna ask/tell in batches, evaluation fanned out to joblib process workers.

The driver (this process) alone talks to the storage: it asks a batch of trials, turns each
into a design (``StudyConfig.design``), hands the designs not seen before to worker processes
(joblib's loky executor) as soon as they are known, and tells the results back in trial order.
Hence a seeded study gives the same trials whatever ``jobs`` is (the batch size is a study
setting, never derived from ``jobs``).

The sampler works on an in-memory mirror of the study and every finished trial is written to
the persistent storage in one transaction (see ``_Mirror``); a run never leaves RUNNING trials
behind, so a run stopped by Ctrl-C or killed outright loses only its in-flight evaluations.

Per trial the storage keeps two user attributes:

* ``design_key``  digest of the resolved design (cache key: a design is evaluated once per
                  study; a repeated proposal is told the cached result)
* ``dse``         ``{"design": flat knobs without the model, "metrics": {model: metrics},
                  "feasible": bool, "reason": str}``, plus ``"duplicate_of": first trial`` for a
                  repeated design (metrics then live with the first) or ``"error"`` for a failed one

and the constraint values optuna's samplers read (``Trial.set_constraint``, <= 0 satisfied):
``infeasible_workloads`` then ``c0``, ``c1``, ... in the order of the objective file.

Resume: ``trials`` is a target count of finished trials; re-running the same study continues
until the target (the sampler is re-seeded with seed + trials so far, so it does not replay its
first proposals). Trials another process left RUNNING with a stale heartbeat (``dse worker``)
are failed and re-queued by the storage's retry callback; the next run evaluates them first.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from dse.distributed.fill import finish_trial
from dse.errors import ConfigError
from dse.search.objectives import score
from dse.search.storage import mask_url, open_storage
from dse.search.study import StudyConfig

Evaluator = Callable[[Mapping[str, Any], Sequence[str]], dict[str, dict[str, Any]]]


# ---- evaluation (runs in worker processes) -----------------------------------------------
def evaluate_design(design: Mapping[str, Any], models: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Evaluate one design on every model: ``{model: metrics}`` (JSON-able). A knob combination
    the spec rejects is an infeasible result, not an error."""
    from dse.pipeline.evaluate import evaluate
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
    from dse.spec import DesignPoint, default_pe_groups
    try:
        d = DesignPoint.from_dict({**design, "model": cfg.models[0]}).to_dict()
        d["pe_groups_per_core"] = d["pe_groups_per_core"] or default_pe_groups(d["core_side"])
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
        raise ConfigError(f"{cfg.source}: no study {cfg.name!r} in {where}; run `dse run {cfg.command_args()}` "
                          f"first")
    n_existing = 0 if sid is None else storage.get_n_trials(sid)
    sampler = make_sampler(cfg, n_existing)
    study = optuna.create_study(study_name=cfg.name, storage=storage, sampler=sampler,
                                directions=cfg.objectives.directions, load_if_exists=True)
    fp = cfg.fingerprint()
    attrs = study.user_attrs
    if "dse_fingerprint" not in attrs:
        from dse.version import __version__
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


def run_study(cfg: StudyConfig, *, jobs: int = 1, progress: bool = False,
              evaluator: Evaluator | None = None, max_batches: int | None = None,
              max_evaluations: int | None = None, on_batch: Callable[[dict], None] | None = None,
              backend: str = "loky", scheduler: str | None = None) -> RunSummary:
    """Run (or resume) ``cfg`` until it has ``cfg.trials`` finished trials.

    ``evaluator`` replaces :func:`evaluate_design` (tests); ``max_batches`` stops early;
    ``max_evaluations`` stops once the study holds that many distinct evaluated designs
    (search-quality benchmarks count evaluations, not trials); ``on_batch`` is called after each
    batch with ``{complete, target, feasible, front, elapsed_s, new_trials}`` (progress lines).
    ``backend = "dask"`` sends the evaluations to a dask.distributed cluster (``scheduler``
    address, or a local cluster of ``jobs`` worker processes).
    """
    with quiet_optuna():
        return _run_study(cfg, jobs=jobs, progress=progress, evaluator=evaluator, max_batches=max_batches,
                          max_evaluations=max_evaluations, on_batch=on_batch, backend=backend,
                          scheduler=scheduler)


class quiet_optuna(warnings.catch_warnings):
    """Silence optuna's experimental-feature and ask/tell-heartbeat notices (not user problems)."""

    def __enter__(self):
        out = super().__enter__()
        import optuna
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        return out


class _Mirror:
    """The sampler's view of the study, in memory, mirrored from and to the persistent storage.

    optuna on an RDB storage costs several transactions per ask / suggest / attribute / tell
    (about 60-90 ms per trial on SQLite); here the sampler works on an in-memory study and each
    finished trial is written to the persistent storage in one transaction (``create_new_trial``
    with the finished trial as template). Nothing is ever RUNNING in the persistent storage on
    behalf of ``dse run``: a killed run leaves only finished trials behind.

    ``sync`` copies finished trials of the persistent study the mirror has not seen (all of them
    at start; later, those of ``dse worker`` processes on the same study) and queues the
    parameters of persistent WAITING trials (re-queued dead-worker trials); the result of such a
    trial is written into that same persistent trial.
    """

    def __init__(self, cfg: StudyConfig, pstudy, storage):
        import optuna
        self.cfg, self.storage = cfg, storage
        self.sid = storage.get_study_id_from_name(cfg.name)
        self.pstudy = pstudy
        self.seen: set[int] = set()              # persistent trial ids mirrored or written
        self.waiting: dict[int, int] = {}        # mem trial number -> persistent WAITING trial id
        self.queued: list[int] = []              # persistent WAITING ids queued in mem, in order
        n_existing = storage.get_n_trials(self.sid)
        self.mem = optuna.create_study(directions=cfg.objectives.directions,
                                       sampler=make_sampler(cfg, n_existing))

    def sync(self) -> list:
        """Mirror new persistent trials; return the newly seen finished ones (frozen)."""
        from optuna.trial import TrialState
        new = []
        for t in self.pstudy.get_trials(deepcopy=False):
            tid = t._trial_id
            if tid in self.seen:
                continue
            if t.state.is_finished():
                self.seen.add(tid)
                self.mem.add_trial(t)
                new.append(t)
            elif t.state == TrialState.WAITING and tid not in self.queued:
                self.queued.append(tid)
                # enqueued points carry fixed_params; a re-queued (retried) trial carries the
                # dead trial's params themselves: either way the same design is evaluated again
                self.mem.enqueue_trial(dict(t.system_attrs.get("fixed_params") or t.params))
        return new

    def ask(self):
        t = self.mem.ask()
        fixed = t._cached_frozen_trial.system_attrs.get("fixed_params")
        if fixed is not None and self.queued:
            self.waiting[t.number] = self.queued.pop(0)
        return t

    def tell(self, trial, values: list[float] | None) -> int:
        """Tell the mem trial, write it to the persistent storage; return its persistent number."""
        from optuna.trial import TrialState
        if values is None:
            ft = self.mem.tell(trial, state=TrialState.FAIL)
        else:
            ft = self.mem.tell(trial, values=values)
        pid = self.waiting.pop(trial.number, None)
        if pid is not None:
            self._fill(pid, ft)
        else:
            # a RUNNING trial, then everything at once: one transaction on RDB storages instead of
            # optuna's ~25 statements for a template trial (the driver's serial cost per trial)
            pid = self.storage.create_new_trial(self.sid)
            finish_trial(self.storage, pid, ft)
        self.seen.add(pid)
        return self.storage.get_trial_number_from_id(pid)

    def _fill(self, pid: int, ft) -> None:
        """Write a finished trial into a persistent WAITING trial (claimed first)."""
        st = self.storage
        from optuna.trial import TrialState
        if not st.set_trial_state_values(pid, state=TrialState.RUNNING):
            pid2 = st.create_new_trial(self.sid, template_trial=ft)   # someone else claimed it
            self.seen.add(pid2)
            return
        finish_trial(st, pid, ft)


def _run_study(cfg: StudyConfig, *, jobs: int, progress: bool, evaluator: Evaluator | None,
               max_batches: int | None, max_evaluations: int | None = None,
               on_batch: Callable[[dict], None] | None = None, backend: str = "loky",
               scheduler: str | None = None) -> RunSummary:
    import optuna
    t0 = time.perf_counter()
    pstudy, storage = open_study(cfg, create=True)
    optuna.storages.fail_stale_trials(pstudy)         # trials of dead `dse worker`s: re-queued
    mirror = _Mirror(cfg, pstudy, storage)
    mirror.sync()
    fn = evaluator or evaluate_design
    cache, complete, feasible = _load_cache(pstudy)
    target = cfg.trials
    env = cfg.base_env()
    grid = None
    if cfg.sampler == "grid":
        waiting_params = _waiting_params(pstudy)
        grid = _grid_queue(cfg, cache, waiting_params)
        target = min(target, complete + len(waiting_params) + len(grid))
    summary = RunSummary(cfg.name, storage_label(cfg), target, complete, 0, 0, 0, feasible)
    bar = _progress(progress, target, complete, cfg.name)
    pool = _make_pool(jobs, backend, scheduler) if complete < target else _Pool(1)
    if (jobs != 1 or backend != "loky") and complete < target:
        from dse.search import warm
        warm.warm_traces(cfg)
        warm.warm_placements(cfg, pool)
    batches = 0
    try:
        while complete < target and (max_batches is None or batches < max_batches):
            if batches:
                for t in mirror.sync():                   # trials other processes finished meanwhile
                    if t.state.name == "COMPLETE":
                        complete += 1
                        rec = t.user_attrs.get("dse", {})
                        feasible += bool(rec.get("feasible"))
                        key = t.user_attrs.get("design_key")
                        if key and "metrics" in rec and key not in cache:
                            cache[key] = {"trial": t.number, "status": "ok", "result": rec["metrics"]}
                if complete >= target:
                    break
            k = min(cfg.batch, target - complete)
            if max_evaluations is not None:
                k = min(k, max_evaluations - len(cache))
                if k <= 0:
                    break
            if grid is not None:
                queued = len(mirror.queued)
                n_new = max(0, k - queued)
                for params in grid[:n_new]:
                    mirror.mem.enqueue_trial(params)
                del grid[:n_new]
                k = min(k, queued + n_new)
                if k == 0:
                    break
            # Ask the whole batch before telling anything (the sampler sees the same state whatever
            # `jobs` is); each new design is handed to the workers as soon as it is known, so the
            # workers evaluate while the driver is still asking and, later, telling.
            trials, designs, keys = [], [], []
            pending: dict[str, Any] = {}
            for _ in range(k):
                t = mirror.ask()
                d = cfg.design(cfg.space.suggest(t, env))
                key = design_key(cfg, d)
                trials.append(t)
                designs.append(d)
                keys.append(key)
                if key not in cache and key not in pending:
                    pending[key] = pool.submit(fn, d, cfg.models)
            summary.evaluations += len(pending)
            for t, key, d in zip(trials, keys, designs):
                if key in cache:
                    rec = cache[key]
                    status, res = rec["status"], rec["result"]
                    values = _record(cfg, t, key, d, status, res, duplicate_of=rec["trial"])
                    number = mirror.tell(t, values)
                    summary.duplicates += 1
                else:
                    status, res = pool.result(pending[key])
                    values = _record(cfg, t, key, d, status, res)
                    number = mirror.tell(t, values)
                    if status == "ok":
                        cache[key] = {"trial": number, "status": status, "result": res}
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
            batches += 1
            if on_batch is not None:
                on_batch({"complete": complete, "target": target, "feasible": feasible,
                          "front": len({t.user_attrs.get("design_key") for t in mirror.mem.best_trials}), "elapsed_s": time.perf_counter() - t0,
                          "new_trials": summary.new_trials})
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


def _record(cfg: StudyConfig, trial, key: str, design: Mapping[str, Any], status: str, res: Any,
            duplicate_of: int | None = None) -> list[float] | None:
    """Set the trial's user attributes and constraints; return its objective values (None: failed)."""
    rec: dict[str, Any] = {"design": dict(design)}
    if duplicate_of is not None:
        rec["duplicate_of"] = duplicate_of
    trial.set_user_attr("design_key", key)
    if status != "ok":
        rec["error"] = str(res)
        trial.set_user_attr("dse", rec)
        return None
    sc = score(res, cfg.objectives)
    if duplicate_of is None:
        rec["metrics"] = res
    rec["feasible"], rec["reason"] = sc.feasible, sc.reason
    trial.set_user_attr("dse", rec)
    for name, v in zip(constraint_keys(cfg), sc.constraints):
        trial.set_constraint(name, v)
    return sc.values


def _tell(study, cfg: StudyConfig, trial, key: str, design: Mapping[str, Any], status: str, res: Any,
          duplicate_of: int | None = None) -> None:
    """Record and tell a trial of ``study`` directly (storage-level workers, ``dse worker``)."""
    from optuna.trial import TrialState
    values = _record(cfg, trial, key, design, status, res, duplicate_of)
    if values is None:
        study.tell(trial, state=TrialState.FAIL)
    else:
        study.tell(trial, values=values)


def constraint_keys(cfg: StudyConfig) -> list[str]:
    """Names of the constraint values given to optuna (``Trial.set_constraint``)."""
    return ["infeasible_workloads"] + [f"c{i}" for i in range(len(cfg.objectives.constraints))]


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


def _worker_init() -> None:
    """Runs in each worker process. loky restarts a worker whose memory grew by more than
    300 MB, taking it for a leak; the model's per-process caches (synthetic traces, placements)
    are deliberate and a restart would regenerate them, so the threshold is raised here."""
    try:
        from joblib.externals.loky import process_executor
        process_executor._MAX_MEMORY_LEAK_SIZE = int(64e9)
    except (ImportError, AttributeError):  # another joblib layout: keep its default
        pass


def _make_pool(jobs: int, backend: str, scheduler: str | None):
    if backend == "dask":
        from dse.search.dask_pool import DaskPool
        return DaskPool(_safe_eval, scheduler=scheduler, workers=jobs)
    return _Pool(jobs)


class _Pool:
    """Process workers (joblib's loky executor, reused across batches); ``jobs == 1`` evaluates
    in this process, lazily, when the result is asked for."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.executor = None

    def submit(self, fn: Evaluator, design: Mapping[str, Any], models: Sequence[str]):
        if self.jobs == 1:
            return (fn, design, models)
        if self.executor is None:
            from joblib.externals.loky import get_reusable_executor
            n = self.jobs if self.jobs > 0 else None
            self.executor = get_reusable_executor(max_workers=n, timeout=300, initializer=_worker_init)
        return self.executor.submit(_safe_eval, fn, dict(design), tuple(models))

    def result(self, handle) -> tuple[str, Any]:
        if isinstance(handle, tuple):
            return _safe_eval(*handle)
        try:
            return handle.result()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # a worker died (killed, out of memory): the run stops, trials re-queued
            from dse.errors import DSEError
            raise DSEError(f"an evaluation worker died ({type(exc).__name__}: {exc}); "
                           f"re-run the same command to resume") from None

    def map(self, fn: Evaluator, designs: list[dict[str, Any]], models: Sequence[str]) -> list[tuple[str, Any]]:
        """Evaluate every design (results in order)."""
        handles = [self.submit(fn, d, models) for d in designs]
        return [self.result(h) for h in handles]

    def close(self) -> None:
        self.executor = None   # the reusable executor stays warm for the next run in this process
