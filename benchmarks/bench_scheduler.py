"""Trace-driven scheduler: design points per second, speed ratio vs the plain-Python oracle, and a
1M-token trace in bounded memory (targets: >= 100 design points/s on one core on the
default workload of 64 steps x 40 layers x B = 128; bounded peak RSS for 1M tokens).

Run: python benchmarks/bench_scheduler.py [--points N] [--oracle-steps S] [--tokens T] [--skip-big]

Everything is measured in this one run and printed as figures and ratios (no timed assertions).
The BLAS / OpenMP thread pools are pinned to one thread, so "points/s" is for one core.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                    # the checkout: the oracle lives with the tests

TARGET_PER_S = 100


def _report(what: str, n: int, wall: float, cpu: float) -> None:
    """Points per second of wall time and per second of this process's CPU time (the one-core
    figure when other jobs share the machine)."""
    print(f"{what}: {n / wall:7.1f} points/s wall, {n / cpu:7.1f} points/s CPU "
          f"({n / cpu / TARGET_PER_S:.2f} x target {TARGET_PER_S})")


def bench_points(n: int) -> None:
    from dse.pipeline.evaluate import evaluate
    from dse.spec import DesignPoint
    t0 = time.perf_counter()
    base = evaluate(DesignPoint())                                   # generates + caches the trace
    t_gen = time.perf_counter() - t0
    print(f"default workload: {base.point.model}, B={base.point.run_batch}, {base.point.trace_steps} steps "
          f"(+{base.point.profile_steps} profiling) x 40 layers; first evaluation (trace generation, "
          f"placement) {t_gen:.2f} s")
    same = DesignPoint()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        evaluate(same)
    _report(f"same design point x {n}", n, time.perf_counter() - t0, time.process_time() - c0)
    # distinct points on the same workload: pooling, fetch, tile width, links, clocks (placement cached)
    pts = []
    for i in range(n):
        pts.append(DesignPoint.from_dict({
            "pooling": ("broadcast", "direct")[i % 2], "fetch": ("fifo", "load_aware")[(i // 2) % 2],
            "tile_width": (4, 2, 8)[i % 3], "core_mesh_link_bits": 256 + 64 * (i % 8),
            "macro_mhz": 150.0 + i % 50}))
    for p in pts[:12]:
        evaluate(p)                                                   # warm the per-width job caches
    t0, c0 = time.perf_counter(), time.process_time()
    for p in pts:
        evaluate(p)
    _report(f"{n} distinct design points", n, time.perf_counter() - t0, time.process_time() - c0)
    t0 = time.perf_counter()
    for side in (2, 4, 6, 8):
        for pl in ("contiguous", "lpt", "coactivation"):
            evaluate(DesignPoint.from_dict({"core_side": side, "placement": pl}))
    print(f"12 new (core side, placement) domains incl. placement: {(time.perf_counter() - t0) / 12 * 1e3:.1f} ms each")


def bench_oracle(steps: int) -> None:
    import numpy as np

    from dse.mapping import placement as pl
    from dse.mapping.scheduler import Scheduler
    from dse.workload import synth_cache
    from dse.workload.trace import loads
    from tests.mapping import oracle_scheduler as oracle
    tr, prof = synth_cache.cached("qwen3.5-35b-a3b", 128, 64, 0, "auto", 16)
    ids = tr.experts[:steps]
    dom = pl.domain(256, 4, 16)
    slot = pl.place("lpt", dom, loads(prof.experts, 256).mean(axis=0))
    sch = Scheduler(dom, slot, 4, "broadcast")
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        fast = Scheduler(dom, slot, 4, "broadcast").run([loads(ids, 256)])
    t_fast = (time.perf_counter() - t0) / reps
    a = dom.arrays
    goc = [[] for _ in range(dom.n_cores)]
    for g, (st, n) in enumerate(zip(a.group_start, a.group_units)):
        goc[int(a.group_core[g])].append(list(range(int(st), int(st + n))))
    t0 = time.perf_counter()
    ref = oracle.run(ids.tolist(), 256, slot.tolist(), list(dom.core_units), goc, 4, "broadcast")
    t_oracle = time.perf_counter() - t0
    agree = np.allclose(fast.rounds, ref["rounds"]) and fast.jobs.tolist() == ref["jobs"]
    print(f"oracle check on {steps} steps x 40 layers x B=128: vectorised {t_fast * 1e3:.1f} ms (loads + schedule), "
          f"plain-Python oracle {t_oracle:.2f} s -> speed ratio {t_oracle / t_fast:,.0f} x; results agree: {agree}")
    del sch


def _child_eval(path: str) -> None:
    """Run in a fresh process: evaluate the trace file, print time and peak RSS."""
    import resource

    from dse.pipeline.evaluate import evaluate
    from dse.spec import DesignPoint
    t0 = time.perf_counter()
    m = evaluate(DesignPoint.from_dict({"trace": path})).metrics
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:   # VmHWM restarts at exec; ru_maxrss keeps the forked parent's high-water mark on Linux
        with open("/proc/self/status") as fh:
            rss = next(int(x.split()[1]) for x in fh if x.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        pass
    print(f"RESULT {dt:.2f} {rss:.0f} {m['trace_steps_measured']} {m['occupancy']:.4f} {m['actual_mfu']:.4f}")


def bench_big(tokens: int) -> None:
    import numpy as np

    from dse.catalog import get_model
    from dse.workload import synth
    from dse.workload.trace import TraceMeta, write_chunks
    m = get_model("qwen3.5-35b-a3b")
    B = 128
    steps = -(-tokens // B)
    gen = synth.Generator(m, B, seed=0)
    pool = np.concatenate(list(gen.steps(128)), axis=0)                 # 128 generated steps, reused
    rng = np.random.default_rng(0)

    def chunks():
        done = 0
        while done < steps:
            n = min(128, steps - done)
            perm = np.stack([rng.permutation(m.experts) for _ in range(m.moe_layers)])   # relabel per layer
            c = pool[:n]
            yield perm[np.arange(m.moe_layers)[None, :, None, None], c].astype(np.uint8)
            done += n

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.npz"
        t0 = time.perf_counter()
        write_chunks(path, TraceMeta(m.name, B, steps, m.moe_layers, m.top_k, m.experts, "bench: 128 synthetic "
                                     "steps relabelled", ""), chunks(), compress=False)
        size = path.stat().st_size / 2 ** 20
        print(f"1M-token trace: {steps} steps x 40 layers x B={B} x top-8 = {steps * B:,} tokens, "
              f"file {size:.0f} MiB (written in {time.perf_counter() - t0:.1f} s)")
        out = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True,
                             check=True).stdout
        line = [x for x in out.splitlines() if x.startswith("RESULT")][-1].split()
        dt, rss, meas = float(line[1]), float(line[2]), int(line[3])
        ids_mib = steps * m.moe_layers * B * m.top_k / 2 ** 20
        loads_mib = steps * m.moe_layers * m.experts * 4 / 2 ** 20
        print(f"streamed evaluation: {dt:.1f} s for {meas} measured steps ({meas * 40 / dt:,.0f} (step, layer) per s); "
              f"peak RSS {rss:.0f} MiB of the whole process vs {ids_mib:.0f} MiB of ids and {loads_mib:.0f} MiB of "
              f"loads held at once (ratio {rss / (ids_mib + loads_mib):.2f}); occupancy {line[4]}, "
              f"actual MFU {line[5]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=500)
    ap.add_argument("--oracle-steps", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child_eval(a.child)
        return
    bench_points(a.points)
    bench_oracle(a.oracle_steps)
    if not a.skip_big:
        bench_big(a.tokens)


if __name__ == "__main__":
    main()
