"""Which numpy dtype holds which fusion element type, and float conversions that round once.

The reference interpreter, the GPU runtime and the tests all move data between numpy arrays and
fusion values. This module is the one place that pairs element types with numpy dtypes
(bf16 is `ml_dtypes.bfloat16`, i1 is `bool`), so that every layer agrees on them.

`round_to_float` exists because numpy/ml_dtypes conversions are not all correctly rounded:
ml_dtypes converts float64 to bfloat16 through float32, rounding twice (1 + 2**-8 + 2**-30
becomes 1.0 instead of 1 + 2**-7). The fusion dialect promises one round-to-nearest-even per cast,
as CUDA's `__double2bfloat16` does.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from xdsl.ir import Attribute

from fuser.dialects.fusion import ELEMENT_TYPES

#: The numpy dtype of each element type of `ELEMENT_TYPES` (f16, bf16, f32, f64, i32, i64, i1).
_NUMPY_DTYPES = ("float16", ml_dtypes.bfloat16, "float32", "float64", "int32", "int64", "bool")
_PAIRS: tuple[tuple[Attribute, np.dtype], ...] = tuple(
    (t, np.dtype(d)) for t, d in zip(ELEMENT_TYPES, _NUMPY_DTYPES, strict=True)
)

BFLOAT16: np.dtype = np.dtype(ml_dtypes.bfloat16)
"""The numpy dtype of bf16 values."""

FUSION_DTYPES: tuple[np.dtype, ...] = tuple(dtype for _, dtype in _PAIRS)
"""The numpy dtype of each fusion element type (f16, bf16, f32, f64, i32, i64, i1, in this order,
which `fuser.runtime.signature` numbers). Each one's `name` is also torch's (`torch.bfloat16`)."""

FLOAT_DTYPES: tuple[np.dtype, ...] = (
    np.dtype(np.float16),
    BFLOAT16,
    np.dtype(np.float32),
    np.dtype(np.float64),
)
"""The numpy dtypes of the fusion float types, narrowest first."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype holding values of a fusion element type (f16, bf16, f32, f64, i32, i64,
    i1); raises ValueError for any other attribute."""
    for t, dtype in _PAIRS:
        if t == element_type:
            return dtype
    raise ValueError(f"element type {element_type} has no numpy dtype in fuser")


def element_type_of(dtype: DTypeLike) -> Attribute:
    """The fusion element type of a numpy dtype; raises ValueError for dtypes fuser lacks."""
    try:
        d = np.dtype(dtype)
    except TypeError as e:
        raise ValueError(f"{dtype!r} is not a numpy dtype") from e
    for t, candidate in _PAIRS:
        if candidate == d:
            return t
    raise ValueError(
        f"numpy dtype {d} has no fusion element type (fuser supports float16, bfloat16, "
        "float32, float64, int32, int64 and bool)"
    )


def round_to_float(x: ArrayLike, dtype: DTypeLike) -> np.ndarray:
    """Converts a float array to a float dtype of `FLOAT_DTYPES`, rounding to nearest even once.

    numpy rounds float64 -> float16/float32 and float32 -> bfloat16 once; float64 -> bfloat16 goes
    through float32 rounded to odd, which makes the second rounding exact. Widening is exact.
    """
    a = np.asarray(x)
    target = np.dtype(dtype)
    if target not in FLOAT_DTYPES or a.dtype not in FLOAT_DTYPES:
        raise ValueError(f"round_to_float converts float dtypes, not {a.dtype} -> {target}")
    if target == BFLOAT16 and a.dtype == np.float64:
        a = _round_to_odd_float32(a)
    with np.errstate(over="ignore"):  # overflowing to inf is the rounding's result
        return a.astype(target)


def _round_to_odd_float32(a: np.ndarray) -> np.ndarray:
    """float64 -> float32, truncating and setting the last mantissa bit when inexact.

    A float32 rounded to odd has 16 more mantissa bits than bfloat16, so rounding it to bfloat16
    gives the correctly rounded result of the float64 value.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        r = a.astype(np.float32)
        inexact = (r.astype(np.float64) != a) & ~np.isnan(a)
        away = inexact & (np.abs(r.astype(np.float64)) > np.abs(a))
        r = np.where(away, np.nextafter(r, np.float32(0)), r)
    bits = r.view(np.uint32)
    bits = np.where(inexact, bits | np.uint32(1), bits).astype(np.uint32)
    return bits.view(np.float32).reshape(a.shape)


def iota_array(length: int, start: float, step: float, dtype: DTypeLike) -> np.ndarray:
    """The values of `fusion.iota` / `host.iota`: `start + i * step` for i in [0, length), in
    float64 rounded once to a float `dtype`, or in int64 (wrapping) for an integer one."""
    target = np.dtype(dtype)
    if target in FLOAT_DTYPES:
        wide_floats = np.float64(start) + np.arange(length, dtype=np.float64) * step
        return round_to_float(wide_floats, target)
    with np.errstate(over="ignore"):
        wide = np.int64(start) + np.arange(length, dtype=np.int64) * np.int64(step)
    return wide.astype(target)
