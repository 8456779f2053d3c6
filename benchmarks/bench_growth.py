"""How cost grows: one design against batch B, trace steps, models in a study and experts per
layer; `dse front` time and memory against the number of trials. Each table ends with its growth
exponent (the least-squares slope of log cost against log size: 1 = linear, 2 = quadratic).

Run: python benchmarks/bench_growth.py [--max-trials 100000] [--only design|front]
Designs are trace-driven (synthetic trace, the default design otherwise) with the trace cache off:
"new trace" is a design on a trace not seen before (generation, placement, schedule), "warm
trace" another design (tile width 2) on that same trace. Experts: catalog models that differ only in E
(``bench-e<E>``, top-8, 16 layers). Trials: synthetic journal storages of N closed-form designs
of spaces/ground-truth.toml (full metrics per trial, as `dse run` stores them), then
``dse front --json`` in a child process: wall time and peak RSS.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXPERTS = (16, 32, 64, 128, 256, 512)


def slope(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def print_table(title: str, name: str, xs, cols: dict[str, list[float]], unit: str) -> None:
    print(f"\n{title}")
    print(f"{name:>10} " + " ".join(f"{k:>14}" for k in cols))
    for i, x in enumerate(xs):
        print(f"{x:>10} " + " ".join(f"{v[i]:>14.4g}" for v in cols.values()))
    print(f"{'exponent':>10} " + " ".join(f"{slope(xs, v):>14.2f}" for v in cols.values()) + f"   ({unit})")
    print(f"{'last step':>10} " + " ".join(f"{slope(xs[-2:], v[-2:]):>14.2f}" for v in cols.values())
          + "   (exponent between the two largest sizes)")


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


SEEDS = itertools.count(1000)


def design_costs(make, xs) -> dict[str, list[float]]:
    """Seconds for a design on a trace not seen before (generation, placement, schedule) and for
    another design (tile width 2 instead of 4) on the same, now warm, trace."""
    new, warm = [], []
    for x in xs:
        seed = next(SEEDS)
        new.append(timed(make(x, seed, 4)))
        warm.append(timed(make(x, seed, 2)))
    return {"new trace s": new, "warm trace s": warm}


def bench_designs() -> None:
    from dse.catalog import model_names
    from dse.pipeline.evaluate import evaluate
    from dse.search.execute.runner import evaluate_design
    from dse.spec import DesignPoint
    def pt(seed, w, **kw):
        return DesignPoint.from_dict({"trace_steps": 32, "trace_seed": seed, "tile_width": w, **kw})
    bs = [8, 16, 32, 64, 128, 256]
    print_table("one design against batch B (32 steps)", "B", bs,
                design_costs(lambda b, s, w: (lambda: evaluate(pt(s, w, batch=b))), bs), "seconds")
    steps = [16, 32, 64, 128, 256]
    print_table("one design against trace steps (B = 64)", "steps", steps,
                design_costs(lambda n, s, w: (lambda: evaluate(pt(s, w, batch=64, trace_steps=n))), steps), "seconds")
    models = [m for m in model_names() if not m.startswith("bench-")]
    ks = [k for k in (1, 2, 4, 8) if k <= len(models)]
    print_table("one design of a study against its number of models (B = 32)", "models", ks,
                design_costs(lambda k, s, w: (lambda: evaluate_design(
                    {"batch": 32, "trace_steps": 32, "trace_seed": s, "tile_width": w}, models[:k])), ks), "seconds")
    print_table("one design against experts per layer (top-8, 16 layers, B = 64)", "experts", list(EXPERTS),
                design_costs(lambda e, s, w: (lambda: evaluate(pt(s, w, model=f"bench-e{e}", batch=64))), EXPERTS),
                "seconds")


def expert_catalog(path: Path) -> None:
    path.write_text("".join(
        f'[bench-e{e}]\nname = "bench-e{e}"\nexperts = {e}\ntop_k = 8\nmoe_layers = 16\nhidden = 2048\n'
        f'expert_intermediate = 512\nnative_batch = 64\n\n' for e in EXPERTS))


STUDY = """[study]
name = "growth"
space = "{root}/spaces/ground-truth.toml"
objectives = "{root}/objectives/latency-silicon-closed-form.toml"
trials = {n}
[sampler]
name = "random"
[workload]
models = ["qwen3.5-35b-a3b"]
trace = "catalog"
"""


def build_storage(tmp: Path, n: int) -> tuple[Path, str]:
    """A journal storage holding ``n`` finished trials of distinct ground-truth designs."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    from dse.search.execute.evaluation import design_key
    from dse.search.grid.grid import enumerate_space, score_table
    from dse.search.storage.stored import constraint_keys
    from dse.search.study.study import load_study
    from dse.vector import Columns, evaluate_columns
    study_file = tmp / f"growth-{n}.toml"
    study_file.write_text(STUDY.format(root=ROOT, n=n))
    url = f"journal:{tmp / f'growth-{n}.log'}"
    cfg = load_study(study_file, storage=url)
    env = cfg.base_env()
    grid = enumerate_space(cfg.space, env)
    rows = np.sort(np.random.default_rng(0).choice(grid.n, size=min(n, grid.n), replace=False))
    cols = Columns.from_values({**cfg.base, "model": cfg.models[0], **{k: v[rows] for k, v in grid.values.items()}},
                               len(rows))
    t = evaluate_columns(cols)
    values, feasible = score_table(t, cfg.objectives, np.ones(len(rows), dtype=bool))
    backend = MemoryBackend()
    study = optuna.create_study(study_name=cfg.name, storage=optuna.storages.JournalStorage(backend),
                                directions=cfg.objectives.directions)
    dists = {d.name: CategoricalDistribution(list(grid_choices(cfg.space, d, env))) for d in cfg.space.dims}
    trials = []
    for j, i in enumerate(rows.tolist()):
        params = grid.params(i)
        design = cfg.design(params)
        m = t.row(j)
        ok = bool(feasible[j])
        trials.append(optuna.trial.create_trial(
            values=[float(v) for v in values[j]], params=params, distributions=dists,
            user_attrs={"design_key": design_key(cfg, design),
                        "dse": {"design": design, "metrics": {cfg.models[0]: m}, "feasible": ok,
                                "reason": m["infeasible_reason"]}},
            constraints=dict(zip(constraint_keys(cfg), [0.0 if m["feasible"] else 1.0]
                                 + [0.0 if ok else 1.0] * len(cfg.objectives.constraints)))))
    study.add_trials(trials)
    backend.dump(Path(url.split(":", 1)[1]))
    return study_file, url


class MemoryBackend:
    """An optuna journal backend in memory, written out once as a journal file (JSON lines, the
    format ``JournalFileBackend`` reads): adding 10^5 trials to a file backend one fsync at a
    time would take the benchmark longer than the thing it measures."""
    def __init__(self):
        self.logs: list = []

    def read_logs(self, log_number_from: int):
        return self.logs[log_number_from:]

    def append_logs(self, logs) -> None:
        self.logs.extend(logs)

    def dump(self, path: Path) -> None:
        with open(path, "w") as fh:
            for log in self.logs:
                fh.write(json.dumps(log, separators=(",", ":")) + "\n")


def grid_choices(space, d, env):
    if d.type == "categorical":
        return d.choices
    return space._values(d, env)


def bench_front(max_trials: int) -> None:
    ns = [n for n in (100, 1000, 10_000, 100_000) if n <= max_trials]
    secs, rss, build = [], [], []
    with tempfile.TemporaryDirectory() as td:
        for n in ns:
            t0 = time.perf_counter()
            study_file, url = build_storage(Path(td), n)
            build.append(time.perf_counter() - t0)
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "dse", "front", str(study_file), "--storage", url, "--json"],
                               capture_output=True, text=True, cwd=ROOT)
            secs.append(time.perf_counter() - t0)
            if r.returncode:
                sys.exit(f"dse front failed: {r.stderr.strip()}")
            assert json.loads(r.stdout)["n_trials"] == n
            after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            rss.append(max(after, before) / 1024)   # MiB; the max over children so far
            print(f"  built {n} trials in {build[-1]:.1f} s; dse front {secs[-1]:.2f} s", file=sys.stderr)
    print_table("dse front --json against trials (journal storage, full metrics per trial)", "trials", ns,
                {"seconds": secs, "peak RSS MiB": rss}, "seconds, MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-trials", type=int, default=100_000)
    ap.add_argument("--only", choices=("design", "front"))
    args = ap.parse_args()
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # one core
    except (AttributeError, OSError):
        pass
    tmp = Path(tempfile.mkdtemp())
    expert_catalog(tmp / "experts.toml")
    os.environ["DSE_CATALOG"] = str(tmp / "experts.toml")
    os.environ["DSE_CACHE_DIR"] = "off"
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine is noisy)")
    if args.only in (None, "design"):
        bench_designs()
    if args.only in (None, "front"):
        bench_front(args.max_trials)


if __name__ == "__main__":
    main()
