"""The `libm` dialect: scalar functions of CUDA's math library that xDSL's `math` dialect lacks.

The kernels compute every element with `arith` and `math` ops (`fuser.transforms.schedulers.
scalar_lowering`). A few functions the `fusion` dialect needs have no op there: the error
function's complement and inverses, log-gamma, the floating-point remainder (MLIR's `arith.remf`,
absent from xDSL 0.74), `nextafter`, and the greatest common divisor. Each is one op here, with
`math`'s conventions (operands and result of one type, `%r = libm.erfc %x : f32`), and the CUDA
emitter prints it as the library call (`erfcf(x)`, `fuser::gcd(a, b)`).
"""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

FLOATS: tuple[Attribute, ...] = (Float16Type(), BFloat16Type(), Float32Type(), Float64Type())
INTEGERS: tuple[Attribute, ...] = (IntegerType(32), IntegerType(64))


class LibmOp(IRDLOperation, ABC):
    """A function whose operands and result share one type `T` (xDSL checks that), one of
    `ALLOWED` (its verifier checks that, naming the op)."""

    T: ClassVar = VarConstraint("T", AnyAttr())

    traits = traits_def(Pure())

    ALLOWED: ClassVar[tuple[Attribute, ...]] = FLOATS

    def verify_(self) -> None:
        t = self.results[0].type
        if t not in self.ALLOWED:
            names = ", ".join(str(a) for a in self.ALLOWED)
            raise VerifyException(f"'{self.name}' takes one of {names}, got {t}")


class FloatUnaryOp(LibmOp, ABC):
    """A function of one float, of its type."""

    operand = operand_def(LibmOp.T)
    result = result_def(LibmOp.T)

    assembly_format = "$operand attr-dict `:` type($result)"

    def __init__(self, operand: SSAValue):
        super().__init__(operands=[operand], result_types=[operand.type])


class BinaryFunctionOp(LibmOp, ABC):
    """A function of two operands and a result of one type."""

    lhs = operand_def(LibmOp.T)
    rhs = operand_def(LibmOp.T)
    result = result_def(LibmOp.T)

    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])


class FloatBinaryOp(BinaryFunctionOp, ABC):
    """A function of two floats, of their type."""


@irdl_op_definition
class ErfcOp(FloatUnaryOp):
    """`1 - erf(x)`, accurate where erf(x) is close to 1."""

    name = "libm.erfc"


@irdl_op_definition
class ErfinvOp(FloatUnaryOp):
    """The inverse of erf: NaN outside [-1, 1], +-inf at +-1."""

    name = "libm.erfinv"


@irdl_op_definition
class ErfcinvOp(FloatUnaryOp):
    """The inverse of erfc: NaN outside [0, 2], +inf at 0, -inf at 2."""

    name = "libm.erfcinv"


@irdl_op_definition
class LgammaOp(FloatUnaryOp):
    """`log(|gamma(x)|)`; +inf at 0 and the negative integers."""

    name = "libm.lgamma"


@irdl_op_definition
class FmodOp(FloatBinaryOp):
    """C's `fmod`: `lhs - n * rhs` for `n` the quotient truncated toward zero, exactly."""

    name = "libm.fmod"


@irdl_op_definition
class NextafterOp(FloatBinaryOp):
    """The representable value next to `lhs` in the direction of `rhs`."""

    name = "libm.nextafter"


@irdl_op_definition
class GcdOp(BinaryFunctionOp):
    """The greatest common divisor as torch's CUDA gcd computes it: Euclid's algorithm on
    `|lhs|` and `|rhs|` in the signed type, where `|INT_MIN|` wraps to INT_MIN, so a gcd with
    INT_MIN may be negative (`gcd(380, INT_MIN)` is -4)."""

    name = "libm.gcd"

    ALLOWED: ClassVar[tuple[Attribute, ...]] = INTEGERS


Libm = Dialect(
    "libm",
    [ErfcOp, ErfinvOp, ErfcinvOp, LgammaOp, FmodOp, NextafterOp, GcdOp],
)
