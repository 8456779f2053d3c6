"""User-facing errors: one line, naming the file, key and what is allowed.

The CLI prints ``dse: error: <message>`` and exits with status 2 for every DSEError;
anything else is a bug and keeps its traceback.
"""
from __future__ import annotations


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


def where(source: str | None, key: str) -> str:
    """Format the location of a value: ``file.toml: hardware.core_side``."""
    return f"{source}: {key}" if source else key
