"""Capacity, read bandwidth and peak FP8 at every level for one design point (Table III).

Every level keeps the unit's bytes/FLOP (0.128 published): levels are replicas of units.
"""
from __future__ import annotations

from dataclasses import dataclass

from dse.hardware import core, die, node, package, unit
from dse.spec import DesignPoint

LEVELS = ("unit", "core", "die", "package", "node")


@dataclass(frozen=True)
class Hierarchy:
    t_col_ns: float
    cols_per_macro_cycle: float
    unit_capacity_bytes: float
    unit_read_gbps: float
    unit_gflops: float
    units_per_core: int
    core_capacity_bytes: float
    core_read_gbps: float
    core_gflops: float
    die_units: int
    die_active_units: int
    cores_per_die: int
    core_grid: tuple[int, int]
    remainder_units: int
    die_capacity_bytes: float
    die_read_gbps: float
    die_gflops: float
    package_capacity_bytes: float
    package_read_gbps: float
    package_gflops: float
    node_capacity_bytes: float
    node_read_gbps: float
    node_gflops: float

    @property
    def balance_flop_per_byte(self) -> float:
        return unit.balance_flop_per_byte(self.unit_gflops, self.unit_read_gbps)

    def bytes_per_flop(self, level: str) -> float:
        return getattr(self, f"{level}_read_gbps") / getattr(self, f"{level}_gflops")


def hierarchy(p: DesignPoint) -> Hierarchy:
    u_cap = unit.unit_capacity_bytes(p.array_depth)
    u_bw = unit.unit_read_gbps(p.n_macros, p.macro_width_bits, p.macro_mhz, p.read_bw_scale)
    u_fl = unit.unit_peak_gflops(p.tile_width, p.pe_mhz)
    n_units = die.active_units(p.core_side, p.die_units_x, p.die_units_y, p.core_remainder)
    d_cap = die.die_capacity_bytes(n_units, u_cap)
    d_bw = die.die_read_gbps(n_units, u_bw)
    d_fl = die.die_peak_gflops(n_units, u_fl)
    pk_cap = package.package_capacity_bytes(p.dies_per_package, d_cap)
    pk_bw = package.package_read_gbps(p.dies_per_package, d_bw)
    pk_fl = package.package_peak_gflops(p.dies_per_package, d_fl)
    return Hierarchy(
        t_col_ns=unit.t_col_ns(p.n_macros, p.macro_width_bits, p.macro_mhz, p.read_bw_scale),
        cols_per_macro_cycle=unit.cols_per_macro_cycle(p.n_macros, p.macro_width_bits),
        unit_capacity_bytes=u_cap, unit_read_gbps=u_bw, unit_gflops=u_fl,
        units_per_core=core.units_per_core(p.core_side),
        core_capacity_bytes=core.core_capacity_bytes(p.core_side, u_cap),
        core_read_gbps=core.core_read_gbps(p.core_side, u_bw),
        core_gflops=core.core_peak_gflops(p.core_side, u_fl),
        die_units=die.die_units(p.die_units_x, p.die_units_y),
        die_active_units=n_units,
        cores_per_die=die.cores_per_die(p.core_side, p.die_units_x, p.die_units_y, p.core_remainder),
        core_grid=die.core_grid(p.core_side, p.die_units_x, p.die_units_y, p.core_remainder),
        remainder_units=die.remainder_units(p.core_side, p.die_units_x, p.die_units_y),
        die_capacity_bytes=d_cap, die_read_gbps=d_bw, die_gflops=d_fl,
        package_capacity_bytes=pk_cap, package_read_gbps=pk_bw, package_gflops=pk_fl,
        node_capacity_bytes=node.node_capacity_bytes(p.packages_per_node, pk_cap),
        node_read_gbps=node.node_read_gbps(p.packages_per_node, pk_bw),
        node_gflops=node.node_peak_gflops(p.packages_per_node, pk_fl),
    )
