"""An independent float64 oracle of fuzz programs, written from torch's documented semantics.

It evaluates a `fuser.fuzz.programs.Program` directly, op record by op record, without any of
fuser's code (neither `runtime/reference.py` nor the fusion dialect), so a bug in the reference
interpreter, the frontend's promotion or a pass shows up as a disagreement.

Values are held as numpy arrays: floats of every dtype in float64, integers as int32/int64,
bools as bool. The rules:

- Type promotion is torch's `result_type` over three priority levels, as the frontend applies
  it: tensors (of any rank, 0-dim included), then `Scalar` handles, then Python numbers. A lower
  level changes the type only by a higher category (bool < integer < float): i32 + 2.5 -> f32,
  f16 + f64-scalar -> f16, bool + 1 -> i64.
- f16/bf16 are storage types: their math runs in f32, and results are rounded (to nearest even,
  once, from the float64 value; bf16 rounding is written here bit-exactly, not via ml_dtypes'
  float32 route) at the end of each op whose result is f16/bf16. f32 results are held unrounded
  (the float64 oracle), except Python numbers, which become constants of their op's compute
  type and are rounded to it (f32 included), as the frontend emits them.
- Integers wrap on overflow (two's complement). `div` of integers truncates toward zero (C and
  nvFuser's `div`, not torch.div's true division), and by zero gives torch's CUDA values (see
  `_trunc_div`); `truediv` of integers divides in f32.
  Integer `pow` is torch's `powi` on CUDA: a negative exponent gives 1 for base 1, +-1 for
  base -1 and 0 for any other base (0 ** -n included); otherwise the exact integer power.
- `cast`: to bool is `x != 0` (NaN -> True); float -> int truncates toward zero and saturates to
  the integer range, as torch's CUDA kernels do (PTX `cvt.rzi`); NaN gives what torch on an
  H200 gave: see `nan_as_int`. int -> int wraps.
- `pow` follows C's `pow` (CUDA's, torch's): `x ** 0 == 1` for every x (NaN included), a
  negative base with a non-integral exponent is NaN, with an integral one it keeps the sign.
- `maximum`/`minimum` and the `max`/`min` reductions propagate NaN (torch). Empty reductions
  give the identity: 0 for `sum`, -inf/+inf or the integer limits of the compute type for
  `max`/`min` (torch raises instead; fuser defines these), so `max` of an empty bool row is
  True (it reduces in i32 and casts back).
- `sum` of bool gives i64; of i32 stays i32 (fuser's frontend, where torch widens to i64).
- Scans (`cumsum`, `cumprod`, `cummax`, `cummin`) are inclusive along one dim, computed as the
  reductions are (a bool or integer sum or product in i64, wrapping; f16/bf16 in f32 rounded
  once); `cummax`/`cummin` carry a NaN to the end of the row (torch). An element after a shaky
  one along the dim is shaky.
- `topk` and `argsort` order NaN above every number; `topk` -0.0 below +0.0 (torch's radix
  selection), `argsort` the two as equal (torch's comparisons); equal elements by index (a
  total order, where torch leaves ties unspecified); every result of a row holding a shaky
  element is shaky.
- `welford` / `var_mean`: mean = sum / N; var_sum = sum((x - mean)^2) (two-pass, float64); a
  row holding +-inf has mean +-inf and var NaN (inf - inf), as torch's var on CUDA; var divides
  by max(N - correction, 0), so a single element with correction 1 gives NaN (0 / 0), and an
  empty row NaN mean and NaN var.
- `matmul` of f16/bf16 accumulates in float64 and rounds once.
- `pad`: widths are (before, after) pairs from the innermost dim outwards (torch's `F.pad`);
  result element i of a padded dim is operand element i - before where that lies in range,
  else the value (a number or a Scalar converted to the operand's dtype, default 0), so a
  negative width removes elements. `cat` converts its operands to their promoted dtype (one
  priority level: all are tensors) and concatenates them.

Each value also carries what the comparison needs (`Value.loosest`, `Value.scale`): the least
precise float dtype among the values it depends on, and the largest finite magnitude there, so
the differential runner can scale tolerances for rounding that happened upstream of an output.
And `Value.shaky` marks the elements whose value rounding upstream may flip: a comparison of two
floats closer than a few units of that dtype (`MARGIN`), a truncation to an integer or a cast
to bool close to its boundary, a square root, logarithm or reciprocal (or a divisor) of a float
close to 0 (its sign decides a NaN or an infinity), a dividend close to 0 over a zero divisor
(0 / 0 is NaN, anything else an infinity: gelu's `1 + erf` cancels to 0 in f32 a few units before
it does in float64), and everything computed from such elements
(`where` of a shaky condition, a reduction over one). The GPU's answer there is either side's,
so the runner does not compare those elements.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
import scipy.special

from fuser.fuzz.programs import (
    BITWISE,
    FLOATS,
    INTEGER_BINARY,
    INTS,
    LOGICAL,
    NUMPY_DTYPES,
    UNARY_TESTS,
    Op,
    Program,
)

# --------------------------------------------------------------------------------------------
# Values and rounding


@dataclass(frozen=True)
class Value:
    """An oracle value: `data` (floats held in float64), its fuser dtype name, whether it is a
    tensor, and the tolerance facts of its cone (`loosest` float dtype, finite `scale`)."""

    data: np.ndarray
    dtype: str
    is_tensor: bool
    loosest: str | None = None
    scale: float = 0.0
    shaky: np.ndarray | None = None  # bool, the shape of `data`; None: no element is
    exact: bool = False  # an input or a constant, or moved without arithmetic: no rounding yet


_PRECISION = {"f16": 0, "bf16": 1, "f32": 2, "f64": 3}
MARGIN = {"bf16": 2.0**-7, "f16": 2.0**-10, "f32": 2.0**-19, "f64": 2.0**-45}
"""How close, relative to the operands' magnitude plus the largest one upstream, a float must be
to a comparison's other side, an integer boundary or a pole for rounding in the least precise
dtype upstream to put it on either side: two units of bf16 or f16, 32 of f32."""
_LOOSENESS = ("bf16", "f16", "f32", "f64")  # least precise first
#: (significand bits with the implicit one, frexp exponent of the smallest normal, max finite)
_FORMATS: dict[str, tuple[int, int, float]] = {
    "f16": (11, -13, 65504.0),
    "bf16": (8, -125, float.fromhex("0x1.fep127")),
    "f32": (24, -125, float.fromhex("0x1.fffffep127")),
}


def round_float(x: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded to nearest even in `dtype` (f16, bf16 or f32), as float64."""
    bits, emin, largest = _FORMATS[dtype]
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        _, e = np.frexp(x)
        quantum = np.ldexp(1.0, np.maximum(e, emin) - bits)
        r = np.round(x / quantum) * quantum
        r = np.where(np.isfinite(x), r, x)
        r = np.where(np.abs(r) > largest, np.copysign(np.inf, x), r)
    return np.asarray(r, np.float64)


def store(x: np.ndarray, dtype: str) -> np.ndarray:
    """A computed float64 result as a held value of `dtype`: halves rounded, f32/f64 kept."""
    return round_float(x, dtype) if dtype in ("f16", "bf16") else np.asarray(x, np.float64)


def category(dtype: str) -> int:
    return 2 if dtype in FLOATS else (1 if dtype in INTS else 0)


def promote_pair(a: str, b: str) -> str:
    """torch.promote_types."""
    if a == b:
        return a
    if {a, b} == {"f16", "bf16"}:
        return "f32"
    ranks = {"bool": 0, "i32": 1, "i64": 2, "f16": 3, "bf16": 3, "f32": 4, "f64": 5}
    return a if ranks[a] > ranks[b] else b


def result_type(levels: Sequence[Sequence[str]]) -> str:
    """torch's result type over priority levels (tensors, scalars, numbers), highest first."""
    result: str | None = None
    for level in levels:
        if not level:
            continue
        t = level[0]
        for d in level[1:]:
            t = promote_pair(t, d)
        if result is None:
            result = t
        elif category(t) > category(result):
            result = promote_pair(result, t)
    assert result is not None
    return result


def compute_type(dtype: str) -> str:
    return "f32" if dtype in ("f16", "bf16") else dtype


def nan_as_int(src: str, dst: str) -> int:
    """What torch on CUDA (an H200, 2026-11-26) gives for NaN cast from `src` to the integer
    type `dst`: 0 from f32/f16/bf16 to i32, the most negative integer from them to i64 and
    from f64 to either (`cvt.rzi`'s results; f16/bf16 convert through f32)."""
    return 0 if dst == "i32" and src != "f64" else int(np.iinfo(NUMPY_DTYPES[dst]).min)


def convert(data: np.ndarray, src: str, dst: str) -> np.ndarray:
    """A cast of held values from `src` to `dst` (see the module docstring)."""
    data = np.asarray(data)
    if dst == "bool":
        return data != 0
    if dst in INTS:
        target = NUMPY_DTYPES[dst]
        if src in FLOATS:
            info = np.iinfo(target)
            t = np.trunc(data)
            with np.errstate(all="ignore"):
                high, low, nan = t >= 2.0 ** (info.bits - 1), t < -(2.0 ** (info.bits - 1)), t != t
                inside = np.where(high | low | nan, 0.0, t).astype(target)
            saturated = np.where(high, info.max, np.where(low, info.min, inside))
            return np.where(nan, nan_as_int(src, dst), saturated).astype(target)
        return data.astype(np.int64).astype(target)
    return store(data.astype(np.float64), dst)


def number_value(x: bool | int | float, dtype: str) -> np.ndarray:
    """A Python number as a constant of `dtype`: rounded to it, f32 included."""
    if dtype == "bool":
        return np.asarray(bool(x))
    if dtype in INTS:
        return np.asarray(int(x), NUMPY_DTYPES[dtype])
    v = np.asarray(float(x), np.float64)
    return round_float(v, dtype) if dtype != "f64" else v


# --------------------------------------------------------------------------------------------
# Op meanings


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


FLOAT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "reciprocal": lambda x: 1.0 / x,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "erf": scipy.special.erf,
    "silu": lambda x: x * _sigmoid(x),
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atanh": np.arctanh,
    "cosh": np.cosh,
    "sinh": np.sinh,
    "tan": np.tan,
    "erfc": scipy.special.erfc,
    "erfinv": scipy.special.erfinv,
    "erfcinv": lambda x: np.where(x == 1, 0.0, scipy.special.erfcinv(x)),  # CUDA's +0 at 1
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log10": np.log10,
    "log1p": np.log1p,
    "log2": np.log2,
    "lgamma": lambda x: np.where(np.isneginf(x), np.inf, scipy.special.gammaln(x)),
    "frac": lambda x: x - np.trunc(x),
}
"""Unary ops that compute in floats (integer and bool operands become f32; `frac` takes
floats only)."""

EDGES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "acos": lambda x: np.where(x >= 0, 1.0, -1.0),
    "asin": lambda x: np.where(x >= 0, 1.0, -1.0),
    "atanh": lambda x: np.where(x >= 0, 1.0, -1.0),
    "erfinv": lambda x: np.where(x >= 0, 1.0, -1.0),
    "acosh": lambda x: np.ones_like(x),
    "log10": np.zeros_like,
    "log2": np.zeros_like,
    "log1p": lambda x: -np.ones_like(x),
    "erfcinv": lambda x: np.where(x >= 1, 2.0, 0.0),
    "lgamma": lambda x: np.where(x < 0.5, np.minimum(np.round(x), 0.0), np.nan),
    "tan": lambda x: (np.round(x / np.pi - 0.5) + 0.5) * np.pi,
    "frac": np.round,
    "ceil": np.round,
    "floor": np.round,
    "trunc": np.round,
    "round": lambda x: np.floor(x) + 0.5,
    "sign": np.zeros_like,
}
"""Where a unary op jumps, leaves its domain or has a pole, nearest to `x`: an operand within
rounding of it is shaky (NaN: no edge near)."""

INT_OK_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative,
    "abs": np.abs,
    "relu": lambda x: (
        np.where(x > 0, x, np.zeros_like(x))
        if x.dtype.kind != "f"
        else np.where(np.isnan(x), x, np.maximum(x, 0.0))
    ),
    "ceil": lambda x: np.ceil(x) if x.dtype.kind == "f" else x.copy(),
    "floor": lambda x: np.floor(x) if x.dtype.kind == "f" else x.copy(),
    "round": lambda x: np.rint(x) if x.dtype.kind == "f" else x.copy(),  # halves to even
    "trunc": lambda x: np.trunc(x) if x.dtype.kind == "f" else x.copy(),
    # torch's CUDA sign: 0 for NaN, +0 for -0.0
    "sign": lambda x: np.where(x > 0, 1, np.where(x < 0, -1, 0)).astype(x.dtype),
}
"""Unary ops that keep integer operands integer (bool operands are refused)."""


def _gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + scipy.special.erf(x / math.sqrt(2.0)))


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer division (toward zero); by zero, what torch's CUDA kernels give on an H200:
    -1 for i32, and for i64 4294967295 where the dividend lies in [0, 2**32), else -1."""
    divisor = np.where(b == 0, 1, b)
    with np.errstate(all="ignore"):  # (no np.abs: |INT64_MIN| does not fit)
        q = a // divisor  # floor; the remainder below is exact in wrapping arithmetic
        r = a - q * divisor
    q = np.where((r != 0) & ((a < 0) != (divisor < 0)), q + 1, q)  # toward zero
    small = (a >= 0) & (a <= 0xFFFFFFFF) & (a.dtype == np.int64)
    by_zero = np.where(small, 0xFFFFFFFF, -1)
    return np.where(b == 0, by_zero, q).astype(a.dtype)


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.int64), b.astype(np.int64)
    power = np.power(a, np.maximum(b, 0))
    odd = np.where(b % 2 == 0, 1, -1)
    negative = np.where(a == 1, 1, np.where(a == -1, odd, 0))
    return np.where(b < 0, negative, power)


def _philox_words(seed: int, offset: int, block: np.ndarray) -> np.ndarray:
    """The 4 words (uint32, shape `block.shape + (4,)`) of Philox4x32-10 under key `seed` at
    counter (offset low, offset high, block low, block high): Salmon et al.'s rounds."""
    mask = 0xFFFFFFFF
    x = [
        np.full(block.shape, offset & mask, np.uint64),
        np.full(block.shape, (offset >> 32) & mask, np.uint64),
        block & np.uint64(mask),
        block >> np.uint64(32),
    ]
    key = [seed & mask, (seed >> 32) & mask]
    for _ in range(10):
        a = np.uint64(0xD2511F53) * x[0]
        b = np.uint64(0xCD9E8D57) * x[2]
        x = [
            (b >> np.uint64(32)) ^ x[1] ^ np.uint64(key[0]),
            b & np.uint64(mask),
            (a >> np.uint64(32)) ^ x[3] ^ np.uint64(key[1]),
            a & np.uint64(mask),
        ]
        key = [(key[0] + 0x9E3779B9) & mask, (key[1] + 0xBB67AE85) & mask]
    return np.stack(x, axis=-1).astype(np.uint32)


def _unsigned(a: np.ndarray) -> np.ndarray:
    return a.astype(np.dtype(f"u{a.dtype.itemsize}"))


def _c_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer `%` (the sign of `a`); by zero what integer division by zero gives."""
    divisor = np.where((b == 0) | (b == -1), 1, b)
    with np.errstate(all="ignore"):
        r = np.fmod(a, divisor)
    return np.where(b == 0, _trunc_div(a, b), r).astype(a.dtype)


def _fmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b) if a.dtype.kind == "f" else _c_remainder(a, b)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch.remainder: the C remainder moved by `b` where it is non-zero and of the other
    sign."""
    r = _fmod(a, b)
    return np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r).astype(r.dtype)


def _gcd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch's gcd on CUDA: Euclid's algorithm with C's remainder on |a| and |b| in the
    signed type, |INT_MIN| wrapping to INT_MIN (a gcd with it may be negative)."""
    x = np.where(a < 0, 0 - a, a).astype(a.dtype)  # (0 - INT_MIN wraps)
    y = np.where(b < 0, 0 - b, b).astype(a.dtype)
    x, y = (np.array(v, copy=True) for v in np.broadcast_arrays(x, y))
    while np.any(x != 0):
        going = x != 0
        r = np.zeros_like(x)
        live = going & (x != -1)  # (x % -1 is 0)
        r[live] = np.fmod(y[live], x[live])
        y = np.where(going, x, y)
        x = np.where(going, r, 0).astype(a.dtype)
    return y


def _shift(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """torch's shifts on CUDA: a count outside [0, bits) gives 0 (left; and the logical right
    shift, nvFuser's) or the sign bit everywhere (the arithmetic right shift)."""
    bits = 8 * a.dtype.itemsize
    outside = (b < 0) | (b >= bits)
    count = np.where(outside, 0, b).astype(np.uint64)
    ua = _unsigned(a).astype(np.uint64)
    mask = np.uint64(2**bits - 1)
    if kind == "left":
        value, past = ((ua << count) & mask).astype(_unsigned(a).dtype), 0
    elif kind == "logical":
        value, past = (ua >> count).astype(_unsigned(a).dtype), 0
    else:
        return np.where(outside, a >> (bits - 1), a >> count.astype(a.dtype)).astype(a.dtype)
    return np.where(outside, past, value.astype(a.dtype)).astype(a.dtype)


INTEGER_OPS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "gcd": _gcd,
    "bitwise_left_shift": lambda a, b: _shift(a, b, "left"),
    "bitwise_right_shift": lambda a, b: _shift(a, b, "right"),
    "logical_right_shift": lambda a, b: _shift(a, b, "logical"),
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}
"""Binary ops of integers (the bitwise ones of bools too), exact."""

TESTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "isfinite": np.isfinite,
    "isinf": np.isinf,
    "isnan": np.isnan,
    "isneginf": lambda x: np.isinf(x) & (x < 0),
    "isposinf": lambda x: np.isinf(x) & (x > 0),
    "signbit": np.signbit,
    "logical_not": lambda x: x == 0,
}
"""Tests of a value of any dtype, bool results (bools are tested as integers)."""

BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": lambda a, b: np.divide(a, b) if a.dtype.kind == "f" else _trunc_div(a, b),
    "truediv": np.divide,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "atan2": np.arctan2,
    "fmod": _fmod,
    "remainder": _remainder,
}
"""Binary ops on operands converted to their compute type."""


COMPARES = ("eq", "ne", "lt", "le", "gt", "ge")
POLES = ("sqrt", "rsqrt", "log", "reciprocal")
"""Unary ops whose result at 0 depends on the sign of 0 or jumps to NaN just below it."""


def _any_over(shaky: np.ndarray | None, axes: tuple[int, ...], keep: bool) -> np.ndarray | None:
    """A reduction's shaky elements: those whose reduced row holds one."""
    return None if shaky is None else np.any(shaky, axis=axes, keepdims=keep)


def _identity(kind: str, dtype: str) -> Any:
    if dtype in FLOATS:
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(NUMPY_DTYPES[dtype])
    return info.min if kind == "max" else info.max


# --------------------------------------------------------------------------------------------
# The evaluator


class Oracle:
    """Evaluates one program on its inputs; `values` maps every name to its `Value`."""

    def __init__(self, program: Program, inputs: Sequence[Any]):
        self.program = program
        self.values: dict[str, Value] = {}
        for inp, x in zip(program.inputs, inputs, strict=True):
            if inp.shape is None:
                data = number_value(x, inp.dtype)
                self.values[inp.name] = replace(self._value(data, inp.dtype, False, []), exact=True)
            else:
                held = np.array(x, dtype=np.float64 if inp.dtype in FLOATS else x.dtype)
                self.values[inp.name] = replace(self._value(held, inp.dtype, True, []), exact=True)

    @staticmethod
    def _value(
        data: np.ndarray,
        dtype: str,
        is_tensor: bool,
        deps: Sequence[Value],
        shaky: np.ndarray | None = None,
        inherit: bool = True,
    ) -> Value:
        """`data` with the facts of its cone; `shaky` elements of its own, and (`inherit`) those
        of elementwise `deps`, broadcast to its shape."""
        masks = [shaky, *([d.shaky for d in deps] if inherit else [])]
        combined = None
        for m in masks:
            if m is not None and np.any(m):
                b = np.broadcast_to(m, np.shape(data))
                combined = b.copy() if combined is None else combined | b
        looser = [d.loosest for d in deps if d.loosest is not None]
        if dtype in FLOATS:
            looser.append(dtype)
        loosest = min(looser, key=_LOOSENESS.index) if looser else None
        scale = max([d.scale for d in deps] + [0.0])
        if dtype in FLOATS and data.size:
            finite = np.abs(data[np.isfinite(data)])
            if finite.size:
                scale = max(scale, float(finite.max()))
        return Value(np.asarray(data), dtype, is_tensor, loosest, scale, combined)

    @staticmethod
    def _near(x: np.ndarray, to: np.ndarray | float, deps: Sequence[Value]) -> np.ndarray | None:
        """Where the float `x`, rounded upstream in `deps`, may lie on either side of `to`
        (None when no float rounding lies upstream)."""
        looser = [d.loosest for d in deps if d.loosest is not None and not d.exact]
        if not looser:  # nothing rounded yet: the GPU holds the same values
            return None
        m = MARGIN[min(looser, key=_LOOSENESS.index)]
        scale = max(d.scale for d in deps)
        with np.errstate(all="ignore"):
            x = np.asarray(x, np.float64)
            width = m * (np.maximum(np.abs(x), np.abs(to)) + scale)
            return np.isfinite(x) & (np.abs(x - to) <= width)

    def operand(self, x: str | bool | int | float) -> Value | bool | int | float:
        return self.values[x] if isinstance(x, str) else x

    def as_type(self, x: Value | bool | int | float, dtype: str) -> np.ndarray:
        if isinstance(x, Value):
            return convert(x.data, x.dtype, dtype)
        return number_value(x, dtype)

    def promote(self, operands: Sequence[Value | bool | int | float]) -> str:
        def number_dtype(x: bool | int | float) -> str:
            return "bool" if isinstance(x, bool) else ("i64" if isinstance(x, int) else "f32")

        return result_type(
            [
                [v.dtype for v in operands if isinstance(v, Value) and v.is_tensor and v.data.ndim],
                # a 0-d tensor ranks with the scalars, as in torch
                [
                    v.dtype
                    for v in operands
                    if isinstance(v, Value) and not (v.is_tensor and v.data.ndim)
                ],
                [number_dtype(v) for v in operands if not isinstance(v, Value)],
            ]
        )

    def run(self) -> list[Value]:
        with np.errstate(all="ignore"):
            for op in self.program.ops:
                results = self.evaluate(op)
                for name, value in zip(op.results, results, strict=True):
                    self.values[name] = value
        return [self.values[o] for o in self.program.outputs]

    def evaluate(self, op: Op) -> list[Value]:
        args = [self.operand(a) for a in op.args]
        deps = [a for a in args if isinstance(a, Value)]
        is_tensor = any(d.is_tensor for d in deps)
        kw = op.kw
        if op.op in FLOAT_UNARY or op.op == "gelu" or op.op in INT_OK_UNARY:
            (x,) = deps
            if op.op in INT_OK_UNARY:
                out = x.dtype
                a = self.as_type(x, compute_type(out))
                data = INT_OK_UNARY[op.op](a)
            else:
                out = x.dtype if x.dtype in FLOATS else "f32"
                a = self.as_type(x, compute_type(out))
                fn = FLOAT_UNARY.get(op.op)
                data = fn(a) if fn is not None else _gelu(a, kw.get("approximate", "none"))
            near = None
            if op.op in POLES:
                near = self._near(a, 0.0, deps)
            elif op.op in EDGES and out in FLOATS:
                near = self._near(a, EDGES[op.op](a), deps)
            return [self._value(convert(data, compute_type(out), out), out, is_tensor, deps, near)]
        if op.op in UNARY_TESTS:
            (x,) = deps
            a = self.as_type(x, "i32" if x.dtype == "bool" else compute_type(x.dtype))
            near = None
            if x.dtype in FLOATS and op.op in ("signbit", "logical_not"):
                near = self._near(a, 0.0, deps)
            if x.dtype in FLOATS and op.op == "signbit" and not x.exact:
                # the sign of a NaN an op makes is the platform's (numpy's x86 NaN is
                # negative, CUDA's positive)
                made = np.isnan(a)
                near = made if near is None else near | made
            return [self._value(np.asarray(TESTS[op.op](a)), "bool", is_tensor, deps, near)]
        if op.op == "bitwise_not":
            (x,) = deps
            return [self._value(np.invert(x.data), x.dtype, is_tensor, deps)]
        if op.op in INTEGER_BINARY or op.op in BITWISE:
            promoted = self.promote(args)
            a, b = (self.as_type(v, promoted) for v in args)
            data = np.asarray(INTEGER_OPS[op.op](a, b))
            return [self._value(data, promoted, is_tensor, deps)]
        if op.op in LOGICAL:
            truths = [self.as_type(v, "bool") for v in args]
            data = np.asarray(
                (np.logical_and if op.op == "logical_and" else np.logical_or)(*truths)
            )
            masks = [self._near(v.data, 0.0, [v]) for v in deps if v.dtype in FLOATS]
            near = None
            for m in masks:
                near = m if near is None else (near if m is None else near | m)
            return [self._value(data, "bool", is_tensor, deps, near)]
        if op.op in BINARY:
            promoted = self.promote(args)
            if op.op in COMPARES:
                compute, out = compute_type(promoted), "bool"
            elif op.op in ("truediv", "atan2") and promoted not in FLOATS:
                compute = out = "f32"
            elif promoted == "bool":
                compute, out = "i32", "bool"
            elif op.op == "pow" and promoted in INTS:
                a, b = (self.as_type(v, promoted) for v in args)
                data = _int_pow(a, b).astype(NUMPY_DTYPES[promoted])
                return [self._value(data, promoted, is_tensor, deps)]
            else:
                compute, out = compute_type(promoted), promoted
            a, b = (self.as_type(v, compute) for v in args)
            data = np.asarray(BINARY[op.op](a, b))
            near = None
            if compute in FLOATS and op.op in COMPARES:
                near = self._near(a, b, deps)
            elif compute in FLOATS and op.op in ("fmod", "remainder"):
                # a jump where a / b crosses an integer, and an ill-defined one where b is ~0
                with np.errstate(all="ignore"):
                    multiple = np.round(a / b) * b
                near = self._near(a, np.where(np.isfinite(multiple), multiple, np.nan), deps)
                small = self._near(b, 0.0, deps)
                near = small if near is None else (near if small is None else near | small)
            elif compute in FLOATS and op.op == "atan2":
                # +-pi on either side of the negative x axis, and no angle at the origin
                across = self._near(a, 0.0, deps)
                if across is not None:
                    origin = self._near(b, 0.0, deps)
                    near = across & (np.asarray(b < 0) | (False if origin is None else origin))
            elif compute in FLOATS and op.op in ("div", "truediv"):
                divisor = [v for v in args[1:] if isinstance(v, Value)]
                near = self._near(b, 0.0, divisor) if divisor else None
                numerator = [v for v in args[:1] if isinstance(v, Value)]
                small = self._near(a, 0.0, numerator) if numerator else None
                if small is not None:  # over a zero divisor: 0 / 0 is NaN, x / 0 an infinity
                    zero = np.asarray(b == 0) if near is None else (np.asarray(b == 0) | near)
                    flips = small & zero
                    near = flips if near is None else near | flips
            return [self._value(convert(data, compute, out), out, is_tensor, deps, near)]
        handler = getattr(self, "op_" + op.op)
        return handler(op, args, deps, is_tensor)

    # ---- the other ops, one method each -----------------------------------------------------

    def _random(self, op: Op, normal: bool) -> list[Value]:
        """Philox4x32-10 (curand's constants; key = seed, counter = (offset, i / 4)) for f32
        elements of the result's row-major index i, with curand's conversions (f64: the
        number of the f32 elements computed in f64 from the same words: fuser computes the
        f16/bf16/f32 ones in f32 and f64 ones from 53-bit uniforms, see below)."""
        kw = op.kw
        shape = tuple(
            e if isinstance(e, int) else self.values[e[0]].data.shape[e[1]] for e in kw["shape"]
        )
        dtype = kw["dtype"]
        a, b = (float(x) for x in op.args)
        count = int(np.prod(shape, dtype=np.int64))
        i = np.arange(count, dtype=np.uint64)
        wide = dtype == "f64"
        per = 2 if wide else 4
        words = _philox_words(kw["rng_seed"], kw["rng_offset"], i // np.uint64(per))
        c = (i % np.uint64(per)).astype(np.int64)
        if wide:

            def open_unit(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
                z = lo.astype(np.uint64) ^ (hi.astype(np.uint64) << np.uint64(21))
                return z.astype(np.float64) * 2.0**-53 + 2.0**-54

            pick = lambda k: np.take_along_axis(words, k[:, None], 1)[:, 0]  # noqa: E731
            if normal:
                u, v = open_unit(words[:, 0], words[:, 1]), open_unit(words[:, 2], words[:, 3])
                angle = v * 2 * np.pi
                z = np.sqrt(-2 * np.log(u)) * np.where(c == 0, np.sin(angle), np.cos(angle))
            else:
                z = open_unit(pick(2 * c), pick(2 * c + 1))
                z = np.where(z == 1.0, 0.0, z)
        else:

            def open_unit32(w: np.ndarray) -> np.ndarray:
                step = np.float32(2.3283064e-10)
                return (w.astype(np.float32) * step + step / np.float32(2)).astype(np.float64)

            pick = lambda k: np.take_along_axis(words, k[:, None], 1)[:, 0]  # noqa: E731
            if normal:
                pair = c // 2 * 2
                u = open_unit32(pick(pair))
                two_pi = np.float32(6.2831855)  # the product rounded to f32, as the kernels'
                angle = (open_unit32(pick(pair + 1)).astype(np.float32) * two_pi).astype(float)
                z = np.sqrt(-2 * np.log(u)) * np.where(c % 2 == 0, np.sin(angle), np.cos(angle))
            else:
                z = open_unit32(pick(c))
                z = np.where(z == 1.0, 0.0, z)
        z = z.reshape(shape)
        compute = compute_type(dtype)
        standard = (a, b) == (0.0, 1.0)
        if standard and (normal or dtype not in ("f16", "bf16")):  # (a half rounds up to 1)
            data, near = z, None
        elif normal:
            data, near = number_value(a, compute) + number_value(b, compute) * z, None
        else:
            low, high = number_value(a, compute), number_value(b, compute)
            data = low + (high - low) * z
            # a draw that rounds to `high` in the dtype is `low`: where rounding decides it,
            # the GPU's answer is either
            top = round_float(high, dtype) if dtype in ("f16", "bf16") else high
            near = np.abs(data - top) <= MARGIN[dtype] * (abs(high) + abs(low))
            data = np.where(store(data, dtype) == top, low, data)
        return [self._value(convert(data, compute, dtype), dtype, True, [], near)]

    def op_uniform(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        return self._random(op, normal=False)

    def op_normal(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        return self._random(op, normal=True)

    def op_triu(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        x, diagonal = args
        keep = np.triu if op.op == "triu" else np.tril
        return self._moved(x, lambda a: keep(a, diagonal))

    op_tril = op_triu

    def op_nextafter(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        """One unit of the declared type (f32 values are held in float64: stepped as f32)."""
        out = self.promote(args)
        a, b = (self.as_type(v, out) for v in args)
        if out == "f32":
            a, b = a.astype(np.float32), b.astype(np.float32)
        data = np.nextafter(a, b).astype(np.float64)
        return [self._value(data, out, is_tensor, deps, self._near(a, b, deps))]

    def _composite(
        self, args: list[Any], deps: list[Value], is_tensor: bool, build: Callable[..., Any]
    ) -> list[Value]:
        """An op made of others: its operands promoted together, computed in float64 (the
        compute type's values), rounded once to the result type."""
        out = self.promote(args)
        values = [self.as_type(v, compute_type(out)) for v in args]
        data, near = build(*values)
        return [self._value(convert(data, compute_type(out), out), out, is_tensor, deps, near)]

    def op_lerp(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        def build(start: Any, end: Any, weight: Any) -> tuple[Any, None]:
            forward = start + weight * (end - start)
            backward = end - (end - start) * (1 - weight)
            return np.where(np.abs(weight) < 0.5, forward, backward), None

        return self._composite(args, deps, is_tensor, build)

    def op_addcmul(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        return self._composite(args, deps, is_tensor, lambda x, t1, t2, v: (x + v * t1 * t2, None))

    def op_clamp(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        bounds = [(k, v) for k, v in op.kw.items() if k in ("min", "max")]

        def build(x: Any, *limits: Any) -> tuple[Any, None]:
            for (kind, _), limit in zip(bounds, limits, strict=True):
                x = np.where(x < limit if kind == "min" else x > limit, limit, x)
            return x, None

        return self._composite([*args, *(v for _, v in bounds)], deps, is_tensor, build)

    def op_threshold(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        def build(x: Any, limit: Any, value: Any) -> tuple[Any, Any]:
            return np.where(x <= limit, value, x), self._near(x, limit, deps)

        return self._composite(args, deps, is_tensor, build)

    def op_where(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        cond, a, b = args
        out = self.promote([a, b])
        c = self.as_type(cond, "bool")
        data = np.where(c, self.as_type(a, out), self.as_type(b, out))
        flips = cond.shaky if isinstance(cond, Value) else None
        values = [v for v in (a, b) if isinstance(v, Value)]
        return [self._value(data, out, is_tensor, values, flips)]

    def op_cast(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        (x,) = deps
        dst = op.kw["dtype"]
        near = None
        if x.dtype in FLOATS and dst == "bool":
            near = self._near(x.data, 0.0, deps)
        elif x.dtype in FLOATS and dst in INTS:  # truncation flips at every integer
            with np.errstate(all="ignore"):
                boundary = np.where(np.isfinite(x.data), np.round(x.data), 0.0)
            near = self._near(x.data, boundary, deps)
        return [self._value(convert(x.data, x.dtype, dst), dst, is_tensor, deps, near)]

    def op_set(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        (x,) = deps
        return [replace(x, data=x.data.copy(), is_tensor=True)]

    op_segment_set = op_set

    def op_constant(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        dtype = op.kw["dtype"]
        return [replace(self._value(number_value(args[0], dtype), dtype, False, []), exact=True)]

    def op_full(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        kw = op.kw
        shape = [
            e if isinstance(e, int) else self.values[e[0]].data.shape[e[1]] for e in kw["shape"]
        ]
        value = number_value(kw["fill_value"], kw["dtype"])
        data = np.broadcast_to(value, shape).copy()
        return [replace(self._value(data, kw["dtype"], True, []), exact=True)]

    def op_iota(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        kw = op.kw
        length = kw["length"]
        if not isinstance(length, int):
            length = self.values[length[0]].data.shape[length[1]]
        dtype, step = kw["dtype"], kw["step"]
        start = args[0].data.item() if args else kw["start"]  # (a run-time start: a scalar)
        if args and dtype in ("f32", "f16", "bf16"):  # start and step in f32, the compute type
            start, step = float(np.float32(start)), float(np.float32(step))
        if dtype in INTS:
            with np.errstate(over="ignore"):
                wide = np.int64(start) + np.arange(length, dtype=np.int64) * np.int64(step)
            data = wide.astype(NUMPY_DTYPES[dtype])
        else:
            data = float(start) + np.arange(length, dtype=np.float64) * float(step)
            # a constant iota rounds once to its dtype; a run-time one is f32 (f64) arithmetic,
            # held unrounded as every float op here, then cast to f16/bf16
            rounded = dtype in ("f16", "bf16") or (dtype == "f32" and not args)
            data = round_float(data, dtype) if rounded else data
        # a float iota from a run-time start rounds i * step and the sum apart: not exact
        exact = not args or dtype in INTS
        return [replace(self._value(data, dtype, True, deps), exact=exact)]

    def op_broadcast_in_dim(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        (x,) = deps
        kw = op.kw
        shape = [
            e if isinstance(e, int) else self.values[e[0]].data.shape[e[1]] for e in kw["shape"]
        ]
        placed = [1] * len(shape)
        for i, d in enumerate(kw["broadcast_dims"]):
            placed[d] = x.data.shape[i]
        data = np.broadcast_to(x.data.reshape(placed), shape).copy()
        shaky = None if x.shaky is None else np.broadcast_to(x.shaky.reshape(placed), shape).copy()
        return [replace(x, data=data, is_tensor=True, shaky=shaky)]

    @staticmethod
    def _moved(x: Value, move: Callable[[np.ndarray], np.ndarray]) -> list[Value]:
        """`x` with its elements rearranged by `move` (data and shaky mask alike)."""
        shaky = None if x.shaky is None else move(x.shaky).copy()
        return [replace(x, data=move(x.data).copy(), shaky=shaky)]

    def op_permute(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        return self._moved(deps[0], lambda a: np.transpose(a, op.kw["dims"]))

    def op_squeeze(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        return self._moved(deps[0], lambda a: np.squeeze(a, tuple(op.kw["dims"])))

    def op_slice(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        kw = op.kw
        bounds = zip(kw["start_indices"], kw["end_indices"], kw["strides"], strict=True)
        index = tuple(slice(a, b, c) for a, b, c in bounds)  # END clamps as Python's None does
        return self._moved(deps[0], lambda a: a[index])

    def op_pad(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        x = deps[0]
        fill = args[1] if len(args) > 1 else 0
        widths = op.kw["pad_widths"]
        rank = x.data.ndim
        low, high = [0] * rank, [0] * rank
        for pair in range(len(widths) // 2):
            low[rank - 1 - pair], high[rank - 1 - pair] = widths[2 * pair], widths[2 * pair + 1]
        value = self.as_type(fill, x.dtype)
        fill_shaky = isinstance(fill, Value) and fill.shaky is not None and bool(np.any(fill.shaky))
        # dim by dim, result element i is operand element i - low where that exists, else the fill
        data = x.data
        shaky = x.shaky
        for d, (a, b) in enumerate(zip(low, high, strict=True)):
            n = data.shape[d]
            at = np.arange(n + a + b) - a
            inside = (at >= 0) & (at < n)
            where = [1] * rank
            where[d] = len(at)
            inside = inside.reshape(where)
            grown = list(data.shape)
            grown[d] = len(at)
            picked = (
                np.take(data, np.clip(at, 0, n - 1), axis=d) if n else np.zeros(grown, data.dtype)
            )
            data = np.where(inside, picked, np.asarray(value, data.dtype))
            if shaky is not None or fill_shaky:
                old = np.zeros(grown, bool)
                if shaky is not None and n:
                    old = np.take(shaky, np.clip(at, 0, n - 1), axis=d)
                shaky = np.where(inside, old, fill_shaky)
        data = np.asarray(data, x.data.dtype)
        if isinstance(fill, Value):
            fill_exact = fill.exact and fill.dtype == x.dtype
        else:
            fill_exact = float(number_value(fill, x.dtype)) == float(fill)
        result = self._value(data, x.dtype, True, deps, shaky, False)
        return [replace(result, exact=x.exact and fill_exact)]

    def op_cat(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        out = self.promote(deps)
        d = op.kw["dim"]
        data = np.concatenate([self.as_type(v, out) for v in deps], axis=d)
        shaky = None
        if any(v.shaky is not None for v in deps):
            masks = [np.zeros(v.data.shape, bool) if v.shaky is None else v.shaky for v in deps]
            shaky = np.concatenate(masks, axis=d)
        result = self._value(data, out, True, deps, shaky, False)
        return [replace(result, exact=all(v.exact and v.dtype == out for v in deps))]

    def op_take_along_axis(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        x, index = deps
        d = op.kw["dim"]
        at = self._taken(index.data, x.data.shape[d])
        return self._moved(x, lambda a: np.take_along_axis(a, at, axis=d))

    def op_scatter(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        x, index, src = args
        d = op.kw["dim"]
        n = x.data.shape[d]
        at = index.data.astype(np.int64)
        at = np.where(at < 0, at + n, at)  # from the end; outside [0, n): no write
        hit = (at >= 0) & (at < n)
        where = list(np.indices(at.shape))
        where[d] = at
        target = tuple(w[hit] for w in where)
        values = np.broadcast_to(self.as_type(src, x.dtype).astype(x.data.dtype), at.shape)
        lowest = False if x.dtype == "bool" else _identity("max", x.dtype)
        best = np.full(x.data.shape, lowest, x.data.dtype)
        np.maximum.at(best, target, values[hit])  # of several writes the largest, NaN first
        written = np.zeros(x.data.shape, bool)
        written[target] = True
        data = np.where(written, best, x.data)
        shaky = None
        src_shaky = src.shaky if isinstance(src, Value) else None
        if x.shaky is not None or src_shaky is not None:
            shaky = np.zeros(x.data.shape, bool) if x.shaky is None else x.shaky.copy()
            if src_shaky is not None:  # an element written from a shaky value
                marked = np.zeros(x.data.shape, bool)
                np.logical_or.at(marked, target, np.broadcast_to(src_shaky, at.shape)[hit])
                shaky = np.where(written, marked, shaky)
            else:
                shaky &= ~written
        result = self._value(data, x.dtype, True, deps, shaky, False)
        if isinstance(src, Value):
            exact = src.exact
        else:  # a number the dtype holds as it is (0.1 is rounded in f16)
            exact = float(number_value(src, x.dtype)) == float(src)
        return [replace(result, exact=x.exact and exact)]

    @staticmethod
    def _taken(index: np.ndarray, extent: int) -> np.ndarray:
        """Where a take reads for `index`: a negative one counts from the end, then clamped."""
        at = index.astype(np.int64)
        return np.clip(np.where(at < 0, at + extent, at), 0, extent - 1)

    def op_index_select(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        x, index = deps
        d = op.kw["dim"] % x.data.ndim
        at = self._taken(index.data, x.data.shape[d])
        return self._moved(x, lambda a: np.take(a, at, axis=d))

    def op_select(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        x, position = args[0], args[1]
        d = op.kw["dim"]
        at = int(self._taken(np.asarray(getattr(position, "data", position)), x.data.shape[d]))
        return self._moved(x, lambda a: np.take(a, at, axis=d))

    def op_embedding_fwd(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        ids, w = deps
        at = self._taken(ids.data, w.data.shape[0])
        return self._moved(w, lambda a: np.take(a, at, axis=0))

    def op_reshape(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        # a kept run-time extent (`x.size(d)`) is the operand's extent there; the -1 is inferred
        # from the other dims, as fuser infers it (where a kept extent is 0 too)
        x = deps[0].data
        given = op.kw["new_shape"]
        entries = [e if isinstance(e, int) else x.shape[e[1]] for e in given]
        kept = [d for d, e in enumerate(given) if not isinstance(e, int)]
        if -1 in entries:
            rest = math.prod(n for d, n in enumerate(x.shape) if d not in kept)
            known = math.prod(e for d, e in enumerate(entries) if d not in kept and e != -1)
            entries[entries.index(-1)] = rest // known
        return self._moved(deps[0], lambda a: np.reshape(a, entries))

    def _reduce(self, op: Op, x: Value) -> list[Value]:
        kw = op.kw
        promoted = op.op in ("sum", "prod") and x.dtype in ("bool", "i32", "i64")
        out = kw.get("dtype") or ("i64" if promoted else x.dtype)
        compute = "i32" if out == "bool" else compute_type(out)
        source, data = x.dtype, x.data
        if out == "bool" and source != "bool":  # the input is cast to the dtype first
            source, data = "bool", convert(data, source, "bool")
        a = convert(data, source, compute)
        axes, keep = tuple(kw["dims"]), kw["keepdim"]
        if op.op == "sum":
            data = np.sum(a, axis=axes, keepdims=keep, dtype=a.dtype)
        elif op.op == "prod":
            data = np.prod(a, axis=axes, keepdims=keep, dtype=a.dtype)
        else:
            fn = np.max if op.op == "max" else np.min
            data = fn(a, axis=axes, keepdims=keep, initial=_identity(op.op, compute))
        shaky = _any_over(x.shaky, axes, keep)
        return [self._value(convert(np.asarray(data), compute, out), out, True, [x], shaky, False)]

    def op_sum(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        return self._reduce(op, deps[0])

    op_max = op_sum
    op_min = op_sum
    op_prod = op_sum

    def op_cumsum(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        (x,) = deps
        counted = op.op in ("cumsum", "cumprod")
        dtype = op.kw.get("dtype")
        out = dtype or ("i64" if counted and x.dtype in ("bool", "i32", "i64") else x.dtype)
        source, data = x.dtype, x.data
        if dtype is not None:  # the input is cast to the dtype first
            source, data = dtype, convert(data, source, dtype)
        compute = compute_type(source)
        if source == "bool" or (out == "i64" and source in ("i32", "i64")):
            compute = "i32" if out == "bool" else out
        a = convert(data, source, compute)
        axis = op.kw["dim"] % a.ndim
        with np.errstate(over="ignore", invalid="ignore"):
            if op.op == "cumsum":  # from +0.0, as torch's: a leading -0.0 is +0.0
                data = np.cumsum(a, axis=axis, dtype=a.dtype) + a.dtype.type(0)
            elif op.op == "cumprod":
                data = np.cumprod(a, axis=axis, dtype=a.dtype)
            else:
                fn = np.maximum if op.op == "cummax" else np.minimum
                data = fn.accumulate(a, axis=axis) if a.size else a
        # an element after a shaky one is computed from it
        shaky = None if x.shaky is None else np.logical_or.accumulate(x.shaky, axis=axis)
        return [self._value(convert(np.asarray(data), compute, out), out, True, [x], shaky, False)]

    op_cumprod = op_cumsum
    op_cummax = op_cumsum
    op_cummin = op_cumsum

    @staticmethod
    def _order(x: Value, axis: int, descending: bool, equal_zeros: bool) -> np.ndarray:
        """The indices that sort `x` along `axis`: NaN above every number, -0.0 below +0.0
        (`topk`'s) or equal to it (`argsort`'s), equal elements by index (a stable sort either
        way)."""
        a = x.data
        index = np.broadcast_to(
            np.arange(a.shape[axis]).reshape([-1 if d == axis else 1 for d in range(a.ndim)]),
            a.shape,
        )
        if x.dtype in FLOATS:
            nan = np.isnan(a)
            number = np.where(nan, 0.0, a)
            signed = number == 0 if not equal_zeros else np.zeros(a.shape, bool)
            zero_sign = np.where(signed, np.where(np.signbit(number), 0, 1), 0)
            keys = (nan.astype(np.int8), number, zero_sign)
            if descending:
                keys = tuple(-k for k in keys)
        else:
            v = a.astype(np.int64)
            keys = (~v if descending else v,)
        # lexsort: the last key is the primary one
        return np.lexsort((index, *reversed(keys)), axis=axis)

    @staticmethod
    def _row_shaky(x: Value, axis: int, shape: tuple[int, ...]) -> np.ndarray | None:
        """A sort's shaky elements: every result of a row that holds a shaky element."""
        if x.shaky is None:
            return None
        return np.broadcast_to(np.any(x.shaky, axis=axis, keepdims=True), shape)

    def op_topk(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        (x,) = deps
        k, axis = args[1], op.kw["dim"] % x.data.ndim
        order = self._order(x, axis, op.kw["largest"], False)
        indices = np.take(order, np.arange(k), axis=axis).astype(np.int64)
        values = np.take_along_axis(x.data, indices, axis=axis)
        shaky = self._row_shaky(x, axis, values.shape)
        return [
            self._value(values, x.dtype, True, [x], shaky, False),
            self._value(indices, "i64", True, [], shaky, False),
        ]

    def op_argsort(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        (x,) = deps
        axis = op.kw["dim"] % x.data.ndim
        order = self._order(x, axis, op.kw["descending"], True).astype(np.int64)
        return [self._value(order, "i64", True, [], self._row_shaky(x, axis, order.shape), False)]

    @staticmethod
    def _moments(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
        n = math.prod(x.shape[a] for a in axes)
        mean = (
            np.sum(x, axis=axes, keepdims=True) / n
            if n
            else np.full([1 if d in axes else e for d, e in enumerate(x.shape)], np.nan)
        )
        var_sum = np.sum((x - mean) ** 2, axis=axes, keepdims=True)
        return mean, var_sum, n

    def op_welford(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        (x,) = deps
        axes = tuple(op.kw["dims"])
        mean, var_sum, n = self._moments(x.data, axes)
        mean, var_sum = np.squeeze(mean, axes), np.squeeze(var_sum, axes)
        count = np.full(mean.shape, n, np.int64)
        shaky = _any_over(x.shaky, axes, False)
        return [
            self._value(mean, x.dtype, True, deps, shaky, False),
            self._value(var_sum, x.dtype, True, deps, shaky, False),
            self._value(count, "i64", True, []),
        ]

    def op_var_mean(
        self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool
    ) -> list[Value]:
        (x,) = deps
        kw = op.kw
        axes = tuple(kw["dims"])
        mean, var_sum, n = self._moments(x.data, axes)
        var = var_sum / max(n - kw["correction"], 0)
        if not kw["keepdim"]:
            mean, var = np.squeeze(mean, axes), np.squeeze(var, axes)
        shaky = _any_over(x.shaky, axes, kw["keepdim"])
        return [
            self._value(var, x.dtype, True, deps, shaky, False),
            self._value(mean, x.dtype, True, deps, shaky, False),
        ]

    def op_matmul(self, op: Op, args: list[Any], deps: list[Value], is_tensor: bool) -> list[Value]:
        a, b = deps
        data = np.matmul(a.data, b.data)
        # matmul operands have rank >= 2, so `any` over one axis leaves an array, not a scalar
        rows = None if a.shaky is None else cast(np.ndarray, a.shaky.any(axis=-1))[..., :, None]
        cols = None if b.shaky is None else cast(np.ndarray, b.shaky.any(axis=-2))[..., None, :]
        masks = [np.broadcast_to(m, data.shape) for m in (rows, cols) if m is not None]
        shaky = np.logical_or.reduce(masks) if masks else None
        return [self._value(store(data, a.dtype), a.dtype, True, deps, shaky, False)]


def evaluate(program: Program, inputs: Sequence[Any]) -> list[Value]:
    """The program's outputs on `inputs` (numpy arrays and numbers, as `make_inputs` gives)."""
    return Oracle(program, inputs).run()
