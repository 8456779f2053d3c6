"""Trace-driven designs per second: the designs a study proposes, replayed in-process on one core.

Run: python benchmarks/bench_replay.py [--study studies/full.toml] [--storage URL] [--seed 0]

1. The study runs once (``--jobs 1``, a fresh SQLite file and a fresh cache directory) unless
   ``--storage`` names a finished run of it; its distinct evaluated designs are the replay set.
2. Each replay runs in a fresh process (empty in-process caches) and evaluates every design once
   as an evaluation worker does,
   timed with that process's CPU time (one core, insensitive to other load) and wall time:
   * ``cold``: a fresh cache directory (the first design, untimed, generates the traces; every
     placement is computed);
   * ``warm``: the same directory again (placements found on disk, as the workers of a study
     find what the driver or another worker computed).
   Target: >= 100 designs/s.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 100.0


def replay(designs_file: str, study: str) -> None:
    """Child process: evaluate every design as an evaluation worker does (``safe_evaluate``, which
    also sets the process's memory reuse), print designs, CPU seconds and wall seconds."""
    from dse.search.execute.evaluation import evaluate_design, safe_evaluate
    from dse.search.study.study import load_study
    cfg = load_study(study, check_metrics=False)
    designs = json.loads(Path(designs_file).read_text())
    safe_evaluate(evaluate_design, designs[0], cfg.models)   # trace load and imports, not timed
    c0, w0 = time.process_time(), time.perf_counter()
    for d in designs[1:]:
        if not safe_evaluate(evaluate_design, d, cfg.models).ok:
            raise SystemExit(f"design failed to evaluate: {d}")
    print(json.dumps({"designs": len(designs) - 1, "cpu_s": time.process_time() - c0,
                      "wall_s": time.perf_counter() - w0}))


def _designs(url: str) -> list[dict]:
    """Distinct evaluated designs of the (only) study in a storage, in trial order."""
    import optuna
    from optuna.trial import TrialState
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    names = optuna.get_all_study_names(url)
    if len(names) != 1:
        raise SystemExit(f"{url}: expected one study, found {names}")
    seen, out = set(), []
    for t in optuna.load_study(study_name=names[0], storage=url).get_trials(states=(TrialState.COMPLETE,)):
        rec, key = t.user_attrs.get("dse", {}), t.user_attrs.get("design_key")
        if key and key not in seen and "metrics" in rec:
            seen.add(key)
            out.append(rec["design"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default=str(ROOT / "studies/full.toml"))
    ap.add_argument("--storage", help="a finished run of the study to replay (default: run it now)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        replay(*args.child)
        return
    from dse.search.execute.runner import run_study
    from dse.search.study.study import load_study
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"[machine] {os.cpu_count()} cores, load average {load:.2f} at start")
    with tempfile.TemporaryDirectory(prefix="bench_replay_") as d:
        tmp = Path(d)
        os.environ["DSE_CACHE_DIR"] = str(tmp / "run-cache")
        cfg = load_study(args.study, seed=args.seed, storage=args.storage or f"sqlite:///{tmp / 'run.db'}")
        if not args.storage:
            t0 = time.perf_counter()
            s = run_study(cfg)
            print(f"[run] {cfg.name}: {s.complete} trials, {s.evaluations} evaluated, "
                  f"{time.perf_counter() - t0:.1f} s wall")
        designs = _designs(cfg.storage)
        (tmp / "designs.json").write_text(json.dumps(designs))
        print(f"[replay] {len(designs)} distinct designs of {args.study}")
        for label in ("cold", "warm"):     # the cold replay leaves its placements in the cache
            env = {**os.environ, "DSE_CACHE_DIR": str(tmp / "replay-cache"), "PYTHONPATH": str(ROOT)}
            r = subprocess.run([sys.executable, __file__, "--child", str(tmp / "designs.json"), args.study],
                               capture_output=True, text=True, env=env)
            if r.returncode:
                raise SystemExit(r.stderr.strip()[-2000:])
            out = json.loads(r.stdout.strip().splitlines()[-1])
            per_cpu = out["designs"] / out["cpu_s"]
            print(f"[replay] {label}: {out['designs']} designs, {per_cpu:.1f} designs/s of CPU time "
                  f"({out['cpu_s'] / out['designs'] * 1e3:.1f} ms each), {out['designs'] / out['wall_s']:.1f}/s wall "
                  f"-> {'meets' if per_cpu >= TARGET else 'MISSES'} {TARGET:.0f}/s")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"[machine] load average {load:.2f} at the end")


if __name__ == "__main__":
    main()
