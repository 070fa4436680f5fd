"""The math ops of nvFuser's op set beyond the basics, pinned to torch on CUDA at their edges.

Each case below is what torch 2.11 gave on an H100 (`torch.<op>` on CUDA tensors; bf16 results
widened to f32) for the inputs of its group: NaN (both signs), +-inf, signed zeros, halves, the
integer limits, zero divisors, shifts past the bit width. The test checks the reference
interpreter and the device's scalar lowering (evaluated on numpy, `test_semantics.
device_values`) against those values: exactly for rounding, tests, integer and bitwise ops,
within a few units for the math library's functions. `tests/gpu/test_math_ops_gpu.py` runs the
same ops on the GPU against the reference and against torch itself.

The rules (torch's, where it has one): `sign(NaN)` is 0 and `sign(-0.0)` +0; `round` halves to
even; `frac` is `x - trunc(x)`; integer `fmod`/`remainder` by 0 give integer `div`'s values;
`gcd` is Euclid's on the magnitudes in the signed type (|INT_MIN| wraps); a shift by a negative
count or one not below the width gives 0, or the sign bit everywhere for a right shift; `clamp`
and `threshold` keep NaN and ignore a NaN bound (torch's number bounds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from test_semantics import device_values

from fuser import DataType, FusionDefinition
from fuser.errors import DefinitionError
from fuser.runtime.dtypes import round_to_float

NAN, INF = float("nan"), float("inf")

DTYPES: dict[str, tuple[DataType, Any]] = {
    "f32": (DataType.Float, np.float32),
    "bf16": (DataType.BFloat16, ml_dtypes.bfloat16),
    "i32": (DataType.Int32, np.int32),
    "i64": (DataType.Int, np.int64),
    "bool": (DataType.Bool, np.bool_),
}

FLOAT_IN = [NAN, -NAN, INF, -INF, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 1.0, -1.0, 3.7, -3.7]
INT_IN = [0, 1, -1, 7, -7, 2**31 - 1, -(2**31)]
FLOAT_LHS = [5.5, -5.5, 5.5, -5.5, 2.0, -2.0, 2.0, INF, NAN, 0.0, -0.0, 1.0, 3.0]
FLOAT_RHS = [2.0, 2.0, -2.0, -2.0, INF, INF, 0.0, 2.0, 1.0, 1.0, 1.0, NAN, -0.0]
WEIGHTS = [0.0, 0.25, 0.5, 0.75, 1.0, 2.0, -1.0, 0.5, 0.5, NAN, 0.5, 0.5, 0.3]
INT_LHS = [7, -7, 7, -7, 5, -5, 0, -(2**31), -(2**31), 2**31 - 1, 12, -4, 0]
INT_RHS = [3, 3, -3, -3, 0, 0, 0, -1, 0, 2, 18, 6, 5]
SHIFTED = [5, -5, 1, -1, -(2**31), 7, 7, 7, 7, 7, -7, -7, -7]
COUNTS = [-1, 0, 31, 32, 33, 63, 64, 100, 1, 2, 31, 32, 64]
BOOL_LHS, BOOL_RHS = [True, True, False, False], [True, False, True, False]

TORCH_CUDA: dict[str, list[Any]] = {
    "sign f32": [0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0],
    "round f32": [NAN, NAN, INF, -INF, 0.0, -0.0, 0.0, 2.0, 2.0, -0.0, -2.0, 1.0, -1.0, 4.0, -4.0],
    "ceil f32": [NAN, NAN, INF, -INF, 0.0, -0.0, 1.0, 2.0, 3.0, -0.0, -2.0, 1.0, -1.0, 4.0, -3.0],
    "floor f32": [NAN, NAN, INF, -INF, 0.0, -0.0, 0.0, 1.0, 2.0, -1.0, -3.0, 1.0, -1.0, 3.0, -4.0],
    "trunc f32": [NAN, NAN, INF, -INF, 0.0, -0.0, 0.0, 1.0, 2.0, -0.0, -2.0, 1.0, -1.0, 3.0, -3.0],
    "frac f32": [
        NAN,
        NAN,
        NAN,
        NAN,
        0.0,
        0.0,
        0.5,
        0.5,
        0.5,
        -0.5,
        -0.5,
        0.0,
        0.0,
        0.7000000476837158,
        -0.7000000476837158,
    ],
    "signbit f32": [
        False,
        True,
        False,
        True,
        False,
        True,
        False,
        False,
        False,
        True,
        True,
        False,
        True,
        False,
        True,
    ],
    "isfinite f32": [
        False,
        False,
        False,
        False,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ],
    "isinf f32": [
        False,
        False,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "isnan f32": [
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "isneginf f32": [
        False,
        False,
        False,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "isposinf f32": [
        False,
        False,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "isreal f32": [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ],
    "logical_not f32": [
        False,
        False,
        False,
        False,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "erfinv f32": [
        NAN,
        NAN,
        NAN,
        NAN,
        0.0,
        -0.0,
        0.4769362807273865,
        NAN,
        NAN,
        -0.4769362807273865,
        NAN,
        INF,
        -INF,
        NAN,
        NAN,
    ],
    "lgamma f32": [
        NAN,
        NAN,
        INF,
        INF,
        INF,
        INF,
        0.5723649859428406,
        -0.12078223377466202,
        0.28468286991119385,
        1.2655119895935059,
        -0.05624377727508545,
        0.0,
        INF,
        1.4280723333358765,
        -1.379739761352539,
    ],
    "acosh f32": [
        NAN,
        NAN,
        INF,
        NAN,
        NAN,
        NAN,
        NAN,
        0.9624236822128296,
        1.566799283027649,
        NAN,
        NAN,
        0.0,
        NAN,
        1.9826968908309937,
        NAN,
    ],
    "atanh f32": [
        NAN,
        NAN,
        NAN,
        NAN,
        0.0,
        -0.0,
        0.5493061542510986,
        NAN,
        NAN,
        -0.5493061542510986,
        NAN,
        INF,
        -INF,
        NAN,
        NAN,
    ],
    "exp2 f32": [
        NAN,
        NAN,
        INF,
        0.0,
        1.0,
        1.0,
        1.4142135381698608,
        2.8284270763397217,
        5.656854152679443,
        0.7071067094802856,
        0.1767766773700714,
        2.0,
        0.5,
        12.996039390563965,
        0.07694651931524277,
    ],
    "expm1 f32": [
        NAN,
        NAN,
        INF,
        -1.0,
        0.0,
        -0.0,
        0.6487212777137756,
        3.481688976287842,
        11.182494163513184,
        -0.39346933364868164,
        -0.9179149866104126,
        1.718281865119934,
        -0.6321205496788025,
        39.44730758666992,
        -0.9752764701843262,
    ],
    "log1p f32": [
        NAN,
        NAN,
        INF,
        NAN,
        0.0,
        -0.0,
        0.40546512603759766,
        0.9162907600402832,
        1.252763032913208,
        -0.6931471824645996,
        NAN,
        0.6931471824645996,
        -INF,
        1.5475624799728394,
        NAN,
    ],
    "sign bf16": [0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0],
    "round bf16": [NAN, NAN, INF, -INF, 0.0, -0.0, 0.0, 2.0, 2.0, -0.0, -2.0, 1.0, -1.0, 4.0, -4.0],
    "ceil bf16": [NAN, NAN, INF, -INF, 0.0, -0.0, 1.0, 2.0, 3.0, -0.0, -2.0, 1.0, -1.0, 4.0, -3.0],
    "floor bf16": [NAN, NAN, INF, -INF, 0.0, -0.0, 0.0, 1.0, 2.0, -1.0, -3.0, 1.0, -1.0, 3.0, -4.0],
    "trunc bf16": [NAN, NAN, INF, -INF, 0.0, -0.0, 0.0, 1.0, 2.0, -0.0, -2.0, 1.0, -1.0, 3.0, -3.0],
    "frac bf16": [
        NAN,
        NAN,
        NAN,
        NAN,
        0.0,
        0.0,
        0.5,
        0.5,
        0.5,
        -0.5,
        -0.5,
        0.0,
        0.0,
        0.703125,
        -0.703125,
    ],
    "isfinite bf16": [
        False,
        False,
        False,
        False,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ],
    "isinf bf16": [
        False,
        False,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "isnan bf16": [
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "isneginf bf16": [
        False,
        False,
        False,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "isposinf bf16": [
        False,
        False,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "isreal bf16": [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ],
    "logical_not bf16": [
        False,
        False,
        False,
        False,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ],
    "erfinv bf16": [
        NAN,
        NAN,
        NAN,
        NAN,
        0.0,
        -0.0,
        0.4765625,
        NAN,
        NAN,
        -0.4765625,
        NAN,
        INF,
        -INF,
        NAN,
        NAN,
    ],
    "lgamma bf16": [
        NAN,
        NAN,
        INF,
        INF,
        INF,
        INF,
        0.57421875,
        -0.12060546875,
        0.28515625,
        1.265625,
        -0.05615234375,
        0.0,
        INF,
        1.4296875,
        -1.375,
    ],
    "acosh bf16": [
        NAN,
        NAN,
        INF,
        NAN,
        NAN,
        NAN,
        NAN,
        0.9609375,
        1.5703125,
        NAN,
        NAN,
        0.0,
        NAN,
        1.984375,
        NAN,
    ],
    "atanh bf16": [
        NAN,
        NAN,
        NAN,
        NAN,
        0.0,
        -0.0,
        0.55078125,
        NAN,
        NAN,
        -0.55078125,
        NAN,
        INF,
        -INF,
        NAN,
        NAN,
    ],
    "exp2 bf16": [
        NAN,
        NAN,
        INF,
        0.0,
        1.0,
        1.0,
        1.4140625,
        2.828125,
        5.65625,
        0.70703125,
        0.1767578125,
        2.0,
        0.5,
        13.0,
        0.07666015625,
    ],
    "expm1 bf16": [
        NAN,
        NAN,
        INF,
        -1.0,
        0.0,
        -0.0,
        0.6484375,
        3.484375,
        11.1875,
        -0.392578125,
        -0.91796875,
        1.71875,
        -0.6328125,
        39.5,
        -0.9765625,
    ],
    "log1p bf16": [
        NAN,
        NAN,
        INF,
        NAN,
        0.0,
        -0.0,
        0.40625,
        0.91796875,
        1.25,
        -0.69140625,
        NAN,
        0.69140625,
        -INF,
        1.546875,
        NAN,
    ],
    "sign i32": [0, 1, -1, 1, -1, 1, -1],
    "round i32": [0, 1, -1, 7, -7, 2147483647, -2147483648],
    "ceil i32": [0, 1, -1, 7, -7, 2147483647, -2147483648],
    "floor i32": [0, 1, -1, 7, -7, 2147483647, -2147483648],
    "trunc i32": [0, 1, -1, 7, -7, 2147483647, -2147483648],
    "signbit i32": [False, False, True, False, True, False, True],
    "isfinite i32": [True, True, True, True, True, True, True],
    "isinf i32": [False, False, False, False, False, False, False],
    "isnan i32": [False, False, False, False, False, False, False],
    "logical_not i32": [True, False, False, False, False, False, False],
    "bitwise_not i32": [-1, -2, 0, -8, 6, -2147483648, 2147483647],
    "sign i64": [0, 1, -1, 1, -1, 1, -1],
    "round i64": [0, 1, -1, 7, -7, 2147483647, -2147483648],
    "ceil i64": [0, 1, -1, 7, -7, 2147483647, -2147483648],
    "floor i64": [0, 1, -1, 7, -7, 2147483647, -2147483648],
    "trunc i64": [0, 1, -1, 7, -7, 2147483647, -2147483648],
    "signbit i64": [False, False, True, False, True, False, True],
    "isfinite i64": [True, True, True, True, True, True, True],
    "isinf i64": [False, False, False, False, False, False, False],
    "isnan i64": [False, False, False, False, False, False, False],
    "logical_not i64": [True, False, False, False, False, False, False],
    "bitwise_not i64": [-1, -2, 0, -8, 6, -2147483648, 2147483647],
    "fmod f32": [1.5, -1.5, 1.5, -1.5, 2.0, -2.0, NAN, NAN, NAN, 0.0, -0.0, NAN, NAN],
    "remainder f32": [1.5, 0.5, -0.5, -1.5, 2.0, INF, NAN, NAN, NAN, 0.0, -0.0, NAN, NAN],
    "atan2 f32": [
        1.2220252752304077,
        -1.2220252752304077,
        1.919567346572876,
        -1.919567346572876,
        0.0,
        -0.0,
        1.5707963705062866,
        1.5707963705062866,
        NAN,
        0.0,
        -0.0,
        NAN,
        1.5707963705062866,
    ],
    "nextafter f32": [
        5.499999523162842,
        -5.499999523162842,
        5.499999523162842,
        -5.499999523162842,
        2.000000238418579,
        -1.9999998807907104,
        1.9999998807907104,
        3.4028234663852886e38,
        NAN,
        1.401298464324817e-45,
        1.401298464324817e-45,
        NAN,
        2.999999761581421,
    ],
    "logical_and f32": [
        True,
        True,
        True,
        True,
        True,
        True,
        False,
        True,
        True,
        False,
        False,
        True,
        False,
    ],
    "logical_or f32": [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ],
    "clamp_scalar_nanmin f32": [
        5.5,
        -5.5,
        5.5,
        -5.5,
        2.0,
        -2.0,
        2.0,
        INF,
        NAN,
        0.0,
        -0.0,
        1.0,
        3.0,
    ],
    "clamp_scalar f32": [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, NAN, 0.0, -0.0, 1.0, 1.0],
    "threshold f32": [5.5, 42.0, 5.5, 42.0, 2.0, 42.0, 2.0, INF, NAN, 42.0, 42.0, 42.0, 3.0],
    "threshold_nan f32": [5.5, -5.5, 5.5, -5.5, 2.0, -2.0, 2.0, INF, NAN, 0.0, -0.0, 1.0, 3.0],
    "lerp f32": [
        5.5,
        -3.625,
        1.75,
        -2.875,
        NAN,
        INF,
        4.0,
        INF,
        NAN,
        NAN,
        0.5,
        NAN,
        2.0999999046325684,
    ],
    "addcmul f32": [5.5, -5.25, 5.0, -6.25, INF, INF, 2.0, INF, NAN, NAN, 0.25, NAN, 3.0],
    "fmod bf16": [1.5, -1.5, 1.5, -1.5, 2.0, -2.0, NAN, NAN, NAN, 0.0, -0.0, NAN, NAN],
    "remainder bf16": [1.5, 0.5, -0.5, -1.5, 2.0, INF, NAN, NAN, NAN, 0.0, -0.0, NAN, NAN],
    "atan2 bf16": [
        1.21875,
        -1.21875,
        1.921875,
        -1.921875,
        0.0,
        -0.0,
        1.5703125,
        1.5703125,
        NAN,
        0.0,
        -0.0,
        NAN,
        1.5703125,
    ],
    "logical_and bf16": [
        True,
        True,
        True,
        True,
        True,
        True,
        False,
        True,
        True,
        False,
        False,
        True,
        False,
    ],
    "logical_or bf16": [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ],
    "clamp_scalar_nanmin bf16": [
        5.5,
        -5.5,
        5.5,
        -5.5,
        2.0,
        -2.0,
        2.0,
        INF,
        NAN,
        0.0,
        -0.0,
        1.0,
        3.0,
    ],
    "clamp_scalar bf16": [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, NAN, 0.0, -0.0, 1.0, 1.0],
    "threshold bf16": [5.5, 42.0, 5.5, 42.0, 2.0, 42.0, 2.0, INF, NAN, 42.0, 42.0, 42.0, 3.0],
    "threshold_nan bf16": [5.5, -5.5, 5.5, -5.5, 2.0, -2.0, 2.0, INF, NAN, 0.0, -0.0, 1.0, 3.0],
    "lerp bf16": [5.5, -3.625, 1.75, -2.875, NAN, INF, 4.0, INF, NAN, NAN, 0.5, NAN, 2.09375],
    "addcmul bf16": [5.5, -5.25, 5.0, -6.25, INF, INF, 2.0, INF, NAN, NAN, 0.25, NAN, 3.0],
    "fmod i32": [1, -1, 1, -1, -1, -1, -1, 0, -1, 1, 12, -4, 0],
    "remainder i32": [1, 2, -2, -1, -1, -1, -1, 0, -1, 1, 12, 2, 0],
    "gcd i32": [1, 1, 1, 1, 5, 5, 0, 1, -2147483648, 1, 6, 2, 5],
    "bitwise_and i32": [3, 1, 5, -7, 0, 0, 0, -2147483648, 0, 2, 0, 4, 0],
    "bitwise_or i32": [7, -5, -1, -3, 5, -5, 0, -1, -2147483648, 2147483647, 30, -2, 5],
    "bitwise_xor i32": [4, -6, -6, 4, 5, -5, 0, 2147483647, -2147483648, 2147483645, 30, -6, 5],
    "logical_and i32": [
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        True,
        False,
        True,
        True,
        True,
        False,
    ],
    "bitwise_left_shift i32": [0, -5, -2147483648, 0, 0, 0, 0, 0, 14, 28, -2147483648, 0, 0],
    "bitwise_right_shift i32": [0, -5, 0, -1, -1, 0, 0, 0, 3, 1, -1, -1, -1],
    "fmod i64": [1, -1, 1, -1, 4294967295, -1, 4294967295, 0, -1, 1, 12, -4, 0],
    "remainder i64": [1, 2, -2, -1, 4294967295, -1, 4294967295, 0, -1, 1, 12, 2, 0],
    "gcd i64": [1, 1, 1, 1, 5, 5, 0, 1, 2147483648, 1, 6, 2, 5],
    "bitwise_and i64": [3, 1, 5, -7, 0, 0, 0, -2147483648, 0, 2, 0, 4, 0],
    "bitwise_or i64": [7, -5, -1, -3, 5, -5, 0, -1, -2147483648, 2147483647, 30, -2, 5],
    "bitwise_xor i64": [4, -6, -6, 4, 5, -5, 0, 2147483647, -2147483648, 2147483645, 30, -6, 5],
    "logical_and i64": [
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        True,
        False,
        True,
        True,
        True,
        False,
    ],
    "bitwise_left_shift i64": [
        0,
        -5,
        2147483648,
        -4294967296,
        0,
        -9223372036854775808,
        0,
        0,
        14,
        28,
        -15032385536,
        -30064771072,
        0,
    ],
    "bitwise_right_shift i64": [0, -5, 0, -1, -1, 0, 0, 0, 3, 1, -1, -1, -1],
    "bitwise_and bool": [True, False, False, False],
    "bitwise_or bool": [True, True, True, False],
    "bitwise_xor bool": [False, True, True, False],
    "logical_and bool": [True, False, False, False],
}
"""torch's CUDA results, by `"<op> <dtype>"` (the inputs: `_inputs`)."""

UNARY = {"sign", "round", "ceil", "floor", "trunc", "frac", "signbit", "isfinite", "isinf"}
UNARY |= {"isnan", "isneginf", "isposinf", "isreal", "logical_not", "bitwise_not", "erfinv"}
UNARY |= {"lgamma", "acosh", "atanh", "exp2", "expm1", "log1p"}
LIBRARY = {"erfinv", "lgamma", "acosh", "atanh", "exp2", "expm1", "log1p", "atan2"}
"""Functions of CUDA's math library: within a few units of torch's, not bit-exact."""


def _array(values: list[Any], dtype: Any) -> np.ndarray:
    if dtype is ml_dtypes.bfloat16:
        return round_to_float(np.asarray(values, np.float64), np.dtype(dtype))
    return np.asarray(values, dtype)


def _inputs(op: str, el: str) -> list[np.ndarray]:
    """The inputs torch was given for case `op el`, as numpy arrays of `el`."""
    dtype = DTYPES[el][1]
    if el == "bool":
        return [_array(BOOL_LHS, dtype), _array(BOOL_RHS, dtype)]
    if op in UNARY:
        return [_array(FLOAT_IN if el in ("f32", "bf16") else INT_IN, dtype)]
    if op.startswith("bitwise_") and "shift" in op:
        return [_array(SHIFTED, dtype), _array(COUNTS, dtype)]
    if el in ("i32", "i64"):
        return [_array(INT_LHS, dtype), _array(INT_RHS, dtype)]
    inputs = [_array(FLOAT_LHS, dtype), _array(FLOAT_RHS, dtype)]
    return [*inputs, _array(WEIGHTS, dtype)] if op in ("lerp", "addcmul") else inputs


def _define(op: str, el: str) -> FusionDefinition:
    dtype = DTYPES[el][0]
    arity = len(_inputs(op, el))
    with FusionDefinition() as fd:
        ins = [fd.define_tensor([-1], dtype) for _ in range(arity)]
        calls: dict[str, Callable[[], Any]] = {
            "clamp_scalar": lambda: fd.ops.clamp(ins[0], -1.0, 1.0),
            "clamp_scalar_nanmin": lambda: fd.ops.clamp(ins[0], min=NAN),
            "threshold": lambda: fd.ops.threshold(ins[0], 1.0, 42.0),
            "threshold_nan": lambda: fd.ops.threshold(ins[0], NAN, 42.0),
            "addcmul": lambda: fd.ops.addcmul(ins[0], ins[1], ins[2], 0.5),
        }
        out = calls[op]() if op in calls else getattr(fd.ops, op)(*ins)
        fd.add_output(out)
    return fd


def _check(got: np.ndarray, expected: list[Any], library: bool, el: str) -> None:
    got = np.asarray(got)
    want = np.asarray(expected, dtype=got.dtype if got.dtype.kind in "biu" else np.float64)
    if got.dtype.kind in "biu" or not library:
        # exact, the sign of zero included
        assert got.tolist() == pytest.approx(want.tolist(), nan_ok=True, abs=0, rel=0)
        numbers = ~np.isnan(want.astype(np.float64))  # (the table keeps no sign of a NaN)
        assert np.array_equal(
            np.signbit(got.astype(np.float64))[numbers], np.signbit(want)[numbers]
        )
        return
    rel = 2**-7 if el == "bf16" else 2e-6
    assert got.astype(np.float64).tolist() == pytest.approx(want.tolist(), rel=rel, nan_ok=True)


@pytest.mark.parametrize("case", list(TORCH_CUDA))
def test_reference_and_lowering_agree_with_torch_on_cuda(case: str) -> None:
    op, el = case.split()
    fd = _define(op, el)
    inputs = _inputs(op, el)
    expected = TORCH_CUDA[case]
    library = op in LIBRARY
    with np.errstate(all="ignore"):
        (reference,) = fd.reference(inputs)
        _check(reference, expected, library, el)
        if op != "isreal":  # (a `full`: no math)
            (device,) = device_values(fd, inputs)  # (a test of an integer is a constant)
            _check(np.broadcast_to(device, reference.shape), expected, library, el)


# --------------------------------------------------------------------------------------------
# Types each op takes, and the messages for the others


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda fd, f, i, b: fd.ops.frac(i),
            "fd.ops.frac: takes a floating-point operand, got Int32",
        ),
        (lambda fd, f, i, b: fd.ops.bitwise_not(f), "takes an integer or Bool operand, got Float"),
        (lambda fd, f, i, b: fd.ops.bitwise_and(f, i), "takes integer or Bool operands, got Float"),
        (lambda fd, f, i, b: fd.ops.gcd(b, b), "fd.ops.gcd: takes integer operands, got Bool"),
        (lambda fd, f, i, b: fd.ops.bitwise_left_shift(f, 1), "takes integer operands, got Float"),
        (lambda fd, f, i, b: fd.ops.nextafter(i, i), "takes Float or Double operands, got Int32"),
        (
            lambda fd, f, i, b: fd.ops.nextafter(fd.ops.cast(f, DataType.BFloat16), 1.0),
            "takes Float or Double operands, got BFloat16",
        ),
        (lambda fd, f, i, b: fd.ops.fmod(b, b), "does not take Bool operands"),
        (lambda fd, f, i, b: fd.ops.lerp(i, i, i), "fd.ops.lerp: takes floating-point operands"),
        (lambda fd, f, i, b: fd.ops.clamp(f), "fd.ops.clamp: needs 'min' or 'max'"),
        (lambda fd, f, i, b: fd.ops.imag(f), "fd.ops.imag: needs a complex operand, got Float"),
        (lambda fd, f, i, b: fd.ops.round(b), "does not take a Bool operand"),
        (lambda fd, f, i, b: fd.ops.logical_and(1, 2), "got two Python numbers"),
        (lambda fd, f, i, b: fd.ops.logical_not(3), "fd.ops.logical_not: argument 'x'"),
        (
            lambda fd, f, i, b: fd.ops.lerp(i, f, 0.5),
            "fd.ops.lerp: takes floating-point operands, got Int32",
        ),
        (
            lambda fd, f, i, b: fd.ops.clamp(f, min=f),
            "fd.ops.clamp: argument 'min' must be a number or a Scalar",
        ),
        (lambda fd, f, i, b: fd.ops.clamp(b, 0, 1), "fd.ops.clamp: does not take a Bool operand"),
    ],
)
def test_operand_types_outside_an_op_are_refused_by_name(
    call: Callable[..., Any], message: str
) -> None:
    with pytest.raises(DefinitionError, match=message), FusionDefinition() as fd:
        f = fd.define_tensor([-1], DataType.Float)
        i = fd.define_tensor([-1], DataType.Int32)
        b = fd.define_tensor([-1], DataType.Bool)
        call(fd, f, i, b)


def test_result_types_follow_torch() -> None:
    with FusionDefinition() as fd:
        h = fd.define_tensor([-1], DataType.Half)
        i = fd.define_tensor([-1], DataType.Int32)
        b = fd.define_tensor([-1], DataType.Bool)
        outs = {
            "acos(i32)": fd.ops.acos(i),  # float math of integers: Float
            "atan2(i32, i32)": fd.ops.atan2(i, i),
            "floor(i32)": fd.ops.floor(i),  # rounding keeps integers
            "sign(f16)": fd.ops.sign(h),
            "isnan(f16)": fd.ops.isnan(h),
            "signbit(bool)": fd.ops.signbit(b),
            "bitwise_xor(bool, bool)": fd.ops.bitwise_xor(b, b),
            "logical_or(f16, i32)": fd.ops.logical_or(h, i),
            "remainder(i32, 2.5)": fd.ops.remainder(i, 2.5),  # a float number: Float
            "lerp(f16, f16, 0.5)": fd.ops.lerp(h, h, 0.5),  # computed in Float, rounded once
            "addcmul(f16, i32, i32)": fd.ops.addcmul(h, i, i),
            "clamp(i32, 0, 5)": fd.ops.clamp(i, 0, 5),
            "addcmul(i32, i32, i32)": fd.ops.addcmul(i, i, i),  # value=1, as torch's
            "threshold(i32, 0.5, 2)": fd.ops.threshold(i, 0.5, 2),  # the input's dtype
        }
        for out in outs.values():
            fd.add_output(out)
    got = {k: v.dtype.name for k, v in outs.items()}
    assert got == {
        "acos(i32)": "Float",
        "atan2(i32, i32)": "Float",
        "floor(i32)": "Int32",
        "sign(f16)": "Half",
        "isnan(f16)": "Bool",
        "signbit(bool)": "Bool",
        "bitwise_xor(bool, bool)": "Bool",
        "logical_or(f16, i32)": "Bool",
        "remainder(i32, 2.5)": "Float",
        "lerp(f16, f16, 0.5)": "Half",
        "addcmul(f16, i32, i32)": "Half",
        "clamp(i32, 0, 5)": "Int32",
        "addcmul(i32, i32, i32)": "Int32",
        "threshold(i32, 0.5, 2)": "Int32",
    }


def test_every_op_compiles_with_nvrtc() -> None:
    """One fusion using every op on f32, f64, bf16, i32 and i64 inputs, compiled for sm_90."""
    floats = [
        *("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan", "erfc"),
        *("erfinv", "erfcinv", "exp2", "expm1", "log10", "log1p", "log2", "lgamma", "frac"),
        *("ceil", "floor", "round", "trunc", "sign", "isfinite", "isinf", "isnan", "isneginf"),
        *("isposinf", "signbit", "logical_not"),
    ]
    ints = ["ceil", "round", "sign", "bitwise_not", "signbit", "isnan", "logical_not"]
    float_pairs = ["atan2", "nextafter", "fmod", "remainder", "logical_and", "logical_or"]
    int_pairs = [
        *("fmod", "remainder", "gcd", "bitwise_and", "bitwise_or", "bitwise_xor"),
        *("bitwise_left_shift", "bitwise_right_shift", "logical_right_shift"),
    ]
    dtypes = [DataType.Float, DataType.Double, DataType.BFloat16, DataType.Int32, DataType.Int]
    with FusionDefinition() as fd:
        for dtype in dtypes:
            x = fd.define_tensor([-1], dtype)
            is_float = dtype.is_floating_point
            for name in floats if is_float else ints:
                fd.add_output(getattr(fd.ops, name)(x))
            for name in float_pairs if is_float else int_pairs:
                if name == "nextafter" and dtype == DataType.BFloat16:
                    continue
                fd.add_output(getattr(fd.ops, name)(x, fd.ops.neg(x)))
            if is_float:
                fd.add_output(fd.ops.lerp(x, fd.ops.neg(x), 0.25))
                fd.add_output(fd.ops.addcmul(x, x, x, 2.0))
                fd.add_output(fd.ops.clamp(x, -1.0, 1.0))
                fd.add_output(fd.ops.threshold(x, 0.5, 0.0))
    inputs = [
        np.ones(5, np.float32),
        np.ones(5, np.float64),
        np.ones(5, ml_dtypes.bfloat16),
        np.ones(5, np.int32),
        np.ones(5, np.int64),
    ]
    compiled = fd.compile(inputs, arch="sm_90")
    code = fd.last_cuda_code()
    assert compiled.kernels
    for function in ("erfcinvf(", "lgamma(", "fmodf(", "nextafter(", "fuser::gcd(", "copysignf("):
        assert function in code, function


@pytest.mark.parametrize("el", ["i32", "i64"])
def test_gcd_with_int_min_follows_torch(el: str) -> None:
    """torch on CUDA (an H100) gave gcd(380, INT_MIN) = -4 for i32: |INT_MIN| wraps to INT_MIN
    and Euclid's remainders keep its sign; for i64 the same pair is an ordinary 4."""
    dtype, np_dtype = DTYPES[el]
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.gcd(fd.define_tensor([-1], dtype), fd.define_tensor([-1], dtype)))
    a = np.array([380, -(2**31), -(2**31), 12, -1], np_dtype)
    b = np.array([-(2**31), 380, 0, -(2**31), -(2**31)], np_dtype)
    expected = [-4, -4, -(2**31), 4, 1] if el == "i32" else [4, 4, 2**31, 4, 1]
    for got in (fd.reference([a, b])[0], device_values(fd, [a, b])[0]):
        assert np.asarray(got).tolist() == expected


# --------------------------------------------------------------------------------------------
# triu and tril


@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 4), (1, 6, 2), (0, 3), (3, 1)])
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
@pytest.mark.parametrize("el", ["f32", "bf16", "i32", "bool"])
def test_triu_and_tril_are_torchs(
    shape: tuple[int, ...], diagonal: int, el: str, rng: np.random.Generator
) -> None:
    dtype, np_dtype = DTYPES[el]
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1] * len(shape), dtype)
        fd.add_output(fd.ops.triu(x, diagonal))
        fd.add_output(fd.ops.tril(x, diagonal=diagonal))
    data = _array(list(rng.standard_normal(int(np.prod(shape))) + 3), np_dtype).reshape(shape)
    if el == "bool":
        data = rng.random(shape) < 0.7
    upper, lower = fd.reference([data])
    assert upper.dtype == data.dtype and lower.dtype == data.dtype
    np.testing.assert_array_equal(upper, np.triu(data, diagonal))  # numpy's are torch's
    np.testing.assert_array_equal(lower, np.tril(data, diagonal))


def test_triu_needs_a_matrix() -> None:
    message = r"fd\.ops\.triu: needs a tensor of rank 2 or more"
    with pytest.raises(DefinitionError, match=message), FusionDefinition() as fd:
        fd.add_output(fd.ops.triu(fd.define_tensor([-1], DataType.Float)))


def test_erfcinv_of_one_is_positive_zero() -> None:
    """CUDA's erfcinvf(1) is +0.0 and scipy's -0.0: a negative power after it gave +inf on the
    GPU and -inf in the reference (the GPU fuzzer's find). The reference and the device's
    lowering give +0.0."""
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.reciprocal(fd.ops.erfcinv(fd.define_tensor([-1], DataType.Float))))
    x = np.array([1.0, 0.5], np.float32)
    for got in (fd.reference([x])[0], device_values(fd, [x])[0]):
        assert np.asarray(got)[0] == np.inf
