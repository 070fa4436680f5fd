"""The `fusion` dialect: a fusion as its user wrote it, on tensors.

A `fusion.fusion` op holds one fusion: its block arguments are the inputs (tensors and scalars),
its `fusion.output` terminator lists the outputs. Ops work on builtin ranked tensors with static or
dynamic (`?`) dims, or on scalars of the same element types.

Typing rules (checked by the verifiers, documented in the README):
- Element types are f16, bf16, f32, f64, i32, i64 and i1.
- f16 and bf16 are *storage* types: only data movement (`cast`, `set`, `segment_set`,
  `broadcast_in_dim`, `where`) and `matmul` take them. Arithmetic, comparisons and reductions
  need f32/f64 (or i32/i64 where integers make sense); the frontend casts half inputs to f32,
  as nvFuser does.
- Operands of one op share one element type: there is no implicit promotion. A scalar operand
  must have the element type of the tensor operands.
- There is no implicit broadcasting: tensor operands of a pointwise op have compatible shapes
  (equal, or dynamic); `broadcast_in_dim` makes shapes agree.
- A dynamic extent is never named in a type. Where an op creates a dynamic dim that its operand
  does not carry (`broadcast_in_dim` to a new `?` dim), the extent is an `index` operand, taken
  from an input with `fusion.dim`, as `tensor.empty` does in MLIR.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import (
    parse_func_op_like,
    print_func_op_like,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParamAttrConstraint,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

# --------------------------------------------------------------------------------------------
# Element types and the rules on them
# --------------------------------------------------------------------------------------------

F16, BF16, F32, F64 = Float16Type(), BFloat16Type(), Float32Type(), Float64Type()
I1, I32, I64 = IntegerType(1), IntegerType(32), IntegerType(64)

ELEMENT_TYPES: tuple[Attribute, ...] = (F16, BF16, F32, F64, I32, I64, I1)
STORAGE_TYPES: tuple[Attribute, ...] = (F16, BF16)
FLOAT_COMPUTE_TYPES: tuple[Attribute, ...] = (F32, F64)
INT_COMPUTE_TYPES: tuple[Attribute, ...] = (I32, I64)
NUMERIC_TYPES = FLOAT_COMPUTE_TYPES + INT_COMPUTE_TYPES


def type_name(t: Attribute) -> str:
    """A short name of an element type for messages (`f32`, `bf16`, `i1`)."""
    return str(t)


def element_type(t: Attribute) -> Attribute:
    """The element type of a tensor type, or the type itself for a scalar."""
    return t.element_type if isinstance(t, TensorType) else t


def shape_of(t: Attribute) -> tuple[int, ...] | None:
    """The shape of a tensor type (DYNAMIC_INDEX for `?`), or None for a scalar."""
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def dims_compatible(a: int, b: int) -> bool:
    return a == DYNAMIC_INDEX or b == DYNAMIC_INDEX or a == b


def shapes_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(dims_compatible(x, y) for x, y in zip(a, b, strict=True))


def format_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"


def _check_element(op_name: str, what: str, t: Attribute, allowed: Sequence[Attribute]) -> None:
    if element_type(t) not in allowed:
        names = ", ".join(type_name(a) for a in allowed)
        hint = ""
        if element_type(t) in STORAGE_TYPES:
            hint = " (f16/bf16 are storage types: cast to f32 first)"
        raise VerifyException(
            f"'{op_name}' {what} has element type {type_name(element_type(t))}, "
            f"expected one of {names}{hint}"
        )


def _check_value_type(op_name: str, what: str, t: Attribute) -> None:
    """A value of the fusion dialect: a ranked tensor or scalar of an ELEMENT_TYPE."""
    if element_type(t) not in ELEMENT_TYPES:
        raise VerifyException(
            f"'{op_name}' {what} has type {t}, expected a ranked tensor or scalar of "
            "f16, bf16, f32, f64, i32, i64 or i1"
        )


def _check_axes(op_name: str, axes: Sequence[int], rank: int) -> None:
    for a in axes:
        if not 0 <= a < rank:
            raise VerifyException(f"'{op_name}' axis {a} is out of range for rank {rank}")
    if len(set(axes)) != len(axes):
        raise VerifyException(f"'{op_name}' axes {list(axes)} are not unique")
    if list(axes) != sorted(axes):
        raise VerifyException(f"'{op_name}' axes {list(axes)} must be sorted ascending")


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdim: bool) -> tuple[int, ...]:
    """The shape a reduction over `axes` leaves."""
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


# --------------------------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------------------------


class GeluApproximation(StrEnum):
    """How `fusion.gelu` evaluates: the exact erf form, or the tanh approximation."""

    NONE = "none"
    TANH = "tanh"


@irdl_attr_definition
class GeluApproximationAttr(EnumAttribute[GeluApproximation], SpacedOpaqueSyntaxAttribute):
    """The approximation a `fusion.gelu` uses: `#fusion<approximation tanh>`."""

    name = "fusion.approximation"


# --------------------------------------------------------------------------------------------
# The container: fusion.fusion and fusion.output
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class FusionOp(IRDLOperation):
    """One fusion: inputs are the block arguments, outputs the `fusion.output` operands.

    `fusion.fusion @name(%x: tensor<?x?xf32>, %eps: f32) -> (tensor<?x?xf32>) { ... }`
    """

    name = "fusion.fusion"

    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    body = region_def("single_block")

    traits = lazy_traits_def(lambda: (SymbolOpInterface(), IsolatedFromAbove()))

    def __init__(
        self,
        name: str,
        input_types: Sequence[Attribute],
        output_types: Sequence[Attribute],
        body: Region | None = None,
    ):
        if body is None:
            from xdsl.ir import Block

            body = Region(Block(arg_types=input_types))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(input_types, output_types),
            },
            regions=[body],
        )

    @property
    def inputs(self) -> Sequence[SSAValue]:
        return self.body.block.args

    @property
    def output_op(self) -> OutputOp:
        last = self.body.block.last_op
        assert isinstance(last, OutputOp)
        return last

    def verify_(self) -> None:
        block = self.body.block
        name = f"fusion.fusion @{self.sym_name.data}"
        inputs = self.function_type.inputs.data
        if tuple(a.type for a in block.args) != tuple(inputs):
            raise VerifyException(f"'{name}' block argument types do not match its signature")
        for i, t in enumerate(inputs):
            _check_value_type(name, f"input #{i}", t)
        if not isinstance(block.last_op, OutputOp):
            raise VerifyException(f"'{name}' must end with a 'fusion.output'")
        outs = tuple(v.type for v in block.last_op.values)
        if outs != tuple(self.function_type.outputs.data):
            raise VerifyException(
                f"'{name}' outputs ({', '.join(map(str, outs))}) do not match its signature "
                f"({', '.join(map(str, self.function_type.outputs.data))})"
            )
        for i, t in enumerate(outs):
            if not isinstance(t, TensorType):
                raise VerifyException(f"'{name}' output #{i} is a scalar; outputs are tensors")

    @classmethod
    def parse(cls, parser: Parser) -> FusionOp:
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type")
        )
        if arg_attrs is not None or res_attrs is not None:
            parser.raise_error("fusion.fusion takes no argument or result attributes")
        if not region.blocks:
            parser.raise_error("fusion.fusion needs a body")
        op = cls(name, inputs, outputs, region)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            reserved_attr_names=("sym_name", "function_type"),
        )


@irdl_op_definition
class OutputOp(IRDLOperation):
    """Terminates a `fusion.fusion`, listing its outputs in order."""

    name = "fusion.output"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(FusionOp))

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue | Operation]):
        super().__init__(operands=[values])


# --------------------------------------------------------------------------------------------
# Scalars and extents
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A scalar constant: `%c = fusion.constant 1.0 : f32`."""

    name = "fusion.constant"

    T: ClassVar = VarConstraint("T", AnyAttr())
    value = prop_def(
        ParamAttrConstraint(FloatAttr, (AnyAttr(), T))
        | ParamAttrConstraint(IntegerAttr, (AnyAttr(), T))
    )
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$value attr-dict"

    def __init__(self, value: FloatAttr | IntegerAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    @staticmethod
    def of(value: float | int | bool, type: Attribute) -> ConstantOp:
        if isinstance(type, IntegerType):
            if type.width.data == 1:
                return ConstantOp(IntegerAttr(int(bool(value)), type))
            return ConstantOp(IntegerAttr(int(value), type))
        assert isinstance(type, AnyFloat)
        return ConstantOp(FloatAttr(float(value), type))

    def verify_(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException("'fusion.constant' result type must be the value's type")
        _check_value_type(self.name, "value", self.result.type)


@irdl_op_definition
class DimOp(IRDLOperation):
    """The runtime extent of one dim of a tensor: `%n = fusion.dim %x[1] : tensor<?x?xf32>`."""

    name = "fusion.dim"

    input = operand_def(base(TensorType))
    axis = prop_def(IntegerAttr.constr(i64))
    result = result_def(IndexType)

    traits = traits_def(Pure())

    assembly_format = "$input `[` $axis `]` attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, axis: int):
        super().__init__(
            operands=[input],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[IndexType()],
        )

    def verify_(self) -> None:
        rank = len(shape_of(self.input.type) or ())
        if not 0 <= self.axis.value.data < rank:
            raise VerifyException(
                f"'fusion.dim' axis {self.axis.value.data} is out of range for rank {rank}"
            )


# --------------------------------------------------------------------------------------------
# Pointwise ops
# --------------------------------------------------------------------------------------------


def _print_pointwise_types(
    printer: Printer, operands: Sequence[SSAValue], result: Attribute
) -> None:
    types = [o.type for o in operands]
    printer.print_string(" : ")
    if all(t == result for t in types):
        printer.print_attribute(result)
    else:
        printer.print_string("(")
        printer.print_list(types, printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(result)


def _parse_pointwise(parser: Parser, arity: int) -> tuple[list[SSAValue], Attribute, dict]:
    unresolved = [parser.parse_unresolved_operand()]
    for _ in range(arity - 1):
        parser.parse_punctuation(",")
        unresolved.append(parser.parse_unresolved_operand())
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    if parser.parse_optional_punctuation("(") is not None:
        types = [parser.parse_type()]
        while parser.parse_optional_punctuation(",") is not None:
            types.append(parser.parse_type())
        parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        result = parser.parse_type()
        if len(types) != arity:
            parser.raise_error(f"expected {arity} operand types, got {len(types)}")
    else:
        result = parser.parse_type()
        types = [result] * arity
    operands = [parser.resolve_operand(u, t) for u, t in zip(unresolved, types, strict=True)]
    return operands, result, attrs


def _check_pointwise_shapes(op: IRDLOperation, operands: Sequence[SSAValue]) -> None:
    """Tensor operands and the result agree in shape; scalars combine with anything."""
    result_t = op.results[0].type
    shapes = [shape_of(o.type) for o in operands]
    tensor_shapes = [s for s in shapes if s is not None]
    rshape = shape_of(result_t)
    if not tensor_shapes:
        if rshape is not None:
            raise VerifyException(f"'{op.name}' on scalars must produce a scalar")
        return
    if rshape is None:
        raise VerifyException(f"'{op.name}' with a tensor operand must produce a tensor")
    for i, s in enumerate(shapes):
        if s is not None and not shapes_compatible(s, rshape):
            raise VerifyException(
                f"'{op.name}' operand #{i} has shape {format_shape(s)}, incompatible with "
                f"result shape {format_shape(rshape)} (use broadcast_in_dim to broadcast)"
            )
    for i, s in enumerate(tensor_shapes):
        for d, r in zip(s, rshape, strict=True):
            if d != DYNAMIC_INDEX and r == DYNAMIC_INDEX:
                raise VerifyException(
                    f"'{op.name}' result shape {format_shape(rshape)} must keep static dims "
                    f"of its operands ({format_shape(s)})"
                )


class UnaryOp(IRDLOperation, ABC):
    """A pointwise op of one operand whose result has the operand's type."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    ALLOWED: ClassVar[tuple[Attribute, ...]] = FLOAT_COMPUTE_TYPES

    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[input.type])

    def verify_(self) -> None:
        _check_value_type(self.name, "operand", self.input.type)
        _check_element(self.name, "operand", self.input.type, self.ALLOWED)


class NumericUnaryOp(UnaryOp, ABC):
    """A unary op defined on integers and floats."""

    ALLOWED: ClassVar[tuple[Attribute, ...]] = NUMERIC_TYPES


@irdl_op_definition
class NegOp(NumericUnaryOp):
    name = "fusion.neg"


@irdl_op_definition
class AbsOp(NumericUnaryOp):
    name = "fusion.abs"


@irdl_op_definition
class ReluOp(NumericUnaryOp):
    name = "fusion.relu"


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "fusion.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    name = "fusion.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "fusion.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    name = "fusion.rsqrt"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "fusion.reciprocal"


@irdl_op_definition
class SinOp(UnaryOp):
    name = "fusion.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    name = "fusion.cos"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "fusion.tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "fusion.sigmoid"


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "fusion.erf"


@irdl_op_definition
class SiluOp(UnaryOp):
    name = "fusion.silu"


@irdl_op_definition
class GeluOp(IRDLOperation):
    """GELU, exact (`erf`) or with the tanh approximation: `fusion.gelu %x tanh : T`."""

    name = "fusion.gelu"

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    approximate = prop_def(GeluApproximationAttr)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$input $approximate attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, approximate: GeluApproximation = GeluApproximation.NONE):
        super().__init__(
            operands=[input],
            properties={"approximate": GeluApproximationAttr(approximate)},
            result_types=[input.type],
        )

    def verify_(self) -> None:
        _check_element(self.name, "operand", self.input.type, FLOAT_COMPUTE_TYPES)


class BinaryOp(IRDLOperation, ABC):
    """A pointwise op of two operands (tensors or scalars) of one element type."""

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    ALLOWED: ClassVar[tuple[Attribute, ...]] = NUMERIC_TYPES
    IS_COMPARISON: ClassVar[bool] = False

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        for what, v in (("lhs", self.lhs), ("rhs", self.rhs)):
            _check_value_type(self.name, what, v.type)
            _check_element(self.name, what, v.type, self.ALLOWED)
        le, re = element_type(self.lhs.type), element_type(self.rhs.type)
        if le != re:
            raise VerifyException(
                f"'{self.name}' operands have element types {le} and {re}; they must match "
                "(insert a fusion.cast)"
            )
        expected = I1 if self.IS_COMPARISON else le
        if element_type(self.result.type) != expected:
            raise VerifyException(
                f"'{self.name}' result element type must be {expected}, "
                f"got {element_type(self.result.type)}"
            )
        _check_pointwise_shapes(self, (self.lhs, self.rhs))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        _print_pointwise_types(printer, (self.lhs, self.rhs), self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        (lhs, rhs), result, attrs = _parse_pointwise(parser, 2)
        op = cls(lhs, rhs, result)
        op.attributes |= attrs
        return op


@irdl_op_definition
class AddOp(BinaryOp):
    name = "fusion.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "fusion.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "fusion.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """Division; on integers it truncates toward zero, as C does."""

    name = "fusion.div"


@irdl_op_definition
class PowOp(BinaryOp):
    name = "fusion.pow"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = FLOAT_COMPUTE_TYPES


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "fusion.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "fusion.minimum"


class CompareOp(BinaryOp, ABC):
    """A comparison: operands of one numeric element type, an i1 result."""

    IS_COMPARISON: ClassVar[bool] = True
    ALLOWED: ClassVar[tuple[Attribute, ...]] = (*NUMERIC_TYPES, I1)


@irdl_op_definition
class EqOp(CompareOp):
    name = "fusion.eq"


@irdl_op_definition
class NeOp(CompareOp):
    name = "fusion.ne"


@irdl_op_definition
class LtOp(CompareOp):
    name = "fusion.lt"


@irdl_op_definition
class LeOp(CompareOp):
    name = "fusion.le"


@irdl_op_definition
class GtOp(CompareOp):
    name = "fusion.gt"


@irdl_op_definition
class GeOp(CompareOp):
    name = "fusion.ge"


@irdl_op_definition
class WhereOp(IRDLOperation):
    """`cond ? on_true : on_false`, pointwise; `cond` is i1, the branches share a type."""

    name = "fusion.where"

    cond = operand_def()
    on_true = operand_def()
    on_false = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    def __init__(
        self, cond: SSAValue, on_true: SSAValue, on_false: SSAValue, result_type: Attribute
    ):
        super().__init__(operands=[cond, on_true, on_false], result_types=[result_type])

    def verify_(self) -> None:
        _check_element(self.name, "condition", self.cond.type, (I1,))
        for what, v in (("true value", self.on_true), ("false value", self.on_false)):
            _check_value_type(self.name, what, v.type)
        te, fe = element_type(self.on_true.type), element_type(self.on_false.type)
        if te != fe or element_type(self.result.type) != te:
            raise VerifyException(
                f"'{self.name}' branches and result must share one element type, got "
                f"{te}, {fe} -> {element_type(self.result.type)}"
            )
        _check_pointwise_shapes(self, (self.cond, self.on_true, self.on_false))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list((self.cond, self.on_true, self.on_false), printer.print_operand)
        printer.print_op_attributes(self.attributes)
        _print_pointwise_types(printer, (self.cond, self.on_true, self.on_false), self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> WhereOp:
        (c, t, f), result, attrs = _parse_pointwise(parser, 3)
        op = cls(c, t, f, result)
        op.attributes |= attrs
        return op


@irdl_op_definition
class CastOp(IRDLOperation):
    """Converts element types: `%y = fusion.cast %x : tensor<?xbf16> -> tensor<?xf32>`."""

    name = "fusion.cast"

    input = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        _check_value_type(self.name, "operand", self.input.type)
        _check_value_type(self.name, "result", self.result.type)
        _check_pointwise_shapes(self, (self.input,))


class CopyOp(IRDLOperation, ABC):
    """A copy whose result has its operand's type."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[input.type])

    def verify_(self) -> None:
        _check_value_type(self.name, "operand", self.input.type)


@irdl_op_definition
class SetOp(CopyOp):
    """A plain copy (nvFuser's `set`)."""

    name = "fusion.set"


@irdl_op_definition
class SegmentSetOp(CopyOp):
    """A copy that forces a kernel boundary between its producer and its consumers."""

    name = "fusion.segment_set"


@irdl_op_definition
class BroadcastInDimOp(IRDLOperation):
    """Broadcasts an operand into a result shape, mapping operand dim i to `dims[i]`.

    `%y = fusion.broadcast_in_dim %x [0] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>`

    Each operand dim is 1 (it expands) or equal to the result dim it maps to. `sizes` holds one
    `index` value for each dynamic result dim that the operand does not carry (a new dim, or one
    mapped from a static 1), in order; other dynamic dims take the operand's extent. A scalar
    operand, with `[]`, fills a tensor.
    """

    name = "fusion.broadcast_in_dim"

    input = operand_def()
    broadcast_dims = prop_def(DenseArrayBase.constr(i64))
    sizes = var_operand_def(IndexType)
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input $broadcast_dims (`sizes` `(` $sizes^ `)`)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        broadcast_dims: Sequence[int],
        result_type: TensorType,
        sizes: Sequence[SSAValue] = (),
    ):
        super().__init__(
            operands=[input, sizes],
            properties={"broadcast_dims": DenseArrayBase.from_list(i64, broadcast_dims)},
            result_types=[result_type],
        )

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(self.broadcast_dims.get_values())

    def sized_dims(self) -> list[int]:
        """The result dims whose extent comes from `sizes`, in order."""
        in_shape = shape_of(self.input.type) or ()
        out_shape = shape_of(self.result.type) or ()
        source = {o: in_shape[i] for i, o in enumerate(self.dims)}
        return [
            d
            for d, ext in enumerate(out_shape)
            if ext == DYNAMIC_INDEX and source.get(d, 1) == 1
        ]

    def verify_(self) -> None:
        _check_value_type(self.name, "operand", self.input.type)
        if element_type(self.input.type) != element_type(self.result.type):
            raise VerifyException(f"'{self.name}' must keep the element type")
        in_shape = shape_of(self.input.type) or ()
        out_shape = shape_of(self.result.type) or ()
        dims = self.dims
        if len(dims) != len(in_shape):
            raise VerifyException(
                f"'{self.name}' needs one broadcast dim per operand dim: got {len(dims)} for "
                f"rank {len(in_shape)}"
            )
        if any(not 0 <= d < len(out_shape) for d in dims):
            raise VerifyException(
                f"'{self.name}' broadcast dims {list(dims)} out of range for rank "
                f"{len(out_shape)}"
            )
        if any(b <= a for a, b in zip(dims, dims[1:])):
            raise VerifyException(
                f"'{self.name}' broadcast dims {list(dims)} must be strictly increasing"
            )
        for i, d in enumerate(dims):
            ext = in_shape[i]
            if ext != 1 and not dims_compatible(ext, out_shape[d]):
                raise VerifyException(
                    f"'{self.name}' operand dim {i} (extent {format_shape([ext])[1:-1]}) "
                    f"cannot broadcast to result dim {d} (extent "
                    f"{format_shape([out_shape[d]])[1:-1]})"
                )
        expected = len(self.sized_dims())
        if len(self.sizes) != expected:
            raise VerifyException(
                f"'{self.name}' needs {expected} size operand(s), one for each dynamic result "
                f"dim the operand does not carry; got {len(self.sizes)}"
            )


# --------------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------------


class ReductionOp(IRDLOperation, ABC):
    """Reduces `input` over `axes`: `%s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>`.

    With `keepdim` the reduced dims stay as extent 1.
    """

    input = operand_def(base(TensorType))
    axes = prop_def(DenseArrayBase.constr(i64))
    keepdim = opt_prop_def(UnitAttr)
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input $axes (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self, input: SSAValue, axes: Sequence[int], keepdim: bool, result_type: Attribute
    ):
        super().__init__(
            operands=[input],
            properties={
                "axes": DenseArrayBase.from_list(i64, sorted(axes)),
                "keepdim": UnitAttr() if keepdim else None,
            },
            result_types=[result_type],
        )

    @property
    def reduction_axes(self) -> tuple[int, ...]:
        return tuple(self.axes.get_values())

    def verify_(self) -> None:
        _check_element(self.name, "operand", self.input.type, NUMERIC_TYPES)
        shape = shape_of(self.input.type) or ()
        _check_axes(self.name, self.reduction_axes, len(shape))
        _check_reduced_result(self, shape, self.result.type, self.keepdim is not None)
        if element_type(self.result.type) != element_type(self.input.type):
            raise VerifyException(f"'{self.name}' must keep the element type")


def _check_reduced_result(
    op: IRDLOperation, shape: Sequence[int], result_t: Attribute, keepdim: bool
) -> None:
    expected = reduced_shape(shape, tuple(op.axes.get_values()), keepdim)
    got = shape_of(result_t) or ()
    if not shapes_compatible(expected, got):
        raise VerifyException(
            f"'{op.name}' result shape {format_shape(got)} does not match the reduced shape "
            f"{format_shape(expected)}"
        )


@irdl_op_definition
class SumOp(ReductionOp):
    name = "fusion.sum"


@irdl_op_definition
class MaxOp(ReductionOp):
    name = "fusion.max"


@irdl_op_definition
class MinOp(ReductionOp):
    name = "fusion.min"


@irdl_op_definition
class WelfordOp(IRDLOperation):
    """Welford statistics over `axes`: mean, sum of squared deviations and element count.

    `%avg, %m2, %n = fusion.welford %x [1] : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>,
    tensor<?xi64>`
    """

    name = "fusion.welford"

    input = operand_def(base(TensorType))
    axes = prop_def(DenseArrayBase.constr(i64))
    avg = result_def(base(TensorType))
    var_sum = result_def(base(TensorType))
    count = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input $axes attr-dict `:` type($input) `->` type($avg) `,` type($var_sum) `,` "
        "type($count)"
    )

    def __init__(self, input: SSAValue, axes: Sequence[int], result_type: TensorType):
        count_t = TensorType(I64, result_type.get_shape())
        super().__init__(
            operands=[input],
            properties={"axes": DenseArrayBase.from_list(i64, sorted(axes))},
            result_types=[result_type, result_type, count_t],
        )

    def verify_(self) -> None:
        _check_element(self.name, "operand", self.input.type, FLOAT_COMPUTE_TYPES)
        shape = shape_of(self.input.type) or ()
        _check_axes(self.name, tuple(self.axes.get_values()), len(shape))
        for r in (self.avg, self.var_sum, self.count):
            _check_reduced_result(self, shape, r.type, False)
        el = element_type(self.input.type)
        if element_type(self.avg.type) != el or element_type(self.var_sum.type) != el:
            raise VerifyException(f"'{self.name}' avg and var_sum must have element type {el}")
        if element_type(self.count.type) != I64:
            raise VerifyException(f"'{self.name}' count must have element type i64")


@irdl_op_definition
class VarMeanOp(IRDLOperation):
    """Variance and mean over `axes`; variance divides by `N - correction`.

    `%var, %mean = fusion.var_mean %x [1] correction(1) : tensor<?x?xf32> -> tensor<?xf32>,
    tensor<?xf32>`
    """

    name = "fusion.var_mean"

    input = operand_def(base(TensorType))
    axes = prop_def(DenseArrayBase.constr(i64))
    correction = prop_def(IntegerAttr.constr(i64))
    keepdim = opt_prop_def(UnitAttr)
    var = result_def(base(TensorType))
    mean = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input $axes `correction` `(` $correction `)` (`keepdim` $keepdim^)? attr-dict "
        "`:` type($input) `->` type($var) `,` type($mean)"
    )

    def __init__(
        self,
        input: SSAValue,
        axes: Sequence[int],
        correction: int,
        keepdim: bool,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            properties={
                "axes": DenseArrayBase.from_list(i64, sorted(axes)),
                "correction": IntegerAttr(correction, i64),
                "keepdim": UnitAttr() if keepdim else None,
            },
            result_types=[result_type, result_type],
        )

    def verify_(self) -> None:
        _check_element(self.name, "operand", self.input.type, FLOAT_COMPUTE_TYPES)
        shape = shape_of(self.input.type) or ()
        _check_axes(self.name, tuple(self.axes.get_values()), len(shape))
        for r in (self.var, self.mean):
            _check_reduced_result(self, shape, r.type, self.keepdim is not None)
            if element_type(r.type) != element_type(self.input.type):
                raise VerifyException(f"'{self.name}' must keep the element type")
        if self.correction.value.data < 0:
            raise VerifyException(f"'{self.name}' correction must be non-negative")


# --------------------------------------------------------------------------------------------
# Matmul
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """`[..., M, K] x [..., K, N] -> [..., M, N]`, accumulating in f32 for half operands.

    Leading batch dims must agree. Operands share one element type (f16, bf16, f32 or f64),
    which the result keeps.
    """

    name = "fusion.matmul"

    lhs = operand_def(base(TensorType))
    rhs = operand_def(base(TensorType))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        allowed = (F16, BF16, F32, F64)
        _check_element(self.name, "lhs", self.lhs.type, allowed)
        _check_element(self.name, "rhs", self.rhs.type, allowed)
        el = element_type(self.lhs.type)
        if element_type(self.rhs.type) != el or element_type(self.result.type) != el:
            raise VerifyException(f"'{self.name}' operands and result must share one element type")
        a, b, r = (shape_of(v.type) or () for v in (self.lhs, self.rhs, self.result))
        if len(a) < 2 or len(a) != len(b):
            raise VerifyException(
                f"'{self.name}' needs operands of one rank >= 2, got ranks {len(a)} and {len(b)}"
            )
        if not dims_compatible(a[-1], b[-2]):
            raise VerifyException(
                f"'{self.name}' contraction dims differ: lhs {format_shape(a)}, "
                f"rhs {format_shape(b)}"
            )
        if not shapes_compatible(a[:-2], b[:-2]):
            raise VerifyException(
                f"'{self.name}' batch dims differ: lhs {format_shape(a)}, rhs {format_shape(b)}"
            )
        expected = (*a[:-2], a[-2], b[-1])
        if not shapes_compatible(expected, r):
            raise VerifyException(
                f"'{self.name}' result shape {format_shape(r)}, expected {format_shape(expected)}"
            )


Fusion = Dialect(
    "fusion",
    [
        FusionOp,
        OutputOp,
        ConstantOp,
        DimOp,
        NegOp,
        AbsOp,
        ReluOp,
        ExpOp,
        LogOp,
        SqrtOp,
        RsqrtOp,
        ReciprocalOp,
        SinOp,
        CosOp,
        TanhOp,
        SigmoidOp,
        ErfOp,
        SiluOp,
        GeluOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        PowOp,
        MaximumOp,
        MinimumOp,
        EqOp,
        NeOp,
        LtOp,
        LeOp,
        GtOp,
        GeOp,
        WhereOp,
        CastOp,
        SetOp,
        SegmentSetOp,
        BroadcastInDimOp,
        SumOp,
        MaxOp,
        MinOp,
        WelfordOp,
        VarMeanOp,
        MatmulOp,
    ],
    [GeluApproximationAttr],
)
