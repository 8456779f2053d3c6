"""Cost as users weigh it: silicon per die, pool, and dollars per million tokens
(not in the published study: an extension for comparing designs by cost).

* Gross dies per wafer: the area-minus-edge-loss estimate
  pi d^2 / (4 A) - pi d / sqrt(2 A), d = wafer diameter - 2 x edge exclusion, A = die + scribe.
* Yield: Murphy's model ((1 - exp(-D0 A)) / (D0 A))^2 at defect density D0 (12 nm, mature).
* Die cost = wafer price / good dies.
* Package cost (the 2.5D assembly of ``dies_per_package`` known-good dies on a passive silicon
  interposer, in the form of the Chiplet Actuary model, Feng & Ma, DAC 2022): a fixed part
  (substrate, assembly, test) plus the interposer (its own wafer, area and Murphy yield), divided
  by the assembly yield ``C.bond_yield_per_die`` ** n, a failed assembly scrapping its dies. The
  fixed part is set so that the published 4-die package costs ``C.package_cost_usd``: a larger
  package saves fixed parts but its interposer's yield falls with its area.
* Node cost: a server per node (``C.node_fixed_usd``) and a board slot per package it is built
  for (``C.node_slot_usd``); the GPU baselines pay the same server per ``C.gpus_per_node`` GPUs.
* Pool cost = dies x die cost + packages x package cost + nodes x node cost.
* Cost per million tokens = (pool cost amortised over ``C.amortisation_years`` of continuous
  service + energy x electricity price) / tokens served; the GPU baselines get the same formula
  with their street price and board power (iso-compute GPU count, same per-token latency model).
"""
from __future__ import annotations

import math

import numpy as np

from dse.constants import C
from dse.units import S_PER_US, TOKENS_PER_MTOK, US_PER_S

SECONDS_PER_YEAR = 365.25 * 24 * 3600
J_PER_KWH = 3.6e6


def gross_dies_per_wafer(die_w_mm: float, die_h_mm: float) -> int:
    """Whole dies that fit a wafer (135 for a 20 x 20 mm die on 300 mm)."""
    d = C.wafer_diameter_mm - 2 * C.wafer_edge_exclusion_mm
    a = (die_w_mm + C.scribe_mm) * (die_h_mm + C.scribe_mm)
    n = math.pi * d * d / (4 * a) - math.pi * d / math.sqrt(2 * a)
    return max(0, int(math.floor(n)))


def murphy_yield(die_area_mm2: float, defects_per_cm2: float) -> float:
    """Murphy's yield ((1 - e^-DA) / DA)^2 (0.68 for 4 cm2 at 0.1 / cm2)."""
    da = defects_per_cm2 * die_area_mm2 / 100.0
    if da <= 0:
        return 1.0
    return ((1 - math.exp(-da)) / da) ** 2


# Guards: a die larger than the wafer has no good dies (no division by zero); a pool that fills
# its packages exactly up to rounding needs no extra package.
MIN_GOOD_DIES = 1e-9
WHOLE_PACKAGE_TOLERANCE = 1e-12


def die_cost_usd(die_w_mm: float, die_h_mm: float) -> float:
    """Wafer price / good dies per wafer (inf-free: at least one good die is assumed impossible
    only for dies larger than the wafer, which the die-size knobs cannot reach)."""
    good = gross_dies_per_wafer(die_w_mm, die_h_mm) * murphy_yield(die_w_mm * die_h_mm, C.defect_density_per_cm2)
    return C.wafer_price_usd / max(good, MIN_GOOD_DIES)


# The published package (spec s2: 4 dies) anchors the fixed part of the package cost.
REFERENCE_DIES_PER_PACKAGE = 4


def interposer_cost_usd(dies_per_package: int, die_w_mm: float, die_h_mm: float) -> float:
    """A passive interposer under ``dies_per_package`` dies: its wafer's price over the good
    interposers per wafer (area ``C.interposer_area_per_die`` x the dies', Murphy yield at
    ``C.interposer_defect_density_per_cm2``): $398 for 4 dies of 20 x 20 mm, $3,186 for 8."""
    area = dies_per_package * die_w_mm * die_h_mm * C.interposer_area_per_die
    side = math.sqrt(area)
    good = gross_dies_per_wafer(side, side) * murphy_yield(area, C.interposer_defect_density_per_cm2)
    return C.interposer_wafer_price_usd / max(good, MIN_GOOD_DIES)


def _assembled_usd(fixed_usd: float, dies_per_package: int, die_cost: float, die_w_mm: float, die_h_mm: float) -> float:
    n = dies_per_package
    made = fixed_usd + interposer_cost_usd(n, die_w_mm, die_h_mm) + n * die_cost
    return made / C.bond_yield_per_die ** n - n * die_cost


def package_cost_usd(dies_per_package: int, die_cost: float, die_w_mm: float, die_h_mm: float) -> float:
    """One package of ``dies_per_package`` dies, their own silicon excluded (it is counted per
    die) but the dies a failed assembly scraps included: ``C.package_cost_usd`` for the
    published 4-die package; $1,237 / $1,308 / $1,670 / $4,782 for 1 / 2 / 4 / 8 dies ($418 per die at 4,
    $598 at 8)."""
    ref = REFERENCE_DIES_PER_PACKAGE
    # the fixed part that makes the published package cost C.package_cost_usd (linear in it)
    at_zero = _assembled_usd(0.0, ref, die_cost, die_w_mm, die_h_mm)
    fixed = (C.package_cost_usd - at_zero) * C.bond_yield_per_die ** ref
    return _assembled_usd(fixed, dies_per_package, die_cost, die_w_mm, die_h_mm)


def node_cost_usd(packages_per_node: int) -> float:
    """One node built for ``packages_per_node`` packages: its server plus a slot per package."""
    return C.node_fixed_usd + packages_per_node * C.node_slot_usd


def whole(count):
    """Whole units needed for ``count`` (a count equal to an integer up to rounding needs no more);
    an int for a number, floats for an array."""
    if np.ndim(count):
        return np.ceil(np.asarray(count, dtype=float) - WHOLE_PACKAGE_TOLERANCE)
    return math.ceil(count - WHOLE_PACKAGE_TOLERANCE)


def pool_cost_usd(dies: float, die_cost: float, dies_per_package: int, packages_per_node: int,
                  die_w_mm: float, die_h_mm: float) -> float:
    """Silicon of the pool, its packages (interposer, assembly, test) and its nodes (servers)."""
    packages = whole(dies / dies_per_package)
    nodes = whole(packages / packages_per_node)
    return (dies * die_cost + packages * package_cost_usd(dies_per_package, die_cost, die_w_mm, die_h_mm)
            + nodes * node_cost_usd(packages_per_node))


def gpu_pool_cost_usd(gpus: float, gpu_price_usd: float) -> float:
    """A GPU baseline pool: the GPUs (fractional counts as the study's iso-compute pools) and a
    server per ``C.gpus_per_node`` of them."""
    return gpus * gpu_price_usd + whole(gpus / C.gpus_per_node) * C.node_fixed_usd


def pool_energy_uj_per_token(power_w: float, us_per_token: float) -> float:
    """Energy the pool spends per token served: W x us = uJ."""
    return power_w * us_per_token


def usd_per_mtok(capex_usd: float, power_w: float, us_per_token: float) -> float:
    """Dollars per million tokens: amortised capex per token plus energy per token.

    The pool serves one token per ``us_per_token`` (its per-token FFN latency at the run batch)
    continuously over the amortisation period."""
    tokens_per_s = US_PER_S / us_per_token
    capex_per_token = capex_usd / (C.amortisation_years * SECONDS_PER_YEAR * tokens_per_s)
    energy_j = power_w * us_per_token * S_PER_US
    return TOKENS_PER_MTOK * (capex_per_token + energy_j / J_PER_KWH * C.electricity_usd_per_kwh)
