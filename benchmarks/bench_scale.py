"""Scale-out of the DSE engine: warm-state builds, per-design and per-domain costs, projected speed-up.

Run: python benchmarks/bench_scale.py [--steps 512] [--trials 768] [--batch 24] [--jobs 1,2,4]
     [--dask 4] [--alternatives] [--skip-ratios] [--cores-per-worker 1]

1. **Scale table.** ``bench_search.py``'s speed study (``SPEED_SPACE``: scheduling knobs, 48
   (domain, placement) pairs; random sampler; traces of ``--steps`` decode steps) runs with
   ``dse run --jobs J`` for each J of ``--jobs`` and on a local Dask cluster of ``--dask``
   workers, each from a fresh storage and a fresh cache holding only the traces (generated once
   beforehand). Every run counts its warm-state builds (``DSE_WARM_BUILD_LOG``: one line per
   unit layout or rounds' lead-job table built, in whichever process built it) against the
   distinct scheduling domains its designs meet: layouts must equal domains, and no table is built
   twice, whatever the worker count (``dse.mapping.warm_cache``). Per
   run: wall time, CPU time of the run's processes (user + system, ``wait4``), peak resident
   memory of the largest process, builds, domains, and the speed-up over ``--jobs 1``.
2. **Costs.** The ``--jobs 1`` run's designs are evaluated again in a fresh process, in trial
   order, from an empty cache (traces only): a design that builds its domain's layout costs the
   per-domain cost on top of a design; then again in another fresh process that maps every
   layout from the shared folder (what a worker meeting a domain built by another pays).
3. **Projection** at 8, 32 and 128 workers of ``--cores-per-worker`` cores each (1: a worker is
   one single-threaded process, as ``dse run --jobs`` and the Dask backend run them), from the
   measured figures: T(W) = fixed + max(driver, (N x design + D x domain + (M_W - D) x map) / W'),
   where N designs fall in D domains, fixed is the ``--jobs 1`` run's time outside its run loop
   (start, imports, storage, exit), driver its loop time not spent evaluating (asking, telling,
   writing: serial in the driver), M_W the (worker, domain) pairs met when designs go to W
   workers at random (each domain of n designs meets W (1 - (1 - 1/W)^n) of them), and W' =
   min(W, 2 x batch) (a batch is asked ahead while the one before runs: at most two batches of
   designs are in flight). "before" is the same projection with every worker building each
   domain it meets (no shared folder: M_W builds).
4. **Ratios** (``--skip-ratios`` skips them): the speed study at ``--jobs 2`` against ``--jobs
   1`` with total CPU and peak memory (part 1's runs), Dask with 2 local workers against
   ``--jobs 1``, and ``studies/full.toml`` as shipped (guided) at ``--jobs 2``
   against ``--jobs 1``. ``--alternatives`` adds the mechanisms measured against the shared
   folder: ``--jobs 2`` with domain affinity and work stealing alone (``DSE_WARM_CACHE_DIR=off``:
   each process builds what it meets), Dask 4 workers without the folder, and Dask 2 workers
   without domain affinity (``DSE_DASK_AFFINITY=0``: dask places every design itself).

Each figure is one run: on a shared machine compare ratios measured in the same run only.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_search import SPEED_MODEL, _generate_traces, _speed_study  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROJECT_AT = (8, 32, 128)


def run(study: Path, traces: Path, cache: Path, jobs: int, backend: str = "loky",
        env_extra: dict | None = None) -> dict:
    """``dse run STUDY --json`` in a fresh process with its own cache (traces copied in) and a
    build log: the summary plus wall, CPU, peak RSS, builds and distinct built keys."""
    if traces is not None:
        shutil.copytree(traces, cache / "traces")
    log = cache / "builds.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSE_")}
    env.update(DSE_CACHE_DIR=str(cache), DSE_WARM_BUILD_LOG=str(log), **(env_extra or {}))
    args = [sys.executable, "-m", "dse", "run", str(study), "--jobs", str(jobs), "--json", "--no-progress"]
    if backend == "dask":
        args += ["--backend", "dask"]
    from measure import run_measured
    out, err, wall, usage, rc = run_measured(args, env)
    if rc:
        raise SystemExit(f"dse run failed: {err.strip()[-2000:]}")
    s = json.loads(out)
    lines = [x.split() for x in (log.read_text().splitlines() if log.exists() else [])]
    layouts = [x[0] for x in lines if x[2] == "layout"]
    tables = [x[0] for x in lines if x[2] == "table"]
    s.update(wall=wall, cpu=usage.ru_utime + usage.ru_stime, rss_mb=usage.ru_maxrss / 1024,
             builds=len(layouts), built_keys=len(set(layouts)), tables=len(tables), table_keys=len(set(tables)),
             builders=len({x[1] for x in lines}), stderr=err.strip())
    return s


def domains_of(study: Path) -> tuple[int, int, dict]:
    """(distinct evaluated designs, distinct domains, designs per domain) of a finished study."""
    from dse.search.execute.warm import layout_domain
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    per: dict = {}
    designs = [r.design for r in load_results(load_study(study)).records if r.duplicate_of is None]
    for d in designs:
        key = layout_domain(d, SPEED_MODEL)
        if key is not None:
            per[key] = per.get(key, 0) + 1
    return len(designs), len(per), per


def costs(study: Path, traces: Path, tmp: Path) -> dict:
    """Per-design, per-domain (build) and per-domain (map) costs, each pass in a fresh process."""
    cache = tmp / "cost-cache"
    shutil.copytree(traces, cache / "traces")
    out = {}
    for phase in ("build", "map"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("DSE_")}
        env.update(DSE_CACHE_DIR=str(cache))
        p = subprocess.run([sys.executable, __file__, "--cost-child", str(study)], capture_output=True,
                           text=True, env=env)
        if p.returncode:
            raise SystemExit(f"cost pass failed: {p.stderr.strip()[-2000:]}")
        out[phase] = json.loads(p.stdout.strip().splitlines()[-1])
    b, m = out["build"], out["map"]
    return {"design": b["other_ms"], "domain": max(0.0, b["first_ms"] - b["other_ms"]),
            "map": max(0.0, m["first_ms"] - m["other_ms"]), "first_build_ms": b["first_ms"],
            "first_map_ms": m["first_ms"], "builds": b["builds"], "maps_built": m["builds"]}


def _cost_child(study: str) -> None:
    """In a fresh process: evaluate the study's designs in trial order (the first, which loads
    the traces, untimed); the mean time of a domain's first design and of the others."""
    from dse.mapping import warm_cache
    from dse.search.execute.evaluation import evaluate_design, safe_evaluate
    from dse.search.execute.warm import layout_domain
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    designs = [r.design for r in load_results(load_study(Path(study))).records if r.duplicate_of is None]
    domain_key = lambda d: layout_domain(d, SPEED_MODEL)  # noqa: E731
    safe_evaluate(evaluate_design, designs[0], [SPEED_MODEL])
    seen, first, other = {domain_key(designs[0])}, [], []
    builds0 = warm_cache.BUILDS[0]
    for d in designs[1:]:
        t0 = time.perf_counter()
        safe_evaluate(evaluate_design, d, [SPEED_MODEL])
        dt = (time.perf_counter() - t0) * 1e3
        (other if domain_key(d) in seen else first).append(dt)
        seen.add(domain_key(d))
    mean = lambda v: sum(v) / max(1, len(v))  # noqa: E731
    print(json.dumps({"first_ms": mean(first), "other_ms": mean(other), "builds": warm_cache.BUILDS[0] - builds0}))


def met(per: dict, w: int) -> float:
    """Expected (worker, domain) pairs when each design goes to one of ``w`` workers at random."""
    return sum(w * (1 - (1 - 1 / w) ** n) for n in per.values())


def project(base: dict, c: dict, n: int, per: dict, batch: int, cores: int) -> list[tuple]:
    """Rows (workers, projected wall s, speed-up, before: wall, speed-up) of part 3."""
    fixed = base["wall"] - base["elapsed_s"]
    driver = max(0.0, base["elapsed_s"] - base["result_s"])
    d = len(per)
    t1 = base["wall"]
    rows = []
    for w in PROJECT_AT:
        eff = min(w * cores, 2 * batch)
        m = met(per, w)
        shared = (n * c["design"] + d * c["domain"] + (m - d) * c["map"]) / 1e3
        alone = (n * c["design"] + m * c["domain"]) / 1e3
        t = fixed + max(driver, shared / eff)
        tb = fixed + max(driver, alone / eff)
        rows.append((w, t, t1 / t, tb, t1 / tb))
    return rows


def full_ratio(tmp: Path) -> tuple[float, float]:
    """``studies/full.toml`` as shipped, --jobs 1 then --jobs 2, each from a fresh storage and a
    cache holding only its traces (generated once beforehand)."""
    from dse.search.execute.warm import warm_traces
    from dse.search.study.study import load_study
    times, studies = {}, {}
    for jobs in (0, 1, 2):
        d = tmp / f"full{jobs}"
        d.mkdir()
        studies[jobs] = d / "full.toml"
        studies[jobs].write_text((ROOT / "studies" / "full.toml").read_text().replace('"../', f'"{ROOT}/'))
    os.environ["DSE_CACHE_DIR"] = str(tmp / "full-traces")
    try:
        warm_traces(load_study(studies[0]))
    finally:
        os.environ.pop("DSE_CACHE_DIR")
    for jobs in (1, 2):
        times[jobs] = run(studies[jobs], tmp / "full-traces" / "traces", tmp / f"full-cache{jobs}", jobs)["wall"]
    return times[1], times[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=512)
    ap.add_argument("--trials", type=int, default=768)
    ap.add_argument("--batch", type=int, default=24)
    ap.add_argument("--jobs", default="1,2,4", help="comma-separated --jobs values (1 first)")
    ap.add_argument("--dask", type=int, default=4, help="workers of the local Dask cluster (0: none)")
    ap.add_argument("--cores-per-worker", type=int, default=1)
    ap.add_argument("--alternatives", action="store_true", help="also the mechanisms without the shared folder")
    ap.add_argument("--skip-ratios", action="store_true")
    ap.add_argument("--cost-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cost_child:
        _cost_child(args.cost_child)
        return
    jobs = [int(j) for j in args.jobs.split(",")]
    print(f"[scale] {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")
    with tempfile.TemporaryDirectory(prefix="dse-scale-") as t:
        tmp = Path(t)
        traces = _generate_traces(tmp, args.steps, args.batch)
        configs = [(f"--jobs {j}", j, "loky", {}) for j in jobs]
        if args.dask:
            configs.append((f"Dask {args.dask}", args.dask, "dask", {}))
        if not args.skip_ratios and args.dask != 2:
            configs.append(("Dask 2", 2, "dask", {}))
        if args.alternatives:
            configs += [("--jobs 2, affinity only", 2, "loky", {"DSE_WARM_CACHE_DIR": "off"}),
                        (f"Dask {args.dask or 4}, no folder", args.dask or 4, "dask", {"DSE_WARM_CACHE_DIR": "off"}),
                        ("Dask 2, no domain affinity", 2, "dask", {"DSE_DASK_AFFINITY": "0"})]
        results = []
        for i, (label, j, backend, extra) in enumerate(configs):
            study = _speed_study(tmp / f"run{i}", args.trials, args.steps, args.batch)
            s = run(study, traces, tmp / f"cache{i}", j, backend, extra)
            n, d, per = domains_of(study)
            s.update(label=label, designs=n, domains=d, per=per, study=study,
                     shared=extra.get("DSE_WARM_CACHE_DIR") != "off")
            results.append(s)
            print(f"[scale] {label}: {s['wall']:.1f} s wall, {s['cpu']:.1f} s CPU, peak RSS {s['rss_mb']:.0f} MB, "
                  f"{s['builds']} layout builds in {s['builders']} processes for {d} domains "
                  f"({'equal' if s['builds'] == d else 'NOT EQUAL'}), {s['tables']} round tables built "
                  f"({s['table_keys']} distinct), {n} designs")
        base = results[0]
        print(f"[scale] {'run':28s} {'wall s':>7s} {'CPU s':>7s} {'RSS MB':>7s} {'builds':>6s} {'domains':>7s} "
              f"{'tables':>6s} {'distinct':>8s} {'speed-up':>8s} {'CPU ratio':>9s}")
        for s in results:
            print(f"[scale] {s['label']:28s} {s['wall']:7.1f} {s['cpu']:7.1f} {s['rss_mb']:7.0f} {s['builds']:6d} "
                  f"{s['domains']:7d} {s['tables']:6d} {s['table_keys']:8d} {base['wall'] / s['wall']:7.2f}x "
                  f"{s['cpu'] / base['cpu']:8.2f}x")
        same = all(s["builds"] == s["domains"] for s in results if s["shared"])
        print(f"[scale] warm builds = distinct domains in every run with the shared folder: {'yes' if same else 'NO'}")
        c = costs(base["study"], traces, tmp)
        print(f"[scale] costs (one process, trial order): a design {c['design']:.1f} ms; a new domain "
              f"+{c['domain']:.1f} ms to build ({c['builds']} builds), +{c['map']:.1f} ms to map from the shared "
              f"folder ({c['maps_built']} builds in that pass)")
        fixed, driver = base["wall"] - base["elapsed_s"], base["elapsed_s"] - base["result_s"]
        print(f"[scale] --jobs 1: {fixed:.1f} s outside the run loop, {driver:.1f} s of driver work in it, "
              f"{base['result_s']:.1f} s evaluating")
        print(f"[scale] projected, {args.cores_per_worker} core(s) per worker, at most {2 * args.batch} designs "
              f"in flight (two batches of {args.batch}):")
        print(f"[scale] {'workers':>7s} {'wall s':>7s} {'speed-up':>8s} {'before: wall s':>14s} {'speed-up':>8s}")
        for w, tw, sp, tb, spb in project(base, c, base["designs"], base["per"], args.batch, args.cores_per_worker):
            print(f"[scale] {w:7d} {tw:7.1f} {sp:7.2f}x {tb:14.1f} {spb:7.2f}x")
        if not args.skip_ratios:
            by = {s["label"]: s for s in results}
            if "--jobs 2" in by:
                j2 = by["--jobs 2"]
                print(f"[scale] speed study, {args.steps} steps: --jobs 2 {base['wall'] / j2['wall']:.2f}x --jobs 1 "
                      f"(target 1.75x), total CPU {j2['cpu'] / base['cpu']:.2f}x (target <= 1.10x), peak RSS "
                      f"--jobs 2 {j2['rss_mb']:.0f} MB against --jobs 1 {base['rss_mb']:.0f} MB")
            if "Dask 2" in by:
                print(f"[scale] Dask, 2 local workers: {base['wall'] / by['Dask 2']['wall']:.2f}x --jobs 1 "
                      f"(target 1.6x)")
            f1, f2 = full_ratio(tmp)
            print(f"[scale] studies/full.toml as shipped: --jobs 1 {f1:.1f} s, --jobs 2 {f2:.1f} s: "
                  f"{f1 / f2:.2f}x (target 1.6x)")
    print(f"[scale] load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
