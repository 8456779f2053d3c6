"""`dse grid` on a space of at least N designs: wall time, points/s and peak RSS on one core.

Run: python benchmarks/bench_grid.py [--points N] [--space SPACE.toml] [--objectives OBJ.toml]
Without --space it builds a space of at least N points: spaces/grid-1m.toml (1,008,000 points),
times k values of ``d2d_gbps_per_die`` (32, 40, ... GB/s) when N is larger. Runs ``dse grid SPACE
--json --no-progress`` in a child process pinned to one core and reads its peak resident set size
from the kernel (``ru_maxrss`` of the child). Before that it checks, in this process, that the
streamed front (`stream_grid`, what `dse grid` runs) equals the in-memory path's (`run_grid`) on
the 10^6-point space: same points, knee and hypervolume. Targets: 10^8 points in < 120 s with
peak RSS < 4 GiB (and 10^6 in < 60 s, < 2 GiB). Prints the load average (a shared machine is
noisy). Last line: ``grid: N points in S s, peak RSS M MiB``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRID_1M = ROOT / "spaces" / "grid-1m.toml"
TARGET_S, TARGET_RSS_GIB = 120.0, 4.0


def one_core() -> None:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        pass


def space_text(points: int) -> str:
    """A space TOML of at least ``points`` points (grid-1m times k D2D provisions)."""
    text = GRID_1M.read_text()
    n1 = 1_008_000
    k = math.ceil(points / n1)
    if k <= 1:
        return text
    return text + f'd2d_gbps_per_die = {{ type = "float", low = 32, high = {32 + 8 * (k - 1)}, step = 8 }}\n'


def check_streamed_equals_in_memory() -> str:
    """The 10^6-point space streamed and in memory: the same front, knee and hypervolume."""
    import numpy as np

    from dse.cli.grid import DEFAULT_OBJECTIVES
    from dse.search.grid.grid import run_grid
    from dse.search.grid.stream import stream_grid
    from dse.search.space.objectives import objectives_from_dict
    from dse.search.space.space_file import load_space
    space, objset, base = load_space(GRID_1M), objectives_from_dict(DEFAULT_OBJECTIVES), {"model": "qwen3.5-35b-a3b"}
    t0 = time.perf_counter()
    mem = run_grid(space, objset, base).front_result()
    t_mem = time.perf_counter() - t0
    t0 = time.perf_counter()
    st = stream_grid(space, objset, base)
    t_st = time.perf_counter() - t0
    same = (mem.n == st.n and mem.knee == st.knee and mem.hypervolume == st.hypervolume
            and np.array_equal(mem.front, st.front) and np.array_equal(mem.values, st.values))
    if not same:
        sys.exit("streamed front differs from the in-memory front on grid-1m")
    return (f"{mem.n} points, front {len(st.front)} designs, knee {st.knee}: streamed == in-memory "
            f"(in-memory {t_mem:.2f} s, streamed {t_st:.2f} s, same process)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--space", help="a space TOML (default: built from spaces/grid-1m.toml for --points)")
    ap.add_argument("--objectives")
    ap.add_argument("--no-check", action="store_true", help="skip the streamed == in-memory check on 10^6 points")
    args = ap.parse_args()
    check = None if args.no_check else check_streamed_equals_in_memory()
    with tempfile.TemporaryDirectory() as tmp:
        space = args.space
        if space is None:
            space = str(Path(tmp) / "bench-grid.toml")
            Path(space).write_text(space_text(args.points))
            tomllib.loads(Path(space).read_text())
        cmd = [sys.executable, "-m", "dse", "grid", space, "--json", "--no-progress"]
        if args.objectives:
            cmd += ["--objectives", args.objectives]
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=one_core, cwd=ROOT)
        wall = time.perf_counter() - t0
    if r.returncode:
        sys.exit(f"dse grid failed: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_mib, cpu = child.ru_maxrss / 1024, child.ru_utime + child.ru_stime
    if check:
        print(f"check            : {check}")
    grid_1m = f"grid-1m (x d2d_gbps_per_die values) for >= {args.points} points"
    print(f"space            : {space if args.space else grid_1m}")
    print(f"points           : {out['points']}")
    print(f"grid seconds     : {out['seconds']:.2f} (inside dse grid; wall with start-up {wall:.2f} s, "
          f"target < {TARGET_S:.0f} s -> {TARGET_S / wall:.2f}x margin)")
    print(f"points/s         : {out['points_per_s']:.0f} (wall); CPU time of dse grid {cpu:.1f} s -> "
          f"{out['points'] / cpu:.0f} points per CPU second (the share of the core it got: {cpu / wall:.0%})")
    print(f"peak RSS         : {rss_mib:.0f} MiB (target < {TARGET_RSS_GIB * 1024:.0f} MiB)")
    print(f"feasible / front : {out['n_feasible']} / {len(out['front'])} designs, knee point {out['knee']['trial']}")
    print(f"load average     : {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end, on {os.cpu_count()} cores")
    print(f"grid: {out['points']} points in {wall:.1f} s, peak RSS {rss_mib:.0f} MiB")


if __name__ == "__main__":
    main()
