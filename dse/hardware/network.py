"""Network and IO silicon: core mesh, Die NoC, D2D + IO (spec sections 6, 9).

First cut: the study's Table XII figures for the published configuration, with the core mesh
and Die NoC scaled linearly in link width (512 b reference). The DSENT-style model that scales
routers and links with core side, radix and traffic replaces these functions (issue #4).
"""
from __future__ import annotations

from dse.constants import C


def core_mesh_area_mm2(core_mesh_link_bits: int) -> float:
    return C.core_mesh_area_mm2_ref * core_mesh_link_bits / 512


def core_mesh_power_w(core_mesh_link_bits: int) -> float:
    return C.core_mesh_power_w_ref * core_mesh_link_bits / 512


def die_noc_area_mm2(die_noc_link_bits: int) -> float:
    return C.die_noc_area_mm2_ref * die_noc_link_bits / 512


def die_noc_power_w(die_noc_link_bits: int) -> float:
    return C.die_noc_power_w_ref * die_noc_link_bits / 512


def d2d_io_area_mm2() -> float:
    return C.d2d_io_area_mm2_ref


def d2d_io_power_w() -> float:
    return C.d2d_io_power_w_ref
