"""Model-uncertainty bands at interactive speed (issues 44, 49): the generator's versions, measured
in one run.

Run: python benchmarks/bench_bands.py [--model qwen3.5-397b-a17b] [--batch 205] [--draws 32]
                                      [--modes gumbel,after] [--jobs J]

What ``dse evaluate --model M --batch B --synthetic --seed 0 --uncertainty N [--jobs J]`` does (the
nominal design, then N Latin-hypercube draws of ``dse/data/model_uncertainty.toml``), each mode in
a fresh process on an empty trace cache (a new ``DSE_CACHE_DIR``):

* ``before`` (issue 44's before): each decode step the top k of every token's logits + Gumbel
  noise by ``np.argpartition``, fresh arrays per step, and the campaign's skew scales searched on
  whole calibration traces (no recorded answer, no disk cache);
* ``gumbel`` (issue 44's after): the same Gumbel-top-k steps with the exact fast top-k
  (``dse.workload.topk``) and reused step buffers, and the recorded skew scales;
* ``after`` (issue 49): each token's k experts drawn without replacement in proportion to
  exp(logit) (``dse.workload.plackett_luce``: the same law from ~k + 1 uniforms per token instead
  of E), and ``--jobs`` worker processes for the draws.

``gumbel`` and ``after`` draw different traces of the same law: their bands agree within the
draws' own spread, not to the last digit (``before`` and ``gumbel`` agree to the last digit).

Then, with ``--file-trace``, a design on a trace file (the model's synthetic trace, saved): its
draws move only arithmetic after the schedule, so ``point_bands`` places and schedules it once
(``evaluate.evaluate_arithmetic_draws``); timed against evaluating every draw from scratch, in
this process, with the bands compared (equal).

Printed per mode: wall and CPU seconds (the child's and its workers'), the load average while it
ran, and p5 / p50 / p95 of occupancy and actual MFU; then the ratios against the first mode. The
targets (20 s for the 397B at N = 32) are wall seconds on an idle 2-core machine; on a shared
machine compare the CPU seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import run_measured  # noqa: E402

METRICS = ("occupancy", "actual_mfu")


def gumbel_steps(self, n_steps: int, chunk: int = 16):
    """``synth.Generator.steps`` as issue 44 left it: every token the top k of its logits + Gumbel
    noise (``synth._gumbel_topk``: E float32 uniforms per token), step buffers reused."""
    import math

    import numpy as np

    from dse.workload import synth
    p, m = self.params, self.model
    L, E, k, B = m.moe_layers, m.experts, m.top_k, self.B
    rng = synth._rng(m.name, self.seed, f"steps/{self.B}/{self.profile}")
    C = self.boost.shape[1]
    topic = rng.integers(C, size=B)
    drift = (p.drift * rng.standard_normal((L, E))).astype(np.float32)
    a = np.float32(p.drift_corr)
    innov = np.float32(p.drift * math.sqrt(max(0.0, 1.0 - p.drift_corr ** 2)))
    work, scratch = (np.empty((L, B, E), dtype=np.float32) for _ in range(2))
    done = 0
    while done < n_steps:
        n = min(chunk, n_steps - done)
        out = np.empty((n, L, B, k), dtype=synth.id_dtype(E))
        for s in range(n):
            lg = self.boost[:, topic, :]
            np.add(lg, (self.base + drift)[:, None, :], out=lg)
            out[s] = synth._gumbel_topk(lg, k, rng, work, scratch)
            drift = a * drift + innov * rng.standard_normal((L, E), dtype=np.float32)
            new = rng.random(B) < p.turnover
            if new.any():
                topic[new] = rng.integers(C, size=int(new.sum()))
        done += n
        yield out


def child(mode: str, model: str, batch: int, draws: int, front: str | None = None, jobs: int = 1) -> None:
    import numpy as np

    from dse.mapping import warm_cache
    from dse.pipeline.evaluate import evaluate
    from dse.pipeline.uncertainty import point_bands
    from dse.search.execute.pool import run_many, workload_key
    from dse.spec import DesignPoint
    from dse.workload import campaign, synth

    if mode in ("before", "gumbel"):
        synth.Generator.steps = gumbel_steps
        jobs = 1
    if mode == "before":
        warm_cache.EVICT_RESCAN_PUBLISHES = 0                    # the shared folder scanned at every write
        def argpartition_step(logits, k, rng, work=None, scratch=None):
            u = rng.random(logits.shape, dtype=np.float32)
            g = logits - np.log(-np.log(np.maximum(u, np.float32(synth.GUMBEL_U_FLOOR))))
            return np.argpartition(-g, k - 1, axis=-1)[..., :k]
        synth._gumbel_topk = argpartition_step
        campaign.recorded_scales = lambda: {}
    if front:
        import contextlib
        import io

        from dse.cli import main as dse_main
        t0, c0 = time.perf_counter(), time.process_time()
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = dse_main(["front", front, "--robust", str(draws), "--model-uncertainty", str(draws), "--json",
                           "--jobs", str(jobs)])
        rob = json.loads(buf.getvalue())["robust"]
        print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "rc": rc,
                          "knees": rob["knees"], "top": rob["knee_frequency"][:3]}))
        return
    point = DesignPoint.from_dict({}, overrides=[f"model={model}", f"batch={batch}", "trace=synthetic",
                                                 "trace_seed=0"])
    t0, c0 = time.perf_counter(), time.process_time()
    nominal = evaluate(point).metrics
    bands = point_bands(point, draws, 0, run_many(jobs, workload_key))
    print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                      "nominal": {k: nominal[k] for k in METRICS},
                      "bands": {k: bands[k] for k in METRICS}}))


def file_trace(model: str, batch: int, draws: int) -> None:
    from dse.catalog import get_model
    from dse.pipeline.evaluate import evaluate
    from dse.pipeline.uncertainty import bands, point_bands
    from dse.spec import DesignPoint
    from dse.workload import synth
    from dse.workload.trace import save_trace

    with tempfile.TemporaryDirectory(prefix="bench-bands-") as d:
        path = save_trace(synth.generate(get_model(model), batch, 80, seed=0), Path(d) / "trace.npz")
        p = DesignPoint.from_dict({}, overrides=[f"model={model}", f"batch={batch}", f"trace={path}"])
        evaluate(p)                                              # trace loaded, placement warm
        t0, c0 = time.perf_counter(), time.process_time()
        scalar = bands(lambda knobs: evaluate(p).metrics, draws, 0)
        t1, c1 = time.perf_counter(), time.process_time()
        shared = point_bands(p, draws, 0)
        t2, c2 = time.perf_counter(), time.process_time()
    print(f"trace file ({model} B={batch}, 80 steps, {draws} draws, warm): every draw evaluated "
          f"{t1 - t0:.2f} s wall / {c1 - c0:.2f} s CPU; schedule shared {t2 - t1:.2f} s / {c2 - c1:.2f} s "
          f"(x{(c1 - c0) / max(c2 - c1, 1e-9):.1f} CPU); bands equal: {shared == scalar} "
          f"(load average {os.getloadavg()[0]:.1f})")


def front_modes(a) -> None:
    out = {}
    for mode in a.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="bench-bands-") as cache:
            load0 = os.getloadavg()[0]
            so, se, wall, usage, rc = run_measured([sys.executable, __file__, "--child", mode, "--front", a.front,
                                                    "--draws", str(a.draws), "--jobs", str(a.jobs)],
                                                   {**os.environ, "DSE_CACHE_DIR": cache})
            if rc:
                sys.exit(f"{mode}: exit {rc}\n{se}")
            r = out[mode] = json.loads(so.strip().splitlines()[-1])
            jobs = a.jobs if mode == "after" else 1
            print(f"{mode:>7}: dse front {a.front} --robust {a.draws} --model-uncertainty {a.draws} --jobs {jobs}, "
                  f"empty cache: "
                  f"wall {wall:.1f} s, CPU {usage.ru_utime + usage.ru_stime:.1f} s (load average {load0:.1f} -> "
                  f"{os.getloadavg()[0]:.1f}); top knee frequencies "
                  + ", ".join(f"trial {t['trial']}: {t['frequency']:.3f}" for t in r["top"]))
            r["cpu_total"] = usage.ru_utime + usage.ru_stime
    first, last = list(out)[0], list(out)[-1]
    if first != last:
        print(f"{last} / {first}: CPU x{out[last]['cpu_total'] / out[first]['cpu_total']:.2f}; "
              f"same knee in every draw: {out[last]['knees'] == out[first]['knees']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen3.5-397b-a17b")
    ap.add_argument("--batch", type=int, default=205)
    ap.add_argument("--draws", type=int, default=32)
    ap.add_argument("--modes", default="gumbel,after", help="before, gumbel, after (see above)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes of mode after (dse evaluate --jobs)")
    ap.add_argument("--file-trace", action="store_true", help="also time a trace-file design's draws")
    ap.add_argument("--front", metavar="STUDY", help="instead: dse front STUDY --robust N --model-uncertainty N "
                                                     "(N = --draws; run the study first)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.model, a.batch, a.draws, a.front, a.jobs)
        return
    if a.front:
        return front_modes(a)
    if a.file_trace:
        file_trace(a.model, a.batch, a.draws)
    out = {}
    for mode in a.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="bench-bands-") as cache:
            env = {**os.environ, "DSE_CACHE_DIR": cache}
            load0 = os.getloadavg()[0]
            so, se, wall, usage, rc = run_measured([sys.executable, __file__, "--child", mode, "--model", a.model,
                                                    "--batch", str(a.batch), "--draws", str(a.draws),
                                                    "--jobs", str(a.jobs)], env)
            if rc:
                sys.exit(f"{mode}: exit {rc}\n{se}")
            r = json.loads(so.strip().splitlines()[-1])
            r.update(process_wall=wall, process_cpu=usage.ru_utime + usage.ru_stime,
                     load=(load0, os.getloadavg()[0]))
            out[mode] = r
        jobs = a.jobs if mode == "after" else 1
        print(f"{mode:>7}: {a.model} B={a.batch}, {a.draws} draws, --jobs {jobs}, empty cache: "
              f"wall {r['process_wall']:.1f} s, "
              f"CPU {r['process_cpu']:.1f} s (load average {r['load'][0]:.1f} -> {r['load'][1]:.1f})")
        for k in METRICS:
            b = r["bands"][k]
            print(f"         {k:<10} nominal {r['nominal'][k]:.4f}  p5 {b['p5']:.4f}  p50 {b['p50']:.4f}  "
                  f"p95 {b['p95']:.4f}  (p95 - p5 {b['p95'] - b['p5']:.4f})")
    first, last = list(out)[0], list(out)[-1]
    if first != last:
        b, f = out[first], out[last]
        print(f"{last} / {first}: wall x{f['process_wall'] / b['process_wall']:.2f}, "
              f"CPU x{f['process_cpu'] / b['process_cpu']:.2f}")
        for k in METRICS:
            pb, pf = b["bands"][k], f["bands"][k]
            wb, wf = pb["p95"] - pb["p5"], pf["p95"] - pf["p5"]
            width = f"x{wf / wb:.3f}" if wb else f"{wb:.4f} -> {wf:.4f}"
            print(f"  {k}: p50 {pf['p50'] / pb['p50'] - 1:+.2%}, p5-p95 width {width}")


if __name__ == "__main__":
    main()
