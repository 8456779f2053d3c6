"""Loading any routing trace: a converted archive (``.npz``, see ``dse.workload.trace``) or an
unconverted router dump (JSON / JSON lines, converted in memory by ``dse.workload.convert``).

It sits above both modules so that neither imports the other's caller: trace.py knows the
archive format, convert.py the dump formats, and this module picks one.
"""
from __future__ import annotations

import functools
from pathlib import Path

from dse.errors import TraceError
from dse.workload.convert import convert
from dse.workload.trace import Trace, TraceFile, TraceMeta, check_model, is_dump, regroup

CACHED_FILES = 8      # loaded traces kept per process


def load_any(path: str | Path, model: str | None = None, batch: int | None = None) -> Trace:
    """A trace from an archive or (converted in memory) from an unconverted router dump.

    ``model`` checks the trace against the design's model; ``batch`` regroups the tokens into
    decode steps of that batch (dropping a trailing partial step)."""
    p = Path(path)
    tr = convert([p], model=model, batch=batch) if is_dump(p) else TraceFile(p).load()
    check_model(tr.meta, model)
    if batch is not None and batch != tr.meta.batch:
        tr = regroup(tr, batch)
    return tr


def peek_meta(path: str | Path, model: str | None = None) -> TraceMeta:
    """Metadata of a trace archive (header only) or of a router dump (converted, cached)."""
    if is_dump(path):
        return load_cached(path, model=model).meta
    return TraceFile(path).meta


@functools.lru_cache(maxsize=CACHED_FILES)
def cached_file(path: str, mtime_ns: int, size: int, model: str | None, batch: int | None) -> Trace:
    """A loaded trace, cached per (path, modification time, size, model, batch)."""
    return load_any(path, model=model, batch=batch)


def load_cached(path: str | Path, model: str | None = None, batch: int | None = None) -> Trace:
    """``load_any`` through a per-process cache keyed by the file's identity and the arguments."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise TraceError(f"{p}: no such file (trace = a .npz trace, a router dump, 'catalog' or 'synthetic')") from None
    except OSError as exc:
        raise TraceError(f"{p}: cannot read ({exc.strerror or exc})") from None
    return cached_file(str(p.resolve()), st.st_mtime_ns, st.st_size, model, batch)
