"""The numpy reference interpreter of the `fusion` dialect: the oracle of every GPU test.

`evaluate(fusion, inputs)` checks the inputs against the fusion's signature, runs its body on
xDSL's `Interpreter` with one implementation per fusion op (`FusionFunctions`), and returns the
`fusion.output` operands as numpy arrays.

Values while interpreting: a tensor is an `np.ndarray` (rank 0 included), a scalar a numpy scalar
(`np.generic`), an `index` (from `fusion.dim`) a Python `int`, each of the dtype that holds its
element type (`fuser.runtime.dtypes.numpy_dtype`). After every op the interpreter checks each
result against its declared type: a static extent that the run-time data does not have is an
`InputError` naming the op.

Semantics (the GPU path must match these):
- Every op computes in its declared element type with numpy (f32 math in float32). The dialect
  allows arithmetic only on f32/f64/i32/i64, so f16/bf16 math goes through explicit casts to
  f32, as on the GPU.
- `compute_dtype=np.float64` makes a higher-precision oracle: every f32 value (inputs, constants,
  results) is held in float64, so f32 arithmetic and reductions run in float64, and `cast` to f32
  no longer rounds. Casts to f16/bf16 still round (once, from the float64 value). f32 outputs are
  then returned as float64 arrays; other outputs keep their dtype.
- No implicit broadcasting: tensor operands of a pointwise op must have one run-time shape
  (scalars combine with tensors), else `InputError` naming the op.
- Integers wrap on overflow (two's complement); integer `div` truncates toward zero, as C does.
  An integer divided by zero gives what torch's CUDA kernels give (measured on an H200; torch on
  the CPU raises instead): -1 for i32; for i64, 4294967295 where the dividend lies in
  [0, 2**32) (CUDA divides such operands in 32 bits) and -1 elsewhere. The kernels test the
  divisor and give these values rather than rely on the hardware.
- `pow` is C's `pow` (numpy's): x ** 0 is 1 for every x, NaN included; a negative base to an
  integral power keeps its sign, to a fractional power is NaN. Integer `pow` is built by the
  frontend in f64 (see `FusionOps.pow`).
- The edges of the other math follow torch's CUDA kernels (measured on an H100, torch 2.11):
  `round` halves to even; `sign` is 0 for NaN and +0 for -0.0; `frac` is `x - trunc(x)`;
  `fmod` has the sign of the dividend, `remainder` that of the divisor, and on integers both
  give integer `div`'s values for a zero divisor; `gcd` is Euclid's algorithm on the
  magnitudes in the signed type, as torch's (|INT_MIN| wraps, so a gcd with INT_MIN may be
  negative); a shift by a negative count or one not below the bit width gives 0
  (`bitwise_left_shift`, `logical_right_shift`) or the sign bit everywhere
  (`bitwise_right_shift`); `nextafter` steps in the declared type, also when f32 is held in
  float64; `lgamma` is +inf at its poles and at -inf; `erfcinv(1)` is +0.0, CUDA's (scipy's
  is -0.0: a reciprocal or negative power after it told them apart, the GPU fuzzer found).
  The sign of a NaN an op makes is the platform's (numpy's on x86 is negative, CUDA's
  positive): `signbit` of one is not defined across the two.
- `maximum`/`minimum` and the `max`/`min` reductions propagate NaN, as torch does. Reducing over
  zero elements gives the identity: 0 for `sum`, -inf/+inf (or the integer limits) for
  `max`/`min`, NaN for the mean.
- `cast`: to i1 is `!= 0`; float -> int truncates toward zero and saturates to the integer range
  (PTX `cvt.rzi`, as torch's CUDA kernels; NaN: see `_float_to_int`); int -> int wraps; to
  f16/bf16/f32 rounds to nearest even, once (int -> f16/bf16 goes through float64: exact for
  i32, int64 beyond 2**53 may round twice).
- Constants and scalar inputs are first rounded to their declared type, then held.
- `sum` accumulates in the element type (float64 in compute mode); `welford`/`var_mean` use the
  two-pass formula in the element type: mean = sum / N, var_sum = sum((x - mean)**2), so a large
  mean does not cancel; var = var_sum / max(N - correction, 0). A row holding +-inf has the
  variance NaN and the mean +-inf (NaN when it holds both), as torch's `var_mean`.
- `matmul` of f16/bf16 multiplies and accumulates in float32 (float64 in compute mode) and
  rounds the result back once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import scipy.special
from numpy.typing import DTypeLike
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, ModuleOp, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from fuser.dialects.fusion import (
    I1,
    AbsOp,
    AcoshOp,
    AcosOp,
    AddOp,
    ArgsortOp,
    AsinhOp,
    AsinOp,
    Atan2Op,
    AtanhOp,
    AtanOp,
    BinaryOp,
    BitwiseAndOp,
    BitwiseNotOp,
    BitwiseOrOp,
    BitwiseXorOp,
    BroadcastInDimOp,
    CastOp,
    CatOp,
    CeilOp,
    ConstantOp,
    CoshOp,
    CosOp,
    CummaxOp,
    CumminOp,
    CumprodOp,
    CumsumOp,
    DimOp,
    DivOp,
    EqOp,
    ErfcinvOp,
    ErfcOp,
    ErfinvOp,
    ErfOp,
    Exp2Op,
    Expm1Op,
    ExpOp,
    FloorOp,
    FmodOp,
    FracOp,
    FusionOp,
    GcdOp,
    GeluApproximation,
    GeluOp,
    GeOp,
    GtOp,
    IotaOp,
    IsFiniteOp,
    IsInfOp,
    IsNanOp,
    IsNegInfOp,
    IsPosInfOp,
    LeOp,
    LgammaOp,
    Log1pOp,
    Log2Op,
    Log10Op,
    LogicalShiftRightOp,
    LogOp,
    LtOp,
    MatmulOp,
    MaximumOp,
    MaxOp,
    MinimumOp,
    MinOp,
    MulOp,
    NegOp,
    NeOp,
    NextafterOp,
    OutputOp,
    PadOp,
    PartialSumOp,
    PermuteOp,
    PowOp,
    ProdOp,
    RandnOp,
    RandomOp,
    RandOp,
    ReciprocalOp,
    ReductionOp,
    ReluOp,
    RemainderOp,
    RenumberOp,
    ReshapeOp,
    ResizeOp,
    RoundOp,
    RsqrtOp,
    ScanOp,
    ScatterOp,
    SegmentOp,
    SegmentSetOp,
    SetOp,
    ShiftLeftOp,
    ShiftRightOp,
    SigmoidOp,
    SignbitOp,
    SignOp,
    SiluOp,
    SinhOp,
    SinOp,
    SliceOp,
    SqrtOp,
    SqueezeOp,
    SubOp,
    SumOp,
    TakeAlongAxisOp,
    TakeOp,
    TanhOp,
    TanOp,
    TopkOp,
    TruncOp,
    UnaryOp,
    UnaryTestOp,
    VarMeanOp,
    WelfordOp,
    WhereOp,
    YieldOp,
    element_type,
    format_shape,
    scatter_mismatch,
    take_from_empty,
    take_mismatch,
)
from fuser.dialects.views import END, ReshapeError, reshape_extents
from fuser.errors import InputError, VerificationError
from fuser.runtime import philox
from fuser.runtime.dtypes import BFLOAT16, FLOAT_DTYPES, iota_array, numpy_dtype, round_to_float
from fuser.runtime.inputs import check_input_sequence

_HALF_DTYPES = (np.dtype(np.float16), BFLOAT16)


def _renumbered(op: RenumberOp, x: np.ndarray) -> np.ndarray:
    """A `RenumberOp`'s result: the operand's dims in `source_dims` order (the others, of
    extent 1, dropped), as a fresh array."""
    kept = op.source_dims
    dropped = [d for d in range(np.ndim(x)) if d not in kept]
    return np.transpose(x, (*kept, *dropped)).reshape(op.result_extents(np.shape(x))).copy()


def _placed(op: ResizeOp, args: PythonValues) -> np.ndarray:
    """A pad's or cat's result: each operand copied to its place, the rest the pad's value."""
    operands = [
        np.asarray(a)
        for a, o in zip(args, op.operands, strict=True)
        if isinstance(o.type, TensorType)
    ]
    try:
        shape = op.result_extents([x.shape for x in operands])
    except ValueError as e:
        raise InputError(f"{describe_op(op)}: {e}") from None
    if isinstance(op, PadOp):
        out = np.full(shape, args[1], dtype=operands[0].dtype)
    else:
        out = np.empty(shape, dtype=operands[0].dtype)
    for x, (_, offsets) in zip(operands, op.placements(), strict=True):
        target: list[slice] = []
        source: list[slice] = []
        for d, (n, m) in enumerate(zip(x.shape, shape, strict=True)):
            offset = offsets.get(d, 0)
            first, last = max(offset, 0), max(min(offset + n, m), max(offset, 0))
            target.append(slice(first, last))
            source.append(slice(first - offset, last - offset))
        out[tuple(target)] = x[tuple(source)]
    return out


# --------------------------------------------------------------------------------------------
# The numpy function of each op
# --------------------------------------------------------------------------------------------


def _divide(a: Any, b: Any) -> Any:
    """True division on floats; on integers, truncation toward zero (C), not numpy's floor,
    and torch's CUDA result for a division by zero (see the module docstring)."""
    if np.asarray(a).dtype.kind == "f":
        return np.true_divide(a, b)
    by_zero = np.equal(b, 0)
    divisor = np.where(by_zero, np.ones_like(b), b)
    q = np.floor_divide(a, divisor)
    rounded_down = (np.remainder(a, divisor) != 0) & ((a < 0) != (divisor < 0))
    q = q + rounded_down.astype(q.dtype)
    return np.where(by_zero, _divided_by_zero(np.asarray(a)), q)


def _divided_by_zero(a: np.ndarray) -> np.ndarray:
    """What torch's CUDA kernels give for `a / 0` on integers (see the module docstring)."""
    if a.dtype != np.int64:
        return np.full_like(a, -1)
    return np.where((a >= 0) & (a <= 0xFFFFFFFF), np.int64(0xFFFFFFFF), np.int64(-1))


def _kept_integer(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A rounding function that keeps integers as they are (numpy's would make floats)."""
    return lambda x: fn(x) if np.asarray(x).dtype.kind == "f" else np.array(x, copy=True)


def _sign(x: Any) -> Any:
    """-1, 0 or 1 in the dtype of `x`; 0 for NaN and +0 for -0.0, as torch's CUDA sign."""
    a = np.asarray(x)
    return np.where(a > 0, 1, np.where(a < 0, -1, 0)).astype(a.dtype)


def _integer_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's `a % b` (the sign of `a`), and for `b == 0` integer `div`'s value."""
    by_zero = np.equal(b, 0)
    divisor = np.where(by_zero | np.equal(b, -1), np.ones_like(b), b)  # x % -1 == x % 1
    return np.where(by_zero, _divided_by_zero(np.asarray(a)), np.fmod(a, divisor))


def _fmod(a: Any, b: Any) -> Any:
    if np.asarray(a).dtype.kind == "f":
        return np.fmod(a, b)
    return _integer_remainder(np.asarray(a), np.asarray(b))


def _remainder(a: Any, b: Any) -> Any:
    """torch.remainder: the truncated remainder moved by `b` where it is non-zero and its sign
    differs from `b`'s (so -0.0 stays -0.0, and `remainder(-2, inf)` is inf)."""
    rem = np.asarray(_fmod(a, b))
    moved = (rem != 0) & ((rem < 0) != (np.asarray(b) < 0))
    return np.where(moved, rem + b, rem).astype(rem.dtype)


def _unsigned(a: np.ndarray) -> np.ndarray:
    return a.astype(np.dtype(f"u{a.dtype.itemsize}"))


def _gcd(a: Any, b: Any) -> Any:
    """torch's gcd: Euclid's algorithm on `|a|` and `|b|` in the signed type, where |INT_MIN|
    wraps to INT_MIN (so a gcd with INT_MIN may be negative); `x % -1` is 0."""
    a, b = np.asarray(a), np.asarray(b)
    dtype = np.result_type(a, b)
    with np.errstate(all="ignore"):
        x, y = np.broadcast_arrays(np.abs(a).astype(dtype), np.abs(b).astype(dtype))
        x, y = x.copy(), y.copy()
        while np.any(x != 0):
            going = x != 0
            divisor = np.where(going & (x != -1), x, 1)
            rem = np.where(going & (x != -1), np.fmod(y, divisor), 0).astype(dtype)
            y = np.where(going, x, y)
            x = np.where(going, rem, 0).astype(dtype)
    return y


def _shift(kind: str) -> Callable[[Any, Any], Any]:
    """torch's shifts: a count outside [0, bits) gives 0 (`left`, `logical`) or the sign bit
    everywhere (`right`); `logical` shifts in zeros."""

    def shift(a: Any, b: Any) -> Any:
        a, b = np.asarray(a), np.asarray(b)
        bits = 8 * a.dtype.itemsize
        outside = (b < 0) | (b >= bits)
        count = _unsigned(np.where(outside, 0, b).astype(a.dtype))
        if kind == "left":
            shifted, past = _unsigned(a) << count, np.zeros_like(a)
        elif kind == "logical":
            shifted, past = _unsigned(a) >> count, np.zeros_like(a)
        else:
            shifted, past = a >> count.astype(a.dtype), a >> (bits - 1)
        return np.where(outside, past, shifted.astype(a.dtype))

    return shift


UNARY_FUNCTIONS: dict[type[UnaryOp], Callable[[Any], Any]] = {
    NegOp: np.negative,
    AbsOp: np.abs,
    ReluOp: lambda x: np.maximum(x, 0),
    ExpOp: np.exp,
    LogOp: np.log,
    SqrtOp: np.sqrt,
    RsqrtOp: lambda x: 1 / np.sqrt(x),
    ReciprocalOp: lambda x: 1 / x,
    SinOp: np.sin,
    CosOp: np.cos,
    TanhOp: np.tanh,
    SigmoidOp: lambda x: 1 / (1 + np.exp(-x)),
    ErfOp: scipy.special.erf,
    SiluOp: lambda x: x / (1 + np.exp(-x)),
    AcosOp: np.arccos,
    AcoshOp: np.arccosh,
    AsinOp: np.arcsin,
    AsinhOp: np.arcsinh,
    AtanOp: np.arctan,
    AtanhOp: np.arctanh,
    CoshOp: np.cosh,
    SinhOp: np.sinh,
    TanOp: np.tan,
    ErfcOp: scipy.special.erfc,
    ErfinvOp: scipy.special.erfinv,
    ErfcinvOp: lambda x: np.where(x == 1, 0, scipy.special.erfcinv(x)).astype(np.asarray(x).dtype),
    Exp2Op: np.exp2,
    Expm1Op: np.expm1,
    Log10Op: np.log10,
    Log1pOp: np.log1p,
    Log2Op: np.log2,
    LgammaOp: lambda x: np.where(np.isneginf(x), np.inf, scipy.special.gammaln(x)).astype(
        np.asarray(x).dtype
    ),
    FracOp: lambda x: x - np.trunc(x),
    CeilOp: _kept_integer(np.ceil),
    FloorOp: _kept_integer(np.floor),
    RoundOp: _kept_integer(np.rint),
    TruncOp: _kept_integer(np.trunc),
    SignOp: _sign,
    BitwiseNotOp: np.invert,
}
"""Unary ops: numpy keeps the operand's dtype (Python constants are weak under NEP 50)."""

UNARY_TEST_FUNCTIONS: dict[type[UnaryTestOp], Callable[[Any], Any]] = {
    IsFiniteOp: np.isfinite,
    IsInfOp: np.isinf,
    IsNanOp: np.isnan,
    IsNegInfOp: lambda x: np.isinf(x) & (x < 0),
    IsPosInfOp: lambda x: np.isinf(x) & (x > 0),
    SignbitOp: np.signbit,
}
"""Tests of one operand (an i1 result); numpy's are defined on integers too."""

BINARY_FUNCTIONS: dict[type[BinaryOp], Callable[[Any, Any], Any]] = {
    AddOp: np.add,
    SubOp: np.subtract,
    MulOp: np.multiply,
    DivOp: _divide,
    PowOp: np.power,
    MaximumOp: np.maximum,
    MinimumOp: np.minimum,
    EqOp: np.equal,
    NeOp: np.not_equal,
    LtOp: np.less,
    LeOp: np.less_equal,
    GtOp: np.greater,
    GeOp: np.greater_equal,
    Atan2Op: np.arctan2,
    FmodOp: _fmod,
    RemainderOp: _remainder,
    GcdOp: _gcd,
    BitwiseAndOp: np.bitwise_and,
    BitwiseOrOp: np.bitwise_or,
    BitwiseXorOp: np.bitwise_xor,
    ShiftLeftOp: _shift("left"),
    ShiftRightOp: _shift("right"),
    LogicalShiftRightOp: _shift("logical"),
}
"""Binary ops and comparisons (CompareOp is a BinaryOp); both operands share one dtype."""


def _from_end(index: np.ndarray, n: int) -> np.ndarray:
    """`index` (int64) with a negative index counted from the end of a dim of extent `n`: the
    rule of `take`, `take_along_axis` and `scatter`."""
    wide = index.astype(np.int64)
    return np.where(wide < 0, wide + n, wide)


def _clamped_index(index: np.ndarray, n: int) -> np.ndarray:
    """Where a `take` or `take_along_axis` reads along a dim of extent `n` for `index`, as the
    kernels compute it (`KernelBuilder.taken_index`): from the end (`_from_end`), then clamped
    into [0, n)."""
    return np.clip(_from_end(index, n), 0, max(n - 1, 0))


def _identity_max(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return False
    return -np.inf if dtype in FLOAT_DTYPES else np.iinfo(dtype).min


def _identity_min(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return True
    return np.inf if dtype in FLOAT_DTYPES else np.iinfo(dtype).max


REDUCTION_FUNCTIONS: dict[type[ReductionOp], Callable[[np.ndarray, tuple[int, ...], bool], Any]] = {
    SumOp: lambda x, axes, keep: np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype),
    MaxOp: lambda x, axes, keep: np.max(
        x, axis=axes, keepdims=keep, initial=_identity_max(x.dtype)
    ),
    MinOp: lambda x, axes, keep: np.min(
        x, axis=axes, keepdims=keep, initial=_identity_min(x.dtype)
    ),
    ProdOp: lambda x, axes, keep: np.prod(x, axis=axes, keepdims=keep, dtype=x.dtype),
}
"""Reductions over `axes`, in the element type (`dtype=` stops numpy widening int32 sums and
products)."""


SCAN_FUNCTIONS: dict[type[ScanOp], Callable[[np.ndarray, int], Any]] = {
    CumsumOp: lambda x, axis: np.cumsum(x, axis=axis, dtype=x.dtype) + x.dtype.type(0),
    CumprodOp: lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype),
    CummaxOp: lambda x, axis: np.maximum.accumulate(x, axis=axis),
    CumminOp: lambda x, axis: np.minimum.accumulate(x, axis=axis),
}
"""Inclusive scans along `axis`, in the element type (integers wrap; a NaN is carried on by
`np.maximum`/`np.minimum`, as torch's `cummax`/`cummin` carry it). A sum starts from +0.0, as
torch's does, so a leading -0.0 is +0.0 (numpy's keeps it)."""


def order_keys(x: np.ndarray, descending: bool, equal_zeros: bool = False) -> np.ndarray:
    """Unsigned keys whose ascending order is the sorting order of `x` (`fuser/sort.cuh`'s):
    NaN above every number, -0.0 below +0.0 (their bit patterns') or, with `equal_zeros`, equal
    to it; ascending or `descending`."""
    if x.dtype.kind == "f":
        if equal_zeros:
            x = np.where(x == 0, np.zeros((), x.dtype), x)
        bits = np.dtype(f"u{x.dtype.itemsize}")
        top = bits.type(1) << bits.type(8 * x.dtype.itemsize - 1)
        u = x.view(bits)
        keys = np.where(u & top, ~u, u | top)
        keys = np.where(np.isnan(x), ~bits.type(0), keys)
    else:
        bits = np.dtype(f"u{x.dtype.itemsize}")
        keys = x.view(bits) ^ (bits.type(1) << bits.type(8 * x.dtype.itemsize - 1))
    return ~keys if descending else keys


def sort_order(x: np.ndarray, axis: int, descending: bool, equal_zeros: bool = False) -> np.ndarray:
    """The indices (i64) that sort `x` along `axis`: by `order_keys`, equal keys by index."""
    keys = order_keys(np.ascontiguousarray(x), descending, equal_zeros)
    index = np.broadcast_to(
        np.arange(x.shape[axis]).reshape([-1 if d == axis else 1 for d in range(x.ndim)]),
        x.shape,
    )
    return np.lexsort((index, keys), axis=axis).astype(np.int64)


def _gelu(x: Any, approximate: GeluApproximation) -> Any:
    if approximate == GeluApproximation.TANH:
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + scipy.special.erf(x * math.sqrt(0.5)))


def _float_to_int(a: np.ndarray, source: np.dtype, target: np.dtype) -> np.ndarray:
    """Truncates toward zero, saturating to the range of `target`, as torch's CUDA kernels
    convert (a C cast, PTX `cvt.rzi`). NaN gives what that conversion gives on an H200: 0 from
    f32 (and f16/bf16, converted through f32) to i32; the most negative integer from f32 to i64
    and from f64 to either. `source` is the declared type (f32 values may be held in float64)."""
    f = np.trunc(a.astype(np.float64))  # widening a float to float64 is exact
    info = np.iinfo(target)
    bound = 2.0 ** (info.bits - 1)
    high, low, nan = f >= bound, f < -bound, np.isnan(f)
    inside = np.where(high | low | nan, 0, f).astype(target)
    nan_value = 0 if source != np.float64 and target == np.int32 else info.min
    return np.where(
        high, info.max, np.where(low, info.min, np.where(nan, nan_value, inside))
    ).astype(target)


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def describe_op(op: Operation) -> str:
    """How messages name an op: `'fusion.add' defining %y`, or by its position in its block."""
    names = [f"%{r.name_hint}" for r in op.results if r.name_hint is not None]
    if names:
        return f"'{op.name}' defining {', '.join(names)}"
    block = op.parent_block()
    index = list(block.ops).index(op) if block is not None else 0
    return f"'{op.name}' (op #{index} of its block)"


def describe_input(index: int, value: SSAValue) -> str:
    """How messages name an input: `input #1 (%w)`, or `input #1` without a name."""
    return f"input #{index}" + (f" (%{value.name_hint})" if value.name_hint else "")


def _shape_str(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


# --------------------------------------------------------------------------------------------
# The interpreter functions
# --------------------------------------------------------------------------------------------


class FusionFunctions(InterpreterFunctions):
    """The numpy implementation of every fusion op, for xDSL's `Interpreter`.

    `wide` holds f32 values in float64 (the `compute_dtype=np.float64` mode of `evaluate`).
    Unary, binary and reduction ops share one implementation each, registered for every op class
    of `UNARY_FUNCTIONS`, `BINARY_FUNCTIONS` and `REDUCTION_FUNCTIONS` below the class.
    """

    def __init__(self, wide: bool = False):
        self.wide = wide

    def held_dtype(self, t: Attribute) -> np.dtype:
        """The numpy dtype that holds values of type `t` (a tensor or scalar type)."""
        dtype = numpy_dtype(element_type(t))
        return np.dtype(np.float64) if self.wide and dtype == np.float32 else dtype

    # --- helpers ---------------------------------------------------------------------------

    def scalar(self, value: float | int | bool, t: Attribute) -> np.generic:
        """A Python number as a scalar of type `t`: rounded to `t`, then held."""
        declared = numpy_dtype(t)
        if declared in FLOAT_DTYPES:
            rounded = round_to_float(np.float64(value), declared)
        else:
            rounded = np.asarray(value).astype(declared)
        # `rounded` is 0-d (from one number), so `[()]` gives a numpy scalar, not an array
        return cast(np.generic, rounded.astype(self.held_dtype(t))[()])

    def convert(self, x: Any, src: Attribute, dst: Attribute) -> Any:
        """`fusion.cast` of a value of element type `src` to `dst` (see the module docstring)."""
        a = np.asarray(x)
        target = self.held_dtype(dst)
        if target == np.bool_:
            return a != 0
        if target.kind == "i":
            if a.dtype in FLOAT_DTYPES:
                return _float_to_int(a, numpy_dtype(src), target)
            return a.astype(target)
        if a.dtype in FLOAT_DTYPES:
            return round_to_float(a, target)
        if target in _HALF_DTYPES:
            return round_to_float(a.astype(np.float64), target)
        return a.astype(target)

    def check_result(self, op: Operation, result: SSAValue, value: Any) -> None:
        """Checks an op's result against its declared type.

        A wrong kind or dtype is a bug of this interpreter; a static extent that the run-time
        shape lacks is the user's (a dynamic dim flowed into a static one): `InputError`.
        """
        t = result.type
        if isinstance(t, IndexType):
            ok = isinstance(value, int)
        elif isinstance(t, TensorType):
            ok = isinstance(value, np.ndarray) and value.ndim == t.get_num_dims()
        else:
            ok = isinstance(value, np.generic)
        if not ok or (not isinstance(t, IndexType) and value.dtype != self.held_dtype(t)):
            raise RuntimeError(
                f"reference bug: {describe_op(op)} produced {type(value).__name__} "
                f"{getattr(value, 'dtype', '')} for type {t}"
            )
        if isinstance(t, TensorType):
            for d, (static, actual) in enumerate(zip(t.get_shape(), value.shape, strict=True)):
                if static not in (DYNAMIC_INDEX, actual):
                    raise InputError(
                        f"{describe_op(op)}: result has run-time shape {_shape_str(value.shape)}"
                        f", but its type {t} needs extent {static} in dim {d}"
                    )

    @staticmethod
    def check_same_shapes(op: Operation, values: Sequence[Any]) -> None:
        """Tensor operands of a pointwise op must agree in shape: numpy would broadcast."""
        shapes = [v.shape for v in values if isinstance(v, np.ndarray)]
        if any(s != shapes[0] for s in shapes):
            raise InputError(
                f"{describe_op(op)}: tensor operands have run-time shapes "
                f"{', '.join(_shape_str(s) for s in shapes)}; fusion ops never broadcast "
                "implicitly (use fusion.broadcast_in_dim)"
            )

    def pointwise(self, op: Operation, fn: Callable[..., Any], args: PythonValues) -> Any:
        """Applies `fn` to operands of one shape; a scalar result stays a numpy scalar."""
        self.check_same_shapes(op, args)
        value = np.asarray(fn(*args))
        return value if isinstance(op.results[0].type, TensorType) else value[()]

    @staticmethod
    def moments(x: np.ndarray, axes: tuple[int, ...], keepdim: bool) -> tuple[Any, Any, int]:
        """Two-pass mean and sum of squared deviations over `axes`, and the element count."""
        n = math.prod(x.shape[a] for a in axes)
        mean = np.sum(x, axis=axes, keepdims=True, dtype=x.dtype) / x.dtype.type(n)
        dev = x - mean
        var_sum = np.sum(dev * dev, axis=axes, keepdims=keepdim, dtype=x.dtype)
        if not keepdim:
            mean = np.squeeze(mean, axis=axes)
        return np.asarray(mean), np.asarray(var_sum), n

    # --- shared implementations, registered per op class below ---------------------------

    def run_unary(self, interp: Interpreter, op: UnaryOp, args: PythonValues) -> PythonValues:
        return (self.pointwise(op, UNARY_FUNCTIONS[type(op)], args),)

    def run_binary(self, interp: Interpreter, op: BinaryOp, args: PythonValues) -> PythonValues:
        return (self.pointwise(op, BINARY_FUNCTIONS[type(op)], args),)

    def run_unary_test(
        self, interp: Interpreter, op: UnaryTestOp, args: PythonValues
    ) -> PythonValues:
        return (self.pointwise(op, UNARY_TEST_FUNCTIONS[type(op)], args),)

    def run_reduction(
        self, interp: Interpreter, op: ReductionOp, args: PythonValues
    ) -> PythonValues:
        fn = REDUCTION_FUNCTIONS[type(op)]
        return (np.asarray(fn(args[0], op.reduction_axes, op.keepdim is not None)),)

    def run_scan(self, interp: Interpreter, op: ScanOp, args: PythonValues) -> PythonValues:
        with np.errstate(over="ignore", invalid="ignore"):
            return (np.asarray(SCAN_FUNCTIONS[type(op)](args[0], op.axis)),)

    @impl(TopkOp)
    def run_topk(self, interp: Interpreter, op: TopkOp, args: PythonValues) -> PythonValues:
        x = args[0]
        order = sort_order(x, op.axis, op.largest is not None)
        indices = np.take(order, np.arange(op.count), axis=op.axis)
        return (np.take_along_axis(x, indices, axis=op.axis), indices)

    @impl(ArgsortOp)
    def run_argsort(self, interp: Interpreter, op: ArgsortOp, args: PythonValues) -> PythonValues:
        return (sort_order(args[0], op.axis, op.descending is not None, equal_zeros=True),)

    def run_copy(self, interp: Interpreter, op: SetOp, args: PythonValues) -> PythonValues:
        return (np.array(args[0], copy=True),)

    # --- one implementation per remaining op ---------------------------------------------

    @impl_terminator(OutputOp)
    def run_output(
        self, interp: Interpreter, op: OutputOp, args: PythonValues
    ) -> tuple[ReturnedValues, PythonValues]:
        return ReturnedValues(args), ()

    @impl(SegmentOp)
    def run_segment(self, interp: Interpreter, op: SegmentOp, args: PythonValues) -> PythonValues:
        return interp.run_ssacfg_region(op.body, args, "fusion.segment")

    @impl_terminator(YieldOp)
    def run_yield(
        self, interp: Interpreter, op: YieldOp, args: PythonValues
    ) -> tuple[ReturnedValues, PythonValues]:
        return ReturnedValues(args), ()

    @impl(ConstantOp)
    def run_constant(self, interp: Interpreter, op: ConstantOp, args: PythonValues) -> PythonValues:
        value = op.value
        if isinstance(value, IntegerAttr) and op.result.type == I1:
            return (self.scalar(value.value.data != 0, I1),)
        return (self.scalar(value.value.data, op.result.type),)

    @impl(DimOp)
    def run_dim(self, interp: Interpreter, op: DimOp, args: PythonValues) -> PythonValues:
        return (int(args[0].shape[op.axis.value.data]),)

    @impl(GeluOp)
    def run_gelu(self, interp: Interpreter, op: GeluOp, args: PythonValues) -> PythonValues:
        approximate = op.approximate.data
        return (self.pointwise(op, lambda x: _gelu(x, approximate), args),)

    @impl(NextafterOp)
    def run_nextafter(
        self, interp: Interpreter, op: NextafterOp, args: PythonValues
    ) -> PythonValues:
        """In the declared type: an f32 held in float64 steps by an f32 unit."""
        declared = numpy_dtype(element_type(op.result.type))
        held = self.held_dtype(op.result.type)

        def step(a: Any, b: Any) -> Any:
            return np.nextafter(np.asarray(a, declared), np.asarray(b, declared)).astype(held)

        return (self.pointwise(op, step, args),)

    @impl(WhereOp)
    def run_where(self, interp: Interpreter, op: WhereOp, args: PythonValues) -> PythonValues:
        return (self.pointwise(op, np.where, args),)

    @impl(CastOp)
    def run_cast(self, interp: Interpreter, op: CastOp, args: PythonValues) -> PythonValues:
        src, dst = element_type(op.input.type), element_type(op.result.type)
        return (self.pointwise(op, lambda x: self.convert(x, src, dst), args),)

    @impl(PermuteOp)
    def run_permute(self, interp: Interpreter, op: PermuteOp, args: PythonValues) -> PythonValues:
        return (_renumbered(op, args[0]),)

    @impl(ReshapeOp)
    def run_reshape(self, interp: Interpreter, op: ReshapeOp, args: PythonValues) -> PythonValues:
        x = np.asarray(args[0])
        try:
            shape = reshape_extents(op.target(x.shape), x.shape)
        except ReshapeError as e:
            raise InputError(f"{describe_op(op)}: {e}") from None
        return (np.reshape(x, shape),)

    @impl(SliceOp)
    def run_slice(self, interp: Interpreter, op: SliceOp, args: PythonValues) -> PythonValues:
        x = np.asarray(args[0])
        index = tuple(
            slice(a, None if b == END else b, c) for a, b, c in zip(*op.bounds(), strict=True)
        )
        return (x[index].copy(),)

    @impl(PadOp)
    def run_pad(self, interp: Interpreter, op: PadOp, args: PythonValues) -> PythonValues:
        return (_placed(op, args),)

    @impl(CatOp)
    def run_cat(self, interp: Interpreter, op: CatOp, args: PythonValues) -> PythonValues:
        return (_placed(op, args),)

    @impl(TakeAlongAxisOp)
    def run_take_along_axis(
        self, interp: Interpreter, op: TakeAlongAxisOp, args: PythonValues
    ) -> PythonValues:
        x, index = np.asarray(args[0]), np.asarray(args[1])
        d = op.axis
        problem = take_mismatch(x.shape, index.shape, d)
        if problem is not None:
            raise InputError(f"{describe_op(op)}: {problem}")
        return (np.take_along_axis(x, _clamped_index(index, x.shape[d]), axis=d),)

    @impl(ScatterOp)
    def run_scatter(self, interp: Interpreter, op: ScatterOp, args: PythonValues) -> PythonValues:
        x, index = np.asarray(args[0]), np.asarray(args[1])
        src = np.asarray(args[2], dtype=x.dtype)
        d = op.axis
        problem = scatter_mismatch(x.shape, index.shape, src.shape if src.ndim else None, d)
        if problem is not None:
            raise InputError(f"{describe_op(op)}: {problem}")
        n = x.shape[d]
        at = _from_end(index, n)
        hit = (at >= 0) & (at < n)  # an index outside [-n, n) writes nothing
        coords = np.indices(index.shape)
        target = tuple((at if j == d else coords[j])[hit] for j in range(index.ndim))
        # several writes of one element: the largest value (maximum propagates a NaN)
        best = np.full(x.shape, _identity_max(x.dtype), x.dtype)
        np.maximum.at(best, target, np.broadcast_to(src, index.shape)[hit])
        written = np.zeros(x.shape, bool)
        written[target] = True
        return (np.where(written, best, x),)

    @impl(TakeOp)
    def run_take(self, interp: Interpreter, op: TakeOp, args: PythonValues) -> PythonValues:
        x, index = np.asarray(args[0]), np.asarray(args[1])
        d = op.axis
        problem = take_from_empty(x.shape, index.shape, d)
        if problem is not None:
            raise InputError(f"{describe_op(op)}: {problem}")
        return (np.asarray(np.take(x, _clamped_index(index, x.shape[d]), axis=d)),)

    @impl(IotaOp)
    def run_iota(self, interp: Interpreter, op: IotaOp, args: PythonValues) -> PythonValues:
        t = cast(TensorType, op.result.type)
        length = args[0] if args else t.get_shape()[0]
        if length < 0:
            raise InputError(f"{describe_op(op)}: length is {length} (< 0)")
        start, step = op.values()
        values = iota_array(length, start, step, numpy_dtype(t.element_type))
        return (values.astype(self.held_dtype(t)),)

    def run_random(self, interp: Interpreter, op: RandomOp, args: PythonValues) -> PythonValues:
        """`fusion.rand`/`randn`: `fuser.runtime.philox.random` of the result's shape."""
        t = cast(TensorType, op.result.type)
        sizes = iter(args[2:])
        shape = tuple(int(next(sizes)) if e == DYNAMIC_INDEX else e for e in t.get_shape())
        if any(e < 0 for e in shape):
            raise InputError(f"{describe_op(op)}: a negative extent in {shape}")
        values = philox.random(
            shape,
            numpy_dtype(t.element_type),
            int(args[0]),
            int(args[1]),
            isinstance(op, RandnOp),
            wide=self.wide,
        )
        return (values.astype(self.held_dtype(t)),)

    @impl(SqueezeOp)
    def run_squeeze(self, interp: Interpreter, op: SqueezeOp, args: PythonValues) -> PythonValues:
        return (_renumbered(op, args[0]),)

    @impl(BroadcastInDimOp)
    def run_broadcast_in_dim(
        self, interp: Interpreter, op: BroadcastInDimOp, args: PythonValues
    ) -> PythonValues:
        x, sizes = args[0], args[1:]
        in_shape = np.shape(x)
        extents = list(op.result.type.get_shape())
        for d, size in zip(op.sized_dims(), sizes, strict=True):
            if size < 0:
                raise InputError(f"{describe_op(op)}: size of result dim {d} is {size} (< 0)")
            extents[d] = size
        for i, d in enumerate(op.dims):
            if extents[d] == DYNAMIC_INDEX:
                extents[d] = in_shape[i]
        expanded = [1] * len(extents)
        for i, d in enumerate(op.dims):
            if in_shape[i] not in (1, extents[d]):
                raise InputError(
                    f"{describe_op(op)}: operand dim {i} has run-time extent {in_shape[i]}, "
                    f"which cannot broadcast to result dim {d} of extent {extents[d]} "
                    "(it must be 1 or equal)"
                )
            expanded[d] = in_shape[i]
        return (np.broadcast_to(np.reshape(x, expanded), extents).copy(),)

    @impl(WelfordOp)
    def run_welford(self, interp: Interpreter, op: WelfordOp, args: PythonValues) -> PythonValues:
        avg, var_sum, n = self.moments(args[0], tuple(op.axes.get_values()), keepdim=False)
        return avg, var_sum, np.full(var_sum.shape, n, dtype=np.int64)

    @impl(VarMeanOp)
    def run_var_mean(self, interp: Interpreter, op: VarMeanOp, args: PythonValues) -> PythonValues:
        x = args[0]
        keepdim = op.keepdim is not None
        mean, var_sum, n = self.moments(x, tuple(op.axes.get_values()), keepdim)
        divisor = x.dtype.type(max(n - op.correction.value.data, 0))
        return np.asarray(var_sum / divisor), mean

    @impl(PartialSumOp)
    def run_partial_sum(
        self, interp: Interpreter, op: PartialSumOp, args: PythonValues
    ) -> PythonValues:
        x = args[0]
        axis, splits = op.axis, op.split_count
        n = x.shape[axis]
        chunk = -(-n // splits) if n else 0
        parts = [
            np.sum(
                np.take(x, range(g * chunk, min((g + 1) * chunk, n)), axis=axis),
                axis=axis,
                dtype=x.dtype,
            )
            for g in range(splits)
        ]
        return (np.stack(parts, axis=axis).astype(x.dtype, copy=False),)

    @impl(MatmulOp)
    def run_matmul(self, interp: Interpreter, op: MatmulOp, args: PythonValues) -> PythonValues:
        a, b = args
        if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
            raise InputError(
                f"{describe_op(op)}: run-time shapes {_shape_str(a.shape)} and "
                f"{_shape_str(b.shape)} do not multiply ([..., M, K] x [..., K, N], "
                "equal batch dims)"
            )
        splits = op.split_count
        if splits is not None:
            # Partial products over K chunks of ceil(K / splits), kept in the accumulator type.
            acc = np.float64 if self.wide or a.dtype == np.float64 else np.float32
            k = a.shape[-1]
            chunk = -(-k // splits) if k else 0
            parts = [
                np.matmul(
                    a[..., j * chunk : (j + 1) * chunk].astype(acc),
                    b[..., j * chunk : (j + 1) * chunk, :].astype(acc),
                )
                for j in range(splits)
            ]
            return (np.stack(parts),)  # the accumulator type is the held type of the result
        if a.dtype in _HALF_DTYPES:
            acc = np.float64 if self.wide else np.float32
            return (round_to_float(np.matmul(a.astype(acc), b.astype(acc)), a.dtype),)
        return (np.matmul(a, b),)


def _register(method: Callable[..., PythonValues], op_types: Sequence[type[Operation]]) -> None:
    for op_type in op_types:
        name = "run_" + op_type.name.removeprefix("fusion.")
        setattr(FusionFunctions, name, impl(op_type)(method))


_register(FusionFunctions.run_unary, list(UNARY_FUNCTIONS))
_register(FusionFunctions.run_binary, list(BINARY_FUNCTIONS))
_register(FusionFunctions.run_unary_test, list(UNARY_TEST_FUNCTIONS))
_register(FusionFunctions.run_reduction, list(REDUCTION_FUNCTIONS))
_register(FusionFunctions.run_scan, list(SCAN_FUNCTIONS))
_register(FusionFunctions.run_copy, [SetOp, SegmentSetOp])
_register(FusionFunctions.run_random, [RandOp, RandnOp])
register_impls(FusionFunctions)


class _ResultChecker(Interpreter.Listener):
    """Checks every op's results against their declared types (`check_result`)."""

    def __init__(self, functions: FusionFunctions):
        self.functions = functions

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        for result, value in zip(op.results, results, strict=True):
            self.functions.check_result(op, result, value)


# --------------------------------------------------------------------------------------------
# Inputs and the entry point
# --------------------------------------------------------------------------------------------


def _bind_input(functions: FusionFunctions, index: int, arg: SSAValue, value: object) -> Any:
    """Checks one input against its block argument and returns its held value (a copy)."""
    t = arg.type
    where = describe_input(index, arg)
    if isinstance(t, TensorType):
        expected = numpy_dtype(t.element_type)
        if isinstance(value, np.generic):  # a numpy scalar is a 0-d array of its dtype
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            raise InputError(
                f"{where}: expected a numpy array of dtype {expected} for {t}, "
                f"got {type(value).__name__}"
            )
        if value.dtype != expected:
            raise InputError(
                f"{where}: expected dtype {expected} ({t.element_type}), got {value.dtype}"
            )
        if value.ndim != t.get_num_dims():
            raise InputError(f"{where}: expected rank {t.get_num_dims()}, got rank {value.ndim}")
        for d, (static, actual) in enumerate(zip(t.get_shape(), value.shape, strict=True)):
            if static not in (DYNAMIC_INDEX, actual):
                raise InputError(
                    f"{where}: expected extent {static} in dim {d} (shape "
                    f"{format_shape(t.get_shape())}), got shape {_shape_str(value.shape)}"
                )
        return np.array(value, dtype=functions.held_dtype(t), copy=True)
    return functions.scalar(_scalar_input(where, t, value), t)


def _scalar_input(where: str, t: Attribute, value: object) -> float | int | bool:
    """The Python number a scalar input stands for, checked against its type `t`."""
    got = type(value).__name__
    is_bool = isinstance(value, bool | np.bool_)
    if t == I1:
        if not is_bool:
            raise InputError(f"{where}: expected a bool for scalar i1, got {got}")
        return bool(value)
    dtype = numpy_dtype(t)
    if dtype.kind == "i":
        if is_bool or not isinstance(value, int | np.integer):
            raise InputError(f"{where}: expected an integer for scalar {t}, got {got}")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise InputError(f"{where}: {int(value)} is out of range for scalar {t}")
        return int(value)
    is_number = isinstance(value, int | float | np.integer | np.floating) or (
        isinstance(value, np.generic) and value.dtype in FLOAT_DTYPES
    )
    if is_bool or not is_number:
        raise InputError(f"{where}: expected a number for scalar {t}, got {got}")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError as e:
        raise InputError(f"{where}: {value} is out of range for scalar {t}") from e


def _is_wide(compute_dtype: DTypeLike | None) -> bool:
    if compute_dtype is None:
        return False
    try:
        dtype: np.dtype | None = np.dtype(compute_dtype)
    except TypeError:
        dtype = None
    if dtype not in (np.float32, np.float64):
        raise InputError(
            f"compute_dtype must be None, np.float32 or np.float64, got {compute_dtype!r}"
        )
    return dtype == np.float64


def evaluate(
    fusion: FusionOp,
    inputs: Sequence[object],
    *,
    compute_dtype: DTypeLike | None = None,
) -> list[np.ndarray]:
    """Runs `fusion` on `inputs` with numpy and returns its outputs in `fusion.output` order.

    Tensor inputs are numpy arrays of exactly the declared dtype and rank, with the static
    extents; scalar inputs are Python or numpy numbers (a bool for i1). A mismatch raises
    `InputError` naming the input. `compute_dtype=np.float64` holds f32 values in float64 and
    returns f32 outputs as float64 (see the module docstring); None or np.float32 is the default.
    Outputs never share memory with the inputs or with each other.
    """
    inputs = check_input_sequence(inputs)
    functions = FusionFunctions(wide=_is_wide(compute_dtype))
    try:
        fusion.verify()
    except VerifyException as e:
        raise VerificationError(str(e)) from e
    args = fusion.body.block.args
    if len(inputs) != len(args):
        names = ", ".join(f"%{a.name_hint}" if a.name_hint else "_" for a in args)
        raise InputError(
            f"@{fusion.sym_name.data} takes {len(args)} input(s) ({names}), got {len(inputs)}"
        )
    values = tuple(
        _bind_input(functions, i, a, v) for i, (a, v) in enumerate(zip(args, inputs, strict=True))
    )
    parent = fusion.parent_op()
    module = parent if isinstance(parent, ModuleOp) else ModuleOp([])
    interpreter = Interpreter(module, listeners=(_ResultChecker(functions),))
    interpreter.register_implementations(functions)
    with np.errstate(all="ignore"):
        results = interpreter.run_ssacfg_region(fusion.body, values, fusion.sym_name.data)
    outputs: list[np.ndarray] = []
    for value in results:
        array = np.asarray(value)
        if any(array is o for o in outputs):
            array = array.copy()
        outputs.append(array)
    return outputs
