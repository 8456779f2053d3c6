"""Reading a user's TOML file (design, catalog, study, space, objectives) with one-line errors."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from dse.errors import ConfigError

# Input files are small; a larger one is a mistake (or /dev/zero): refuse before reading it all.
MAX_TOML_BYTES = 16 << 20

def read_text(path: Path, *, error: type[Exception] = ConfigError, expected: str = "a TOML file",
              encoding_of: str = "TOML", max_bytes: int | None = None) -> str:
    """A user's text file (UTF-8, a byte-order mark allowed), with one-line ``error``s naming the file
    for a missing / directory / unreadable / non-UTF-8 / oversized (beyond ``max_bytes``) file;
    ``expected`` and ``encoding_of`` name what the file should be ("a router dump", "JSON")."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, expected {expected}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    if max_bytes is not None and len(raw) > max_bytes:
        raise error(f"{path}: larger than {max_bytes >> 20} MiB, not a configuration file")
    try:
        return raw.decode("utf-8-sig")  # a byte-order mark (some editors write one) is harmless
    except UnicodeDecodeError:
        raise error(f"{path}: not a UTF-8 text file (expected {encoding_of})") from None


def read_toml(path: Path, *, allow_empty: bool = True) -> dict[str, Any]:
    """Read a TOML file with one-line errors for missing / unreadable / malformed / oversized files.

    ``allow_empty=False`` refuses a file with no keys at all (an empty or truncated file)."""
    text = read_text(path, max_bytes=MAX_TOML_BYTES)
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
