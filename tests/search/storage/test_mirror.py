"""The mirror's sync: trials other processes finished (or queued) are picked up; when nothing
changed it answers from one COUNT query without reading the trials back."""
from __future__ import annotations

import optuna
from optuna.distributions import FloatDistribution

from dse.search.storage import optuna_compat, optuna_read
from dse.search.storage.mirror import StudyMirror
from dse.search.storage.storage import quiet_optuna


def test_sync_sees_other_writers_and_skips_reading_when_unchanged(tmp_path, monkeypatch):
    from optuna.storages import RDBStorage
    with quiet_optuna():
        storage = RDBStorage(f"sqlite:///{tmp_path / 'm.db'}")
        study = optuna.create_study(study_name="m", storage=storage, directions=["minimize"])
        other = optuna.load_study(study_name="m", storage=storage)
        t = other.ask({"x": FloatDistribution(0, 1)})
        other.tell(t, 1.0)
        m = StudyMirror(study, storage, ["minimize"], optuna.samplers.RandomSampler(seed=0))
        assert [x.number for x in m.sync()] == [0]
        reads = []
        real = optuna_read.read_trials
        monkeypatch.setattr(optuna_read, "read_trials", lambda *a: reads.append(a[2]) or real(*a))
        assert m.sync() == [] and reads == []                  # nothing new: no read
        mt = m.ask({"x": FloatDistribution(0, 1)})
        m.write(mt, m.tell(mt, [0.5]))                          # this process's own write
        assert m.sync() == [] and reads == []
        t = other.ask({"x": FloatDistribution(0, 1)})          # another process finishes one
        other.tell(t, 2.0)
        ids = [optuna_compat.trial_id(x) for x in study.get_trials(deepcopy=False)]
        assert [x.number for x in m.sync()] == [2] and reads == [ids[1]]   # read from the first unsynced trial on
        other.enqueue_trial({"x": 0.25})                        # ... and queues one
        assert m.sync() == [] and reads == [ids[1], ids[2] + 1] and len(m.queued) == 1
        assert m.sync() == [] and reads == [ids[1], ids[2] + 1]
        other.tell(other.ask({"x": FloatDistribution(0, 1)}), 3.0)   # another process pops the queued trial
        assert [x.number for x in m.sync()] == [3] and reads[-1] == ids[2] + 1 and m.floor == ids[2] + 2
    assert optuna_compat.rdb(storage) is storage


def test_a_batch_written_after_another_writer_is_renumbered(tmp_path):
    """``write_batch`` numbers a batch from ``next_number``; trials another process wrote
    meanwhile move the batch, and a repeat of a trial of the same batch follows it."""
    from optuna.storages import RDBStorage

    from dse.search.storage.stored import OUTCOME_ATTR
    dist = {"x": FloatDistribution(0, 1)}
    with quiet_optuna():
        storage = RDBStorage(f"sqlite:///{tmp_path / 'b.db'}")
        study = optuna.create_study(study_name="b", storage=storage, directions=["minimize"])
        other = optuna.load_study(study_name="b", storage=storage)
        other.tell(other.ask(dist), 1.0)
        m = StudyMirror(study, storage, ["minimize"], optuna.samplers.RandomSampler(seed=0))
        m.sync()
        first = m.next_number()
        assert first == 1
        fts = []
        for k in range(3):
            mt = m.ask(dist)
            rec = {"design": {}, "feasible": True, "reason": ""}
            dup = {1: 0, 2: first}.get(k)        # a repeat of an earlier trial, then of the batch's first
            if dup is not None:
                rec["duplicate_of"] = dup
                mt.set_user_attr(OUTCOME_ATTR, f"repeat of trial {dup}")
            mt.set_user_attr("dse", rec)
            fts.append(m.tell(mt, [float(k)]))
        other.tell(other.ask(dist), 2.0)                       # another process writes one meanwhile
        assert m.write_batch(fts, first) == 1                   # the batch moved by one
        got = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
        assert [t.number for t in got] == [0, 1, 2, 3, 4] and got[1].user_attrs == {}
        assert [t.user_attrs["dse"].get("duplicate_of") for t in got[2:]] == [None, 0, 2]
        assert [t.user_attrs.get(OUTCOME_ATTR) for t in got[2:]] == [None, "repeat of trial 0", "repeat of trial 2"]
        assert fts[2].user_attrs["dse"]["duplicate_of"] == 2   # the trial as told follows
        assert [x.number for x in m.sync()] == [1]             # the other's trial, not its own writes
        assert m.next_number() == 5


class _CountingSampler(optuna.samplers.RandomSampler):
    """Keeps a counter in the study's system attributes, as QMC keeps its sample index (which
    needs scipy): its proposals depend on that state."""

    def sample_independent(self, study, trial, name, distribution):
        n = optuna_compat.study_system_attrs(study).get("count", 0)
        study._storage.set_study_system_attr(study._study_id, "count", n + 1)
        return (super().sample_independent(study, trial, name, distribution) + 0.1 * n) % 1.0


def _batches(tmp_path, name: str, make_sampler, full_rebuild: bool, monkeypatch) -> tuple[list, int]:
    """Four batches of 8 trials, a fresh sampler per batch as `dse run` does (``mirror.rebuild``
    between batches); ``full_rebuild``: as if the in-memory study could not be reused. Returns
    the proposals and the number of trials re-added by the rebuilds."""
    from optuna.storages import RDBStorage
    with quiet_optuna(), monkeypatch.context() as mp:
        if full_rebuild:
            mp.setattr(optuna_compat, "clear_study_system_attrs", lambda study: False)
        storage = RDBStorage(f"sqlite:///{tmp_path / f'{name}-{full_rebuild}.db'}")
        study = optuna.create_study(study_name="r", storage=storage, directions=["minimize", "minimize"])
        m = StudyMirror(study, storage, ["minimize", "minimize"], make_sampler(0))
        added = []
        real_add = m._add
        proposals = []
        for batch in range(4):
            if batch:
                mp.setattr(m, "_add", lambda t: added.append(1) or real_add(t))
                m.rebuild(list(m.held), make_sampler(batch))
            for _ in range(8):
                t = m.ask()
                x, y = t.suggest_float("x", 0, 1), t.suggest_float("y", 0, 1)
                proposals.append((x, y))
                m.tell(t, [x + y * y, (1 - x) ** 2 + y])
    return proposals, len(added)


def test_a_rebuild_between_batches_reuses_the_study_and_proposes_as_a_fresh_one(tmp_path, monkeypatch):
    """Samplers that keep state in the study (NSGA-II's parent populations, QMC's sample
    counter): the rebuild between batches drops that state instead of re-adding every trial,
    and the proposals are those of a study rebuilt from scratch."""
    makers = {"nsga2": lambda s: optuna.samplers.NSGAIISampler(population_size=8, seed=s),
              "counter": _CountingSampler}
    for name, make in makers.items():
        fast, readded = _batches(tmp_path, name, make, False, monkeypatch)
        fresh, readded_fresh = _batches(tmp_path, name, make, True, monkeypatch)
        assert fast == fresh, name
        assert readded == 0 and readded_fresh == 8 + 16 + 24, name


def test_the_in_memory_study_holds_no_metrics(tmp_path):
    """Synced trials reach the sampler without their metrics (the design cache keeps them): every
    other field the samplers read is there."""
    from optuna.storages import RDBStorage
    with quiet_optuna():
        storage = RDBStorage(f"sqlite:///{tmp_path / 'n.db'}")
        study = optuna.create_study(study_name="n", storage=storage, directions=["minimize"])
        t = study.ask({"x": FloatDistribution(0, 1)})
        t.set_user_attr("dse", {"design": {"x": 1}, "feasible": True, "metrics": {"m": {"a": 1.0}}})
        t.set_user_attr("design_key", "k")
        study.tell(t, 1.0)
        m = StudyMirror(study, storage, ["minimize"], optuna.samplers.RandomSampler(seed=0))
        (synced,) = m.sync()
    (held,) = m.mem.get_trials(deepcopy=False)
    assert synced.user_attrs["dse"]["metrics"] == {"m": {"a": 1.0}}                # as stored
    assert held.user_attrs == {"dse": {"design": {"x": 1}, "feasible": True}, "design_key": "k"}
    assert (held.params, held.values, held.state) == (synced.params, synced.values, synced.state)
