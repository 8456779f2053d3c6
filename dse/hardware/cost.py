"""Cost as users weigh it: silicon per die, pool, and dollars per million tokens
(not in the published study: an extension for comparing designs by cost).

* Gross dies per wafer: the area-minus-edge-loss estimate
  pi d^2 / (4 A) - pi d / sqrt(2 A), d = wafer diameter - 2 x edge exclusion, A = die + scribe.
* Yield: Murphy's model ((1 - exp(-D0 A)) / (D0 A))^2 at defect density D0 (12 nm, mature).
* Die cost = wafer price / good dies; pool cost = dies x die cost + packages x package cost.
* Cost per million tokens = (pool cost amortised over ``C.amortisation_years`` of continuous
  service + energy x electricity price) / tokens served; the GPU baselines get the same formula
  with their street price and board power (iso-compute GPU count, same per-token latency model).
"""
from __future__ import annotations

import math

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


def pool_cost_usd(dies: float, die_cost: float, dies_per_package: int) -> float:
    """Silicon of the pool plus 2.5D packaging and test per package."""
    packages = math.ceil(dies / dies_per_package - WHOLE_PACKAGE_TOLERANCE)
    return dies * die_cost + packages * C.package_cost_usd


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
