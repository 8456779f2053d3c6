"""Process lifetime: helper processes that never outlive the process that started them, and a
command-line process that ends without freeing its caches (``exit_now``), and no clean-up
tracebacks from a library when Ctrl-C or SIGTERM interrupts it (``quiet_interrupted_cleanup``).

``exit_with_parent()`` runs in a worker process (a pool initializer): a daemon thread checks,
every ``poll_s`` seconds, that the parent that started the worker is still its parent. When the
parent dies (even by SIGKILL, which runs no clean-up), the worker is re-parented and exits at once,
so no evaluation process is left holding memory after its driver is gone.
"""
from __future__ import annotations

import logging
import os
import threading
import time

PARENT_POLL_S = 0.5


def exit_with_parent(parent: int | None = None, poll_s: float = PARENT_POLL_S) -> None:
    """Exit this process (status 1, no clean-up) within ``poll_s`` seconds of the death of
    ``parent`` (default: the current parent). Give the starter's pid when the watch starts late
    (a pool initializer): a worker whose starter died before it got here exits at once."""
    parent = os.getppid() if parent is None else parent
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="dse-exit-with-parent", daemon=True).start()


_FIRST: list = []


def stop_first_at_exit(fn) -> None:
    """Have ``exit_now`` call ``fn`` before the ``atexit`` handlers (once; last registered, first
    called). For what the interpreter's own exit stops before those handlers, through hooks of
    its threading module: process pools, whose workers multiprocessing's handler would else
    wait for. Register it with ``atexit`` too, for a normal exit."""
    if fn not in _FIRST:
        _FIRST.append(fn)


def exit_now(status: int) -> None:
    """End this process with ``status`` as the interpreter would, minus freeing its memory
    object by object (about 0.3 s after a run that built a few hundred MB of model caches).

    Standard output and error are flushed, the ``stop_first_at_exit`` callbacks run (evaluation
    workers stop), then every ``atexit`` handler (the study storages close their connections,
    temporary folders go); then the process ends at once. If a non-daemon thread is still
    alive after the handlers (a library we did not account for), the normal exit runs instead
    and waits for it, as it would have; so it does under a profiler or a debugger
    (``python -m cProfile -m dse ...`` writes its report after the program returns).
    Only for the end of a command-line process: nothing may run after it."""
    import atexit
    import sys
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(status)      # a profiler or debugger: it reports after the program returns
    _flush()
    for fn in reversed(_FIRST):       # as threading's exit hooks run before atexit's
        fn()
    atexit._run_exitfuncs()
    main = threading.main_thread()
    if any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.exit(status)
    _flush()
    os._exit(status)


def _flush() -> None:
    import sys
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):   # a closed pipe or stream: nothing to keep
            pass


class _CausedByInterrupt(logging.Filter):
    """Drops a record logged while handling Ctrl-C (or SIGTERM, which `dse run` turns into it):
    its exception, or one it was raised while handling, is a ``KeyboardInterrupt``."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        seen = 0
        while exc is not None and seen < 16:
            if isinstance(exc, KeyboardInterrupt):
                return False
            exc, seen = exc.__context__, seen + 1
        return True


_INTERRUPT_FILTER = _CausedByInterrupt()


def quiet_interrupted_cleanup(logger) -> None:
    """Keep ``logger`` (a logging.Logger, or SQLAlchemy's wrapper of one) from printing the
    errors of a clean-up that Ctrl-C or SIGTERM interrupted. An interrupt landing while
    SQLAlchemy fetches rows left the cursor of a connection already closed; SQLAlchemy then logs
    "Error closing cursor" with two tracebacks through its pool's logger. With no logging
    configured, Python prints such records on stderr, around dse's own one-line message that
    the finished trials are kept (1 of 915 tests on a loaded CI machine:
    ``tests/test_lifetime.py::test_sigterm_stops_dse_run_as_ctrl_c_does``). Errors not caused
    by an interrupt are still printed."""
    getattr(logger, "logger", logger).addFilter(_INTERRUPT_FILTER)
