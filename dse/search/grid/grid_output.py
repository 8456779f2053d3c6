"""What `dse grid` prints and writes: the front in the JSON shape of ``dse front --json`` and
the per-point table (parquet), written chunk by chunk so memory stays bounded."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.search.grid.grid import FrontResult
from dse.search.space.objectives import ObjectiveSet
from dse.spec.params import BY_NAME
from dse.vector import evaluate_columns
from dse.vector.columns import categories


def front_json(res: FrontResult, objset: ObjectiveSet, base: Mapping[str, Any], name: str,
               model: str) -> dict[str, Any]:
    """The grid's summary and front, keyed as ``dse front --json`` keys a study's."""
    rows = evaluate_columns(res.cols) if len(res.front) else None
    base_design = {k: v for k, v in base.items() if k != "model"}
    entries = {}
    for j, i in enumerate(res.front.tolist()):
        params = res.grid.params(j)
        fixed = {k: _value(k, v[j]) for k, v in res.grid.values.items() if k not in res.grid.searched}
        entries[i] = {
            "trial": i,
            "params": params,
            "design": {**base_design, **fixed, **params},
            "objectives": {o.name: float(v) for o, v in zip(objset.objectives, res.values[j])},
            "feasible": True,
            "reason": "",
            "metrics": rows.row(j),
        }
    n = res.n
    return {
        "study": name,
        "objectives": [{"name": o.name, "metric": o.metric, "direction": o.direction, "aggregate": o.aggregate}
                       for o in objset.objectives],
        "constraints": [c.name for c in objset.constraints],
        "workloads": [model],
        "points": n,
        "seconds": res.seconds,
        "points_per_s": n / res.seconds if res.seconds > 0 else None,
        "n_trials": n,
        "n_feasible": res.n_feasible,
        "hypervolume": res.hypervolume,
        "front": list(entries.values()),
        "knee": entries.get(res.knee),
    }


def _value(name: str, v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    return categories(name)[v] if BY_NAME[name].kind == "str" else v


class ParquetSink:
    """Writes every evaluated point: ``p.<knob>`` (searched knobs, null where inactive),
    ``o.<objective>``, ``feasible`` and every numeric closed-form metric ``m.<metric>``."""
    def __init__(self, path: str | Path, objset: ObjectiveSet):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ConfigError(f"-o {path}: writing parquet needs pyarrow (pip install -e '.[parquet]')") from None
        if not str(path).endswith(".parquet"):
            raise ConfigError(f"-o {path}: the table is written as parquet; give a .parquet file name")
        self.pa, self.pq, self.path = pa, pq, Path(path)
        self.objset, self.writer = objset, None

    def __call__(self, start: int, grid, t, values: np.ndarray, feasible: np.ndarray) -> None:
        """Write one chunk: ``grid`` holds its rows' knobs, ``t`` their metrics."""
        pa = self.pa
        stop = start + t.n
        cols: dict[str, Any] = {"point": np.arange(start, stop)}
        for k in grid.searched:
            v = grid.values[k]
            if BY_NAME[k].kind == "str":
                v = np.array(categories(k), dtype=object)[v]
            cols[f"p.{k}"] = pa.array(v, mask=~grid.active[k])
        for j, o in enumerate(self.objset.objectives):
            cols[f"o.{o.name}"] = values[:, j]
        cols["feasible"] = feasible
        for name, kind in t.kinds.items():
            if kind in ("float", "int", "bool"):
                cols[f"m.{name}"] = pa.array(np.asarray(t.values[name]), mask=~t.has(name))
        table = pa.table(cols)
        if self.writer is None:
            try:
                self.writer = self.pq.ParquetWriter(self.path, table.schema)
            except OSError as exc:
                raise ConfigError(f"-o {self.path}: cannot write ({exc})") from None
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
