"""The scalar semantics of every pointwise fusion op, as `arith`/`math` ops: the one table.

Every scheduler computes an element of a fusion by calling `lower_pointwise` on each op with the
scalars of its operands; none of them re-implements op math, so the kernels agree with each other
and with `fuser.runtime.reference` (whose module docstring states the semantics). The ops are
created under the caller's xDSL `ImplicitBuilder` and so land at its insertion point.

Choices that matter for exactness:
- `maximum`/`minimum` (and `relu` on floats) are `arith.maximumf`/`minimumf`, which propagate NaN.
- Integer `div` is `arith.divsi` (truncates toward zero) of a divisor made non-zero, and where
  the divisor is 0 torch's CUDA result (see `_divide_integers`); `neg` on integers is `0 - x`.
- Comparisons are ordered (`oeq`, `olt`, ...) except `ne`, which is `une` (NaN != x is true, as
  in numpy); on i1 they are unsigned (false < true).
- Casts: to i1 is `x != 0` (`une` on floats, so NaN is true); float -> int is `arith.fptosi`,
  which the CUDA emitter prints as a C cast (PTX `cvt.rzi`: truncation, saturation; NaN gives 0
  from f32 to i32 and the most negative integer otherwise, as in torch's CUDA kernels);
  int -> f16/bf16 goes through f64 and i1 -> float is `uitofp`, so every cast rounds once;
  f16 <-> bf16 goes through f32 (exact), f16/bf16 -> int through f32 (exact).
- sigmoid and silu follow the reference's formulas operation by operation, in the same order
  (`silu` is `x / (1 + exp(-x))`), and so does gelu, with erf or with tanh (torch's CUDA formula,
  see `_gelu`); `rsqrt` is `math.rsqrt` and `reciprocal` `1 / x`.
- Functions `math` lacks (erfc, erfinv, erfcinv, lgamma, fmod of floats, nextafter, gcd) are
  `libm` ops. `round` is `math.roundeven` (halves to even); the rounding ops keep integers.
  `sign` is `(x > 0) - (x < 0)` (0 for NaN and +0 for -0.0, as torch's CUDA kernel);
  `signbit` of a float is `copysign(1, x) < 0`, which sees the sign of -0.0 and of a NaN.
- Integer `fmod`/`remainder` by 0 give what integer `div` by 0 gives (torch's CUDA values,
  measured), and `x % -1` is computed as `x % 1` (C leaves `INT_MIN % -1` undefined). Shifts
  by a negative amount or one not below the bit width give torch's results (0, or the sign
  bit everywhere for `bitwise_right_shift`) with the shift itself taken by 0, so no C shift is
  ever out of range.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import TypeGuard

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import libm

_FLOAT_BITS: dict[Attribute, int] = {fu.F16: 16, fu.BF16: 16, fu.F32: 32, fu.F64: 64}

POINTWISE_OPS: tuple[type[Operation], ...] = (
    fu.ConstantOp,
    fu.UnaryOp,
    fu.UnaryTestOp,
    fu.GeluOp,
    fu.BinaryOp,
    fu.WhereOp,
    fu.CastOp,
    fu.CopyOp,
    fu.BroadcastInDimOp,
    fu.RenumberOp,
)
"""The op classes `lower_pointwise` handles (`fusion.dim` is an extent, not an element)."""


def is_pointwise(op: Operation) -> bool:
    """Whether `op` computes each element of its result from one element of each operand."""
    return isinstance(op, POINTWISE_OPS)


def is_float(t: Attribute) -> TypeGuard[AnyFloat]:
    """Whether `t` is a floating-point type (and, for pyright, `t` is an `AnyFloat`)."""
    return isinstance(t, AnyFloat)


def constant(value: float | int | bool, t: Attribute) -> SSAValue:
    """An `arith.constant` of a Python number in the scalar type `t` (booleans for i1)."""
    if isinstance(t, IntegerType):
        return arith.ConstantOp(IntegerAttr(int(value), t, truncate_bits=True)).result
    assert is_float(t), f"constant of a non-scalar type {t}"
    return arith.ConstantOp(FloatAttr(float(value), t)).result


# --------------------------------------------------------------------------------------------
# Casts
# --------------------------------------------------------------------------------------------


def convert(x: SSAValue, dst: Attribute) -> SSAValue:
    """`fusion.cast` of the scalar `x` to the element type `dst`."""
    src = x.type
    if src == dst:
        return x
    if dst == fu.I1:
        if is_float(src):
            return arith.CmpfOp(x, constant(0.0, src), "une").result
        return arith.CmpiOp(x, constant(0, src), "ne").result
    if is_float(src) and is_float(dst):
        if _FLOAT_BITS[src] == _FLOAT_BITS[dst]:  # f16 <-> bf16
            return arith.TruncFOp(arith.ExtFOp(x, fu.F32), dst).result
        if _FLOAT_BITS[dst] > _FLOAT_BITS[src]:
            return arith.ExtFOp(x, dst).result
        return arith.TruncFOp(x, dst).result
    if is_float(src):
        assert isinstance(dst, IntegerType)
        if _FLOAT_BITS[src] == 16:
            x = arith.ExtFOp(x, fu.F32).result
        return arith.FPToSIOp(x, dst).result
    assert isinstance(src, IntegerType)
    if is_float(dst):
        wide = dst if _FLOAT_BITS[dst] > 16 else (fu.F32 if src == fu.I1 else fu.F64)
        op = arith.UIToFPOp if src == fu.I1 else arith.SIToFPOp
        y = op(x, wide).result
        return y if wide == dst else arith.TruncFOp(y, dst).result
    assert isinstance(dst, IntegerType)
    if dst.width.data < src.width.data:
        return arith.TruncIOp(x, dst).result
    return (arith.ExtUIOp if src == fu.I1 else arith.ExtSIOp)(x, dst).result


# --------------------------------------------------------------------------------------------
# Unary ops
# --------------------------------------------------------------------------------------------


def _one(x: SSAValue) -> SSAValue:
    return constant(1.0, x.type)


def _sigmoid_denominator(x: SSAValue) -> SSAValue:
    """`1 + exp(-x)`."""
    return arith.AddfOp(_one(x), math.ExpOp(arith.NegfOp(x)).result).result


def _neg(x: SSAValue) -> SSAValue:
    if is_float(x.type):
        return arith.NegfOp(x).result
    return arith.SubiOp(constant(0, x.type), x).result


def _abs(x: SSAValue) -> SSAValue:
    return (math.AbsFOp if is_float(x.type) else math.AbsIOp)(x).result


def _relu(x: SSAValue) -> SSAValue:
    if is_float(x.type):
        return arith.MaximumfOp(x, constant(0.0, x.type)).result
    return arith.MaxSIOp(x, constant(0, x.type)).result


def _gelu(x: SSAValue, approximate: fu.GeluApproximation) -> SSAValue:
    """`0.5 * x * (1 + erf(x * sqrt(0.5)))`, or with `tanh(u)`, `u = sqrt(2/pi) * (x +
    0.044715x^3)`, as torch's CUDA kernels and the reference compute them. (`x * sigmoid(2u)`,
    one `exp2` and a division, is the same function and more accurate where `1 + tanh(u)`
    cancels, but below x = -9 or so it gives a tiny negative number where torch gives -0, and a
    reciprocal, a square root or a comparison after it then disagrees: the GPU fuzzer's find.)
    """
    t = x.type
    if approximate == fu.GeluApproximation.TANH:
        cube = arith.MulfOp(arith.MulfOp(x, x), x)
        inner = arith.AddfOp(x, arith.MulfOp(constant(0.044715, t), cube))
        core = math.TanhOp(arith.MulfOp(constant(pymath.sqrt(2 / pymath.pi), t), inner)).result
    else:
        core = math.ErfOp(arith.MulfOp(x, constant(pymath.sqrt(0.5), t))).result
    half_x = arith.MulfOp(constant(0.5, t), x)
    return arith.MulfOp(half_x, arith.AddfOp(_one(x), core)).result


def _kept_integer(make: Callable[[SSAValue], Operation]) -> Callable[[SSAValue], SSAValue]:
    """A rounding op: `make` on floats, the integer itself otherwise."""
    return lambda x: make(x).results[0] if is_float(x.type) else x


def _sign(x: SSAValue) -> SSAValue:
    t = x.type
    if is_float(t):
        above = arith.CmpfOp(x, constant(0.0, t), "ogt").result
        below = arith.CmpfOp(x, constant(0.0, t), "olt").result
    else:
        above = arith.CmpiOp(x, constant(0, t), "sgt").result
        below = arith.CmpiOp(x, constant(0, t), "slt").result
    ones = arith.SelectOp(below, constant(-1, t), constant(0, t)).result
    return arith.SelectOp(above, constant(1, t), ones).result


def _bitwise_not(x: SSAValue) -> SSAValue:
    return arith.XOrIOp(x, constant(-1 if x.type != fu.I1 else 1, x.type)).result


UNARY: dict[type[fu.UnaryOp], Callable[[SSAValue], SSAValue]] = {
    fu.NegOp: _neg,
    fu.AbsOp: _abs,
    fu.ReluOp: _relu,
    fu.ExpOp: lambda x: math.ExpOp(x).result,
    fu.LogOp: lambda x: math.LogOp(x).result,
    fu.SqrtOp: lambda x: math.SqrtOp(x).result,
    fu.RsqrtOp: lambda x: math.RsqrtOp(x).result,
    fu.ReciprocalOp: lambda x: arith.DivfOp(_one(x), x).result,
    fu.SinOp: lambda x: math.SinOp(x).result,
    fu.CosOp: lambda x: math.CosOp(x).result,
    fu.TanhOp: lambda x: math.TanhOp(x).result,
    fu.SigmoidOp: lambda x: arith.DivfOp(_one(x), _sigmoid_denominator(x)).result,
    fu.ErfOp: lambda x: math.ErfOp(x).result,
    fu.SiluOp: lambda x: arith.DivfOp(x, _sigmoid_denominator(x)).result,
    fu.AcosOp: lambda x: math.AcosOp(x).result,
    fu.AcoshOp: lambda x: math.AcoshOp(x).result,
    fu.AsinOp: lambda x: math.AsinOp(x).result,
    fu.AsinhOp: lambda x: math.AsinhOp(x).result,
    fu.AtanOp: lambda x: math.AtanOp(x).result,
    fu.AtanhOp: lambda x: math.AtanhOp(x).result,
    fu.CoshOp: lambda x: math.CoshOp(x).result,
    fu.SinhOp: lambda x: math.SinhOp(x).result,
    fu.TanOp: lambda x: math.TanOp(x).result,
    fu.ErfcOp: lambda x: libm.ErfcOp(x).result,
    fu.ErfinvOp: lambda x: libm.ErfinvOp(x).result,
    fu.ErfcinvOp: lambda x: libm.ErfcinvOp(x).result,
    fu.Exp2Op: lambda x: math.Exp2Op(x).result,
    fu.Expm1Op: lambda x: math.ExpM1Op(x).result,
    fu.Log10Op: lambda x: math.Log10Op(x).result,
    fu.Log1pOp: lambda x: math.Log1pOp(x).result,
    fu.Log2Op: lambda x: math.Log2Op(x).result,
    fu.LgammaOp: lambda x: libm.LgammaOp(x).result,
    fu.FracOp: lambda x: arith.SubfOp(x, math.TruncOp(x)).result,
    fu.CeilOp: _kept_integer(math.CeilOp),
    fu.FloorOp: _kept_integer(math.FloorOp),
    fu.RoundOp: _kept_integer(math.RoundEvenOp),
    fu.TruncOp: _kept_integer(math.TruncOp),
    fu.SignOp: _sign,
    fu.BitwiseNotOp: _bitwise_not,
}
"""Each unary op on a scalar of its operand type."""


def _float_test(x: SSAValue, predicate: str, against: float) -> SSAValue:
    return arith.CmpfOp(x, constant(against, x.type), predicate).result


_INF = float("inf")

UNARY_TESTS: dict[type[fu.UnaryTestOp], tuple[Callable[[SSAValue], SSAValue], bool | None]] = {
    fu.IsFiniteOp: (lambda x: _float_test(math.AbsFOp(x).result, "olt", _INF), True),
    fu.IsInfOp: (lambda x: _float_test(math.AbsFOp(x).result, "oeq", _INF), False),
    fu.IsNanOp: (lambda x: arith.CmpfOp(x, x, "uno").result, False),
    fu.IsNegInfOp: (lambda x: _float_test(x, "oeq", -_INF), False),
    fu.IsPosInfOp: (lambda x: _float_test(x, "oeq", _INF), False),
    fu.SignbitOp: (lambda x: _float_test(math.CopySignOp(_one(x), x).result, "olt", 0.0), None),
}
"""Each test: its i1 on a float, and its constant on an integer (None: `x < 0`)."""


def _unary_test(op: fu.UnaryTestOp, x: SSAValue) -> SSAValue:
    on_float, on_int = UNARY_TESTS[type(op)]
    if is_float(x.type):
        return on_float(x)
    if on_int is None:
        return arith.CmpiOp(x, constant(0, x.type), "slt").result
    return constant(on_int, fu.I1)


# --------------------------------------------------------------------------------------------
# Binary ops and comparisons
# --------------------------------------------------------------------------------------------

_BinaryBuilder = Callable[[SSAValue, SSAValue], Operation]


def _divide_integers(lhs: SSAValue, rhs: SSAValue) -> Operation:
    """`lhs / rhs` truncated toward zero; where `rhs` is 0, torch's CUDA result (as in the
    reference): -1, or for i64 4294967295 where `lhs` lies in [0, 2**32)."""
    t = rhs.type
    by_zero = arith.CmpiOp(rhs, constant(0, t), "eq").result
    divisor = arith.SelectOp(by_zero, constant(1, t), rhs).result
    quotient = arith.DivSIOp(lhs, divisor).result
    by_zero_value = constant(-1, t)
    if t == fu.I64:
        small = arith.CmpiOp(lhs, constant(0xFFFFFFFF, t), "ule").result  # 0 <= lhs < 2**32
        by_zero_value = arith.SelectOp(small, constant(0xFFFFFFFF, t), by_zero_value).result
    return arith.SelectOp(by_zero, by_zero_value, quotient)


def _integer_remainder(lhs: SSAValue, rhs: SSAValue) -> Operation:
    """C's `lhs % rhs`, with `rhs` 0 giving integer `div`'s value for it and `rhs` -1 taken as
    1 (the same 0, without C's undefined `INT_MIN % -1`)."""
    t = rhs.type
    by_zero = arith.CmpiOp(rhs, constant(0, t), "eq").result
    unit = arith.CmpiOp(rhs, constant(-1, t), "eq").result
    risky = arith.OrIOp(by_zero, unit).result
    divisor = arith.SelectOp(risky, constant(1, t), rhs).result
    rem = arith.RemSIOp(lhs, divisor).result
    return arith.SelectOp(by_zero, _divide_integers(lhs, rhs).results[0], rem)


def _remainder(lhs: SSAValue, rhs: SSAValue) -> Operation:
    """torch.remainder: the truncated remainder, plus `rhs` where it is non-zero and its sign
    differs from `rhs`'s (so `remainder(-0.0, 1)` keeps -0.0 and `remainder(-2, inf)` is inf)."""
    t = lhs.type
    if is_float(t):
        rem = libm.FmodOp(lhs, rhs).result
        nonzero = arith.CmpfOp(rem, constant(0.0, t), "une").result
        rem_negative = arith.CmpfOp(rem, constant(0.0, t), "olt").result
        rhs_negative = arith.CmpfOp(rhs, constant(0.0, t), "olt").result
        moved = arith.AddfOp(rem, rhs).result
    else:
        rem = _integer_remainder(lhs, rhs).results[0]
        nonzero = arith.CmpiOp(rem, constant(0, t), "ne").result
        rem_negative = arith.CmpiOp(rem, constant(0, t), "slt").result
        rhs_negative = arith.CmpiOp(rhs, constant(0, t), "slt").result
        moved = arith.AddiOp(rem, rhs).result
    differ = arith.XOrIOp(rem_negative, rhs_negative).result
    return arith.SelectOp(arith.AndIOp(nonzero, differ).result, moved, rem)


def _shift(make: _BinaryBuilder, past_width: Callable[[SSAValue, int], SSAValue]) -> _BinaryBuilder:
    """A shift of `lhs` by `rhs`, where `rhs` outside [0, bits) gives `past_width(lhs, bits)`
    and the shift itself is taken by 0."""

    def build(lhs: SSAValue, rhs: SSAValue) -> Operation:
        t = lhs.type
        bits = 32 if t == fu.I32 else 64
        outside = arith.CmpiOp(rhs, constant(bits, t), "uge").result  # negative too
        amount = arith.SelectOp(outside, constant(0, t), rhs).result
        shifted = make(lhs, amount).results[0]
        return arith.SelectOp(outside, past_width(lhs, bits), shifted)

    return build


BINARY: dict[type[fu.BinaryOp], tuple[_BinaryBuilder | None, _BinaryBuilder | None]] = {
    fu.AddOp: (arith.AddfOp, arith.AddiOp),
    fu.SubOp: (arith.SubfOp, arith.SubiOp),
    fu.MulOp: (arith.MulfOp, arith.MuliOp),
    fu.DivOp: (arith.DivfOp, _divide_integers),
    fu.PowOp: (math.PowFOp, None),
    fu.MaximumOp: (arith.MaximumfOp, arith.MaxSIOp),
    fu.MinimumOp: (arith.MinimumfOp, arith.MinSIOp),
    fu.Atan2Op: (math.Atan2Op, None),
    fu.NextafterOp: (libm.NextafterOp, None),
    fu.FmodOp: (libm.FmodOp, _integer_remainder),
    fu.RemainderOp: (_remainder, _remainder),
    fu.GcdOp: (None, libm.GcdOp),
    fu.BitwiseAndOp: (None, arith.AndIOp),
    fu.BitwiseOrOp: (None, arith.OrIOp),
    fu.BitwiseXorOp: (None, arith.XOrIOp),
    fu.ShiftLeftOp: (None, _shift(arith.ShLIOp, lambda x, bits: constant(0, x.type))),
    fu.ShiftRightOp: (
        None,
        _shift(arith.ShRSIOp, lambda x, bits: arith.ShRSIOp(x, constant(bits - 1, x.type)).result),
    ),
    fu.LogicalShiftRightOp: (None, _shift(arith.ShRUIOp, lambda x, bits: constant(0, x.type))),
}
"""Each arithmetic binary op: its (float, integer) arith/math op."""

COMPARISONS: dict[type[fu.CompareOp], tuple[str, str, str]] = {
    fu.EqOp: ("oeq", "eq", "eq"),
    fu.NeOp: ("une", "ne", "ne"),
    fu.LtOp: ("olt", "slt", "ult"),
    fu.LeOp: ("ole", "sle", "ule"),
    fu.GtOp: ("ogt", "sgt", "ugt"),
    fu.GeOp: ("oge", "sge", "uge"),
}
"""Each comparison: its `cmpf` predicate, and its `cmpi` predicate on i32/i64 and on i1."""


def _binary(op: fu.BinaryOp, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    t = lhs.type
    if isinstance(op, fu.CompareOp):
        on_float, on_int, on_bool = COMPARISONS[type(op)]
        if is_float(t):
            return arith.CmpfOp(lhs, rhs, on_float).result
        return arith.CmpiOp(lhs, rhs, on_bool if t == fu.I1 else on_int).result
    make = BINARY[type(op)][0 if is_float(t) else 1]
    if make is None:
        raise ValueError(f"'{op.name}' has no lowering for element type {t}")
    return make(lhs, rhs).results[0]


# --------------------------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------------------------


def lower_pointwise(op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """The scalar result of pointwise `op` for one element, created at the current insertion
    point (an `ImplicitBuilder`); `operands` holds one scalar per element operand of `op` (the
    `index` sizes of `broadcast_in_dim` are not element operands)."""
    match op:
        case fu.ConstantOp():
            value = op.value.value.data
            return constant(value, op.result.type)
        case fu.BroadcastInDimOp() | fu.RenumberOp() | fu.CopyOp():
            return operands[0]
        case fu.CastOp():
            return convert(operands[0], fu.element_type(op.result.type))
        case fu.WhereOp():
            cond, on_true, on_false = operands
            return arith.SelectOp(cond, on_true, on_false).result
        case fu.GeluOp():
            return _gelu(operands[0], op.approximate.data)
        case fu.UnaryOp():
            return UNARY[type(op)](operands[0])
        case fu.UnaryTestOp():
            return _unary_test(op, operands[0])
        case fu.BinaryOp():
            lhs, rhs = operands
            return _binary(op, lhs, rhs)
        case _:
            raise ValueError(f"'{op.name}' is not a pointwise op")
