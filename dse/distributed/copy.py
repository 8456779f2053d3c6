"""Move studies between storages: ``dse study copy`` and ``dse study list``.

Any storage ``dse run`` accepts works on either side: ``sqlite:///FILE`` (or a plain file
path), ``postgresql://user:password@host/db``, ``journal:FILE``.
Copies use ``optuna.copy_study``: every trial with its state, parameters, values, user and
system attributes (the design, metrics and constraints ``dse front`` / ``dse export`` read), and the
study's attributes (its fingerprint, objectives...), so the copy is a study like the original:
``dse front``, ``dse worker`` and optuna-dashboard open it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.errors import ConfigError


def open_any(url: str, *, must_exist: bool):
    """Open a storage (a URL or a plain SQLite file path); ``must_exist`` opens it read-only and
    refuses a SQLite / journal file that is not there (nothing is created or changed)."""
    from dse.search.storage.storage import MissingStorage, normalise_url, open_storage
    url = normalise_url(url)
    try:
        return open_storage(url, "copy", Path("results"), read_only=must_exist), url
    except MissingStorage as exc:
        raise ConfigError(str(exc)) from None


@dataclass(frozen=True)
class StudyInfo:
    name: str
    trials: int
    complete: int            # scored trials, whatever state they are stored in (dse.search.storage.stored)
    running: int
    waiting: int
    failed: int
    directions: tuple[str, ...]


def list_studies(url: str) -> list[StudyInfo]:
    from optuna.trial import TrialState

    from dse.search.storage.storage import quiet_optuna
    from dse.search.storage.stored import is_scored
    with quiet_optuna():
        storage, _ = open_any(url, must_exist=True)
    out = []
    for s in storage.get_all_studies():
        trials = storage.get_all_trials(storage.get_study_id_from_name(s.study_name), deepcopy=False)
        by = {st: sum(1 for t in trials if t.state == st and not is_scored(t)) for st in TrialState}
        out.append(StudyInfo(s.study_name, len(trials), sum(is_scored(t) for t in trials), by[TrialState.RUNNING],
                             by[TrialState.WAITING], by[TrialState.FAIL],
                             tuple(d.name.lower() for d in s.directions)))
    return out


def copy_studies(src: str, dst: str, names: list[str] | None = None,
                 to_name: str | None = None) -> list[dict[str, Any]]:
    """Copy studies (all, or ``names``) from ``src`` to ``dst``; returns what was copied."""
    import optuna

    from dse.search.storage.storage import mask_url, quiet_optuna
    with quiet_optuna():
        src_storage, src_url = open_any(src, must_exist=True)
        available = [s.study_name for s in src_storage.get_all_studies()]
        if not available:
            raise ConfigError(f"storage {mask_url(src_url)}: holds no study")
        chosen = list(names) if names else available
        for n in chosen:
            if n not in available:
                raise ConfigError(f"--study {n!r}: not in {mask_url(src_url)} (studies there: "
                                  f"{', '.join(repr(a) for a in available[:20])})")
        if to_name is not None and len(chosen) != 1:
            raise ConfigError("--to: give exactly one --study to rename")
        dst_storage, dst_url = open_any(dst, must_exist=False)
        existing = {s.study_name for s in dst_storage.get_all_studies()}
        targets = [(n, to_name or n) for n in chosen]
        for _, t in targets:
            if t in existing:
                raise ConfigError(f"study {t!r} already exists in {mask_url(dst_url)} (choose another name "
                                  f"with --to, or another destination)")
        done = []
        for n, t in targets:
            optuna.copy_study(from_study_name=n, from_storage=src_storage, to_storage=dst_storage,
                              to_study_name=t)
            sid = dst_storage.get_study_id_from_name(t)
            n_src = len(src_storage.get_all_trials(src_storage.get_study_id_from_name(n), deepcopy=False))
            n_dst = len(dst_storage.get_all_trials(sid, deepcopy=False))
            if n_src != n_dst:  # copy_study is not transactional: say so rather than leave a silent half copy
                raise ConfigError(f"study {t!r}: copied {n_dst} of {n_src} trials to {mask_url(dst_url)}; "
                                  f"delete it there and copy again")
            done.append({"study": n, "to": t, "trials": n_dst, "from": mask_url(src_url), "dest": mask_url(dst_url)})
        return done
