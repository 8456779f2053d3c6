"""Closed-form bounds of many designs as columns: the guided sampler's screen without a dict per design.

``bound_arrays(cfg, designs, hint_metrics)`` returns what the guided sampler's per-design path
returns (``dse.search.propose.bound.estimate.bound_arrays_reference``: each design's points,
``fidelity.closed_form_bounds_many``, ``fidelity.design_bound`` and the hints, one dict per design
and workload), computed on numpy columns over every design at once:

* ``bound_columns`` is ``bounds.bound_metrics`` over a ``dse.vector`` table: per metric, its
  values and the rows where the per-design dict would hold it (not None);
* the objectives' bounds and the constraints under the bounds are scored column by column as
  ``design_bound`` scores them (aggregates over the workloads, worst violation, feasibility);
* the hints are the logs of the worst positive values over the workloads.

Every floating-point operation is the scalar path's, in its order (IEEE arithmetic: the same bits);
logs are taken with ``math.log`` and sums over more than two workloads with ``math.fsum``, as
there. Studies this does not cover (a closed-form workload) go the per-design way
(the caller's ``per_design``: ``estimate.bound_arrays_reference``). The guided sampler uses it
(``estimate.bound_arrays``); the test compares it with the reference.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dse.errors import ConfigError
from dse.hardware import cost, power
from dse.performance import latency
from dse.search.propose.bound import fidelity
from dse.search.propose.bound import metrics as bounds
from dse.spec import DesignPoint, default_pe_groups
from dse.spec.many import FIELD_DEFAULTS, validate_flat
from dse.spec.params import BY_NAME, coerce

Column = tuple[np.ndarray, np.ndarray]          # (float values, rows holding the metric)
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]   # (bounds, ok, hints)


def bound_arrays(cfg: Any, designs: Sequence[Mapping[str, Any]], hint_metrics: Sequence[str],
                 per_design: Callable[[Any, Sequence[Mapping[str, Any]]], Arrays]) -> Arrays:
    """(bounds, ok, hints) of flat designs, as the guided sampler's ``bound_arrays`` with hints
    ``hint_metrics`` (module docstring); ``per_design(cfg, designs)``, the per-design path,
    answers for the studies the columns do not cover."""
    objs = cfg.objectives
    B = np.full((len(designs), len(objs.objectives)), np.nan)
    H = np.zeros((len(designs), len(hint_metrics) + 1))
    ok = np.zeros(len(designs), dtype=bool)
    rows, knobs, n = valid_rows(cfg, designs)
    if not rows:
        return B, ok, H
    models = list(cfg.models)
    if "catalog" in knobs["trace"]:
        return per_design(cfg, designs)
    cols = bound_columns(knobs, n)
    per_model = [{k: (v.reshape(-1, len(models))[:, j], w.reshape(-1, len(models))[:, j])
                  for k, (v, w) in cols.items()} for j in range(len(models))]
    idx = np.array(rows)
    B[idx] = objective_bounds(objs, per_model)
    ok[idx] = feasible(objs, per_model)
    H[idx] = hints(per_model, hint_metrics)
    return B, ok, H


def valid_points(cfg: Any, designs: Sequence[Mapping[str, Any]]) -> tuple[list[int], list[dict[str, Any]]]:
    """(indices, design points on every workload) of the designs ``cfg.points`` accepts."""
    rows, points = [], []
    for i, d in enumerate(designs):
        try:
            points.append(cfg.points(d))
            rows.append(i)
        except ConfigError:
            continue
    return rows, points


def valid_rows(cfg: Any, designs: Sequence[Mapping[str, Any]]) -> tuple[list[int], dict[str, list], int]:
    """``valid_points`` as knob values: (indices of the designs ``cfg.points`` accepts, every
    knob's values over their (design, workload) rows, design-major as ``valid_points`` flattened,
    the number of rows), validated at once (``dse.spec.many.validate_flat``; one design at a time
    when that cannot judge them)."""
    per_model = _per_model(designs, cfg.models)
    if any(r is None for r in per_model):
        rows, points = valid_points(cfg, designs)
        flat = [x for p in points for x in p.values()]
        return rows, {f: [getattr(x, f) for x in flat] for f in FIELD_DEFAULTS}, len(flat)
    ok = np.logical_and.reduce([r[0] for r in per_model])
    rows = np.flatnonzero(ok).tolist()
    if len(per_model) == 1:
        knobs = {k: [col[i] for i in rows] for k, col in per_model[0][1].items()}
    else:
        knobs = {k: [col[i] for i in rows for _ in per_model] if all(r[1][k] is col for r in per_model)
                 else [r[1][k][i] for i in rows for r in per_model]
                 for k, col in per_model[0][1].items()}
    return rows, knobs, len(rows) * len(per_model)


def _per_model(designs: Sequence[Mapping[str, Any]], models: Sequence[Any]) -> list:
    """``validate_flat(designs, {"model": m})`` for each of ``models``, the designs' own knobs
    validated once: the model is not a knob of the cross checks, so a design accepted with one
    model the knob accepts is accepted with any other, its values the same but the model's (a
    study of three models validated each design three times: a third of its closed form)."""
    first = validate_flat(designs, {"model": models[0]})
    if first is None or len(models) == 1:
        return [first]
    model = BY_NAME["model"]
    shared = _coerced(model, models[0]) is not _REFUSED     # the first model refused: nothing to share
    out = [first]
    for m in models[1:]:
        v = _coerced(model, m) if shared else _REFUSED
        if v is _REFUSED:                             # a model the knob refuses: as validate_flat words it
            out.append(validate_flat(designs, {"model": m}))
            continue
        ok, values = first
        out.append((ok, {k: ([v] * len(designs) if k == "model" else col) for k, col in values.items()}))
    return out


_REFUSED = object()


def _coerced(knob: Any, value: Any) -> Any:
    """``coerce(knob, value)``, or ``_REFUSED`` where the knob refuses the value."""
    try:
        return coerce(knob, value)
    except ConfigError:
        return _REFUSED


def bound_columns(knobs: Mapping[str, list], n: int) -> dict[str, Column]:
    """``bounds.bound_metrics`` of ``n`` trace-driven design points given as knob values (every
    field of ``DesignPoint``, a list over the rows), as columns: metric -> (values, rows whose dict
    holds it, not None); ``feasible`` holds the closed form's verdict."""
    from dse.vector import Columns, evaluate_columns
    t = evaluate_columns(Columns.from_knobs(knobs, n))
    nan, none = np.full(t.n, np.nan), np.zeros(t.n, dtype=bool)

    def col(name: str) -> np.ndarray:
        return t.column(name) if name in t.values else nan

    def has(name: str) -> np.ndarray:                    # the row dict holds it, not None
        return t.has(name) if name in t.values else none

    def in_row(name: str) -> np.ndarray:                 # the key is in the row dict (maybe None)
        if name in t.guaranteed:
            return ~none
        w = t.present[name] if name in t.values else none
        return ~none if w is None else w

    out: dict[str, Column] = {"feasible": (t.feasible.astype(float), ~none)}
    for m in bounds.EXACT_METRICS:
        out[m] = (col(m), has(m))
    for h in bounds.HINTS:
        out[f"closed_form_{h}"] = (col(h), has(h))
    w = _workload_columns(knobs, n)
    with np.errstate(all="ignore"):
        _rescale_union(out, col, in_row("ffn_read_us_per_token"), w)
        _mfu_cascade(out, col, has, in_row, w)
    return out


CLOCK_KNOBS = ("noc_ghz", "pe_mhz", "macro_mhz")


def _workload_columns(knobs: Mapping[str, list], n: int) -> dict[str, np.ndarray]:
    """Per row: the window's ideal MFU, U(B), the occupancy bound of its domain, the model's L,
    expert and router bytes (statistics and extents looked up once per distinct value)."""
    from dse.catalog import get_model
    keys = ("ideal", "union", "occ", "layers", "expert_bytes", "router_bytes", "core_side", "jobs_tok", "fifo")
    w = {k: np.empty(n) for k in keys}
    stats: dict[tuple, Any] = {}
    models: dict[str, Any] = {}
    stat_knobs = ("model", "trace", "batch", "trace_steps", "trace_seed", "profile_steps", "tile_width")
    domain = ("core_side", "pe_groups_per_core", "die_units_x", "die_units_y", "core_remainder", "layer_layout")
    for i, (key, dom, pooling, fetch) in enumerate(zip(zip(*[knobs[k] for k in stat_knobs]),
                                                       zip(*[knobs[k] for k in domain]),
                                                       knobs["pooling"], knobs["fetch"])):
        name, side, groups = key[0], dom[0], dom[1]
        model = models.get(name) or models.setdefault(name, get_model(name))
        st = stats.get(key)
        if st is None:
            p = DesignPoint(**{f: knobs[f][i] for f in FIELD_DEFAULTS})     # validated values: as from_dict
            st = stats[key] = bounds.trace_stats(p, model)
            stats[key, "jobs_tok"] = bounds.jobs_per_token(st, model.moe_layers, p.run_batch)
        w["jobs_tok"][i], w["fifo"][i] = stats[key, "jobs_tok"], fetch == "fifo"
        groups = groups if groups is not None else default_pe_groups(side)
        ext = bounds.domain_extent(model.experts, side, groups, dom[2], dom[3], dom[4], dom[5])
        tiles = ext.max_group_units if pooling == "direct" else ext.max_core_units
        w["ideal"][i], w["union"][i], w["core_side"][i] = st.ideal_mfu, st.union_experts, side
        w["occ"][i] = st.occupancy(ext.units, tiles, fetch)
        w["layers"][i], w["expert_bytes"][i], w["router_bytes"][i] = (model.moe_layers, model.expert_bytes,
                                                                      model.router_bytes)
    for k in CLOCK_KNOBS:                                  # the clocks the power floors price
        w[k] = np.asarray(knobs[k], dtype=float)
    return w


def _put(out: dict[str, Column], name: str, values: np.ndarray, rows: np.ndarray) -> None:
    old_v, old_w = out.get(name, (values, np.zeros(len(rows), dtype=bool)))
    out[name] = (np.where(rows, values, old_v), rows | old_w)


def _rescale_union(out: dict[str, Column], col, rows: np.ndarray, w: Mapping[str, np.ndarray]) -> None:
    """``bounds._union_rescaled`` on the rows holding a read time."""
    ratio = (latency.weight_bytes_per_step(w["layers"], w["union"], w["expert_bytes"], w["router_bytes"])
             / latency.weight_bytes_per_step(w["layers"], col("union_experts"), w["expert_bytes"], w["router_bytes"]))
    read, compute = col("ffn_read_us_per_token") * ratio, col("ffn_compute_us_per_token")
    _put(out, "union_experts", w["union"], rows)
    _put(out, "ffn_read_us_per_token", read, rows)
    _put(out, "ffn_latency_us_per_token", np.where(compute > read, compute, read), rows)
    _put(out, "weight_mb_per_token", col("weight_mb_per_token") * ratio, rows)
    _put(out, "weight_energy_uj_per_token", col("weight_energy_uj_per_token") * ratio, rows)


def _mfu_cascade(out: dict[str, Column], col, has, in_row, w: Mapping[str, np.ndarray]) -> None:
    """The bounds of ``bounds.bound_metrics`` past the exact metrics, on the rows it reaches."""
    hop, ideal, occ = col("stretch_hop_factor"), w["ideal"], w["occ"]
    eff = ideal * occ / hop
    reach = in_row("stretch_hop_factor") & ~(eff <= 0)
    read = out["ffn_read_us_per_token"][0]
    per_eff = col("ffn_compute_us_per_token") / eff
    t_del = np.where(per_eff > read, per_eff, read)
    worst = col(f"{bounds.CLOSED_FORM_LEVELS[0]}_load")
    for x in [col(f"{lvl}_load") for lvl in bounds.CLOSED_FORM_LEVELS[1:]] + [0.0]:
        worst = np.where(x > worst, x, worst)
    t_sch = bounds.scheduled_floor_us(col("t_layer_us"), col("tp_degree"), w["jobs_tok"], occ,
                                      col("dies") * col("die_active_units"), col("ffn_compute_us_per_token"),
                                      w["fifo"] > 0)
    upper = {"ideal_mfu": ideal, "occupancy": occ, "actual_mfu": ideal * occ, "effective_mfu": eff,
             "effective_occupancy": occ / hop, "delivered_pflops": col("pool_pflops") * eff,
             "delivered_tokens_per_s": 1e6 / t_del, "scheduled_tokens_per_s": 1e6 / t_sch}
    lower = {"ffn_us_per_token_delivered": (t_del, reach), "ffn_us_per_token_scheduled": (t_sch, reach),
             "round_stretch": (hop, reach),
             "comm_violation": (worst - 1.0, reach), "mm2_per_occupancy": (col("network_area_mm2") * hop / occ, reach)}
    die = reach & in_row("die_area_mm2")
    die_w = np.full(len(hop), np.nan)
    floor = ("unit_io_gbps", "core_mesh_area_mm2", "die_noc_power_w", "d2d_io_power_w", "die_read_gbps", "die_gflops")
    rows = np.flatnonzero(die)
    if len(rows):           # elementwise numpy, as bound_metrics' scalars (the same ufunc loops, the same bits)
        side = w["core_side"][rows]
        die_w[rows] = bounds.die_power_floor_w({k: col(k)[rows] for k in floor}, col("die_active_units")[rows],
                                               side, w["noc_ghz"][rows])
    pool_w = power.pool_power_w(col("dies"), die_w)
    t_pub = out["ffn_latency_us_per_token"][0]
    lower.update(die_power_w=(die_w, die), pool_power_w=(pool_w, die),
                 pool_energy_uj_per_token=(cost.pool_energy_uj_per_token(pool_w, t_pub), die))
    costed = die & has("pool_cost_usd")
    cf = {k: col(k) for k in ("ffn_compute_us_per_token", "dies", "die_gflops", "die_read_gbps")}
    e_uj = bounds.delivered_energy_floor_uj(cf, pool_w, t_del, ideal, w["pe_mhz"], w["macro_mhz"])
    lower.update(usd_per_mtok=(cost.usd_per_mtok(col("pool_cost_usd"), pool_w, t_pub), costed),
                 usd_per_mtok_delivered=(cost.usd_per_mtok(col("pool_cost_usd"), e_uj / t_del, t_del), costed),
                 usd_per_mtok_scheduled=(cost.usd_per_mtok(col("pool_cost_usd"), pool_w, t_sch), costed))
    for k, (v, rows) in lower.items():
        _put(out, k, np.where(np.isfinite(v), v - bounds.SLACK * np.abs(v), v), rows)
    for k, v in upper.items():
        _put(out, k, np.where(np.isfinite(v), v + bounds.SLACK * np.abs(v), v), reach)


def _first_max(cols: Sequence[Column], greater: bool = True) -> Column:
    """Python's ``max`` (``min``: ``greater`` False) over the values each row holds, in column
    order, and the rows holding any (NaN compares as in Python: never larger)."""
    cur, have = np.full(len(cols[0][0]), np.nan), np.zeros(len(cols[0][0]), dtype=bool)
    for v, w in cols:
        better = (v > cur) if greater else (v < cur)
        take = w & (~have | better)
        cur, have = np.where(take, v, cur), have | w
    return cur, have


def objective_bounds(objs: Any, per_model: Sequence[Mapping[str, Column]]) -> np.ndarray:
    """``design_bound``'s objective bounds (NaN: none) of every row."""
    n = len(per_model[0]["feasible"][0])
    out = np.full((n, len(objs.objectives)), np.nan)
    for j, o in enumerate(objs.objectives):
        cols = [m.get(o.metric) for m in per_model]
        if not fidelity.valid_for_objective(o) or any(c is None for c in cols):
            continue
        every = np.logical_and.reduce([w for _, w in cols])
        agg = o.aggregate
        if agg == "worst":
            agg = "max" if o.direction == "minimize" else "min"
        if agg in ("max", "min"):
            v = _first_max(cols, agg == "max")[0]
        elif len(cols) <= 2:          # math.fsum of one or two values: their (correctly rounded) sum
            v = cols[0][0] if len(cols) == 1 else cols[0][0] + cols[1][0]
            v = v / len(cols) if agg == "mean" else v
        else:                         # more: math.fsum row by row (few rows reach here: a plan's pool)
            stacked = np.stack([c[0] for c in cols], axis=1)
            v = np.array([math.fsum(r) for r in stacked.tolist()])
            v = v / len(cols) if agg == "mean" else v
        out[:, j] = np.where(every, v, np.nan)
    return out


def feasible(objs: Any, per_model: Sequence[Mapping[str, Column]]) -> np.ndarray:
    """``design_bound``'s verdict: every workload feasible in the closed form, and no constraint it
    can judge under the bounds (``fidelity.constraint_view``) violated."""
    ok = np.logical_and.reduce([m["feasible"][0] > 0 for m in per_model])
    keep = set()                                    # the metrics fidelity.constraint_view keeps
    for c in objs.constraints:
        if fidelity.valid_for_constraint(c):
            keep |= {c.metric, c.rhs} if isinstance(c.rhs, str) else {c.metric}
    absent = (np.zeros_like(ok, dtype=float), np.zeros_like(ok))
    for c in objs.constraints:
        viols = []
        for m in per_model:
            lhs_v, lhs_w = m.get(c.metric, absent) if c.metric in keep else absent
            if isinstance(c.rhs, str):
                rhs_v, rhs_w = m.get(c.rhs, absent) if c.rhs in keep else absent
                rhs_v = rhs_v * c.scale
            elif c.rhs is None:
                rhs_v, rhs_w = absent
            else:
                rhs_v, rhs_w = np.full(len(ok), float(c.rhs) * c.scale), np.ones_like(ok)
            with np.errstate(all="ignore"):
                d = lhs_v - rhs_v if c.op == "le" else rhs_v - lhs_v
                viols.append((np.where(rhs_v != 0, d / np.abs(rhs_v), d), lhs_w & rhs_w))
        worst, have = _first_max(viols)
        ok &= ~have | (worst <= 0)
    return ok


def hints(per_model: Sequence[Mapping[str, Column]], hint_metrics: Sequence[str]) -> np.ndarray:
    """The guided sampler's hints: log of each metric's largest positive value over the workloads
    (0 where none), and max(0, log(compute time at the MFU bound / read time)) at its largest."""
    n = len(per_model[0]["feasible"][0])
    out = np.zeros((n, len(hint_metrics) + 1))
    absent = (np.zeros(n), np.zeros(n, dtype=bool))
    for j, name in enumerate(hint_metrics):
        v, have = _first_max([(m.get(name, absent)[0], m.get(name, absent)[1] & (m.get(name, absent)[0] > 0))
                              for m in per_model])
        out[:, j] = _log_where(v, have)
    ratios = []
    for m in per_model:
        (c, cw), (e, ew), (r, rw) = (m.get(k, absent) for k in ("ffn_compute_us_per_token", "effective_mfu",
                                                                 "ffn_read_us_per_token"))
        with np.errstate(all="ignore"):
            q = c / e / r
        w = cw & ew & rw & (c > 0) & (e > 0) & (r > 0)
        ratios.append((_log_where(q, w), w))
    t, have = _first_max(ratios)
    out[:, -1] = np.where(have & (t > 0.0), t, 0.0)
    return out


def _log_where(v: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``math.log`` of ``v`` on ``rows``, 0 elsewhere (numpy's log may differ in the last bit)."""
    out = np.zeros(len(v))
    for i in np.flatnonzero(rows).tolist():
        out[i] = math.log(v[i])
    return out
