"""Helpers the benchmarks share: a command run in a fresh process, measured; an evaluator that logs when it is busy."""
from __future__ import annotations

import os
import subprocess
import tempfile
import time


def run_measured(args: list[str], env: dict[str, str], cwd=None) -> tuple[str, str, float, object, int]:
    """``(stdout, stderr, wall seconds, resource usage of the child, exit code)`` of ``args``
    (the usage from ``os.wait4``: its CPU and peak RSS are the child's alone)."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(args, stdout=fo, stderr=fe, text=True, env=env, cwd=cwd)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        return fo.read(), fe.read(), wall, usage, os.waitstatus_to_exitcode(status)


def busy_evaluate(folder: str, design, models):
    """``evaluate_design`` writing its (start, end) to ``folder/<pid>`` (in the workers and the
    driver: the busy share of a run, per process)."""
    from dse.search.execute.evaluation import evaluate_design
    t = time.perf_counter()
    out = evaluate_design(design, models)
    with open(os.path.join(folder, str(os.getpid())), "a") as f:
        f.write(f"{t!r} {time.perf_counter()!r}\n")
    return out
