"""Network and IO silicon: routers and links of the core mesh and the Die NoC, and the D2D /
node-link PHYs (spec sections 6, 9), in the spirit of DSENT (Sun et al., NOCS 2012).

Router (input-buffered, matrix crossbar), per DSENT's decomposition:

* input buffers: radix x ``C.noc_buffer_flits`` x width flip-flops of ``C.noc_ff_um2``;
* crossbar: radix inputs x radix outputs of width-bit wire bundles at ``C.noc_wire_pitch_um``,
  area (radix x width x pitch)^2 -- quadratic in radix and in link width;
* allocators, multicast tables, in-network adders, clocking: ``C.noc_router_overhead`` on top
  (calibrated once: the core mesh of the published design is 35.6 mm2, Table XII).

Link: repeated wires, area width x length x ``C.noc_link_um2_per_bit_mm``, one per direction.

Counts come from the floorplan (`dse.hardware.die.core_shapes`): the core mesh has one router per
unit (4 mesh ports + the unit) and a side x side mesh of unit-pitch links inside every core; the
Die NoC has one router per core (4 mesh ports + the core) and core-pitch links on the core grid.
So network area scales with core side (Die-NoC routers fall as 320 / side^2, core-mesh links
rise as 1 - 1/side), with link width (quadratic crossbar, linear buffers and links) and with
the unit pitch.

Power = static (clock + leakage, ``C.noc_static_w_per_mm2`` x area) + dynamic (bit-hops per
second x ``C.noc_pj_per_bit_hop``): it follows the traffic the communication model computes.
The network clock ``noc_ghz`` is priced by ``dse.hardware.clock``: router area grows by the
registers of extra pipeline stages above the clock reached at the highest supply, the energy per
bit-hop with V^2, the static power's clock share (``C.noc_static_clock_share``) with C V^2 f and
its leakage share with the supply (every factor 1 at the published 1 GHz).
D2D / IO: the in-package D2D links are UCIe PHYs, area from the provisioned bandwidth at
``C.ucie_gbps_per_mm2`` and power at ``C.ucie_pj_per_bit`` with the lanes running at the
provisioned rate. The node links leave the package, beyond UCIe's reach, on board-reach SerDes
(``C.serdes_gbps_per_mm2``, ``C.serdes_pj_per_bit``).
"""
from __future__ import annotations

import numpy as np

from dse.constants import C
from dse.hardware import clock
from dse.units import BITS_PER_BYTE, BITS_PER_GB, J_PER_PJ, MM2_PER_UM2, S_PER_US

# Provision guard: a level with no provision is judged against this (no division by zero).
MIN_PROVISION_GBPS = 1e-9
# Relative tolerance of "demand exceeds provision" (rounding of equal figures is not a violation).
PROVISION_TOLERANCE = 1e-9

# A 2-D mesh router has 4 neighbour ports and 1 local port (topology, not a fitted number).
MESH_RADIX = 5


def router_area_mm2(radix: int, width_bits: int, noc_ghz: float | None = None):
    """One router: (buffers + crossbar) x overhead (0.11 mm2 at radix 5, 512 b, 1 GHz)."""
    buffers_um2 = radix * C.noc_buffer_flits * width_bits * C.noc_ff_um2
    xbar_um2 = (radix * width_bits * C.noc_wire_pitch_um) ** 2
    f = C.ref_noc_ghz if noc_ghz is None else noc_ghz
    return C.noc_router_overhead * (buffers_um2 + xbar_um2) * MM2_PER_UM2 * clock.area_factor(f, C.ref_noc_ghz)


def link_area_mm2(width_bits: int, length_mm: float) -> float:
    """One direction of one link: repeaters along width x length."""
    return width_bits * length_mm * C.noc_link_um2_per_bit_mm * MM2_PER_UM2


def mesh_links(w: int, h: int) -> tuple[int, int]:
    """(horizontal, vertical) bidirectional links of a w x h mesh."""
    return max(0, w - 1) * h, w * max(0, h - 1)


def unit_pitch_mm(die_units_x: int, die_units_y: int) -> tuple[float, float]:
    """Distance between neighbouring units (1.25 x 1.0 mm on the 20 x 20 mm, 16 x 20 array)."""
    return C.die_width_mm / die_units_x, C.die_height_mm / die_units_y


def core_mesh_area_mm2(shapes: list[tuple[int, int, int, int]], width_bits: int,
                       pitch_x_mm: float, pitch_y_mm: float, noc_ghz: float | None = None) -> float:
    """All core meshes of a die: a router per unit and unit-pitch links inside each core (a
    single-unit core has no mesh: its unit sits on the Die-NoC router's local port)."""
    routers = sum(w * h for _, _, w, h in shapes if w * h > 1)
    wires_mm = 0.0
    for _, _, w, h in shapes:
        hx, vy = mesh_links(w, h)
        wires_mm += 2 * (hx * pitch_x_mm + vy * pitch_y_mm)
    return routers * router_area_mm2(MESH_RADIX, width_bits, noc_ghz) + link_area_mm2(width_bits, wires_mm)


def die_noc_area_mm2(grid_x: int, grid_y: int, width_bits: int, core_pitch_x_mm: float,
                     core_pitch_y_mm: float, noc_ghz: float | None = None) -> float:
    """The Die NoC: a router per core and core-pitch links on the grid_x x grid_y core grid."""
    hx, vy = mesh_links(grid_x, grid_y)
    wires_mm = 2 * (hx * core_pitch_x_mm + vy * core_pitch_y_mm)
    return grid_x * grid_y * router_area_mm2(MESH_RADIX, width_bits, noc_ghz) + link_area_mm2(width_bits, wires_mm)


def d2d_io_area_mm2(d2d_gbps: float, node_gbps: float):
    """PHY area per die: UCIe for the in-package D2D links, SerDes for the node links (1.45 + 2.13
    mm2 published)."""
    return d2d_gbps / C.ucie_gbps_per_mm2 + node_gbps / C.serdes_gbps_per_mm2


def link_load(demand_gbps: float, provision_gbps: float) -> float:
    """Demand over provision of one level (> 1: over provision)."""
    return demand_gbps / max(provision_gbps, MIN_PROVISION_GBPS)


def over_provision(demand_gbps: float, provision_gbps: float) -> bool:
    """Whether the demand exceeds the provision (beyond rounding)."""
    return demand_gbps > provision_gbps * (1 + PROVISION_TOLERANCE)


def unit_io_bit_hops_per_s(active_units: int, unit_io_gbps: float, core_side: int) -> float:
    """Bit-hops per second of the units' activation / partial-sum traffic on the core mesh: each
    unit's port traffic crosses up to side - 1 mesh links."""
    hops = max(0, core_side - 1) if np.ndim(core_side) == 0 else np.maximum(0, np.asarray(core_side) - 1)
    return active_units * unit_io_gbps * BITS_PER_GB * hops


def fabric_power_w(area_mm2: float, bit_hops_per_s: float, noc_ghz: float | None = None):
    """Static (clock + leakage) power of the fabric's silicon plus its dynamic switching power, at
    the network clock's supply (``dse.hardware.clock``)."""
    f = C.ref_noc_ghz if noc_ghz is None else noc_ghz
    share = C.noc_static_clock_share
    static = (share * clock.clocked_power_factor(f, C.ref_noc_ghz)
              + (1 - share) * clock.leakage_factor(f, C.ref_noc_ghz))
    return (area_mm2 * C.noc_static_w_per_mm2 * static
            + bit_hops_per_s * C.noc_pj_per_bit_hop * clock.dynamic_energy_factor(f, C.ref_noc_ghz) * J_PER_PJ)


def d2d_io_power_w(d2d_gbps: float, node_gbps: float):
    """PHY power with the lanes running at the provisioned rate: UCIe for D2D, SerDes for the
    node links (pJ/b x b/s; 0.38 + 1.09 W published)."""
    return (d2d_gbps * C.ucie_pj_per_bit + node_gbps * C.serdes_pj_per_bit) * BITS_PER_GB * J_PER_PJ


def core_mesh_bit_hops_per_s(stream_bit_hops: float, unit_io_bit_hops: float) -> float:
    """Core-mesh traffic: multicast read-out streams plus the units' activation / partial traffic."""
    return stream_bit_hops + unit_io_bit_hops


def multicast_bit_hops_per_s(cores: float, mean_streams: float, stream_gbps: float, tree_links: float) -> float:
    """Bit-hops per second of ``mean_streams`` read-outs per core, each broadcast over a tree of
    ``tree_links`` links (units in the core - 1: broadcast pooling offers the read-out to every group)."""
    return cores * mean_streams * stream_gbps * BITS_PER_GB * tree_links


def link_loads_bit_hops_per_s(link_bytes_per_layer: list[float], t_layer_us: float) -> float:
    """Bit-hops per second of a set of link loads given in bytes per layer time."""
    return sum(link_bytes_per_layer) * BITS_PER_BYTE / (t_layer_us * S_PER_US)
