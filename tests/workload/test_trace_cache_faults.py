"""The synthetic-trace disk cache on a full disk (issue 35.2): ENOSPC (an LD_PRELOAD fault library)
and EFBIG (``RLIMIT_FSIZE``) at random points of a cache write, in a real process. The trace is
always the one generated without a cache; the cache then holds whole entries or none, and no
temporary file; a later read regenerates what is missing. A half-written entry under its final
name (a crash of an older version, a copy cut short) is never read."""
from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.search.storage.faults import build_shim, compiler

MODEL, BATCH, STEPS, SEED = "olmoe-1b-7b", 8, 64, 3
CHILD = """
import hashlib, sys
import numpy as np
from dse.catalog import get_model
from dse.workload.synth import default_profile
from dse.workload.synth_cache import generate_cached
m = get_model({model!r})
tr = generate_cached(m, {batch}, {steps}, {seed}, default_profile(m))
print(hashlib.sha256(np.ascontiguousarray(tr.experts).tobytes()).hexdigest())
"""


def _fresh_ids() -> np.ndarray:
    from dse.catalog import get_model
    from dse.workload.synth import default_profile, generate
    m = get_model(MODEL)
    return np.ascontiguousarray(generate(m, BATCH, STEPS, SEED, None, default_profile(m)).experts)


def _child(cache: Path, env: dict | None = None, fsize: int | None = None) -> subprocess.CompletedProcess:
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    full = {**{k: v for k, v in os.environ.items() if k != "DSE_CATALOG"}, "DSE_CACHE_DIR": str(cache), **(env or {})}
    code = CHILD.format(model=MODEL, batch=BATCH, steps=STEPS, seed=SEED)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300,
                          preexec_fn=limit if fsize is not None else None)


def _entries_whole(cache: Path, want: np.ndarray) -> list[str]:
    """What is wrong with the cache folder: temporary files left, or a visible entry not whole."""
    bad = []
    traces = cache / "traces"
    for f in sorted(traces.iterdir()) if traces.is_dir() else []:
        if f.name.endswith(".tmp"):
            bad.append(f"temporary file left: {f.name}")
        elif f.suffix == ".npy":
            if not f.with_suffix(".json").is_file():
                bad.append(f"{f.name} without its metadata")
            ids = np.load(f, allow_pickle=False)
            if not np.array_equal(ids, want):
                bad.append(f"{f.name} differs from a fresh generation")
    return bad


@pytest.mark.long                # 20 child processes per fault
@pytest.mark.skipif(compiler() is None, reason="no C compiler for the ENOSPC fault library")
@pytest.mark.parametrize("fault", ["ENOSPC", "EFBIG"])
def test_a_full_disk_never_leaves_a_half_cache_entry(fault, tmp_path):
    want = _fresh_ids()
    digest = hashlib.sha256(want.tobytes()).hexdigest()
    size = want.nbytes + 256                        # the .npy entry: header + ids
    shim = build_shim(tmp_path)
    rng = random.Random(35)
    points = sorted({0, 1, 100, size // 2, size - 1} | {rng.randrange(0, size + 300) for _ in range(5)})
    outcomes = set()
    for point in points:
        cache = tmp_path / f"cache-{fault}-{point}"
        cache.mkdir()
        if fault == "ENOSPC":
            proc = _child(cache, env={"LD_PRELOAD": str(shim), "DSE_FAULT_BUDGET": str(point),
                                      "DSE_FAULT_PREFIX": str(cache) + "/"})
        else:
            proc = _child(cache, fsize=max(point, 1))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == digest            # the fault never changes the trace
        assert _entries_whole(cache, want) == []
        outcomes.add(any((cache / "traces").glob("*.npy")))
        again = _child(cache)                            # space is back
        assert again.returncode == 0 and again.stdout.strip() == digest, again.stderr
        assert _entries_whole(cache, want) == [] and any((cache / "traces").glob("*.npy"))
    assert False in outcomes, "no fault point hit the cache write: nothing was tested"


def test_a_half_written_entry_is_never_read(tmp_path, monkeypatch):
    from dse.catalog import get_model
    from dse.workload import synth_cache
    from dse.workload.synth import default_profile
    monkeypatch.setenv("DSE_CACHE_DIR", str(tmp_path))
    m = get_model(MODEL)
    want = _fresh_ids()
    tr = synth_cache.generate_cached(m, BATCH, STEPS, SEED, default_profile(m))
    (npy,) = (tmp_path / "traces").glob("*.npy")
    whole = npy.read_bytes()
    for cut in (10, 128, len(whole) // 2, len(whole) - 1):
        npy.write_bytes(whole[:cut])                     # cut short under its final name
        got = synth_cache.generate_cached(m, BATCH, STEPS, SEED, default_profile(m))
        assert np.array_equal(np.asarray(got.experts), want)
        assert npy.read_bytes() == whole                 # rewritten whole
    assert np.array_equal(np.asarray(tr.experts), want)
