"""`dse grid` on a million designs: wall time, points/s and peak RSS on one core.

Run: python benchmarks/bench_grid.py [--space spaces/grid-1m.toml] [--objectives OBJ.toml]
Runs ``dse grid SPACE --json`` in a child process pinned to one core and reads its peak resident
set size from the kernel (``ru_maxrss`` of the child). Targets: >= 10^6 points in < 60 s with
peak RSS < 2 GiB. Also prints the machine's load average (a shared machine is noisy).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S, TARGET_RSS_GIB = 60.0, 2.0


def one_core() -> None:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", default=str(ROOT / "spaces" / "grid-1m.toml"))
    ap.add_argument("--objectives")
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "dse", "grid", args.space, "--json", "--no-progress"]
    if args.objectives:
        cmd += ["--objectives", args.objectives]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=one_core, cwd=ROOT)
    wall = time.perf_counter() - t0
    if r.returncode:
        sys.exit(f"dse grid failed: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    rss_gib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / (1 << 30)
    print(f"space            : {args.space}")
    print(f"points           : {out['points']}")
    print(f"grid seconds     : {out['seconds']:.2f} (inside dse grid; wall with start-up {wall:.2f} s, "
          f"target < {TARGET_S:.0f} s -> {TARGET_S / wall:.1f}x margin)")
    print(f"points/s         : {out['points_per_s']:.0f}")
    print(f"peak RSS         : {rss_gib:.2f} GiB (target < {TARGET_RSS_GIB} GiB)")
    print(f"feasible / front : {out['n_feasible']} / {len(out['front'])} designs, knee point {out['knee']['trial']}")
    print(f"load average     : {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
