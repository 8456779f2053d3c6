"""Closed-form evaluations per second on one core (issue #2 target: >= 2,000 design points/s).

Run: python benchmarks/bench_closed_form.py [--points N]
Evaluates N distinct random design points (catalog unions, no trace) through the full pipeline
(validation + every stage) and prints points/s and the ratio to the target, measured in one run.
"""
from __future__ import annotations

import argparse
import os
import random
import time

TARGET_PER_S = 2000


def points(n: int, seed: int = 0):
    from dse.spec import DesignPoint
    from dse.workload.catalog import model_names
    rng = random.Random(seed)
    models = model_names()
    out = []
    for _ in range(n):
        out.append(DesignPoint.from_dict({
            "trace": "catalog",
            "model": rng.choice(models),
            "core_side": rng.choice([1, 2, 4, 6, 8]),
            "tile_width": rng.choice([1, 2, 4, 8]),
            "array_depth": rng.choice([8, 16, 24, 32, 48, 64]) * 1024,
            "batch": rng.choice([1, 8, 64, 128, 256]),
            "macro_mhz": rng.uniform(100, 400),
            "core_mesh_link_bits": rng.choice([128, 256, 512, 1024]),
            "reduction_order": rng.choice(["ep_first", "tp_first"]),
        }))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=5000)
    args = ap.parse_args()
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # one core
    except (AttributeError, OSError):
        pass
    from dse.pipeline.evaluate import evaluate
    from dse.spec import DesignPoint
    evaluate(DesignPoint.from_dict({"trace": "catalog"}))   # warm imports and caches
    pts = points(args.points)
    t0 = time.perf_counter()
    for p in pts:
        evaluate(p)
    dt_eval = time.perf_counter() - t0
    t0 = time.perf_counter()
    pts2 = points(args.points, seed=1)
    for p in pts2:
        evaluate(p)
    dt_full = time.perf_counter() - t0
    rate_eval = args.points / dt_eval
    rate_full = args.points / dt_full
    print(f"closed-form evaluate only     : {rate_eval:10.0f} points/s  ({dt_eval * 1e6 / args.points:.0f} us/point)")
    print(f"validate + evaluate (from dict): {rate_full:10.0f} points/s")
    print(f"target                         : {TARGET_PER_S:10d} points/s  -> ratio {rate_full / TARGET_PER_S:.2f}x")


if __name__ == "__main__":
    main()
