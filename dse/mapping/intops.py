"""Integer array operations of the scheduler, exact and faster than numpy's general forms on
its shapes: ceil division, counts, sums and maxima over a short last axis."""
from __future__ import annotations

import numpy as np

FLOAT_DIV_EXACT = 1 << 26       # ceil(a / b) of integers below this is exact in float64 division
FLOAT32_EXACT = 1 << 24         # integers below this are exact in float32 (BLAS sums and counts)


def ceil_div(a: np.ndarray, b) -> np.ndarray:
    """ceil(a / b) of non-negative integers, b > 0 (float64 division below ``FLOAT_DIV_EXACT``:
    the rounded quotient of such integers never crosses an integer; numpy's integer division is
    several times slower)."""
    out = np.result_type(a, b)
    if a.size and int(a.max()) < FLOAT_DIV_EXACT and int(np.max(b)) < FLOAT_DIV_EXACT:
        return np.ceil(a / b).astype(out)
    return -(-a // b)


def ceil_div_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ceil(a / b) of non-negative integers held in floats (``a``: below 2^24 in float32, 2^53 in
    float64; ``b`` >= 1), exact, in ``a``'s float type: no conversion to integers and back.

    Why exact, with p the precision (24 or 53 bits): if b divides a, a / b is an integer below
    2^p, exactly represented, and division rounds correctly. Else a / b = k + f with f >= 1 / b.
    For k = 0 the quotient is positive, so its ceiling is 1. For k >= 1 with 2^e <= k, half an ulp
    at k is 2^(e - p), and k b <= a < 2^p gives 2^(e - p) < 1 / b <= f. The quotient therefore
    rounds above k, and never above k + 1, which is representable (k + 1 <= a)."""
    q = a / b
    return np.ceil(q, out=q)


def ceil_div_pos(a: np.ndarray, w: int) -> np.ndarray:
    """ceil(a / w) of non-negative integers (a shift when w is a power of two), in ``a``'s dtype.
    A uint8 array is divided without the ``a + w - 1`` that could pass 255 (floor plus one where
    a remainder is left)."""
    if w == 1:
        return a
    if a.dtype == np.uint8:
        if w & (w - 1) == 0:
            q = a >> (w.bit_length() - 1)
            q += (a & (w - 1)).astype(bool)
        else:
            q = a // w
            q += (a % w).astype(bool)
        return q
    if w & (w - 1) == 0:
        return (a + (w - 1)) >> (w.bit_length() - 1)
    return (a + (w - 1)) // w


_BYTES = np.uint64(0x0101010101010101)


def count_last(b: np.ndarray) -> np.ndarray:
    """True values along the last axis of a bool array: the byte-sum trick when it is a multiple of 8
    (eight 0/1 bytes in a uint64 times 0x0101...01 leave their sum in the top byte), else a float32
    product with ones. numpy's sum over a short last axis took 1.1-4.2 ms where the product takes
    0.5-0.7 ms ([128, 40, N, F] with F = 4, 9, 25, 49: core sides 2, 3, 5 and 7)."""
    n = b.shape[-1]
    if n % 8 or n > 255 or not b.flags.c_contiguous:
        if n < FLOAT32_EXACT:
            return (b.astype(np.float32) @ np.ones(n, np.float32)).astype(np.int32)
        return b.sum(axis=-1, dtype=np.int32)
    v = b.view(np.uint8).reshape(-1, n // 8, 8).view(np.uint64)[..., 0]
    acc = v[:, 0].copy()
    for i in range(1, n // 8):                     # bytes stay <= n / 8: no carry between bytes
        acc += v[:, i]
    return ((acc * _BYTES) >> np.uint64(56)).astype(np.int32).reshape(b.shape[:-1])


SMALL_AXIS = 16                  # reduce a last axis this short by adding its slices (numpy's reduce is slow there)


def sum_last(a: np.ndarray, dtype=np.int32) -> np.ndarray:
    """Integer sum over the last axis (exact either way; slice by slice when the axis is short)."""
    n = a.shape[-1]
    if n > SMALL_AXIS or n == 0:
        return a.sum(axis=-1, dtype=dtype)
    acc = a[..., 0].astype(dtype)
    for i in range(1, n):
        acc += a[..., i]
    return acc


def max_last(a: np.ndarray) -> np.ndarray:
    """Maximum over the last axis (slice by slice when the axis is short)."""
    n = a.shape[-1]
    if n > SMALL_AXIS or n == 0:
        return a.max(axis=-1)
    acc = a[..., 0].copy()
    for i in range(1, n):
        np.maximum(acc, a[..., i], out=acc)
    return acc
