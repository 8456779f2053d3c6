"""The sampler's view of a study, in memory, mirrored from and to the persistent storage.

optuna on an RDB storage costs several transactions per ask / suggest / attribute / tell (about
60-90 ms per trial on SQLite, 15+ statements); here the sampler works on an in-memory study and
each finished trial is written to the persistent storage in one transaction
(``optuna_compat.add_finished_trial``), or a whole batch of them (``write_batch``). ``dse run``
writes a new trial that way (nothing of it is ever RUNNING in the storage, so a killed run leaves
only finished trials behind); ``dse worker`` first reserves a RUNNING trial in the storage (it holds
a slot and has a heartbeat) and fills it the same way.

``sync`` copies the finished trials of the persistent study the mirror has not seen (all of them
at start; later, those other processes wrote) and, for ``dse run``, queues the parameters of
persistent WAITING trials (re-queued trials of dead workers, grid points); the result of such a
trial is written into that same persistent trial.

The in-memory study holds trials as told to the sampler (an infeasible trial is COMPLETE with its
constraints); the persistent one holds their stored form (``dse.search.storage.stored``): ``write``
stores, ``sync`` / ``rebuild`` turn stored trials back (``stored.sampler_form``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dse.search.storage import optuna_compat, optuna_read
from dse.search.storage.storage import finish_trial
from dse.search.storage.stored import demote_twins, sampler_form, stored_form, stored_state


class StudyMirror:
    """An in-memory optuna study with ``sampler`` holding the persistent study's finished trials."""

    def __init__(self, pstudy, storage, directions: Sequence[str], sampler):
        import optuna
        self.pstudy, self.storage = pstudy, storage
        self.sid = optuna_compat.study_id(pstudy)
        self.seen: set[int] = set()              # persistent trial ids mirrored or written
        self.waiting: dict[int, int] = {}        # mem trial number -> persistent WAITING trial id
        self.queued: list[int] = []              # persistent WAITING ids queued in mem, in order
        self.directions = list(directions)
        self.mem = optuna.create_study(directions=self.directions, sampler=sampler)
        self.held: list = []                     # the finished trials ``mem`` holds, in order
        self.floor = 0                           # RDB: every trial below this id is finished and synced

    def sync(self, *, queue_waiting: bool = True, states: Sequence[Any] | None = None) -> list:
        """Mirror new finished persistent trials (of ``states`` if given, as told to the sampler:
        a scored trial stored PRUNED counts as COMPLETE); return them (frozen, as stored).
        ``queue_waiting``: also queue the parameters of persistent WAITING trials."""
        from optuna.trial import TrialState
        new = []
        if states is None and self._unchanged():
            return new
        rdb = optuna_compat.rdb(self.storage)
        trials = optuna_read.read_trials(rdb, self.sid, self.floor) if rdb is not None else \
            self.pstudy.get_trials(deepcopy=False)
        if rdb is not None:   # from the oldest unfinished trial on: a study's sync costs O(new), not O(trials)
            self.floor = optuna_read.floor(((optuna_compat.trial_id(t), t.state.is_finished()) for t in trials),
                                           self.floor)
        for t in trials:
            tid = optuna_compat.trial_id(t)
            if tid in self.seen:
                continue
            if t.state.is_finished() and (states is None or sampler_form(t).state in states):
                self.seen.add(tid)
                self._add(t)
                new.append(t)
            elif queue_waiting and t.state == TrialState.WAITING and tid not in self.queued:
                self.queued.append(tid)
                # enqueued points carry fixed_params; a re-queued (retried) trial carries the
                # dead trial's params themselves: either way the same design is evaluated again
                self.mem.enqueue_trial(dict(t.system_attrs.get("fixed_params") or t.params))
        return new

    def _unchanged(self) -> bool:
        """Whether the persistent study holds no finished trial beyond ``seen`` and no WAITING
        trial beyond ``queued`` (RDB storages: one COUNT query instead of reading back every
        trial this process wrote since the last sync)."""
        from optuna.trial import TrialState
        rdb = optuna_compat.rdb(self.storage)
        if rdb is None or not self.seen or self.waiting:
            return False
        counts = optuna_compat.count_by_state(rdb, self.sid)
        finished = sum(n for state, n in counts.items() if state.is_finished())
        return finished == len(self.seen) and counts.get(TrialState.WAITING, 0) == len(self.queued)

    def rebuild(self, trials: Sequence, sampler) -> None:
        """Start the in-memory study afresh from ``trials`` (finished, in order) with ``sampler``;
        persistent WAITING trials already queued are queued again, in order. When the in-memory
        study holds exactly ``trials`` and nothing else (the usual case between two batches), only
        the sampler is replaced and the state samplers keep in the study (its system attributes:
        NSGA-II's parent populations) dropped: the study a fresh rebuild gives, without re-adding
        every trial (which made a run of n trials in batches of b cost n^2 / 2b deep copies:
        about 2.4 s of the 8.2 s of `bench_search`'s 768-trial NSGA-II study)."""
        import optuna
        if not self.queued and self._holds_only(trials) and optuna_compat.clear_study_system_attrs(self.mem):
            optuna_compat.forget_cached_trials(self.mem)
            self.mem.sampler = sampler
            return
        self.mem = optuna.create_study(directions=self.directions, sampler=sampler)
        self.held = []
        for t in trials:
            self._add(t)
        self.waiting.clear()
        for tid in self.queued:
            t = self.storage.get_trial(tid)
            self.mem.enqueue_trial(dict(t.system_attrs.get("fixed_params") or t.params))

    def _holds_only(self, trials: Sequence) -> bool:
        """Whether ``mem`` holds the finished ``trials`` (the same objects, in order) and no other."""
        return (len(trials) == len(self.held) == len(self.mem.get_trials(deepcopy=False))
                and all(a is b for a, b in zip(trials, self.held)))

    def _add(self, t) -> None:
        try:
            self.mem.add_trial(_without_metrics(sampler_form(t)))
        except ValueError:  # e.g. a failed trial without parameters: nothing to learn from
            self.held.append(None)   # not held: a later rebuild from these trials starts afresh
            return
        self.held.append(t)

    def ask(self, fixed: dict[str, Any] | None = None):
        """An in-memory trial; ``fixed`` parameters (a queued grid point, a re-queued trial) win.
        A trial that pops a queued persistent WAITING trial is written into it by ``write``."""
        if fixed:
            self.mem.enqueue_trial(dict(fixed))
        t = self.mem.ask()
        if not fixed and self.queued and "fixed_params" in optuna_compat.trial_system_attrs(self.mem, t):
            self.waiting[t.number] = self.queued.pop(0)
        return t

    def tell(self, trial, values: list[float] | None):
        """Tell the in-memory trial (``values`` None: failed); return it finished (frozen: the
        in-memory study's own object, not a copy)."""
        from optuna.trial import TrialState
        if values is None:
            ft = optuna_compat.tell_in_place(self.mem, trial, state=TrialState.FAIL)
        else:
            ft = optuna_compat.tell_in_place(self.mem, trial, values=values)
        self.held.append(ft)
        return ft

    def write(self, trial, ft) -> int:
        """Write the told in-memory ``trial`` (finished as ``ft``) to the persistent storage: into
        the WAITING trial it popped, else as a new trial. Returns its persistent number."""
        pid = self.waiting.pop(trial.number, None)
        if pid is not None:
            pid = self._fill(pid, ft)
        else:
            # one transaction on RDB storages (optuna: create, fill and read the number back,
            # or ~25 statements for a template trial): the driver's serial cost per trial
            rdb = optuna_compat.rdb(self.storage)
            if rdb is not None:
                pid, number = optuna_compat.add_finished_trial(rdb, self.sid, stored_form(ft))
                others = number != len(self.seen)      # trials this mirror has not seen: other writers
                self.seen.add(pid)
                if others:
                    self.demote_twins([ft])
                return number
            # one record on a journal: a full disk cannot leave a trial half written (RUNNING)
            pid = self.storage.create_new_trial(self.sid, template_trial=stored_form(ft))
        self.seen.add(pid)
        return self.storage.get_trial_number_from_id(pid)

    def next_number(self) -> int | None:
        """The persistent number the next new trial takes if nothing else writes to the study
        meanwhile (``write_batch`` corrects it if something did), or None where trials are
        written one by one (``write``): a storage other than RDB, or WAITING trials queued."""
        if optuna_compat.rdb(self.storage) is None or self.queued or self.waiting:
            return None
        return self.stored_count()

    def stored_count(self) -> int:
        """How many trials the persistent study holds, in every state."""
        rdb = optuna_compat.rdb(self.storage)
        if rdb is not None:
            return sum(optuna_compat.count_by_state(rdb, self.sid).values())
        return len(self.storage.get_all_trials(self.sid, deepcopy=False))

    def write_batch(self, fts: Sequence, first: int) -> int:
        """Write the told trials ``fts`` (finished, in order, numbered from ``first`` as
        ``next_number`` said) to the persistent storage as new trials in one transaction.
        Returns by how much their numbers moved (another process wrote trials meanwhile): a
        repeat among them of one of them (``duplicate_of >= first``) is renumbered likewise."""
        rdb = optuna_compat.rdb(self.storage)
        shift, others = 0, False

        def prepare(real: int) -> list:
            nonlocal shift, others
            shift = real - first
            others = real != len(self.seen)        # trials this mirror has not seen: other writers
            if shift:
                for ft in fts:
                    renumber_repeat(ft, first, shift)
            return [stored_form(ft) for ft in fts]

        _, ids = optuna_compat.add_finished_trials(rdb, self.sid, prepare)
        self.seen.update(ids)
        if others:
            self.demote_twins(fts)
        return shift

    def demote_twins(self, fts: Sequence) -> int:
        """After a write that found trials this mirror has not seen (another process, a second
        ``dse run`` or a ``dse worker`` on the same database, wrote meanwhile: it may have written
        one of these designs COMPLETE too): all but the first COMPLETE trial of each design become
        repeats (``stored.demote_twins``, one query). A study only this process writes never
        pays for it."""
        keys = [ft.user_attrs["design_key"] for ft in fts if "design_key" in ft.user_attrs and _stored_complete(ft)]
        return demote_twins(self.storage, self.sid, keys)

    def _fill(self, pid: int, ft) -> int:
        """Write a finished trial into a persistent WAITING trial (claimed first); returns the id
        written (a new trial if someone else claimed it)."""
        from optuna.trial import TrialState
        if not self.storage.set_trial_state_values(pid, state=TrialState.RUNNING):
            return self.storage.create_new_trial(self.sid, template_trial=stored_form(ft))
        finish_trial(self.storage, pid, ft)
        return pid


def renumber_repeat(ft, first: int, shift: int) -> None:
    """Move by ``shift`` the repeated trial's number in ``ft``'s record if it is ``>= first``
    (a trial of the same unwritten batch), in place (its ``dse`` record and ``dse_outcome``)."""
    from dse.search.storage.stored import OUTCOME_ATTR
    rec = ft.user_attrs.get("dse") or {}
    dup = rec.get("duplicate_of")
    if dup is None or dup < first:
        return
    rec["duplicate_of"] = dup + shift
    if str(ft.user_attrs.get(OUTCOME_ATTR, "")).startswith("repeat of trial "):
        ft.user_attrs[OUTCOME_ATTR] = f"repeat of trial {dup + shift}"


def _stored_complete(ft) -> bool:
    """Whether the told trial ``ft`` is stored COMPLETE (``stored.stored_form``, without the copy)."""
    rec = ft.user_attrs.get("dse")
    if rec is None or ft.state.name != "COMPLETE":
        return False
    return stored_state(bool(rec.get("feasible")), list(ft.values), rec.get("duplicate_of")) == "COMPLETE"


def _without_metrics(t):
    """``t`` for the in-memory study, without the metrics of its ``dse`` record: no sampler reads
    them (the design cache keeps its own), and optuna copies every trial it is given, so each
    worker held every trial's metrics twice (480 MB per worker at the soak's 20,000 trials)."""
    import optuna
    rec = t.user_attrs.get("dse")
    if not isinstance(rec, dict) or "metrics" not in rec:
        return t
    user = {**t.user_attrs, "dse": {k: v for k, v in rec.items() if k != "metrics"}}
    return optuna.trial.FrozenTrial(
        number=t.number, state=t.state, value=None, values=t.values, datetime_start=t.datetime_start,
        datetime_complete=t.datetime_complete, params=t.params, distributions=t.distributions, user_attrs=user,
        system_attrs=t.system_attrs, intermediate_values=t.intermediate_values, trial_id=optuna_compat.trial_id(t))
