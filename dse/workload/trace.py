"""Routing traces: the on-disk format, a streaming loader and strict validation (spec section 4).

A trace records, for every decode step, MoE layer and token of the run-batch, the top-k expert
ids the router chose. Format (``rexpert-trace/1``), a NumPy ``.npz`` archive (no pickles):

=============  ===========================  ====================================================
 member         type                          meaning
=============  ===========================  ====================================================
 ``experts``    int [steps, layers, B, k]     expert ids in [0, E); uint8 when E <= 256, else
                                              uint16 (any integer dtype is accepted on input)
 ``model``      str (0-d)                     catalog model name (``dse models``)
 ``batch``      int (0-d)                     decode run-batch B (= ``experts.shape[2]``)
 ``n_experts``  int (0-d)                     routed experts E of the model
 ``source``     str (0-d)                     provenance (converter input, generator + seed)
 ``format``     str (0-d)                     ``rexpert-trace/1``
=============  ===========================  ====================================================

Validation (every failure is one :class:`~dse.errors.TraceError` line naming the file and the
offending index): missing members, wrong rank, a layer count or top-k that differs from the
catalog model, ids outside [0, E), an id repeated within one token's top-k, a model name that is
not in the catalog or differs from the design point's model.

Large traces are read in chunks of steps straight from the archive member (stored or deflated),
so a million-token trace is scheduled in bounded memory (:meth:`TraceFile.chunks`).
"""
from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from dse.errors import ConfigError, TraceError

FORMAT = "rexpert-trace/1"
MEMBERS = ("experts", "model", "batch", "n_experts", "source", "format")
DUMP_SUFFIXES = (".json", ".jsonl", ".ndjson")
WRITE_CHUNK_TOKEN_LAYERS = 4096     # steps x layers written per chunk by save_trace
LOAD_CHUNK_IDS = 1 << 22            # ids (4 M) read per chunk by TraceFile.load
SKIP_BLOCK_BYTES = 1 << 24          # bytes read per call while skipping inside a member
# What a damaged archive raises while its members are read (bad CRC, bad deflate stream, a member
# header that does not match the directory, an unsupported compression method, an "encrypted"
# flag: RuntimeError).
CORRUPT = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)


def id_dtype(n_experts: int) -> np.dtype:
    """Smallest unsigned dtype holding ids 0..E-1."""
    return np.dtype(np.uint8) if n_experts <= 256 else np.dtype(np.uint16)


@dataclass(frozen=True)
class TraceMeta:
    model: str
    batch: int
    steps: int
    layers: int
    top_k: int
    n_experts: int
    source: str = ""
    path: str = ""

    @property
    def tokens(self) -> int:
        """Decode tokens in the trace (steps x B)."""
        return self.steps * self.batch


@dataclass(frozen=True)
class Trace:
    """An in-memory trace: ``experts`` [steps, layers, B, k] plus metadata."""
    meta: TraceMeta
    experts: np.ndarray = field(repr=False)

    @property
    def steps(self) -> int:
        return self.meta.steps

    def chunks(self, steps: int) -> Iterator[np.ndarray]:
        for s in range(0, self.meta.steps, steps):
            yield self.experts[s:s + steps]

    def window(self, start: int, stop: int | None = None) -> Trace:
        """Steps [start, stop) as a trace of its own."""
        ids = self.experts[start:stop]
        return Trace(replace(self.meta, steps=ids.shape[0]), ids)


def make_trace(experts: np.ndarray, model: str, n_experts: int, source: str = "", path: str = "",
               validate: bool = True) -> Trace:
    """Wrap an id array [steps, layers, B, k] as a trace (validated unless told otherwise)."""
    arr = np.asarray(experts)
    where = path or "trace"
    if arr.ndim != 4:
        raise TraceError(f"{where}: experts must have 4 dimensions [steps, layers, batch, top_k], got shape "
                         f"{tuple(arr.shape)}")
    if 0 in arr.shape:
        raise TraceError(f"{where}: experts is empty (shape {tuple(arr.shape)})")
    if validate:
        check_ids(arr, n_experts, where)
    arr = arr.astype(id_dtype(n_experts), copy=False)
    s, n_layers, b, k = arr.shape
    return Trace(TraceMeta(model, b, s, n_layers, k, n_experts, source, path), arr)


# -- validation -------------------------------------------------------------------------------
def check_ids(ids: np.ndarray, n_experts: int, where: str, step_offset: int = 0) -> None:
    """Ids are integers in [0, E) and no token repeats an id within its top-k."""
    if not np.issubdtype(ids.dtype, np.integer):
        raise TraceError(f"{where}: experts must be integers, got dtype {ids.dtype}")
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= n_experts:
        bad = np.argwhere((ids < 0) | (ids >= n_experts))[0]
        s, layer, t, j = (int(x) for x in bad)
        raise TraceError(f"{where}: experts[{s + step_offset},{layer},{t},{j}] = {int(ids[s, layer, t, j])}: "
                         f"expert ids must be in [0, {n_experts - 1}] for a model with {n_experts} experts")
    if ids.shape[-1] > 1:
        srt = np.sort(ids, axis=-1)
        dup = srt[..., 1:] == srt[..., :-1]
        if dup.any():
            s, layer, t, j = (int(x) for x in np.argwhere(dup)[0])
            raise TraceError(f"{where}: token experts[{s + step_offset},{layer},{t}] repeats expert "
                             f"{int(srt[s, layer, t, j])} in its top-k (top-k ids must be distinct)")


def check_model(meta: TraceMeta, model_name: str | None = None) -> None:
    """The trace's model exists, its shape matches the catalog, and (if given) it is the design's model."""
    from dse.catalog import catalog
    cat = catalog()
    where = meta.path or "trace"
    if meta.model not in cat:
        raise TraceError(f"{where}: model {meta.model!r} is not in the catalog (allowed: {', '.join(cat)})")
    m = cat[meta.model]
    if meta.layers != m.moe_layers:
        raise TraceError(f"{where}: {meta.layers} layers, but model {m.name} has {m.moe_layers} MoE layers "
                         f"(wrong model?)")
    if meta.top_k != m.top_k:
        raise TraceError(f"{where}: top-{meta.top_k} routing, but model {m.name} routes top-{m.top_k} (wrong model?)")
    if meta.n_experts != m.experts:
        raise TraceError(f"{where}: {meta.n_experts} experts, but model {m.name} has {m.experts} (wrong model?)")
    if model_name is not None and model_name != meta.model:
        raise TraceError(f"{where}: trace of model {meta.model!r}, but the design point uses {model_name!r} "
                         f"(set model = {meta.model!r} or use a trace of {model_name!r})")


# -- writing ----------------------------------------------------------------------------------
def _write_member_array(zf: zipfile.ZipFile, name: str, arr: np.ndarray) -> None:
    with zf.open(name + ".npy", "w", force_zip64=True) as fh:
        np.lib.format.write_array(fh, np.asarray(arr), allow_pickle=False)


def _write_meta(zf: zipfile.ZipFile, meta: TraceMeta) -> None:
    _write_member_array(zf, "model", np.array(meta.model))
    _write_member_array(zf, "batch", np.array(meta.batch, dtype=np.int64))
    _write_member_array(zf, "n_experts", np.array(meta.n_experts, dtype=np.int64))
    _write_member_array(zf, "source", np.array(meta.source))
    _write_member_array(zf, "format", np.array(FORMAT))


def save_trace(trace: Trace, path: str | Path, compress: bool = True) -> Path:
    """Write ``trace`` in the ``rexpert-trace/1`` format."""
    chunk_steps = max(1, WRITE_CHUNK_TOKEN_LAYERS // max(1, trace.meta.layers))
    return write_chunks(path, trace.meta, trace.chunks(chunk_steps), compress)


def write_chunks(path: str | Path, meta: TraceMeta, chunks, compress: bool = True) -> Path:
    """Stream chunks [s, layers, B, k] into a trace file (bounded memory for long traces).

    ``meta.steps`` must equal the total steps of the chunks."""
    p = Path(path)
    dt = id_dtype(meta.n_experts)
    mode = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    tmp = p.with_name(p.name + ".part")
    try:
        with zipfile.ZipFile(tmp, "w", compression=mode, allowZip64=True) as zf:
            shape = (meta.steps, meta.layers, meta.batch, meta.top_k)
            with zf.open("experts.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array_header_2_0(
                    fh, {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False, "shape": shape})
                written = 0
                for c in chunks:
                    c = np.ascontiguousarray(c, dtype=dt)
                    if c.shape[1:] != shape[1:]:
                        raise ValueError(f"chunk shape {c.shape} does not match {shape}")
                    fh.write(c.tobytes())
                    written += c.shape[0]
                if written != meta.steps:
                    raise ValueError(f"wrote {written} steps, meta says {meta.steps}")
            _write_meta(zf, meta)
        os.replace(tmp, p)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"{p}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


# -- reading ----------------------------------------------------------------------------------
class TraceFile:
    """A trace archive opened for streaming: metadata now, ids chunk by chunk."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        p = Path(path)
        try:
            zf = zipfile.ZipFile(p)
        except FileNotFoundError:
            raise TraceError(f"{p}: no such file") from None
        except IsADirectoryError:
            raise TraceError(f"{p}: is a directory, expected a trace (.npz) or a router dump") from None
        except (OSError, *CORRUPT) as exc:
            raise TraceError(f"{p}: not a trace archive (.npz) ({exc})") from None
        try:
            self._read_head(zf, p)
        except (OSError, *CORRUPT) as exc:
            raise TraceError(f"{p}: corrupt trace archive ({exc})") from None

    def _read_head(self, zf: zipfile.ZipFile, p: Path) -> None:
        with zf:
            names = set(zf.namelist())
            missing = [m for m in MEMBERS if m + ".npy" not in names]
            if missing:
                raise TraceError(f"{p}: not a {FORMAT} file: missing {', '.join(missing)} "
                                 f"(convert router dumps with `dse trace convert`)")
            small = {m: self._small(zf, m) for m in MEMBERS if m != "experts"}
            with zf.open("experts.npy") as fh:
                try:
                    shape, _fortran, dtype = self._header(fh)
                except TraceError as exc:
                    raise TraceError(f"{p}: {exc}") from None
        fmt = str(small["format"])
        if fmt != FORMAT:
            raise TraceError(f"{p}: format {fmt!r}, expected {FORMAT!r}")
        if len(shape) != 4:
            raise TraceError(f"{p}: experts must have 4 dimensions [steps, layers, batch, top_k], got shape {shape}")
        if 0 in shape:
            raise TraceError(f"{p}: experts is empty (shape {shape})")
        if not np.issubdtype(dtype, np.integer):
            raise TraceError(f"{p}: experts must be integers, got dtype {dtype}")
        if not all(isinstance(small[k], int) and not isinstance(small[k], bool) for k in ("batch", "n_experts")):
            raise TraceError(f"{p}: batch and n_experts must be integers, got {str(small['batch'])[:20]} and "
                             f"{str(small['n_experts'])[:20]}")
        batch, n_exp = small["batch"], small["n_experts"]
        if batch != shape[2]:
            raise TraceError(f"{p}: batch = {batch} but experts has {shape[2]} tokens per step")
        if n_exp < 1:
            raise TraceError(f"{p}: n_experts = {n_exp}: must be >= 1")
        self.dtype = dtype
        self.meta = TraceMeta(str(small["model"]), batch, shape[0], shape[1], shape[3], n_exp,
                              str(small["source"]), self.path)

    @staticmethod
    def _header(fh):
        try:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                return np.lib.format.read_array_header_1_0(fh)
            return np.lib.format.read_array_header_2_0(fh)
        except ValueError as exc:
            raise TraceError(f"corrupt experts array header ({exc})") from None

    def _small(self, zf: zipfile.ZipFile, name: str):
        try:
            with zf.open(name + ".npy") as fh:
                arr = np.lib.format.read_array(fh, allow_pickle=False)
        except ValueError as exc:
            raise TraceError(f"{self.path}: member {name!r} unreadable ({exc})") from None
        if arr.ndim != 0:
            raise TraceError(f"{self.path}: member {name!r} must be a scalar")
        return arr.item()

    def chunks(self, steps: int, start: int = 0, stop: int | None = None, validate: bool = True
               ) -> Iterator[np.ndarray]:
        """Yield validated id arrays of up to ``steps`` decode steps, from step ``start`` to ``stop``."""
        try:
            yield from self._chunks(steps, start, stop, validate)
        except (OSError, *CORRUPT) as exc:
            raise TraceError(f"{self.path}: corrupt trace archive ({exc})") from None

    def _chunks(self, steps: int, start: int, stop: int | None, validate: bool) -> Iterator[np.ndarray]:
        m = self.meta
        stop = m.steps if stop is None else min(stop, m.steps)
        per_step = m.layers * m.batch * m.top_k
        item = self.dtype.itemsize
        with zipfile.ZipFile(self.path) as zf, zf.open("experts.npy") as fh:
            self._header(fh)
            if start:
                _skip(fh, start * per_step * item)
            s = start
            while s < stop:
                n = min(steps, stop - s)
                raw = fh.read(n * per_step * item)
                if len(raw) != n * per_step * item:
                    raise TraceError(f"{self.path}: truncated experts array (ends inside step {s})")
                arr = np.frombuffer(raw, dtype=self.dtype).reshape(n, m.layers, m.batch, m.top_k)
                if validate:
                    check_ids(arr, m.n_experts, self.path, step_offset=s)
                yield arr.astype(id_dtype(m.n_experts), copy=False)
                s += n

    def load(self, start: int = 0, stop: int | None = None) -> Trace:
        parts = list(self.chunks(max(1, LOAD_CHUNK_IDS // max(1, self.meta.layers * self.meta.batch * self.meta.top_k)),
                                 start, stop))
        ids = np.concatenate(parts, axis=0)
        return Trace(replace(self.meta, steps=ids.shape[0]), ids)


def _skip(fh, nbytes: int) -> None:
    while nbytes > 0:
        got = fh.read(min(nbytes, SKIP_BLOCK_BYTES))
        if not got:
            return
        nbytes -= len(got)


def is_dump(path: str | Path) -> bool:
    """A router dump (JSON / JSON lines) rather than a converted archive."""
    return Path(path).suffix.lower() in DUMP_SUFFIXES


def regroup(trace: Trace, batch: int) -> Trace:
    """Re-cut the token stream of every layer into decode steps of ``batch`` tokens."""
    s, n_layers, b, k = trace.experts.shape
    total = s * b
    if batch > total:
        raise ConfigError(f"{trace.meta.path or 'trace'}: batch {batch} exceeds the {total} tokens of the trace "
                          f"(allowed: 1..{total})")
    steps = total // batch
    tok = trace.experts.transpose(1, 0, 2, 3).reshape(n_layers, total, k)[:, :steps * batch]
    ids = np.ascontiguousarray(tok.reshape(n_layers, steps, batch, k).transpose(1, 0, 2, 3))
    return Trace(replace(trace.meta, batch=batch, steps=steps,
                         source=f"{trace.meta.source} regrouped to B={batch}"), ids)


# -- loads --------------------------------------------------------------------------------------
LOADS_CHUNK = 1 << 18           # ids counted per pass of ``loads`` (~2 MB of int64 temporaries)


def loads(ids: np.ndarray, n_experts: int) -> np.ndarray:
    """Tokens routed to each expert, n_e, per (step, layer): int32 [steps, layers, E]."""
    s, n_layers, b, k = ids.shape
    out = np.empty((s, n_layers, n_experts), dtype=np.int32)
    step = max(1, LOADS_CHUNK // max(1, n_layers * b * k))     # a few steps at a time: cache-sized temporaries
    off = (np.arange(step * n_layers, dtype=np.int64) * n_experts).reshape(step, n_layers, 1, 1)
    for i in range(0, s, step):
        part = ids[i:i + step]
        flat = (part.astype(np.int64) + off[:len(part)]).ravel()
        out[i:i + len(part)] = np.bincount(flat, minlength=len(part) * n_layers * n_experts).reshape(
            len(part), n_layers, n_experts)
    return out
