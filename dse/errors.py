"""User-facing errors: one line, naming the file, key and what is allowed.

The CLI prints ``dse: error: <message>`` and exits with status 2 for every DSEError;
anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import math
from typing import Any


class DSEError(Exception):
    """A mistake in user input (file, key, value) or an unusable environment."""

    exit_code = 2

    def __init__(self, message: str):
        # Keep it one line whatever the caller passed.
        super().__init__(" ".join(str(message).split()))


class ConfigError(DSEError):
    """Bad configuration file or override."""


class TraceError(DSEError):
    """Bad routing trace or router dump."""


def suggest(key: str, allowed) -> str:
    """``; did you mean 'x'?`` for the closest allowed name, or nothing."""
    import difflib
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_top_level(data, allowed: tuple[str, ...], source: str) -> str:
    """Reject unknown top-level keys of an input file; return its optional ``description``."""
    for k in data:
        if k not in allowed:
            raise ConfigError(f"{source}: {k}: unknown key (allowed: {', '.join(allowed)}){suggest(k, allowed)}")
    desc = data.get("description", "")
    if not isinstance(desc, str):
        raise ConfigError(f"{source}: description: must be a string")
    return desc


def where(source: str | None, key: str) -> str:
    """Format the location of a value: ``file.toml: hardware.core_side``."""
    return f"{source}: {key}" if source else key


def show_value(value: Any, limit: int = 60) -> str:
    """A user value as it would read in TOML, cut to ``limit`` characters (errors stay one short line)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and not math.isfinite(value):
        text = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def type_name(value: Any) -> str:
    """The TOML name of a value's type, for 'got a ...' hints."""
    if isinstance(value, bool):
        return "a boolean"
    for typ, name in ((int, "an integer"), (float, "a float"), (str, "a string"), (list, "an array"),
                      (dict, "a table")):
        if isinstance(value, typ):
            return name
    return "a date/time" if hasattr(value, "isoformat") else type(value).__name__


def disk_full(exc: BaseException | None) -> str | None:
    """What a full disk or the file-size limit did to a write, found in the chain of ``exc``
    (an ``OSError`` ENOSPC / EFBIG / EDQUOT, SQLite's "database or disk is full" or its
    "disk I/O error" wrapped by SQLAlchemy and optuna), or None for any other exception."""
    import errno
    import os
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            return os.strerror(exc.errno)
        text = str(exc).lower()
        if "database or disk is full" in text:
            return "the database or disk is full"
        if "disk i/o error" in text:
            return "disk I/O error: a full disk, the file-size limit or a failing disk"
        exc = exc.__cause__ or exc.__context__
    return None
