"""Die level: a die_units_x x die_units_y unit array tiled into cores on a Die NoC (spec s2).

Published: 16 x 20 = 320 units; side 4 -> 20 cores on a 4 x 5 NoC; 1.25 GiB, 16.4 TB/s,
128 TFLOPS. A core side that does not tile the array (6, 8 on 16 x 20) leaves a remainder;
``core_remainder`` says what happens to it:

* ``partial``: the remainder forms smaller edge cores (every unit is used; the NoC grid is
  ceil(x/s) x ceil(y/s) and edge cores have fewer units / groups);
* ``idle``: only whole cores are built; remainder units hold no weights (capacity, bandwidth and
  FLOPS of the die shrink to the whole cores').
"""
from __future__ import annotations

import functools
import math

from dse.units import NS_PER_US


def die_units(die_units_x: int, die_units_y: int) -> int:
    return die_units_x * die_units_y


def core_grid(core_side: int, die_units_x: int, die_units_y: int, core_remainder: str) -> tuple[int, int]:
    """Cores along x and y of the Die NoC (4 x 5 at side 4 on 16 x 20)."""
    if core_remainder == "idle":
        return die_units_x // core_side, die_units_y // core_side
    return math.ceil(die_units_x / core_side), math.ceil(die_units_y / core_side)


def full_cores(core_side: int, die_units_x: int, die_units_y: int) -> int:
    return (die_units_x // core_side) * (die_units_y // core_side)


def cores_per_die(core_side: int, die_units_x: int, die_units_y: int, core_remainder: str) -> int:
    gx, gy = core_grid(core_side, die_units_x, die_units_y, core_remainder)
    return gx * gy


def active_units(core_side: int, die_units_x: int, die_units_y: int, core_remainder: str) -> int:
    """Units that hold weights and compute (all of them unless the remainder is idle)."""
    if core_remainder == "idle":
        return full_cores(core_side, die_units_x, die_units_y) * core_side * core_side
    return die_units(die_units_x, die_units_y)


def remainder_units(core_side: int, die_units_x: int, die_units_y: int) -> int:
    """Units outside whole cores (0 at side 4 on 16 x 20; 104 at side 6; 64 at side 8)."""
    return die_units(die_units_x, die_units_y) - full_cores(core_side, die_units_x, die_units_y) * core_side ** 2


def die_capacity_bytes(units: int, unit_capacity_bytes: float) -> float:
    return units * unit_capacity_bytes


def die_read_gbps(units: int, unit_read_gbps: float) -> float:
    return units * unit_read_gbps


def die_peak_gflops(units: int, unit_peak_gflops: float) -> float:
    return units * unit_peak_gflops


# ---- floorplan of cores (for the Die NoC and the network area) ------------------------------
def core_spans(units: int, side: int, core_remainder: str) -> list[int]:
    """Widths of the cores along one die edge of ``units`` units: whole cores, then the partial
    edge core when ``core_remainder`` is 'partial' (16 at side 6 -> 6, 6, 4; 'idle' -> 6, 6)."""
    spans = [side] * (units // side)
    if units % side and core_remainder == "partial":
        spans.append(units % side)
    return spans


def core_shapes(core_side: int, die_units_x: int, die_units_y: int,
                core_remainder: str) -> list[tuple[int, int, int, int]]:
    """(grid x, grid y, width, height) in units of every core on the Die NoC grid, row-major.
    ``partial``: edge cores take the remainder; ``idle``: only whole cores."""
    xs = core_spans(die_units_x, core_side, core_remainder)
    ys = core_spans(die_units_y, core_side, core_remainder)
    return [(i, j, w, h) for j, h in enumerate(ys) for i, w in enumerate(xs)]


def io_port_cores(grid_x: int, grid_y: int, n_ports: int) -> list[tuple[int, int]]:
    """Cores where the die's D2D / IO ports attach to the Die NoC: the middle of the east edge,
    then the north, west and south edges (a die in a 2 x 2 package faces its two neighbours on
    two edges: ``C.die_noc_io_ports`` = 2)."""
    mids = [(grid_x - 1, grid_y // 2), (grid_x // 2, grid_y - 1), (0, grid_y // 2), (grid_x // 2, 0)]
    out: list[tuple[int, int]] = []
    for c in mids[:max(1, n_ports)]:
        if c not in out:
            out.append(c)
    return out


# ---- communication: the Die NoC (spec section 6) ---------------------------------------------
Link = tuple[tuple[int, int], tuple[int, int]]


def xy_route(src: tuple[int, int], dst: tuple[int, int]) -> list[Link]:
    """Directed links of the dimension-ordered (X first, then Y) route from src to dst."""
    (x, y), (tx, ty) = src, dst
    links: list[Link] = []
    while x != tx:
        nx = x + (1 if tx > x else -1)
        links.append(((x, y), (nx, y)))
        x = nx
    while y != ty:
        ny = y + (1 if ty > y else -1)
        links.append(((x, y), (x, ny)))
        y = ny
    return links


def layer_share_on_die(experts_per_layer: int, units_per_die: int) -> float:
    """Share of a layer's experts whose (same-index) shard sits on one die of the layer: die j
    of a TP group holds shard j of up to ``units_per_die`` of the layer's experts (1 when the
    layer fits on a die)."""
    return min(1.0, units_per_die / experts_per_layer)


def experts_per_token_on_die(experts_per_token: float, experts_per_layer: int, units_per_die: int) -> float:
    """Expected experts of one token on one die of the layer: all of them when the layer fits
    (k + shared = 9 for the default model) and a share otherwise."""
    return experts_per_token * layer_share_on_die(experts_per_layer, units_per_die)


def p_token_on_die(experts_per_token: int, experts_per_layer: int, units_per_die: int) -> float:
    """Probability that a token has at least one of its experts on a given die of the layer
    (experts placed uniformly over the layer's dies)."""
    return 1.0 - (1.0 - layer_share_on_die(experts_per_layer, units_per_die)) ** experts_per_token


def tokens_on_die(batch: int, p_on_die: float) -> float:
    """Expected tokens of a decode step that enter one die of the layer."""
    return batch * p_on_die


def experts_per_token_on_die_given_touch(experts_per_token: int, experts_per_layer: int,
                                         units_per_die: int) -> float:
    """Experts on one die of a token that has any there: the fan-out of its Die-NoC multicast
    (0 when no token reaches the die)."""
    touch = p_token_on_die(experts_per_token, experts_per_layer, units_per_die)
    if touch <= 0:
        return 0.0
    return experts_per_token_on_die(experts_per_token, experts_per_layer, units_per_die) / touch


@functools.lru_cache(maxsize=1024)
def downstream_shares(cores: tuple[tuple[int, int, int, int], ...],
                      ports: tuple[tuple[int, int], ...]) -> tuple[tuple[tuple[Link, float], ...], ...]:
    """Per IO port: every directed link of the XY routes from the port to the cores, with the
    share f (<= 1) of the die's units beyond it. Geometry only, so it is cached (the DSE asks for
    the same floorplans over and over)."""
    total_units = sum(w * h for _, _, w, h in cores)
    out = []
    for port in ports:
        down: dict[Link, float] = {}
        if total_units:
            for gx, gy, w, h in cores:
                for link in xy_route(port, (gx, gy)):
                    down[link] = down.get(link, 0.0) + w * h / total_units
        out.append(tuple((link, min(1.0, f)) for link, f in down.items()))
    return tuple(out)


def die_noc_link_loads(cores: list[tuple[int, int, int, int]], ports: list[tuple[int, int]],
                       tokens: float, k_die: float, hidden: int, act_bytes: float, psum_bytes: float,
                       reduction_order: str) -> dict[Link, float]:
    """Expected bytes per layer on every Die-NoC link (both directions of a link summed: the
    activations going out and the partial sums coming back share its wires).

    Tokens enter evenly through the IO ports. A token's activation (d x FP8) is multicast along
    the union of XY routes from its port to the cores holding its ``k_die`` experts (placed
    uniformly over the die's units); the partial sums (d x BF16 each) come back over the same tree.
    ``ep_first``: same-index shards of different experts are combined in the network, so a tree
    link carries one partial per token; ``tp_first``: each (token, expert) partial must cross dies
    on its own, so a link carries one per expert downstream of it.

    A link lies on a token's tree with probability 1 - (1 - f)^k_die, f = share of the die's
    units beyond the link (the cores whose XY route from the port uses it); it carries k_die x f
    partials on average without combining."""
    loads: dict[Link, float] = {}
    if not ports or tokens <= 0:
        return loads
    per_port = tokens / len(ports)
    for down in downstream_shares(tuple(cores), tuple(ports)):
        for (a, b), f in down:
            p_tree = 1.0 - (1.0 - f) ** k_die if k_die > 0 else 0.0
            partials = p_tree if reduction_order == "ep_first" else k_die * f
            key = (a, b) if a <= b else (b, a)
            loads[key] = loads.get(key, 0.0) + per_port * hidden * (act_bytes * p_tree + psum_bytes * partials)
    return loads


def die_noc_busiest_link_gbps(loads: dict[Link, float], t_layer_us: float) -> float:
    """The busiest Die-NoC link's demand: max bytes per layer / layer time."""
    return max(loads.values(), default=0.0) / (t_layer_us * NS_PER_US)
