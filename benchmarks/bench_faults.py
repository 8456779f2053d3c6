"""Fault-injection table (issue 35.2): a full disk (ENOSPC) and the file-size limit (EFBIG) at
random points of a real `dse run` on SQLite and on a journal file, and of a synthetic-trace cache
write. Prints one Markdown row per (fault, backend): the runs, how many stopped with one line,
the storage integrity check, trials lost (must be 0) and whether the resumed run's trials equal
an uninterrupted run's (must be yes). docs/guide/faults.md shows its output.

    python benchmarks/bench_faults.py [--points N] [--seed S]      # N fault points per row (default 4)

Needs a C compiler (the ENOSPC fault library, tests/search/storage/faults.py) and Linux.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.search.storage.faults import build_shim, fault_case, fault_points, reference  # noqa: E402


def storage_rows(work: Path, shim: Path, points: int, seed: int) -> list[str]:
    rows = []
    for backend in ("sqlite", "journal"):
        ref, size = reference(work, backend)
        for i, fault in enumerate(("ENOSPC", "EFBIG")):
            outs = [fault_case(work, backend, fault, p, ref, shim)
                    for p in fault_points(size, points, seed + 10 * i + (backend == "journal"), backend)]
            stopped = [o for o in outs if o.rc != 0]
            rows.append(f"| {fault} | {'SQLite' if backend == 'sqlite' else 'journal file'} | {len(outs)} "
                        f"({', '.join(f'{o.point // 1000} kB' for o in outs)}) | "
                        f"{len(stopped)} stopped, {sum(o.one_line and o.rc == 2 for o in stopped)} with one line "
                        f"(exit 2); {len(outs) - len(stopped)} finished | "
                        f"{'ok' if all(o.integrity == 'ok' for o in outs) else 'FAILED'} | "
                        f"{sum(o.before for o in stopped)} | {sum(o.lost for o in outs)} | "
                        f"{'yes' if all(o.exact and o.resume_rc == 0 for o in outs) else 'NO'} |")
    return rows


def cache_row(work: Path, shim: Path, fault: str, points: int) -> str:
    """The trace cache: the run's trace equals a fresh one, no half entry or temporary file."""
    from tests.workload.test_trace_cache_faults import _child, _entries_whole, _fresh_ids
    want = _fresh_ids()
    digest = hashlib.sha256(want.tobytes()).hexdigest()
    size = want.nbytes + 256
    ok = whole = absent = 0
    for k in range(points):
        point = (k + 1) * size // (points + 1)
        cache = work / f"cache-{fault}-{point}"
        cache.mkdir()
        proc = (_child(cache, env={"LD_PRELOAD": str(shim), "DSE_FAULT_BUDGET": str(point),
                                   "DSE_FAULT_PREFIX": f"{cache}/"})
                if fault == "ENOSPC" else _child(cache, fsize=point))
        ok += proc.returncode == 0 and proc.stdout.strip() == digest
        whole += _entries_whole(cache, want) == []
        absent += not any((cache / "traces").glob("*.npy"))
        again = _child(cache)
        ok += again.returncode == 0 and again.stdout.strip() == digest
    return (f"| {fault} | trace cache | {points} (cache write cut at 1/{points + 1} .. {points}/{points + 1}) | "
            f"trace always the fresh one ({ok}/{2 * points}); entry absent {absent}/{points}, never half written "
            f"({whole}/{points} folders clean) | ok | - | 0 | yes (regenerated) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=4, help="fault points per row")
    ap.add_argument("--seed", type=int, default=35)
    args = ap.parse_args()
    os.environ.setdefault("MPLBACKEND", "Agg")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dse-faults-") as tmp:
        work = Path(tmp)
        os.environ["DSE_CACHE_DIR"] = str(work / "trace-cache")      # warmed by the reference runs
        shim = build_shim(work)
        print("| fault | backend | runs (fault point) | outcome | integrity check | trials finished before "
              "the fault | trials lost | resume exact |")
        print("|---|---|---|---|---|---|---|---|")
        for row in storage_rows(work, shim, args.points, args.seed):
            print(row, flush=True)
        for fault in ("ENOSPC", "EFBIG"):
            print(cache_row(work, shim, fault, args.points), flush=True)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"\n{args.points} points per row, seed {args.seed}, study: GRID300 space, random sampler, 48 trials "
          f"in batches of 8 (tests/search/storage/faults.py); {time.perf_counter() - t0:.0f} s; "
          f"at {rev.stdout.strip()}")


if __name__ == "__main__":
    main()
