"""The front before and after pricing, and the D2D sensitivity (issue 42).

For each seed, runs ``studies/full.toml`` (or ``--study``) and prints the knee design (core
side, depth, tile width, clocks, package, node) and the numeric knobs that more than half the
front holds at one bound of its range. ``--d2d-paper`` runs under the other reading of Table XII
(the paper's D2D + IO figures as the price of every PHY GB/s: 12 mm2 and 3.0 W for the published
die's 130 GB/s), in-process at ``--jobs 1`` so the constants hold in the evaluations.

    python benchmarks/bench_prices.py --seeds 0,1,2,3,4
    python benchmarks/bench_prices.py --seeds 0 --d2d-paper
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dse.cli import main as dse_main  # noqa: E402
from dse.constants import C  # noqa: E402
from dse.search.front.walls import study_walls  # noqa: E402
from dse.search.study.results import load_results  # noqa: E402
from dse.search.study.study import load_study  # noqa: E402

KNEE_KNOBS = ("core_side", "array_depth", "tile_width", "pe_mhz", "macro_mhz", "noc_ghz", "n_macros",
              "macro_width_bits", "dies_per_package", "packages_per_node", "d2d_gbps_per_die", "node_gbps",
              "pe_groups_per_core")
# The paper's Table XII as the price of a PHY GB/s: 12 mm2 and 3.0 W for 96 + 34 GB/s.
D2D_PAPER = {"ucie_gbps_per_mm2": 130 / 12, "ucie_pj_per_bit": 3.0 / (130 * 8e9) * 1e12,
             "serdes_gbps_per_mm2": 130 / 12, "serdes_pj_per_bit": 3.0 / (130 * 8e9) * 1e12}


def one(study: str, seed: int, work: Path) -> dict:
    url = f"sqlite:///{work / f'{Path(study).stem}-{seed}.db'}"
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(None), contextlib.redirect_stderr(None):
        rc = dse_main(["run", study, "--storage", url, "--seed", str(seed), "--no-progress", "--jobs", "1"])
    assert rc == 0, rc
    res = load_results(load_study(study, storage=url, seed=seed))
    knee = res.knee()
    return {"seed": seed, "s": time.perf_counter() - t0, "front": len(res.front()),
            "knee": {k: knee.design.get(k) for k in KNEE_KNOBS} if knee else None,
            "values": knee.values if knee else None, "walls": study_walls(res)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default=str(ROOT / "studies" / "full.toml"))
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--d2d-paper", action="store_true", help="price PHYs at Table XII's 12 mm2 / 3.0 W")
    args = ap.parse_args()
    ctx = C.overridden(D2D_PAPER) if args.d2d_paper else contextlib.nullcontext()
    print(f"study {args.study}, D2D reading: {'paper (Table XII)' if args.d2d_paper else 'UCIe-2D + SerDes'}")
    with tempfile.TemporaryDirectory() as d, ctx:
        for s in (int(x) for x in args.seeds.split(",")):
            r = one(args.study, s, Path(d))
            print(f"seed {s}: {r['s']:.0f} s, front {r['front']}, knee {r['knee']} -> "
                  f"{[round(v, 5) for v in r['values']] if r['values'] else None}")
            for w in r["walls"]:
                print(f"  at a bound: {w.sentence()}")


if __name__ == "__main__":
    main()
