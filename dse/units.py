"""Unit conversions, named (decimal SI for rates and energies, binary for capacities)."""
from __future__ import annotations

MIB = 1 << 20
GIB = 1 << 30

BYTES_PER_MB = 1e6              # decimal megabyte (weight traffic per token)
BITS_PER_BYTE = 8
BITS_PER_GB = 8e9               # bits in one decimal gigabyte (GB/s -> bit/s)
BYTES_PER_GB = 1e9
GB_PER_TB = 1e3
GB_PER_PB = 1e6
FLOPS_PER_GFLOP = 1e9
NS_PER_US = 1e3
US_PER_NS = 1e-3
US_PER_S = 1e6
UJ_PER_PJ = 1e-6
MM2_PER_UM2 = 1e-6
HZ_PER_MHZ = 1e6
GHZ_PER_MHZ = 1e-3
TOKENS_PER_MTOK = 1e6
J_PER_PJ = 1e-12
S_PER_US = 1e-6
