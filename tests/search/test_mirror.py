"""The mirror's sync: trials other processes finished (or queued) are picked up; when nothing
changed it answers from one COUNT query without reading the trials back."""
from __future__ import annotations

import optuna
from optuna.distributions import FloatDistribution

from dse.search import optuna_compat
from dse.search.mirror import StudyMirror
from dse.search.storage import quiet_optuna


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
        real = study.get_trials
        monkeypatch.setattr(study, "get_trials", lambda **kw: reads.append(1) or real(**kw))
        assert m.sync() == [] and reads == []                  # nothing new: no read
        mt = m.ask({"x": FloatDistribution(0, 1)})
        m.write(mt, m.tell(mt, [0.5]))                          # this process's own write
        assert m.sync() == [] and reads == []
        t = other.ask({"x": FloatDistribution(0, 1)})          # another process finishes one
        other.tell(t, 2.0)
        assert [x.number for x in m.sync()] == [2] and reads == [1]
        other.enqueue_trial({"x": 0.25})                        # ... and queues one
        assert m.sync() == [] and reads == [1, 1] and len(m.queued) == 1
        assert m.sync() == [] and reads == [1, 1]
    assert optuna_compat.rdb(storage) is storage
