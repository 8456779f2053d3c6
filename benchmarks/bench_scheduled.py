"""Scheduled time (issue 33): the B = 1 .. 256 table of the published design, and what the
``scheduled`` stage costs per design against today's trace-driven evaluation (target <= 1.3x).

Run: python benchmarks/bench_scheduled.py [--designs N] [--repeats R] [--steps S] [--band N] [--no-table] [--cold]

The cost: N designs varying the scheduling knobs (tile width, pooling, fetch, core side, groups,
placement, batch) on the default synthetic trace, each evaluated with every stage and with the
``scheduled`` stage removed, alternated R times after a warm-up pass (layouts and placements
cached as in a study); CPU time of this process. Figures and ratios are printed, never asserted.

``--cold``: every pass starts without layouts (the in-process cache emptied, no shared folder:
``DSE_WARM_CACHE_DIR=off``), so each design of a new (layout, tile width, pooling) pays its
scheduler chunk and, with the stage, its lead table: the cost of a design that meets its tables
for the first time. Without it, the figures depend on what the layout cache and the shared folder
(``DSE_WARM_CACHE_DIR``) still hold: at 512 steps the 60 designs' layouts exceed the in-process
bound, and their tables come back from the folder when another run left them there.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = 1.3


def designs(n: int, steps: int) -> list:
    from dse.spec import DesignPoint
    rng = random.Random(0)
    out = []
    for _ in range(n):
        side = rng.choice([2, 3, 4, 5, 6, 8])
        out.append(DesignPoint.from_dict({
            "core_side": side, "pe_groups_per_core": rng.randint(1, side * side),
            "tile_width": rng.choice([1, 2, 4, 8, 16]), "pooling": rng.choice(["direct", "broadcast"]),
            "fetch": rng.choice(["fifo", "load_aware"]), "placement": rng.choice(["contiguous", "lpt"]),
            "batch": rng.choice([8, 32, 64, 128]), "trace_steps": steps}))
    return out


def time_pass(points, stages, cold: bool = False) -> float:
    from dse.mapping import trace_mapping
    from dse.pipeline import evaluate as ev
    keep = ev.STAGES
    ev.STAGES = stages
    if cold:
        trace_mapping.PLACEMENTS.clear()
    try:
        t0 = time.process_time()
        for p in points:
            ev.evaluate(p)
        return time.process_time() - t0
    finally:
        ev.STAGES = keep


def bench_cost(n: int, repeats: int, steps: int, cold: bool = False) -> None:
    from dse.pipeline import evaluate as ev
    if cold:
        os.environ["DSE_WARM_CACHE_DIR"] = "off"
    points = designs(n, steps)
    full = ev.STAGES
    today = tuple(s for s in full if s.name != "scheduled")
    time_pass(points, full)                                   # warm-up: traces, placements, layouts
    with_s, without = [], []
    for _ in range(repeats):
        without.append(time_pass(points, today, cold))
        with_s.append(time_pass(points, full, cold))
    a, b = min(without) / n * 1e3, min(with_s) / n * 1e3
    print(f"{n} designs, {steps} steps, {'cold tables, ' if cold else ''}best of {repeats}: today {a:.2f} "
          f"ms/design, with the scheduled stage {b:.2f} ms/design: {b / a:.3f}x (target <= {TARGET}x)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--band", type=int, default=0, metavar="N",
                    help="also the scheduled time's p5-p95 over N draws of the model's unknowns")
    ap.add_argument("--no-table", action="store_true")
    ap.add_argument("--cold", action="store_true",
                    help="every pass without layouts or shared tables: each design meets its tables anew")
    a = ap.parse_args(argv)
    if not a.no_table:
        from dse.reproduce import scheduled_table
        print(scheduled_table.markdown(scheduled_table.table(steps=a.steps, band_draws=a.band)))
        print()
    bench_cost(a.designs, a.repeats, a.steps, a.cold)


if __name__ == "__main__":
    main()
