"""The knee across seeds: does each run of a shipped study name the knee of the merged front?

Run: python benchmarks/bench_knee.py [--seeds 5] [--settled-seeds 10] [--baseline-seeds 3]
                                     [--only full,quickstart,core-pooling]

For each study (``studies/full.toml``, ``quickstart.toml``, ``core-pooling.toml`` as shipped), runs
seeds 0..N-1 (N = ``--settled-seeds`` for full.toml, else ``--seeds``), each in a fresh SQLite file,
evaluations in this process. The *merged front* pools every seed's trials
(``dse.search.review.merge``); its top knee candidate is the *merged knee*. Per seed (the first
``--seeds``) the table prints:

* the run's top knee architecture (``[search] knee_keys``; an equivalent one, same objectives,
  counts as the same) and whether it is the merged knee's;
* the largest relative difference of the run's knee objectives from the merged knee's (target:
  within 5 % on every objective);
* ``gap``: the merged knee's utility minus the run's knee's (``ln`` of the ratio of their figures
  of merit, the product of objectives: 0.05 means the run's knee is about 5 % worse); a run
  whose knee is another architecture of near-equal merit has a small gap but a large deviation;
* its hypervolume as a share of the union front's (objectives normalised between the union
  front's ideal and nadir, reference 1.1, as ``bench_search_quality.py``); for full.toml the
  union also holds NSGA-II, TPE, multivariate TPE, random and plain guided runs at the same trial
  budget, seeds 0..``--baseline-seeds``-1 (target >= 0.97);
* trace-driven evaluations spent (distinct designs evaluated; target for full.toml <= 480);
* whether the run says its knee is settled (``quality.knee_settledness``) and whether it is
  ambiguous; ``near``: the run's architecture is the merged knee's or one of the merged
  candidates, or the merged knee's rival (``dse.search.front.knee``, "Rivals"), within the
  ambiguity margin of it (when the merged front itself cannot separate two architectures, a run
  naming either is not wrong).

Last, per study: how often a run that says *settled* names the merged knee (over all its seeds;
target >= 9 of 10 for full.toml). A study the runs do not settle prints 0 settled runs.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_search_quality import BASELINES, Normaliser  # noqa: E402

STUDIES = {"full": "studies/full.toml", "quickstart": "studies/quickstart.toml",
           "core-pooling": "studies/core-pooling.toml"}


KNEE_OVERRIDE: dict = {}     # --knee-share / --stop / --patience: the shipped knee settings changed (trials)


def run_seed(path: Path, tmp: Path, seed: int, sampler=None, settings=None):
    """One run of the study at ``seed`` (another sampler: the same budget, no knee phase)."""
    from dse.search.execute.runner import run_study
    from dse.search.propose.knee.phase import KneeSearch
    from dse.search.study.results import load_results
    from dse.search.study.study import load_study
    tag = f"{sampler}{len(list(tmp.iterdir()))}" if sampler is not None else "shipped"   # one file per run
    cfg = load_study(path, seed=seed, storage=f"sqlite:///{tmp / f'{path.stem}-{tag}-{seed}.db'}")
    if KNEE_OVERRIDE and sampler is None:
        cfg = replace(cfg, knee=replace(cfg.knee, **KNEE_OVERRIDE))
    if sampler is not None:
        cfg = replace(cfg, sampler=sampler, sampler_settings=dict(settings), knee=KneeSearch(),
                      name=f"{cfg.name}-{tag}")
    t0 = time.perf_counter()
    s = run_study(cfg)
    return cfg, load_results(cfg), s, time.perf_counter() - t0


def knee_of(res):
    from dse.search.review.quality import knee_candidates
    fr, kc = knee_candidates(res)
    return (fr[kc.top], kc.candidates[0], kc) if kc.candidates else (None, None, kc)


def study_rows(name: str, seeds: int, table_seeds: int, baseline_seeds: int, tmp: Path) -> dict:
    from dse.search.front import pareto
    from dse.search.review import merge
    from dse.search.review.quality import knee_settledness
    path = ROOT / STUDIES[name]
    runs = [run_seed(path, tmp, s) for s in range(seeds)]
    pooled, _ = merge.pool([(f"seed{s}", r[1]) for s, r in enumerate(runs)])
    mrec, mcand, mkc = knee_of(pooled)
    fronts = [r[1].F(r[1].front()) for r in runs]
    extra, labels = [], []
    if name == "full":
        for sampler, settings in BASELINES:
            for s in range(baseline_seeds):
                _, res, _, dt = run_seed(path, tmp, s, sampler, settings)
                extra.append(res.F(res.front()))
                labels.append(f"{sampler}{'-mv' if settings.get('multivariate') else ''}")
                print(f"[{name}] baseline {sampler} {settings or ''} seed {s}: front {len(extra[-1])}, {dt:.1f} s",
                      flush=True)
    U = np.vstack([F for F in fronts + extra if len(F)])
    hv = Normaliser(U[pareto.nondominated(U)])
    for lab in dict.fromkeys(labels):
        xs = [hv(F) / hv.total for F, lb in zip(extra, labels) if lb == lab]
        print(f"[{name}] baseline {lab} (no knee phase) HV/union: " + " / ".join(f"{x:.3f}" for x in xs))
    near = {c.group for c in mkc.candidates if mkc.candidates[0].score - c.score < mkc.threshold}
    near |= {g for c in mkc.candidates if c.group in near for g in c.equivalent}
    if mkc.rival is not None and mkc.candidates[0].score - mkc.rival.score < mkc.threshold:
        near.add(mkc.rival.group)          # the best design of another architecture, no candidate
    mobj = np.array(mrec.values, dtype=float)
    arch = dict(zip(mkc.keys, mcand.group))
    print(f"\n[{name}] {STUDIES[name]}: {seeds} seeds pooled; merged knee {arch} "
          f"{f'(ambiguous, margin {mkc.margin:.3f})' if mkc.ambiguous else ''} objectives "
          f"{', '.join(f'{v:.4g}' for v in mobj)}")
    print(f"{'seed':>4s} {'knee architecture':42s} {'same':>4s} {'near':>4s} {'max dev':>7s} {'gap':>6s} "
          f"{'HV/union':>8s} {'evals':>5s} {'trials':>6s} {'settled':>7s} {'ambig':>5s} {'time s':>6s}")
    out = {"same": [], "near": [], "dev": [], "gap": [], "hv": [], "evals": [], "settled_agree": [],
           "settled_near": []}
    for s, (_cfg, res, summ, dt) in enumerate(runs):
        rec, cand, kc = knee_of(res)
        same = cand is not None and any(mcand.names(g) for g in [cand.group, *cand.equivalent])
        dev = float(np.max(np.abs(np.array(rec.values) - mobj) / np.maximum(np.abs(mobj), 1e-300)))
        share = hv(fronts[s]) / hv.total
        settled = knee_settledness(res)["settled"]
        close = same or (cand is not None and any(g in near for g in [cand.group, *cand.equivalent]))
        out["same"].append(same)
        out["near"].append(close)
        out["dev"].append(dev)
        out["gap"].append(mcand.score - cand.score if cand is not None else float("nan"))
        out["hv"].append(share)
        out["evals"].append(summ.evaluations)
        if settled:
            out["settled_agree"].append(same)
            out["settled_near"].append(close)
        if s < table_seeds:
            label = ", ".join(str(v) for v in cand.group) if cand is not None else "-"
            print(f"{s:4d} {label:42s} {'yes' if same else 'no':>4s} {'yes' if close else 'no':>4s} {dev:7.1%} "
                  f"{out['gap'][-1]:6.3f} {share:8.3f} {summ.evaluations:5d} "
                  f"{summ.complete:6d} {'yes' if settled else 'no':>7s} {'yes' if kc.ambiguous else 'no':>5s} "
                  f"{dt:6.1f}")
    n = table_seeds
    print(f"[{name}] seeds 0-{n - 1}: same knee {sum(out['same'][:n])}/{n} (within the ambiguity margin of the "
          f"merged knee: {sum(out['near'][:n])}/{n}); within 5 % on every objective "
          f"{sum(d <= 0.05 for d in out['dev'][:n])}/{n}; utility gap to the merged knee mean "
          f"{np.nanmean(out['gap'][:n]):.3f}, worst {np.nanmax(out['gap'][:n]):.3f}; "
          f"HV/union worst {min(out['hv'][:n]):.3f}; evaluations max {max(out['evals'][:n])}")
    sa = out["settled_agree"]
    print(f"[{name}] over {seeds} seeds: {len(sa)} runs say settled, {sum(sa)} of them name the merged knee "
          f"({sum(out['settled_near'])} within its ambiguity margin)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeds in the table (default 5)")
    ap.add_argument("--settled-seeds", type=int, default=10, help="seeds of full.toml for settled agreement")
    ap.add_argument("--baseline-seeds", type=int, default=3, help="seeds of each baseline sampler (full.toml)")
    ap.add_argument("--only", default="full,quickstart,core-pooling")
    ap.add_argument("--knee-share", type=float, help="trials: the knee phase's share instead of the shipped one")
    ap.add_argument("--stop", choices=("trials", "knee-settled"), help="trials: this stop rule instead")
    ap.add_argument("--patience", type=int, help="trials: this knee patience instead")
    args = ap.parse_args()
    for k, v in (("share", args.knee_share), ("stop", args.stop), ("patience", args.patience)):
        if v is not None:
            KNEE_OVERRIDE[k] = v
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        for name in args.only.split(","):
            seeds = max(args.seeds, args.settled_seeds) if name == "full" else args.seeds
            study_rows(name, seeds, args.seeds, args.baseline_seeds, Path(d))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
