"""On-disk and in-process caches of generated synthetic traces (:mod:`dse.workload.synth`).

Generating a trace costs seconds (64 steps of the default model: ~2 s; 1024 steps: ~30 s), and
every DSE worker process would repeat it. Generated ids are therefore kept as .npy files (read
back memory-mapped, so worker processes share the pages) under $DSE_CACHE_DIR (default
$XDG_CACHE_HOME/rexpert-dse or ~/.cache/rexpert-dse; DSE_CACHE_DIR=off disables it). The key
covers everything the ids depend on (model shape, batch, steps, seed, profile, the calibration
table, the package and NumPy versions), so a hit is bit-identical to a fresh generation.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np

from dse.workload.synth import SYNTH_FILE, default_profile, generate
from dse.workload.trace import Trace, TraceMeta

CACHE_FORMAT = 2                          # 2: decode steps drawn by plackett_luce (issue 49)
CACHE_OFF = ("", "off", "0", "none")      # DSE_CACHE_DIR values that disable the cache
KEY_HEX_CHARS = 32                        # file-name length of a cache key (128 bits of SHA-256)
IN_PROCESS_TRACES = 8                     # (measured, profiling) pairs kept per process


def cache_dir() -> Path | None:
    env = os.environ.get("DSE_CACHE_DIR")
    if env is not None and env.strip().lower() in CACHE_OFF:
        return None
    if env:
        return Path(env) / "traces"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rexpert-dse" / "traces"


def cache_key(model, batch: int, steps: int, seed: int, prof: str | None) -> str:
    from dse.data import path as data_path
    from dse.version import __version__
    h = hashlib.sha256()
    for part in (CACHE_FORMAT, __version__, np.__version__, model.name, model.experts, model.top_k,
                 model.moe_layers, batch, steps, seed, prof):
        h.update(repr(part).encode() + b"\0")
    h.update(data_path(*SYNTH_FILE).read_bytes())
    return h.hexdigest()[:KEY_HEX_CHARS]


def _load(file: Path, meta_file: Path, shape: tuple[int, ...]) -> Trace | None:
    try:
        ids = np.load(file, mmap_mode="r", allow_pickle=False)
        meta = TraceMeta(**json.loads(meta_file.read_text()))
    except (OSError, ValueError, TypeError, json.JSONDecodeError):
        return None
    if ids.shape != shape or ids.dtype.kind not in "ui":
        return None
    return Trace(meta, ids)


def _store(file: Path, meta_file: Path, tr: Trace) -> None:
    """Write one entry atomically: each file as a temporary file in the same folder, renamed into
    place (``os.replace``) once whole, the metadata first. A full disk or the file-size limit
    (ENOSPC, EFBIG) leaves the entry absent and no temporary file behind: never half written
    under its name (``tests/workload/test_trace_cache_faults.py``)."""
    tmps: list[Path] = []
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        tmps.append(tmp)
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(tr.experts), allow_pickle=False)
        mtmp = meta_file.with_name(f".{meta_file.name}.{os.getpid()}.tmp")
        tmps.append(mtmp)
        mtmp.write_text(json.dumps(asdict(tr.meta)))
        os.replace(mtmp, meta_file)
        os.replace(tmp, file)            # the ids last: a visible .npy always has its metadata
    except OSError:                      # a read-only or full cache is only slower, never wrong
        for t in tmps:
            with contextlib.suppress(OSError):
                t.unlink()


def generate_cached(model, batch: int, steps: int, seed: int, prof: str | None) -> Trace:
    """``synth.generate`` through the on-disk cache (see ``cache_dir``)."""
    d = cache_dir()
    if d is None:
        return generate(model, batch, steps, seed, None, prof)
    key = cache_key(model, batch, steps, seed, prof)
    file, meta_file = d / f"{key}.npy", d / f"{key}.json"
    hit = _load(file, meta_file, (steps, model.moe_layers, batch, model.top_k))
    if hit is not None:
        return hit
    tr = generate(model, batch, steps, seed, None, prof)
    _store(file, meta_file, tr)
    return tr


@functools.lru_cache(maxsize=IN_PROCESS_TRACES)
def cached(model_name: str, batch: int, steps: int, seed: int, profile: str | None = "auto",
           profile_steps: int = 0) -> tuple[Trace, Trace | None]:
    """(measured window, profiling window) of the default synthetic trace, generated once per
    process (and once per machine, through the on-disk cache) for each (model, B, steps, seed,
    profile, profiling steps). The profiling window is the ``profile_steps`` decode steps
    generated right before the measured window."""
    from dse.catalog import get_model
    model = get_model(model_name)
    prof = default_profile(model) if profile == "auto" else profile
    tr = generate_cached(model, batch, profile_steps + steps, seed, prof)
    if profile_steps:
        return tr.window(profile_steps), tr.window(0, profile_steps)
    return tr, None
