"""Riding out a database server that restarts or vanishes under running workers.

A PostgreSQL restart (``pg_ctl restart -m fast``) terminates every connection: the statement in
flight fails, and until the server is back every new connection is refused. A worker then
(``Outage``):

* prints ONE line naming the error and its retry budget;
* stops the heartbeats of the trials it holds (they turn stale and are failed and re-queued with
  the same parameters, by itself or any other worker, once the server is back: nothing is lost
  and no trial stays RUNNING);
* retries with bounded exponential backoff (0.5 s doubling, at most ``MAX_BACKOFF_S``) until the
  server answers, then carries on;
* gives up after ``budget_s`` seconds without a connection: ``DatabaseUnreachable`` (one line,
  exit status 3). A later ``dse worker`` finishes the study;
* stops waiting as soon as ``stop()`` is true (a SIGINT / SIGTERM asked the worker to stop).

``is_connection_error`` tells a lost connection (retry) from every other database error (a bug
or a real conflict: raised as is). SQLAlchemy marks the statement that lost its connection
(``connection_invalidated``); optuna may wrap it (``StorageInternalError``): the cause chain is
searched.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from dse.errors import DSEError

DEFAULT_BUDGET_S = 120.0
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
STOP_POLL_S = 0.25        # how often a waiting worker checks whether a signal asked it to stop
# Driver messages of a connection that is gone or cannot be made (psycopg / libpq, SQLite).
_LOST = ("server closed the connection", "terminating connection", "connection refused", "could not connect",
         "connection failed", "connection is closed", "consuming input failed", "the database system is",
         "ssl connection has been closed", "connection timed out", "no connection to the server",
         "sorry, too many clients", "connection reset", "broken pipe", "admin shutdown",
         "cannot connect")


class DatabaseUnreachable(DSEError):
    """The study's database stayed unreachable for the whole retry budget."""

    exit_code = 3


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause) is a lost / refused database connection."""
    try:
        from sqlalchemy import exc as sa_exc
    except ImportError:
        return False
    for e in _chain(exc):
        if isinstance(e, sa_exc.DBAPIError) and e.connection_invalidated:
            return True
        if isinstance(e, (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.DisconnectionError)) or \
                type(e).__module__.startswith("psycopg"):
            text = str(e).lower()
            if any(s in text for s in _LOST):
                return True
    return False


def first_line(exc: BaseException) -> str:
    """The most specific one-line description in the cause chain (the driver's message)."""
    msgs = [str(e).strip().splitlines()[0] for e in _chain(exc) if str(e).strip()]
    for m in msgs:
        if any(s in m.lower() for s in _LOST):
            return m.removeprefix("(psycopg.OperationalError) ")[:300]
    return msgs[0][:300] if msgs else type(exc).__name__


def probe_storage(cfg) -> None:
    """Raise unless the study's database answers ``SELECT 1`` (a fresh connection, no pool)."""
    from pathlib import Path

    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    from dse.search.storage.storage import default_url, is_journal, normalise_url
    url = normalise_url(cfg.storage) if cfg.storage else default_url(Path(cfg.results_dir), cfg.base_name,
                                                                     create=False)
    if is_journal(url):
        return
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    finally:
        engine.dispose()


class Outage:
    """Bounded-backoff wait for the database after a lost connection (see the module docstring).

    ``probe()`` must raise while the server is unreachable; ``log`` prints one line."""

    def __init__(self, probe: Callable[[], object], log: Callable[[str], None], where: str,
                 budget_s: float = DEFAULT_BUDGET_S, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, stop: Callable[[], bool] | None = None):
        self.probe, self.log, self.where, self.budget_s = probe, log, where, float(budget_s)
        self.sleep, self.clock, self._stop = sleep, clock, stop
        self.outages = 0

    def stop(self) -> bool:
        return self._stop is not None and self._stop()

    def _wait(self, seconds: float) -> None:
        """Sleep ``seconds`` (with a ``stop``: in steps of ``STOP_POLL_S`` while it is false)."""
        if self._stop is None:
            self.sleep(seconds)
            return
        end = self.clock() + seconds
        while not self.stop() and self.clock() < end:
            self.sleep(min(STOP_POLL_S, end - self.clock()))

    def ride_out(self, exc: BaseException) -> float:
        """Wait until ``probe`` succeeds (or ``stop()`` is true); returns the seconds waited. Raises
        DatabaseUnreachable after ``budget_s`` seconds, or at once for an error that is not a lost
        connection."""
        if not is_connection_error(exc):
            raise exc
        self.outages += 1
        start = self.clock()
        self.log(f"lost the database connection ({first_line(exc)}); reconnecting with backoff for up to "
                 f"{self.budget_s:.0f} s")
        delay = FIRST_BACKOFF_S
        last = exc
        while True:
            left = self.budget_s - (self.clock() - start)
            if left <= 0:
                raise DatabaseUnreachable(
                    f"storage {self.where}: unreachable for {self.budget_s:.0f} s ({first_line(last)}); this "
                    f"worker stops, its unfinished trials are re-queued by the next worker once the server is back")
            self._wait(min(delay, left))
            if self.stop():
                return self.clock() - start
            delay = min(2 * delay, MAX_BACKOFF_S)
            try:
                self.probe()
                return self.clock() - start
            except Exception as again:  # noqa: BLE001 - only a lost connection is retried
                if not is_connection_error(again):
                    raise
                last = again
