"""What kind of input file a TOML file is, from its top-level keys, so that a command given the
wrong kind says so in one line instead of its validator's "unknown section".

* study:      a ``[study]`` table (studies/*.toml; `dse run`, `front`, `export`, ...)
* design:     only ``[hardware]`` / ``[workload]`` / ``[mapping]`` / ``[metrics]`` / ``[provenance]``
              tables or flat knobs, not ``[workload]`` alone (what `dse export` writes; `dse evaluate`)
* space:      ``[params]`` (and ``description``) only (spaces/*.toml; `dse grid`, a study's space)
* objectives: ``[[objectives]]`` (and ``[[constraints]]``, ``description``) only (objectives/*.toml)
* catalog:    every top-level table a model with ``experts`` and ``top_k`` (`dse --catalog FILE`)

Conservative: a file that is not readable TOML, or not clearly one of these, has no kind (None),
and the command's own validator speaks.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dse.errors import ConfigError

KINDS = ("study", "design", "space", "objectives", "catalog")

_NOUN = {
    "study": "a study file",
    "design": "a design file (as `dse export` writes it)",
    "space": "a space file (the knobs a study searches)",
    "objectives": "an objectives file (what a study optimises)",
    "catalog": "a model catalog",
}
_SHORT = {"study": "a study", "design": "a design file", "space": "a space file",
          "objectives": "an objectives file", "catalog": "a model catalog"}


def noun(kind: str) -> str:
    """``kind`` with its article: "a design file", "an objectives file", "a study"."""
    return _SHORT[kind]


def peek(path: str | Path) -> dict[str, Any] | None:
    """The TOML document of ``path``, or None when it cannot be read as TOML (the command reports that)."""
    from dse.tomlfile import read_toml
    try:
        return read_toml(Path(path))
    except ConfigError:
        return None


def kind_of(data: Mapping[str, Any]) -> str | None:
    """The kind of a TOML document (one of ``KINDS``), or None when it is not clearly one of them."""
    keys = set(data)
    if not keys:
        return None
    if isinstance(data.get("study"), Mapping):
        return "study"
    if "params" in keys and keys <= {"params", "description"} and isinstance(data["params"], Mapping):
        return "space"
    if keys <= {"objectives", "constraints", "description"} and isinstance(data.get("objectives"), list):
        return "objectives"
    if _is_design(data):
        return "design"
    if all(isinstance(v, Mapping) and "experts" in v and "top_k" in v for v in data.values()):
        return "catalog"
    return None


def _is_design(data: Mapping[str, Any]) -> bool:
    from dse.spec import BY_NAME, PARTS
    from dse.spec.design import INFO_SECTIONS
    sections = set(PARTS) | set(INFO_SECTIONS)
    keys = set(data)
    if not keys <= sections | set(BY_NAME) or keys == {"workload"}:    # [workload] alone: a half study?
        return False
    return all(isinstance(data[k], Mapping) for k in keys & sections)


def kind(path: str | Path) -> str | None:
    """The kind of the file ``path`` (one of ``KINDS``), or None (unreadable, not TOML, not clear)."""
    data = peek(path)
    return None if data is None else kind_of(data)


def hint(path: str | Path, actual: str, expected: str | None = None) -> str:
    """What to do with a file of kind ``actual`` (the end of a refusal)."""
    p = str(path)
    if actual == "study":
        then = (f" (then `dse export {p} --knee -o design.toml` writes its knee as a design)"
                if expected == "design" else "")
        return f"run it with `dse run {p}`{then}"
    if actual == "design":
        return f"evaluate it with `dse evaluate {p}`"
    if actual in ("space", "objectives"):
        return (f"name it in a study file's [study] {actual} = \"...\" and run the study with `dse run STUDY.toml` "
                f"(docs/guide/studies.md)")
    return f"add its models with `dse --catalog {p} COMMAND ...`"


def refusal(path: str | Path, expected: str, command: str, data: Mapping[str, Any] | None = None) -> str | None:
    """The one-line message refusing ``path`` for ``dse COMMAND`` when it clearly is another kind
    of file than ``expected`` (one of ``KINDS``), else None. ``data``: its TOML document if already read."""
    if expected not in KINDS:
        raise ValueError(f"expected: one of {KINDS}, not {expected!r}")
    data = peek(path) if data is None else data
    actual = None if data is None else kind_of(data)
    if actual is None or actual == expected:
        return None
    return (f"{path} is {_NOUN[actual]}, not {_SHORT[expected]} (what `dse {command}` takes): "
            f"{hint(path, actual, expected)}")


def refuse(path: str | Path, expected: str, command: str) -> None:
    """Raise ConfigError (one line: ``dse: error: design.toml is a design file ..., not a study (what
    `dse run` takes): evaluate it with `dse evaluate design.toml```) when ``path`` clearly is another
    kind of file than ``expected`` ("study", "design", "space", "objectives" or "catalog"); return
    quietly otherwise (a missing, unreadable or unclear file is left to the command's own checks).
    ``command``: the sub-command as typed after `dse` ("run", "evaluate", "trace convert")."""
    msg = refusal(path, expected, command)
    if msg is not None:
        raise ConfigError(msg)
