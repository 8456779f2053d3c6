"""A `dse grid` run's checkpoint: the chunks done and the running front, in one small ``.npz``.

Written atomically (a temporary file renamed over the old one), read with ``allow_pickle=False``.
It carries a fingerprint of the run (space, objectives, base knobs, chunk size, package version):
resuming from the checkpoint of another run is refused with one line naming the file.
"""
from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.search.space.objectives import ObjectiveSet
from dse.search.space.space import Space
from dse.version import __version__


def fingerprint(space: Space, objset: ObjectiveSet, base: Mapping[str, Any], chunk: int) -> str:
    """A digest of everything that decides a grid's chunks and front."""
    desc = {"space": space.canonical(), "objectives": [(o.metric, o.direction) for o in objset.objectives],
            "constraints": [(c.metric, c.op, repr(c.rhs), c.scale) for c in objset.constraints],
            "base": {k: base[k] for k in sorted(base)}, "chunk": chunk, "version": __version__}
    return hashlib.sha256(json.dumps(desc, sort_keys=True, default=str).encode()).hexdigest()


class Checkpoint:
    """The checkpoint file ``path`` of the run with fingerprint ``tag``."""
    def __init__(self, path: str | Path, tag: str):
        self.path, self.tag = Path(path), tag

    def load(self) -> dict[str, np.ndarray] | None:
        """The saved arrays, or None if there is no checkpoint yet."""
        if not self.path.exists():
            return None
        try:
            with np.load(self.path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise ConfigError(f"--checkpoint {self.path}: not a dse grid checkpoint ({exc}); delete it") from None
        if str(data.get("fingerprint", "")) != self.tag:
            raise ConfigError(f"--checkpoint {self.path}: written by a run of another space, objectives, model, "
                              f"batch or version; delete it or name another file")
        return data

    def save(self, arrays: Mapping[str, np.ndarray]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp.npz")
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, fingerprint=np.array(self.tag), **arrays)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise ConfigError(f"--checkpoint {self.path}: cannot write ({exc})") from None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
