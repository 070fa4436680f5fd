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
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import TypeGuard

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from fuser.dialects import fusion as fu

_FLOAT_BITS: dict[Attribute, int] = {fu.F16: 16, fu.BF16: 16, fu.F32: 32, fu.F64: 64}

POINTWISE_OPS: tuple[type[Operation], ...] = (
    fu.ConstantOp,
    fu.UnaryOp,
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
}
"""Each unary op on a scalar of its operand type."""

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


BINARY: dict[type[fu.BinaryOp], tuple[_BinaryBuilder | None, _BinaryBuilder | None]] = {
    fu.AddOp: (arith.AddfOp, arith.AddiOp),
    fu.SubOp: (arith.SubfOp, arith.SubiOp),
    fu.MulOp: (arith.MulfOp, arith.MuliOp),
    fu.DivOp: (arith.DivfOp, _divide_integers),
    fu.PowOp: (math.PowFOp, None),
    fu.MaximumOp: (arith.MaximumfOp, arith.MaxSIOp),
    fu.MinimumOp: (arith.MinimumfOp, arith.MinSIOp),
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
        case fu.BinaryOp():
            lhs, rhs = operands
            return _binary(op, lhs, rhs)
        case _:
            raise ValueError(f"'{op.name}' is not a pointwise op")
