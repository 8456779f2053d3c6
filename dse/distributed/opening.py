"""Opening a worker's study: its name, its sampler's seed, the study created once, the shared
study (reservations) and the worker's own sampler (the in-memory mirror)."""
from __future__ import annotations

import hashlib
import os
import socket

from dse.errors import ConfigError
from dse.search.propose.samplers import make_sampler
from dse.search.storage.storage import open_storage, open_study
from dse.search.study.study import StudyConfig


def check_heartbeat(interval_s: int) -> int:
    """A ``--heartbeat`` value (seconds), checked."""
    if not 1 <= interval_s <= 3600:
        raise ConfigError(f"--heartbeat {interval_s}: must be an integer number of seconds in [1, 3600]")
    return int(interval_s)


def worker_name(worker_id: str | None) -> str:
    """A name for this worker (``host:pid`` unless given)."""
    return worker_id or f"{socket.gethostname()}:{os.getpid()}"


def worker_seed(study_seed: int, worker: str) -> int:
    """Sampler seed of one worker: the study seed mixed with the worker's name."""
    digest = hashlib.sha256(f"{study_seed}:{worker}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def create_once(cfg: StudyConfig) -> bool:
    """Create the study if absent; True for the one process that created it."""
    import optuna
    from optuna.exceptions import DuplicatedStudyError
    storage = open_storage(cfg.storage, cfg.name, cfg.results_dir, stem=cfg.base_name, heartbeat_s=cfg.heartbeat_s)
    try:
        storage.get_study_id_from_name(cfg.name)
        return False
    except KeyError:
        pass
    try:
        optuna.create_study(study_name=cfg.name, storage=storage, directions=cfg.objectives.directions,
                            load_if_exists=False)
        return True
    except DuplicatedStudyError:
        return False
    finally:
        engine = getattr(storage, "engine", None)
        if engine is not None:
            engine.dispose()


def open_worker_study(cfg: StudyConfig, worker: str):
    """(study, raw storage, sampler, created): ``sampler`` is this worker's (seeded by its name),
    for the in-memory mirror where it draws; the shared study only reserves trials, so it gets a
    random sampler, never asked (the worker's sampler there read every trial of the study into
    optuna's cache to prepare trials it never sampled)."""
    import optuna
    created = create_once(cfg)
    seed = worker_seed(cfg.seed, worker)
    study, storage = open_study(cfg, create=True, sampler=optuna.samplers.RandomSampler(seed=seed), pre_ping=False)
    return study, storage, make_sampler(cfg, seed), created
