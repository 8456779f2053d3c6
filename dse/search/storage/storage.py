"""Where studies live: optuna storage construction and password-safe display.

* no URL           -> SQLite file ``<results_dir>/<study file stem>.db`` (the folder is created;
                      never the working directory)
* ``sqlite:///..``, ``postgresql://..``, ``mysql://..`` -> optuna RDBStorage (SQLite in WAL mode) with heartbeats
                      (``heartbeat_interval``, ``grace_period``) and
                      a retry callback (``RetryHeartbeatStaleTrialCallback``), so a trial whose driver died is failed
                      and re-queued (same parameters) on the next run
* ``journal:PATH``, ``file:PATH`` or a path ending in ``.log`` / ``.jsonl`` -> JournalStorage on
                      a file (NFS-friendly, no server)
* any other plain path -> that SQLite file (``copy.db`` = ``sqlite:///ABS/copy.db``)

``open_study`` opens the study of a ``StudyConfig`` and checks its fingerprint; ``finish_trial``
writes a finished trial in one transaction; ``quiet_optuna`` is the one place optuna's log level
and notices are set. ``mask_url`` hides passwords whenever a URL is printed.

``read_only=True`` (front, plot, export, report, compare, study list) never creates or changes
anything: a missing file is ``MissingStorage``, SQLite is opened ``mode=ro``, no table is created
and PostgreSQL sessions refuse writes.
"""
from __future__ import annotations

import atexit
import random
import re
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

from dse.errors import ConfigError
from dse.lifetime import quiet_interrupted_cleanup
from dse.search.storage import optuna_compat
from dse.search.storage.sqlite_guard import sqlite_engine_kwargs
from dse.search.storage.stored import FORM_ATTR, constraint_keys, demote_twins, migrate, stored_form
from dse.search.storage.target import RDB_SCHEMES, check_target, is_journal, journal_path, sqlite_path  # noqa: F401

HEARTBEAT_INTERVAL_S = 10          # default; a study's ``heartbeat`` or ``dse worker --heartbeat`` sets it
HEARTBEAT_GRACE_INTERVALS = 3      # a RUNNING trial silent for this many intervals is stale
MAX_RETRY = 3
SCHEMA_RACE_RETRIES = 5


class MissingStorage(ConfigError):
    """A read-only open of a storage that does not exist (nothing was created)."""


def default_url(results_dir: Path, stem: str, *, create: bool = True) -> str:
    """SQLite file under ``results_dir`` (the folder is created unless ``create`` is false)."""
    if create:
        try:
            results_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{results_dir}: cannot create the results folder ({exc.strerror})") from None
    return f"sqlite:///{(results_dir / f'{stem}.db').resolve()}"


def normalise_url(text: str) -> str:
    """A storage URL as given (``scheme://...``, ``journal:FILE``, ``*.log`` / ``*.jsonl``), or
    ``sqlite:///ABS_PATH`` for any other plain path."""
    if "://" in text or is_journal(text):     # anything with :// is a URL (its password masked), never a path
        return text
    try:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    except (ValueError, OSError, RuntimeError) as exc:   # a NUL byte, a symlink loop, no home folder
        raise ConfigError(f"storage {text!r}: not a usable file path ({exc}); allowed: a file path, "
                          f"sqlite:///FILE, postgresql://..., mysql://..., journal:FILE") from None


class quiet_optuna(warnings.catch_warnings):
    """Silence optuna's experimental-feature and ask/tell-heartbeat notices (not user problems) and
    set its log level to warnings (the one place dse sets it)."""

    def __enter__(self):
        out = super().__enter__()
        import optuna
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        return out


def open_storage(url_or_none: str | None, study_name: str, results_dir: Path, stem: str | None = None,
                 heartbeat_s: int = HEARTBEAT_INTERVAL_S, *, read_only: bool = False, pre_ping: bool = True):
    """Build the optuna storage for a study (see the module docstring for the URL forms).

    ``study_name`` names the default SQLite file when ``stem`` is not given. RDB storages record
    heartbeats every ``heartbeat_s`` seconds; a trial silent for ``HEARTBEAT_GRACE_INTERVALS``
    of them is failed and re-queued. ``read_only``: create nothing (``MissingStorage`` when the
    file is not there), write nothing. ``pre_ping``: a server connection is tested before each
    transaction (a round trip; off for ``dse worker``, whose lost connections ``reconnect`` handles).
    """
    with quiet_optuna():
        return _open_storage(url_or_none, study_name, results_dir, stem, heartbeat_s, read_only, pre_ping)


def _open_storage(url_or_none: str | None, study_name: str, results_dir: Path, stem: str | None,
                  heartbeat_s: int, read_only: bool, pre_ping: bool = True):
    from optuna.storages import RDBStorage

    from dse.search.storage import rdb_version
    rdb_version.install()          # optuna's schema-version check without alembic (0.3-0.4 s less)

    url = normalise_url(url_or_none) if url_or_none else \
        default_url(Path(results_dir), stem or _safe(study_name), create=not read_only)
    check_target(url, mask_url(url), write=not read_only)    # one line, nothing created (dse.search.storage.target)
    if is_journal(url):
        return _open_journal(url, read_only)
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
    db = sqlite_path(url) if scheme == "sqlite" else None
    if db is not None:
        if read_only and not db.is_file():
            raise MissingStorage(f"{db}: no such file")
    engine_kwargs = sqlite_engine_kwargs(url, read_only) if scheme == "sqlite" else \
        {"pool_pre_ping": pre_ping, **(_read_only_pg(scheme) if read_only else {})}
    try:
        for attempt in range(SCHEMA_RACE_RETRIES + 1):
            try:
                return _closed_at_exit(RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_s,
                                                  grace_period=HEARTBEAT_GRACE_INTERVALS * heartbeat_s,
                                                  skip_table_creation=read_only, **retry_callback()), read_only)
            except Exception as exc:
                # Several processes opening a fresh database at once race to create optuna's tables
                # (PostgreSQL: duplicate key in pg_type / relation already exists); the loser retries.
                from sqlalchemy.exc import IntegrityError, ProgrammingError
                if attempt == SCHEMA_RACE_RETRIES or not isinstance(exc, (IntegrityError, ProgrammingError)):
                    raise
                time.sleep(0.2 + random.random() * (attempt + 1))
    except ImportError as exc:
        raise ConfigError(f"storage {mask_url(url)}: missing database driver ({exc})") from None
    except Exception as exc:  # sqlalchemy / driver errors: one line, password masked
        inner = exc     # the driver's message, not optuna's commit wrapper
        while inner.__cause__ is not None and str(inner.__cause__).strip():
            inner = inner.__cause__
        msg = str(inner).strip().splitlines()[0] if str(inner).strip() else type(exc).__name__
        if read_only and ("no such table" in msg or "does not exist" in msg):
            raise MissingStorage(f"storage {mask_url(url)}: holds no study") from None
        if "no longer compatible with the table schema" in msg:    # a server database of a newer optuna
            raise ConfigError(f"storage {mask_url(url)}: its schema is not this optuna's "
                              f"({mask_text(msg, url)[:200]}); upgrade optuna (pip install -U optuna) "
                              f"or use the optuna that created it") from None
        if db is not None:
            raise ConfigError(f"{db}: cannot open the study database ({msg})") from None
        hint = ("; the server's max_connections is reached: run fewer workers, or raise max_connections"
                if "too many clients" in msg.lower() or "too many connections" in msg.lower() else
                "; give the password in DSE_STORAGE, PGPASSWORD, ~/.pgpass or a PGSERVICEFILE service"
                if "no password supplied" in msg or "password authentication failed" in msg else "")
        raise ConfigError(f"storage {mask_url(url)}: cannot connect ({mask_text(msg, url)}){hint}") from None


_ENGINES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # RDB engine -> read-only


def _closed_at_exit(storage, read_only: bool):
    """Register an RDB storage's engine so that its connections are closed at exit, even when
    the process skips the interpreter's teardown (``dse.lifetime.exit_now``)."""
    if not _ENGINES:
        atexit.unregister(close_storages)
        atexit.register(close_storages)
    _ENGINES[storage.engine] = read_only
    quiet_interrupted_cleanup(storage.engine.pool.logger)
    return storage


def close_storage(storage: Any) -> None:
    """Close an RDB storage's pooled connections (other storages hold none); it reconnects if used
    again. A SQLite study whose writer closes while no other connection is open is left whole in
    one file (its write-ahead log checkpointed and removed)."""
    engine = getattr(storage, "engine", None)
    if engine is not None:
        engine.dispose()


def close_storages() -> int:
    """Close the pooled connections of every RDB storage engine of this process still alive,
    read-only ones first; the number of engines. A SQLite file's last connection, if it may
    write, checkpoints the write-ahead log into the file and removes the ``-wal`` file: the study
    is whole in one file again (a read-only connection closing last leaves the log beside it).
    A storage used again afterwards reconnects."""
    engines = sorted(_ENGINES.items(), key=lambda kv: not kv[1])
    for engine, _ in engines:
        engine.dispose()
    return len(engines)


def study_sqlite_path(cfg: Any) -> Path | None:
    """The SQLite file of the study ``cfg`` (its folder created), None for other storages."""
    url = normalise_url(cfg.storage) if cfg.storage else default_url(Path(cfg.results_dir), cfg.base_name)
    check_target(url, mask_url(url), write=True)     # before the run lock is taken beside it
    return sqlite_path(url)


def _open_journal(url: str, read_only: bool):
    """JournalStorage on a file (created unless ``read_only``)."""
    from optuna.storages import JournalStorage
    path = journal_path(url)
    if read_only and not path.is_file():
        raise MissingStorage(f"{path}: no such file")
    try:
        from dse.search.storage.journal import ChunkedJournalFileBackend
        return JournalStorage(ChunkedJournalFileBackend(str(path)))
    except OSError as exc:
        raise ConfigError(f"storage {mask_url(url)}: cannot open the journal file ({exc.strerror})") from None


def _read_only_pg(scheme: str) -> dict:
    """PostgreSQL sessions that refuse writes (a read-only command cannot change the study)."""
    if scheme in ("postgresql", "postgres"):
        return {"connect_args": {"options": "-c default_transaction_read_only=on"}}
    return {}


def retry_callback() -> dict:
    """Re-queue a trial whose driver died (heartbeat stale), keeping its parameters.
    optuna >= 4.9 names it ``heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback``;
    older releases ``failed_trial_callback=RetryFailedTrialCallback`` (same behaviour)."""
    import optuna.storages as st
    if hasattr(st, "RetryHeartbeatStaleTrialCallback"):
        return {"heartbeat_stale_trial_callback": st.RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)}
    return {"failed_trial_callback": st.RetryFailedTrialCallback(max_retry=MAX_RETRY)}


def storage_label(cfg: Any) -> str:
    """Where the study lives, safe to print (password masked)."""
    return mask_url(cfg.storage) if cfg.storage else str(cfg.results_dir / f"{cfg.base_name}.db")


def open_study(cfg: Any, *, create: bool, sampler: Any = None, pre_ping: bool = True):
    """Open (or create) the optuna study of ``cfg``: ``(study, storage)``; check it was made by
    the same space, objectives, workloads and base design."""
    import optuna
    where = storage_label(cfg)
    missing = ConfigError(f"{cfg.source}: no study {cfg.name!r} in {where}; run `dse run {cfg.command_args()}` "
                          f"first")
    try:
        storage = open_storage(cfg.storage, cfg.name, cfg.results_dir, stem=cfg.base_name,
                               heartbeat_s=cfg.heartbeat_s, read_only=not create, pre_ping=pre_ping)
        storage.get_study_id_from_name(cfg.name)
    except (KeyError, MissingStorage):
        if not create:
            raise missing from None
    if not create:     # read-only: load, never write an attribute
        with quiet_optuna():
            study = optuna.load_study(study_name=cfg.name, storage=storage,
                                      sampler=sampler or optuna.samplers.RandomSampler(seed=cfg.seed))
        if study.user_attrs.get("dse_fingerprint", cfg.fingerprint()) != cfg.fingerprint():
            raise _changed(cfg, where)
        return study, storage
    with quiet_optuna():
        study = optuna.create_study(study_name=cfg.name, storage=storage, directions=cfg.objectives.directions,
                                    sampler=sampler or optuna.samplers.RandomSampler(seed=cfg.seed),
                                    load_if_exists=True)
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
        raise _changed(cfg, where)
    if study.metric_names is None:     # objective names for optuna-dashboard (older studies too)
        study.set_metric_names(list(cfg.objectives.names))
    if FORM_ATTR not in attrs and migrate(storage, optuna_compat.study_id(study), cfg.objectives.names,
                                          constraint_keys(cfg)):
        study.set_user_attr(FORM_ATTR, 1)   # trials of an earlier version rewritten (dse.search.storage.stored)
    demote_twins(storage, optuna_compat.study_id(study))   # twins a crashed or older writer left COMPLETE
    return study, storage


def _changed(cfg: Any, where: str) -> ConfigError:
    return ConfigError(f"{cfg.source}: study {cfg.name!r} in {where} was created from a different space, "
                       f"objectives, workloads or base design; give [study] a new name, pass another "
                       f"--storage, or delete the old results")


def finish_trial(storage: Any, trial_id: int, ft: Any) -> None:
    """Write the finished trial ``ft`` into the RUNNING trial ``trial_id``: one transaction on RDB
    storages, one call per item elsewhere (journal). Raises
    ``optuna.exceptions.UpdateFinishedTrialError`` if that trial is already finished (another
    worker failed it as stale: its re-queued copy carries the work on). ``ft`` is the trial as
    told to the sampler; what is written is its stored form (``dse.search.storage.stored``)."""
    ft = stored_form(ft)
    rdb = optuna_compat.rdb(storage)
    if rdb is not None:
        return optuna_compat.write_finished_trial(rdb, trial_id, ft)
    from optuna.trial import TrialState
    for name, value in ft.params.items():
        dist = ft.distributions[name]
        storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
    for k, v in ft.user_attrs.items():
        storage.set_trial_user_attr(trial_id, k, v)
    for k, v in ft.system_attrs.items():
        if k != "fixed_params":
            storage.set_trial_system_attr(trial_id, k, v)
    storage.set_trial_state_values(trial_id, state=ft.state,
                                   values=ft.values if ft.state == TrialState.COMPLETE else None)


_SECRET_KEYS = re.compile(r"(?i)^(password|passwd|pwd|sslpassword|secret|token|access_token|api_key|key)$")


def _query_secrets(rest: str) -> list[str]:
    """Values of password-like parameters in the query part (after the first '?') of ``rest``."""
    q = rest.find("?")
    if q < 0:
        return []
    out = []
    for part in re.split(r"[&;]", rest[q + 1:]):
        k, sep, v = part.partition("=")
        if sep and v and _SECRET_KEYS.match(k.strip()):
            out.append(v)
    return out


def secrets_of(url: str) -> list[str]:
    """Every secret a storage URL may carry, under both readings of an ambiguous URL: the password
    of ``user:password@`` (between the first ':' of the user info and the LAST '@', so a raw '@',
    '/' or '?' in a password stays hidden) and the values of password-like query parameters
    (libpq's ``?password=``), whether the query starts before or after that '@'."""
    if "://" not in url:
        return []
    rest = url.split("://", 1)[1]
    out = _query_secrets(rest)
    at = rest.rfind("@")
    if at >= 0 and ":" in rest[:at]:
        out.append(rest[:at].split(":", 1)[1])
        out += _query_secrets(rest[at:])
    return [x for x in out if x]


def mask_url(url: str | None) -> str:
    """The URL with any password (user info or password-like query parameter) replaced by ``***``
    (safe to print or log; an ambiguous URL is masked under every reading)."""
    if not url:
        return "(default)"
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    query_secrets = _query_secrets(rest)
    at = rest.rfind("@")  # the last '@': a raw '@', '/' or '?' in a password stays hidden
    if at >= 0 and ":" in rest[:at]:
        rest = rest[:at].split(":", 1)[0] + ":***" + rest[at:]
    q = rest.find("?")
    if q >= 0:
        parts = []
        for part in re.split(r"([&;])", rest[q + 1:]):
            k, sep, v = part.partition("=")
            parts.append(f"{k}=***" if sep and v and _SECRET_KEYS.match(k.strip()) else part)
        rest = rest[:q + 1] + "".join(parts)
    for secret in sorted(query_secrets, key=len, reverse=True):  # the other reading's secrets
        rest = rest.replace(secret, "***")
    return f"{scheme}://{rest}"


def mask_text(text: str, url: str) -> str:
    """Remove the secrets of ``url`` (and their URL-decoded forms) from an arbitrary message."""
    from urllib.parse import unquote
    for secret in sorted(secrets_of(url), key=len, reverse=True):
        for form in {secret, unquote(secret)}:
            if form:
                text = text.replace(form, "***")
    return text


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
