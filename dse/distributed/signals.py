"""SIGINT / SIGTERM handling for long study loops.

First signal: ``requested`` becomes true; the loop finishes the in-flight batch, records it and
stops (exit status 128 + signal number). Second signal: KeyboardInterrupt at once; the loop then
re-queues the trials it had not recorded (they are failed and enqueued again with the same
parameters), so nothing is lost and nothing is half-written.
"""
from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Shutdown:
    """Context manager turning SIGINT/SIGTERM into a polite stop request (main thread only)."""

    def __init__(self, announce: bool = True):
        self.announce = announce
        self.signum: int | None = None
        self._old: dict[int, object] = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def exit_status(self) -> int:
        return 128 + self.signum if self.signum is not None else 0

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum
        if self.announce:
            name = signal.Signals(signum).name
            print(f"dse: {name}: finishing the in-flight batch, then stopping (send it again to abort)",
                  file=sys.stderr, flush=True)

    def __enter__(self) -> Shutdown:
        if threading.current_thread() is threading.main_thread():
            for s in HANDLED:
                self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)  # type: ignore[arg-type]
        self._old.clear()
