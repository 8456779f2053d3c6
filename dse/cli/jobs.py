"""``--jobs`` of `dse run` and `dse worker`: checked, and bounded by the cores this process may use."""
from __future__ import annotations

import os
import sys

from dse.errors import ConfigError


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def bounded_jobs(jobs: int, cores: int | None = None) -> int:
    """The number of evaluation processes to start for ``--jobs``: -1 = every usable core; more
    than the usable cores is clamped to them, with one line on stderr saying so (more processes
    than cores only add memory and start-up time: evaluations are CPU-bound)."""
    if jobs == 0 or jobs < -1:
        raise ConfigError(f"--jobs {jobs}: must be a positive number of processes or -1 (every core)")
    cores = usable_cores() if cores is None else cores
    if jobs == -1:
        return cores
    if jobs > cores:
        print(f"dse: --jobs {jobs}: clamped to {cores} (the usable cores of this machine)", file=sys.stderr)
        return cores
    return jobs
