"""How a finished trial is stored, so that optuna and optuna-dashboard show the front ``dse front`` shows.

optuna-dashboard (0.21) lists as a multi-objective study's best trials the Pareto front of
*every* COMPLETE trial: it ignores constraints and keeps equal rows (it shows only the old
``constraints`` list attribute, not optuna's ``constraints:<name>`` keys). ``dse front`` holds
feasible, finite, distinct designs only. So a trial is stored COMPLETE only when it may be on
that front; every other trial is stored in a state no front (the dashboard's, optuna's
``best_trials``) takes, with the reason in the user attribute ``dse_outcome``:

====================================  =========  ===========================================
trial                                 stored as  ``dse_outcome``
====================================  =========  ===========================================
feasible, finite, first of its design COMPLETE   (none)
infeasible (model or a constraint)    PRUNED     ``infeasible: <reason>``
feasible, a non-finite objective      FAIL       ``non-finite objective: <name> = inf``
repeat of an earlier design           PRUNED     ``repeat of trial N``
evaluation error                      FAIL       ``error: <exception>``
====================================  =========  ===========================================

(non-finite before repeat: a repeat of a non-finite design FAILs too; a NaN objective FAILs
as optuna's ``tell`` fails it.) A scored trial stored PRUNED or FAIL keeps its objective values
in the user attribute ``dse_values`` (non-finite ones as the strings ``"inf"`` / ``"-inf"``: no
stored optuna value is ever infinite). Every scored trial keeps its constraint values in
optuna's own ``constraints`` system attribute (a list: ``infeasible_workloads``, then one per
constraint of the objective file, <= 0 satisfied), the form both optuna (as keys ``"0"``,
``"1"``, ...) and optuna-dashboard read.

The sampler never sees this form: constrained samplers (NSGA-II, TPE) need an infeasible trial
as COMPLETE with its values and constraints. ``stored_form`` turns a trial as told to the
sampler into the trial written; ``sampler_form`` turns a stored trial back into the trial told
(COMPLETE with its values, infinite ones included). Studies written before this form (every
evaluated trial COMPLETE, infinite values, ``constraints:<name>`` keys) are read unchanged:
``sampler_form`` leaves their trials as they are and ``dse front`` filters them itself. On an RDB
storage (SQLite, PostgreSQL), the first ``dse run`` / ``dse worker`` of such a study rewrites them
into the stored form (``migrate``; the study attribute ``dse_stored_form`` then says so), so the
dashboard agrees there too; a journal storage cannot change a finished trial and keeps them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dse.search.storage import optuna_compat

OUTCOME_ATTR = "dse_outcome"      # why a trial is not stored COMPLETE (one line)
VALUES_ATTR = "dse_values"        # objective values of a scored trial stored PRUNED / FAIL
CONSTRAINTS_KEY = "constraints"   # optuna's constraint system attribute (list form)
FORM_ATTR = "dse_stored_form"     # study user attribute: every trial is in this stored form


def constraint_keys(cfg: Any) -> list[str]:
    """Names of the constraint values given to optuna (``Trial.set_constraint``), in order."""
    return ["infeasible_workloads"] + [f"c{i}" for i in range(len(cfg.objectives.constraints))]


def stored_state(feasible: bool, values: Sequence[float] | None, duplicate_of: int | None) -> str:
    """State name a trial told ``values`` (None: failed) is stored in (see the module docstring)."""
    if values is None or any(math.isnan(v) for v in values):
        return "FAIL"
    if not feasible:
        return "PRUNED"
    if not all(math.isfinite(v) for v in values):
        return "FAIL"
    return "PRUNED" if duplicate_of is not None else "COMPLETE"


def outcome(feasible: bool, reason: str, values: Sequence[float] | None, names: Sequence[str],
            duplicate_of: int | None, error: str = "") -> str:
    """The ``dse_outcome`` text of a trial ("" for a trial stored COMPLETE)."""
    state = stored_state(feasible, values, duplicate_of)
    if state == "COMPLETE":
        return ""
    if values is None:
        return f"error: {error}"
    if state == "PRUNED":
        return f"infeasible: {reason or 'infeasible'}" if not feasible else f"repeat of trial {duplicate_of}"
    bad = [f"{n} = {v}" for n, v in zip(names, values) if not math.isfinite(v)]
    return "non-finite objective: " + ", ".join(bad)


def encode_values(values: Sequence[float]) -> list[Any]:
    """Objective values as JSON: finite floats, or ``"inf"`` / ``"-inf"``."""
    return [float(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf") for v in values]


def decode_values(raw: Sequence[Any]) -> list[float]:
    return [float(v) for v in raw]


def stored_form(ft: Any, constraint_names: Sequence[str] | None = None) -> Any:
    """The frozen trial to write for ``ft`` (as told to the sampler): its stored state, values
    (``dse_values`` when not COMPLETE) and constraints as optuna's ``constraints`` list, in the
    order of ``constraint_names`` if given (a trial read from a storage may hold its
    ``constraints:<name>`` keys in any order), else in the order they were set.
    A trial without dse's record (``dse`` user attribute) is written as it is."""
    import optuna
    from optuna.trial import TrialState
    rec = ft.user_attrs.get("dse")
    if rec is None:
        return ft
    told = list(ft.values) if ft.state == TrialState.COMPLETE else None
    state = TrialState[stored_state(bool(rec.get("feasible")), told, rec.get("duplicate_of"))]
    user = dict(ft.user_attrs)
    if told is not None and state != TrialState.COMPLETE:
        user[VALUES_ATTR] = encode_values(told)
    system = {k: v for k, v in ft.system_attrs.items() if not k.startswith(CONSTRAINTS_KEY + ":")}
    named = ft.constraints
    order = [n for n in (constraint_names or []) if n in named]
    cons = [named[n] for n in order] + [v for n, v in named.items() if n not in order]
    if cons:
        system[CONSTRAINTS_KEY] = cons
    return _copy(optuna, ft, state, told if state == TrialState.COMPLETE else None, user, system)


def sampler_form(t: Any) -> Any:
    """The trial as told to the sampler for a stored trial ``t`` (``t`` itself unless it is a
    scored trial stored PRUNED / FAIL: then COMPLETE with its values)."""
    import optuna
    from optuna.trial import TrialState
    raw = t.user_attrs.get(VALUES_ATTR)
    if raw is None or t.state == TrialState.COMPLETE:
        return t
    return _copy(optuna, t, TrialState.COMPLETE, decode_values(raw), t.user_attrs, t.system_attrs)


def migrate(storage: Any, sid: int, names: Sequence[str], constraint_names: Sequence[str]) -> bool:
    """Rewrite the trials of study ``sid`` an earlier version wrote (evaluated trials COMPLETE
    whatever they were, ``constraints:<name>`` keys) into the stored form, with their
    ``dse_outcome`` (``names``: the objective names; ``constraint_names``: dse's constraint
    names in order). False if the storage cannot (not RDB)."""
    import optuna
    rdb = optuna_compat.rdb(storage)
    if rdb is None:
        return False
    items = []
    for t in rdb.get_all_trials(sid, deepcopy=False):
        rec = t.user_attrs.get("dse")
        if rec is None or t.state.name != "COMPLETE" \
                or not any(k.startswith(CONSTRAINTS_KEY + ":") for k in t.system_attrs):
            continue
        why = outcome(bool(rec.get("feasible")), str(rec.get("reason", "")), list(t.values), names,
                      rec.get("duplicate_of"))
        user = {**t.user_attrs, **({OUTCOME_ATTR: why} if why else {})}
        told = _copy(optuna, t, t.state, list(t.values), user, t.system_attrs)
        items.append((optuna_compat.trial_id(t), stored_form(told, constraint_names)))
    if items:
        optuna_compat.rewrite_finished_trials(rdb, items)
    return True


def demote_repeats(storage: Any, sid: int, key: str) -> int:
    """Store as repeats (PRUNED, ``repeat of trial N``) the COMPLETE trials of design ``key`` but
    the first: two ``dse worker``s that evaluated the same design at the same time both wrote it
    COMPLETE, and the dashboard would list it twice. Idempotent, so both may run it; the later
    writer's run sees the other. Returns how many were demoted (0 off RDB storages)."""
    import optuna
    rdb = optuna_compat.rdb(storage)
    if rdb is None:
        return 0
    ids = optuna_compat.complete_ids_with_user_attr(rdb, sid, "design_key", key)
    if len(ids) < 2:
        return 0
    trials = sorted((rdb.get_trial(tid) for tid in ids), key=lambda t: t.number)
    first, items = trials[0].number, []
    for t in trials[1:]:
        rec = {**t.user_attrs.get("dse", {}), "duplicate_of": first}
        user = {**t.user_attrs, "dse": rec, OUTCOME_ATTR: f"repeat of trial {first}"}
        told = _copy(optuna, t, t.state, list(t.values), user, t.system_attrs)
        items.append((optuna_compat.trial_id(t), stored_form(told)))
    optuna_compat.rewrite_finished_trials(rdb, items)
    return len(items)


def demote_twins(storage: Any, sid: int, keys: Sequence[str] | None = None) -> int:
    """``demote_repeats`` for every design (of ``keys`` if given) that two or more COMPLETE
    trials hold: one query, then one rewrite per such design. Every writer of a study runs it
    after its write is committed (``dse run``: ``StudyMirror.write`` / ``write_batch``; ``dse
    worker``: per trial), and ``dse run`` / ``dse worker`` once on opening a study; the last of
    two racing writers sees both trials. Returns how many trials were demoted (0 off RDB)."""
    rdb = optuna_compat.rdb(storage)
    if rdb is None or (keys is not None and not keys):
        return 0
    return sum(demote_repeats(storage, sid, k) for k in optuna_compat.twin_values(rdb, sid, "design_key", keys))


def is_scored(t: Any) -> bool:
    """Whether a stored (or told) trial was evaluated and told values: it counts toward a
    study's target of finished trials, whatever state it is stored in."""
    return t.state.name == "COMPLETE" or (VALUES_ATTR in t.user_attrs and t.state.name in ("PRUNED", "FAIL"))


def _copy(optuna: Any, t: Any, state: Any, values: list[float] | None, user: dict, system: dict) -> Any:
    return optuna.trial.FrozenTrial(
        number=t.number, state=state, value=None, values=values, datetime_start=t.datetime_start,
        datetime_complete=t.datetime_complete, params=dict(t.params), distributions=dict(t.distributions),
        user_attrs=dict(user), system_attrs=dict(system), intermediate_values=dict(t.intermediate_values),
        trial_id=optuna_compat.trial_id(t))
