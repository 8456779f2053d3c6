"""dse.distributed.reconnect: which errors are a lost connection, and the bounded backoff."""
from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from dse.distributed.reconnect import MAX_BACKOFF_S, DatabaseUnreachable, Outage, is_connection_error


def _lost(msg: str = "server closed the connection unexpectedly") -> OperationalError:
    return OperationalError("SELECT 1", {}, Exception(msg))


def test_lost_connections_are_told_from_other_errors():
    assert is_connection_error(_lost())
    assert is_connection_error(_lost("connection failed: Connection refused"))
    try:   # optuna wraps the driver error (StorageInternalError from OperationalError)
        try:
            raise _lost("terminating connection due to administrator command")
        except OperationalError as exc:
            raise RuntimeError("An exception is raised during the commit") from exc
    except RuntimeError as wrapped:
        assert is_connection_error(wrapped)
    assert not is_connection_error(IntegrityError("INSERT", {}, Exception("duplicate key")))
    assert not is_connection_error(OperationalError("SELECT", {}, Exception("division by zero")))
    assert not is_connection_error(ValueError("server closed the connection"))


class Clock:
    def __init__(self):
        self.t = 0.0
        self.sleeps: list[float] = []

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


def test_outage_reconnects_with_one_line():
    clock, lines, calls = Clock(), [], []

    def probe():
        calls.append(clock.t)
        if len(calls) < 4:
            raise _lost("connection refused")
    o = Outage(probe, lines.append, "postgresql://u:***@h/db", budget_s=60, sleep=clock.sleep, clock=lambda: clock.t)
    waited = o.ride_out(_lost())
    assert len(lines) == 1 and "lost the database connection" in lines[0] and "60 s" in lines[0]
    assert clock.sleeps == [0.5, 1.0, 2.0, 4.0] and waited == pytest.approx(7.5)


def test_outage_beyond_the_budget_is_one_error_and_backoff_is_bounded():
    clock, lines = Clock(), []

    def probe():
        raise _lost("connection refused")
    o = Outage(probe, lines.append, "postgresql://u:***@h/db", budget_s=30, sleep=clock.sleep, clock=lambda: clock.t)
    with pytest.raises(DatabaseUnreachable, match="unreachable for 30 s") as info:
        o.ride_out(_lost())
    assert info.value.exit_code == 3
    assert max(clock.sleeps) <= MAX_BACKOFF_S and sum(clock.sleeps) == pytest.approx(30)
    assert len(lines) == 1


def test_outage_reraises_what_is_not_a_lost_connection():
    o = Outage(lambda: None, lambda _: None, "db")
    with pytest.raises(ValueError):
        o.ride_out(ValueError("a bug"))


def test_a_stop_request_ends_the_wait_at_once():
    clock, lines, stop = Clock(), [], []

    def probe():
        if len(clock.sleeps) >= 3:
            stop.append(True)          # a signal arrives while the server is still down
        raise _lost("connection refused")
    o = Outage(probe, lines.append, "db", budget_s=600, sleep=clock.sleep, clock=lambda: clock.t,
               stop=lambda: bool(stop))
    waited = o.ride_out(_lost())
    assert waited < 10 and len(lines) == 1
    assert max(clock.sleeps) <= 0.25


def test_a_worker_goes_on_after_an_outage_without_reading_the_study_again(tmp_path, monkeypatch):
    """After a lost connection the worker reopens the storage and keeps its mirror, cache and
    ledger: the soak's restarts, when every worker rebuilt itself and re-read the whole study,
    stopped a 20,000-trial study for a minute."""
    from dse.distributed import quota
    from dse.distributed.worker import run_worker
    from dse.search.storage import optuna_read
    from dse.search.study.study import load_study
    from tests.fixtures import write_distributed_study
    study_file = write_distributed_study(tmp_path, sampler="random", trials=12, batch=4, name="outage")
    cfg = load_study(study_file, storage=f"sqlite:///{tmp_path / 'outage.db'}", check_metrics=False)
    reads, calls, logged = [], [], []
    real_read, real_counts = optuna_read.read_trials, quota.Ledger.counts
    monkeypatch.setattr(optuna_read, "read_trials", lambda *a: reads.append(a[2]) or real_read(*a))

    def counts(ledger):
        calls.append(1)
        if len(calls) == 3:                   # after the first batch: the server goes away
            reads.append("outage")
            raise _lost()
        return real_counts(ledger)

    monkeypatch.setattr(quota.Ledger, "counts", counts)
    s = run_worker(cfg, worker_id="w0", log=logged.append)
    assert s.complete == 12 and s.evaluated == 12
    assert sum("lost the database connection" in line for line in logged) == 1
    after = reads[reads.index("outage") + 1:]
    assert after and 0 not in after and min(after) > 1       # only the trials written since are read
