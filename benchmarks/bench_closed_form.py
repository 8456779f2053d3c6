"""Closed-form evaluations per second on one core: the scalar pipeline and the vectorised
evaluator on the same kind of random designs, measured in one run.

Run: python benchmarks/bench_closed_form.py [--points N] [--vector-points M]
Scalar: N distinct random design points (catalog unions, no trace) through the full pipeline
(validation + every stage). Vectorised: M random designs of the same distribution as numpy
columns through `dse.vector.evaluate_chunks`; the first 1,000 of them are checked against the
scalar path. Targets: scalar >= 2,000 points/s; vectorised >= 5,000,000 points/s and >= 30x the
scalar.

The arithmetic limit: the elementwise numpy operations the evaluator runs per point (ufunc calls
counted through an ndarray subclass, times the elements each touches, over one chunk), and the
machine's numpy rate on arrays of the chunk size (multiply, divide, maximum, each into a new
array, as the evaluator does); limit = rate / operations per point. Both rates are given in wall
and CPU time (the machine is shared: CPU time is the steadier figure). The numpy rate depends on
how glibc's malloc recycles the 0.5 MB arrays: in a process whose heap top is trimmed after each
free, every new array is fresh pages (system time), and the rate falls about 9x (seen on this
machine: 2.3-3.4 G ops/s with MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ raised, 0.25-0.4
G ops/s without, in a fresh process); a ratio against it is only as steady as that state.
"""
from __future__ import annotations

import argparse
import os
import random
import time

TARGET_PER_S = 2000
TARGET_VECTOR_PER_S = 5_000_000
TARGET_RATIO = 30
CHOICES = {"core_side": [1, 2, 4, 6, 8], "tile_width": [1, 2, 4, 8],
           "array_depth": [k * 1024 for k in (8, 16, 24, 32, 48, 64)], "batch": [1, 8, 64, 128, 256],
           "core_mesh_link_bits": [128, 256, 512, 1024], "reduction_order": ["ep_first", "tp_first"]}


def points(n: int, seed: int = 0):
    from dse.catalog import model_names
    from dse.spec import DesignPoint
    rng = random.Random(seed)
    models = model_names()
    out = []
    for _ in range(n):
        d = {k: rng.choice(v) for k, v in CHOICES.items()}
        out.append(DesignPoint.from_dict({**d, "trace": "catalog", "model": rng.choice(models),
                                          "macro_mhz": rng.uniform(100, 400)}))
    return out


def vector_columns(n: int, seed: int = 0):
    import numpy as np

    from dse.vector import Columns
    from dse.vector.columns import categories
    rng = np.random.default_rng(seed)
    vals = {k: rng.choice(np.array(v, dtype=object if isinstance(v[0], str) else None), n) for k, v in CHOICES.items()}
    vals["reduction_order"] = rng.integers(0, 2, n)
    vals["model"] = rng.integers(0, len(categories("model")), n)
    vals["macro_mhz"] = rng.uniform(100, 400, n)
    return Columns.from_values(vals, n)


def ops_per_point(n: int) -> tuple[float, int]:
    """(elementwise ufunc operations per point, ufunc calls) of one evaluation of ``n`` random designs."""
    import numpy as np

    from dse.vector import Columns, evaluate_columns

    class Counted(np.ndarray):
        elements, calls = 0, 0

        def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kw):
            plain = [a.view(np.ndarray) if isinstance(a, Counted) else a for a in inputs]
            if out is not None:
                kw["out"] = tuple(o.view(np.ndarray) if isinstance(o, Counted) else o for o in out)
            r = getattr(ufunc, method)(*plain, **kw)
            Counted.elements += max(np.size(a) for a in plain)
            Counted.calls += 1
            return r.view(Counted) if isinstance(r, np.ndarray) and r.dtype != object else r

    cols = vector_columns(n, seed=2)
    evaluate_columns(Columns({k: v.view(Counted) for k, v in cols.data.items()}, n))
    return Counted.elements / n, Counted.calls


def numpy_rate(n: int, seconds: float = 1.0) -> float:
    """Elementwise operations per second (CPU time) on float64 arrays of ``n`` elements."""
    import numpy as np
    rng = np.random.default_rng(0)
    a, b = rng.random(n) + 0.5, rng.random(n) + 0.5
    ops, t0 = 0, time.process_time()
    while time.process_time() - t0 < seconds:
        for _ in range(10):
            a * b, a / b, np.maximum(a, b)
        ops += 30 * n
    return ops / (time.process_time() - t0)


def check_equal(pts) -> int:
    """Scalar and vectorised metrics of the same points; returns the number of values compared."""
    from dse.pipeline.evaluate import evaluate
    from dse.vector import Columns, evaluate_columns
    t = evaluate_columns(Columns.from_points(pts))
    n = 0
    for i, p in enumerate(pts):
        s, v = evaluate(p).metrics, t.row(i)
        assert s.keys() == v.keys(), (i, set(s) ^ set(v))
        for k, a in s.items():
            b = v[k]
            ok = a == b or (isinstance(a, float) and abs(a - b) <= 1e-12 * max(abs(a), abs(b)))
            assert ok, (i, k, a, b)
            n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=5000)
    ap.add_argument("--vector-points", type=int, default=1_000_000)
    args = ap.parse_args()
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # one core
    except (AttributeError, OSError):
        pass
    from dse.pipeline.evaluate import evaluate
    from dse.spec import DesignPoint
    from dse.vector import evaluate_chunks
    from dse.vector.evaluate import CHUNK
    evaluate(DesignPoint.from_dict({"trace": "catalog"}))   # warm imports and caches
    pts = points(args.points)
    t0, c0 = time.perf_counter(), time.process_time()
    for p in pts:
        evaluate(p)
    dt_eval, cpu_eval = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    for p in points(args.points, seed=1):
        evaluate(p)
    dt_full, cpu_full = time.perf_counter() - t0, time.process_time() - c0
    rate_eval = args.points / dt_eval
    rate_full = args.points / dt_full
    compared = check_equal(pts[:1000])
    cols = vector_columns(args.vector_points)
    for _ in evaluate_chunks(cols.take(slice(0, 2000))):   # warm the per-key caches' imports
        pass
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in evaluate_chunks(cols):
        pass
    dt_vec, cpu_vec = time.perf_counter() - t0, time.process_time() - c0
    rate_vec, rate_cpu = args.vector_points / dt_vec, args.vector_points / cpu_vec
    ops, calls = ops_per_point(CHUNK)
    rate_np = numpy_rate(CHUNK)
    limit = rate_np / ops
    print(f"scalar closed-form evaluate only      : {rate_eval:10.0f} points/s  "
          f"({dt_eval * 1e6 / args.points:.0f} us/point; {args.points / cpu_eval:.0f} per CPU second)")
    print(f"scalar validate + evaluate (from dict): {rate_full:10.0f} points/s  -> {rate_full / TARGET_PER_S:.2f}x "
          f"the {TARGET_PER_S} target ({args.points / cpu_full:.0f} per CPU second)")
    print(f"vectorised evaluate ({args.vector_points} points)   : {rate_vec:10.0f} points/s wall, {rate_cpu:.0f} CPU "
          f"({cpu_vec * 1e9 / args.vector_points:.0f} ns/point) -> {rate_cpu / TARGET_VECTOR_PER_S:.2f}x the "
          f"{TARGET_VECTOR_PER_S} target")
    print(f"vectorised / scalar (same run)        : {rate_vec / rate_eval:10.1f}x  (target >= {TARGET_RATIO}x)")
    print(f"equality check                        : {compared} values of 1000 points equal the scalar path")
    print(f"arithmetic per point                  : {ops:10.0f} elementwise ops ({calls} ufunc calls per "
          f"{CHUNK}-point chunk)")
    print(f"numpy rate on {CHUNK}-element arrays   : {rate_np / 1e6:10.0f} M ops/s (CPU time)")
    print(f"arithmetic limit                      : {limit:10.0f} points/s -> evaluator at {rate_cpu / limit:.0%} "
          f"of it (CPU time)")
    print(f"load average                          : {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
