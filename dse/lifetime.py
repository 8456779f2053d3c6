"""Process lifetime: helper processes that never outlive the process that started them.

``exit_with_parent()`` runs in a worker process (a pool initializer): a daemon thread checks,
every ``poll_s`` seconds, that the parent that started the worker is still its parent. When the
parent dies (even by SIGKILL, which runs no clean-up), the worker is re-parented and exits at once,
so no evaluation process is left holding memory after its driver is gone.
"""
from __future__ import annotations

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
