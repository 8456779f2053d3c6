"""Validated design-point specification (hardware / workload / mapping)."""
from dse.spec.design import EITHER, DesignPoint, architecture_view, default_pe_groups, read_toml
from dse.spec.params import BY_NAME, PARAMS, PARTS, Param, coerce, names, parse_int

__all__ = ["DesignPoint", "EITHER", "architecture_view", "default_pe_groups", "PARAMS", "PARTS", "BY_NAME", "Param",
           "coerce", "names", "parse_int", "read_toml"]
