"""Vectorised structure (10), routing (20, catalog unions) and performance (30) stages.

Each function mirrors the scalar stage of the same name in `dse.pipeline.stages` line by line,
calling the same physics functions: with arrays where they are plain arithmetic, once per
distinct key (`dse.vector.groups`) where they branch or round. The only restatements are a
``min`` / ``max`` of two arrays (marked ``# = <the scalar function or stage>``), whose equality
with the scalar path is tested over random designs (`tests/vector/test_evaluate.py`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.catalog import get_gpu, get_model, gpus
from dse.constants import C
from dse.hardware import core, die, node, package, unit
from dse.mapping import sharding
from dse.performance import balance, baselines, energy, latency, serving
from dse.units import BYTES_PER_GB, BYTES_PER_MB, FLOPS_PER_GFLOP, GB_PER_PB, GB_PER_TB, GIB, MIB
from dse.vector.columns import Columns, categories
from dse.vector.groups import kept, lookup, memo, per_key
from dse.vector.table import Table
from dse.workload.union import union_closed_form


@dataclass
class Models:
    """Per-model constants, indexed by the model code of every row."""
    names: tuple[str, ...]
    hidden: np.ndarray
    d_ff: np.ndarray
    experts: np.ndarray
    shared: np.ndarray
    top_k: np.ndarray
    layers: np.ndarray
    expert_bytes: np.ndarray
    router_bytes: np.ndarray
    weight_bytes: np.ndarray
    attention: np.ndarray          # bool: AF-serving shape known
    kv_bytes: np.ndarray
    non_expert_bytes: np.ndarray
    instances: np.ndarray
    sig: tuple = ()                # the shapes and the constants: what per-key results depend on

    @classmethod
    def current(cls) -> Models:
        names = categories("model")
        ms = [get_model(n) for n in names]
        arr = lambda f, dt=np.int64: np.array([f(m) for m in ms], dtype=dt)  # noqa: E731
        out = cls(names, arr(lambda m: m.hidden), arr(lambda m: m.expert_intermediate), arr(lambda m: m.experts),
                  arr(lambda m: m.shared_experts), arr(lambda m: m.top_k), arr(lambda m: m.moe_layers),
                  arr(lambda m: m.expert_bytes), arr(lambda m: m.router_bytes), arr(lambda m: m.ffn_weight_bytes),
                  arr(lambda m: bool(m.attention), bool),
                  arr(lambda m: (m.attention or {}).get("kv_bytes_per_ctx_token", 0.0), float),
                  arr(lambda m: (m.attention or {}).get("non_expert_bytes", 0.0), float),
                  arr(lambda m: m.expert_instances))
        out.sig = (tuple(ms), tuple(getattr(C, k.name) for k in C.all()))          # the models whole
        return out

    def kept(self, tag: str) -> dict:
        """``groups.kept`` for the per-key results ``tag`` under these models and constants."""
        return kept((tag, self.sig))


@memo
def _geometry(side: int, ux: int, uy: int, remainder: str) -> tuple:
    gx, gy = die.core_grid(side, ux, uy, remainder)
    return (die.active_units(side, ux, uy, remainder), die.cores_per_die(side, ux, uy, remainder),
            gx, gy, die.remainder_units(side, ux, uy), f"{gx}x{gy}", len(die.core_shapes(side, ux, uy, remainder)))


@memo
def _shard(hidden: int, d_ff: int, depth: int) -> tuple:
    s = sharding.shard(hidden, d_ff, depth)
    return (s.feasible, s.chunk_columns, s.chunks_per_expert, s.tp_degree, s.chunks_per_unit,
            s.d_used_columns, s.array_utilization)


@memo
def _pool(weight_bytes: int, instances: int, hidden: int, d_ff: int, per_layer: int, depth: int, side: int,
          ux: int, uy: int, remainder: str) -> tuple[int, int, int]:
    """(dies by capacity, dies by packing, dies one layer spans) of a model shape, array depth and
    floorplan: keyed by the knobs themselves, so a table groups its rows once for all three."""
    units = die.active_units(side, ux, uy, remainder)
    tp = _shard(hidden, d_ff, depth)[3]
    return (sharding.dies_by_capacity(weight_bytes, die.die_capacity_bytes(units, unit.unit_capacity_bytes(depth))),
            sharding.dies_by_packing(instances, tp, units), package.layer_die_span(tp, per_layer, units))


def pool_keys(c: Columns) -> list[np.ndarray]:
    """The knobs a pool's die counts depend on: model, array depth, floorplan."""
    return [c["model"], c["array_depth"], *geometry_keys(c)]


def shard_of(M: Models):
    """``_shard`` of a row's (model, array depth)."""
    return lambda m, dep: _shard(int(M.hidden[m]), int(M.d_ff[m]), dep)


def pool_of(M: Models, rem_names: tuple[str, ...]):
    """``_pool`` of a row's ``pool_keys`` values."""
    def fn(m: int, dep: int, s: int, ux: int, uy: int, r: int) -> tuple[int, int, int]:
        return _pool(int(M.weight_bytes[m]), int(M.instances[m]), int(M.hidden[m]), int(M.d_ff[m]),
                     int(M.experts[m] + M.shared[m]), dep, s, ux, uy, rem_names[r])
    return fn


def geometry_keys(c: Columns) -> list[np.ndarray]:
    return [c["core_side"], c["die_units_x"], c["die_units_y"], c["core_remainder"]]


def levels(c: Columns, units: np.ndarray) -> tuple[dict, dict, dict]:
    """Capacity (bytes), read GB/s and peak GFLOPS per level (`dse.hardware.hierarchy`)."""
    side, dpp, ppn = c["core_side"], c["dies_per_package"], c["packages_per_node"]
    u_cap = per_key(unit.unit_capacity_bytes, c["array_depth"])
    u_bw = unit.unit_read_gbps(c["n_macros"], c["macro_width_bits"], c["macro_mhz"], c["read_bw_scale"])
    u_fl = unit.unit_peak_gflops(c["tile_width"], c["pe_mhz"])
    caps = {"unit": u_cap, "core": core.core_capacity_bytes(side, u_cap), "die": die.die_capacity_bytes(units, u_cap)}
    bws = {"unit": u_bw, "core": core.core_read_gbps(side, u_bw), "die": die.die_read_gbps(units, u_bw)}
    fls = {"unit": u_fl, "core": core.core_peak_gflops(side, u_fl), "die": die.die_peak_gflops(units, u_fl)}
    caps["package"] = package.package_capacity_bytes(dpp, caps["die"])
    bws["package"] = package.package_read_gbps(dpp, bws["die"])
    fls["package"] = package.package_peak_gflops(dpp, fls["die"])
    caps["node"] = node.node_capacity_bytes(ppn, caps["package"])
    bws["node"] = node.node_read_gbps(ppn, bws["package"])
    fls["node"] = node.node_peak_gflops(ppn, fls["package"])
    return caps, bws, fls


def structure(c: Columns, M: Models, t: Table, x: dict) -> None:
    """Stage 10: hierarchy per level, sharding, TP, D_used, pool dies."""
    mi = c["model"]
    side, w = c["core_side"], c["tile_width"]
    rem_names = categories("core_remainder")
    units, cores, gx, gy, rem_units, grid, n_shapes = per_key(
        lambda s, ux, uy, r: _geometry(s, ux, uy, rem_names[r]), *geometry_keys(c), cache=M.kept("geometry"))
    caps, bws, fls = levels(c, units)
    u_bw, u_fl = bws["unit"], fls["unit"]
    bal = unit.balance_flop_per_byte(u_fl, u_bw)
    t_col = unit.t_col_ns(c["n_macros"], c["macro_width_bits"], c["macro_mhz"], c["read_bw_scale"])
    ok, cc, nc, tp, cpu, d_used, util = per_key(shard_of(M), mi, c["array_depth"], cache=M.kept("shard"))
    ok = ok.astype(bool)
    t.put("run_batch", c["batch"])
    t.put("t_col_ns", t_col)
    t.put("cores_per_die", cores)
    t.put("core_grid", grid, kind="str")
    t.put("remainder_units", rem_units)
    t.put("die_active_units", units)
    t.put("balance_flop_per_byte", bal)
    t.put("roofline_cap", np.minimum(1.0, 2.0 * w / bal))          # = unit.roofline_cap
    t.put("chunk_columns", cc)
    t.put("chunks_per_expert", nc)
    t.put("ffn_weight_gib", lookup(M.weight_bytes, mi) / GIB)
    for lvl in ("unit", "core", "die", "package", "node"):
        t.put(f"{lvl}_capacity_mib", caps[lvl] / MIB)
        t.put(f"{lvl}_read_gbps", np.asarray(bws[lvl], dtype=float))
        t.put(f"{lvl}_gflops", np.asarray(fls[lvl], dtype=float))
    t.put("bytes_per_flop", u_bw / u_fl)
    upc = core.units_per_core(side)
    groups_bad = c["pe_groups_per_core"] > upc
    if groups_bad.any():
        g_col = c["pe_groups_per_core"]
        t.infeasible(groups_bad, lambda i: f"pe_groups_per_core {g_col[i]} exceeds units per core {upc[i]}")
    if not ok.all():
        hid, dep = lookup(M.hidden, mi), c["array_depth"]
        t.infeasible(~ok, lambda i: f"chunk of {cc[i]} columns (3 x d = 3 x {hid[i]}) exceeds array_depth {dep[i]}")
    dies_cap, dies_pack, span = per_key(pool_of(M, rem_names), *pool_keys(c), cache=M.kept("pool"))
    dies = np.where(c.is_("die_count_rule", "capacity"), dies_cap, dies_pack)
    dies = np.where(ok, dies, 0)
    t.put("tp_degree", np.where(ok, tp, 0))
    t.put("d_used_columns", np.where(ok, d_used, 0))
    t.put("array_utilization", np.where(ok, util, 0.0))
    t.put("dies", dies)
    t.put("chunks_per_unit", cpu, ok)
    t.put("dies_capacity_rule", dies_cap, ok)
    t.put("dies_packing_rule", dies_pack, ok)
    t.put("pool_pflops", dies * fls["die"] / GB_PER_PB, ok)
    t.put("pool_read_tbps", dies * bws["die"] / GB_PER_TB, ok)
    x.update(mi=mi, units=units, upc=upc, gx=gx, gy=gy, n_cores=n_shapes, u_bw=u_bw, die_bw=bws["die"],
             die_fl=fls["die"], die_cap=caps["die"], bal=bal, t_col=t_col, tp=tp, cpu=cpu, d_used=d_used,
             dies=dies, mapped=ok, span=span)


def routing(c: Columns, M: Models, t: Table, x: dict, ran: np.ndarray) -> None:
    """Stage 20 with ``trace = 'catalog'``: the closed-form U(B)."""
    names = M.names
    u, src = per_key(lambda m, b: union_closed_form(get_model(names[m]), b), x["mi"], c["batch"],
                     cache=M.kept("union"))
    u = np.asarray(u, dtype=float)
    t.put("union_experts", u, ran)
    t.put("union_source", src, ran, kind="str")
    x["union"] = u


def performance(c: Columns, M: Models, t: Table, x: dict, ran: np.ndarray) -> None:
    """Stage 30: t_layer, per-token latency, energy, GPU baselines, AF serving."""
    mi, B, u, dies = x["mi"], c["batch"], x["union"], x["dies"]
    layers, eb, rb, k = (lookup(a, mi) for a in (M.layers, M.expert_bytes, M.router_bytes, M.top_k))
    t_layer = latency.t_layer_us(x["d_used"], x["t_col"])
    tok_bytes = latency.weight_bytes_per_token(latency.weight_bytes_per_step(layers, u, eb, rb), B)
    pool_bw = dies * x["die_bw"]
    pool_gflops = dies * x["die_fl"]
    t_read = latency.read_us_per_token(tok_bytes, pool_bw)
    t_comp = latency.compute_us_per_token(latency.flops_per_token(layers, k, eb), pool_gflops)
    t_ffn = np.maximum(t_read, t_comp)                          # = stages.performance
    put = lambda name, v, kind=None: t.put(name, v, ran, kind)          # noqa: E731
    put("t_layer_us", t_layer)
    put("weight_mb_per_token", tok_bytes / BYTES_PER_MB)
    put("ffn_read_us_per_token", t_read)
    put("ffn_compute_us_per_token", t_comp)
    put("ffn_latency_us_per_token", t_ffn)
    put("read_bound", latency.is_read_bound(B, k, u, x["bal"], rb, eb))
    put("weight_energy_uj_per_token", energy.energy_uj(tok_bytes, C.reram_pj_per_byte))
    x.update(t_layer=t_layer, t_ffn=t_ffn, pool_gflops=pool_gflops, pool_bw=pool_bw, tok_bytes=tok_bytes)


def gpu_baselines(c: Columns, M: Models, t: Table, x: dict, ran: np.ndarray) -> None:
    """Stage 30, continued: the GPU baselines (iso-compute pool, per-token time, energy)."""
    mi, t_ffn, tok_bytes, pool_bw = x["mi"], x["t_ffn"], x["tok_bytes"], x["pool_bw"]
    put = lambda name, v, kind=None: t.put(name, v, ran, kind)          # noqa: E731
    gpu_t = {}
    for key, g in gpus().items():
        n_c = baselines.gpus_iso_compute(x["pool_gflops"] * FLOPS_PER_GFLOP, g.flops)
        t_g = baselines.gpu_us_per_token(tok_bytes, n_c, g.read_bps)
        fpb = balance.flop_per_byte(g.flops, g.read_bps)
        put(f"{key}_dies_iso_compute", n_c)
        put(f"{key}_dies_iso_bandwidth", baselines.gpus_iso_bandwidth(pool_bw * BYTES_PER_GB, g.read_bps))
        # per model, then looked up per row (elementwise: the same values)
        put(f"{key}_dies_iso_capacity", lookup(baselines.gpus_iso_capacity(M.weight_bytes, g.capacity_gib * GIB), mi))
        put(f"{key}_us_per_token", t_g)
        put(f"speedup_vs_{key}", t_g / t_ffn)
        put(f"{key}_weight_energy_uj_per_token", energy.energy_uj(tok_bytes, g.hbm_pj_per_byte))
        put(f"{key}_flop_per_byte", fpb)
        put(f"{key}_knee_batch", lookup(np.asarray(balance.knee_batch(fpb, M.experts, M.top_k), dtype=float), mi))
        put(f"{key}_pool_power_w_iso_compute", n_c * g.board_power_w)
        gpu_t[key] = (n_c, t_g)
    x["gpu"] = gpu_t


def af_serving(c: Columns, M: Models, t: Table, x: dict, ran: np.ndarray) -> None:
    """Stage 30, continued: attention-FFN disaggregated serving (models with an attention shape)."""
    _af_serving(c, M, t, x, ran & lookup(M.attention, x["mi"]))


def _af_serving(c: Columns, M: Models, t: Table, x: dict, rows: np.ndarray) -> None:
    mi, B, t_ffn = x["mi"], c["batch"], x["t_ffn"]
    keys = categories("attn_gpu")
    ag = c["attn_gpu"]
    flops = lookup([get_gpu(k).flops for k in keys], ag)
    read = lookup([get_gpu(k).read_bps for k in keys], ag)
    n_att = baselines.gpus_iso_compute(x["pool_gflops"] * FLOPS_PER_GFLOP, flops)
    t_att = serving.t_attn_us(c["context"], B, lookup(M.kv_bytes, mi), lookup(M.non_expert_bytes, mi), n_att * read)
    t_gpu = np.zeros(c.n)
    for j, key in enumerate(keys):
        if key in x["gpu"]:
            t_gpu = np.where(ag == j, x["gpu"][key][1], t_gpu)
    tpot = np.maximum(t_att, t_ffn)                                     # = serving.tpot_af_us
    homo = serving.tpot_homogeneous_us(t_att, t_gpu)
    t.put("t_attn_us", t_att, rows)
    t.put("tpot_af_us", tpot, rows)
    t.put("tpot_gpu_only_us", homo, rows)
    t.put("af_gain", homo / tpot, rows)
    t.put("attention_over_ffn_dies", serving.attention_over_ffn_dies(n_att, t_att, t_ffn, x["dies"]), rows)
