"""Reading a user's TOML file (design, catalog, study, space, objectives) with one-line errors."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from dse.errors import ConfigError

# Input files are small; a larger one is a mistake (or /dev/zero): refuse before reading it all.
MAX_TOML_BYTES = 16 << 20

def read_toml(path: Path, *, allow_empty: bool = True) -> dict[str, Any]:
    """Read a TOML file with one-line errors for missing / unreadable / malformed / oversized files.

    ``allow_empty=False`` refuses a file with no keys at all (an empty or truncated file)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_TOML_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a TOML file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_TOML_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_TOML_BYTES >> 20} MiB, not a configuration file")
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark (some editors write one) is harmless
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file (expected TOML)") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: TOML nested too deeply (arrays / inline tables)") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        raise ConfigError(f"{path}: TOML value not representable: {str(exc)[:80]}") from None
    if not data and not allow_empty:
        raise ConfigError(f"{path}: empty file (no keys); give at least one key, or omit the file "
                          f"to use the defaults")
    return data
