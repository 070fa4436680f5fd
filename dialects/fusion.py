"""The `fusion` dialect: a fusion as its user wrote it, on tensors.

A `fusion.fusion` op holds one fusion: its block arguments are the inputs (tensors and scalars),
its `fusion.output` terminator lists the outputs. Ops work on builtin ranked tensors with static or
dynamic (`?`) dims, or on scalars of the same element types.

Typing rules (checked by the verifiers, documented in the README):
- Element types are f16, bf16, f32, f64, i32, i64 and i1. Tensors carry no encoding; the only
  other type is `index`, for extents (`fusion.dim`, the `sizes` of `broadcast_in_dim`).
- f16 and bf16 are *storage* types: only data movement (`cast`, `set`, `segment_set`,
  `broadcast_in_dim`, the view and resize ops, `where`) and `matmul` take them. Arithmetic,
  comparisons and reductions need f32/f64 (or i32/i64 where integers make sense; comparisons
  also take i1); the frontend casts half inputs to f32, as nvFuser does. Comparisons produce
  i1, which `where` selects on.
- Operands of one op share one element type: there is no implicit promotion. A scalar operand
  must have the element type of the tensor operands.
- There is no implicit broadcasting: tensor operands of a pointwise op have compatible shapes
  (equal, or dynamic), and the result keeps their static dims; `broadcast_in_dim` makes shapes
  agree.
- Inputs of a `fusion.fusion` are tensors or scalars; its outputs are tensors.
- Reduction axes are in range, unique, sorted ascending, and there is at least one. A scan's dim
  is in range; its result has its operand's type. So is a sort's (`topk`, `argsort`); indices
  are i64.
- A dynamic extent is never named in a type. Where an op creates a dynamic dim that its operand
  does not carry (`broadcast_in_dim` to a new `?` dim), the extent is an `index` operand, taken
  from an input with `fusion.dim`, as `tensor.empty` does in MLIR.

Stream parallelism: the discardable attribute `fusion.stream_axis = a : i64` on an op marks
axis `a` of its results stream-parallel (nvFuser's `ParallelType::Stream`): the op is computed
slice by slice along that axis, the slices spread over CUDA streams
(`transforms/lower_stream_parallel.py`). The verifier of `fusion.fusion` checks that `a` is a
full logical axis the op can be sliced along (`stream_operand_axes`): in range of a tensor
result, kept by a reduction, not walked by a scan, carried or created by a `broadcast_in_dim` (not
expanded from extent 1), a batch dim of a matmul; the error names the op that carries the attribute.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from itertools import pairwise
from typing import ClassVar, Self, TypeVar, cast

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import (
    EnumAttribute,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
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
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from fuser.dialects.common import FuncLikeOp, OpVerifyException, TensorDimOp
from fuser.dialects.views import (
    END,
    ReshapeError,
    SliceError,
    check_slice_steps,
    format_shape,
    reshape_extents,
    slice_range,
)

# --------------------------------------------------------------------------------------------
# Element types and the rules on them
# --------------------------------------------------------------------------------------------

_Extent = TypeVar("_Extent")
"""An extent as a caller tracks it: an int, or a pass's symbolic stand-in."""

F16, BF16, F32, F64 = Float16Type(), BFloat16Type(), Float32Type(), Float64Type()
I1, I32, I64 = IntegerType(1), IntegerType(32), IntegerType(64)

ELEMENT_TYPES: tuple[Attribute, ...] = (F16, BF16, F32, F64, I32, I64, I1)
STORAGE_TYPES: tuple[Attribute, ...] = (F16, BF16)
FLOAT_COMPUTE_TYPES: tuple[Attribute, ...] = (F32, F64)
INT_COMPUTE_TYPES: tuple[Attribute, ...] = (I32, I64)
NUMERIC_TYPES = FLOAT_COMPUTE_TYPES + INT_COMPUTE_TYPES
BITWISE_TYPES: tuple[Attribute, ...] = (*INT_COMPUTE_TYPES, I1)


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
    """Whether two extents can be equal: a dynamic extent is compatible with any."""
    return DYNAMIC_INDEX in (a, b) or a == b


def shapes_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether two shapes have one rank and compatible extents."""
    return len(a) == len(b) and all(dims_compatible(x, y) for x, y in zip(a, b, strict=True))


def _check_element(op_name: str, what: str, t: Attribute, allowed: Sequence[Attribute]) -> None:
    """The element type of `t` (a tensor or scalar type) is one of `allowed`."""
    if element_type(t) not in allowed:
        names = ", ".join(type_name(a) for a in allowed)
        expected = f"one of {names}" if len(allowed) > 1 else names
        hint = ""
        if element_type(t) in STORAGE_TYPES:
            hint = " (f16/bf16 are storage types: cast to f32 first)"
        raise VerifyException(
            f"'{op_name}' {what} has element type {type_name(element_type(t))}, "
            f"expected {expected}{hint}"
        )


def _check_value_type(op_name: str, what: str, t: Attribute) -> None:
    """A value of the fusion dialect: a ranked tensor (no encoding) or scalar of an ELEMENT_TYPE."""
    if element_type(t) not in ELEMENT_TYPES:
        raise VerifyException(
            f"'{op_name}' {what} has type {t}, expected a ranked tensor or scalar of "
            "f16, bf16, f32, f64, i32, i64 or i1"
        )
    if isinstance(t, TensorType) and not isinstance(t.encoding, NoneAttr):
        raise VerifyException(
            f"'{op_name}' {what} has type {t}; tensors with an encoding are not supported"
        )


def _check_values(op: IRDLOperation) -> None:
    """Each operand and result of `op`, other than `index` extents, is a fusion value."""
    op_def = type(op).get_irdl_definition()
    for name, _ in (*op_def.operands, *op_def.results):
        field: SSAValue | Sequence[SSAValue] | None = getattr(op, name)
        for v in field if isinstance(field, Sequence) else () if field is None else (field,):
            if not isinstance(v.type, IndexType):
                _check_value_type(op.name, name, v.type)


def _check_axes(op_name: str, axes: Sequence[int], rank: int) -> None:
    """Reduction axes: at least one, each in range, unique, sorted ascending."""
    if not axes:
        raise VerifyException(f"'{op_name}' needs at least one axis to reduce")
    for a in axes:
        if not 0 <= a < rank:
            raise VerifyException(f"'{op_name}' axis {a} is out of range for rank {rank}")
    if len(set(axes)) != len(axes):
        raise VerifyException(f"'{op_name}' axes {list(axes)} are not unique")
    if list(axes) != sorted(axes):
        raise VerifyException(f"'{op_name}' axes {list(axes)} must be sorted ascending")


def reduction_identity(kind: str, element: Attribute) -> float | int:
    """The identity of a `sum`, `prod`, `max` or `min` (`kind`) over the scalar type `element`:
    0, 1, or the lowest or highest value (an infinity for a float, the integer type's
    extreme)."""
    assert kind in ("sum", "prod", "max", "min"), f"no identity for a {kind!r} reduction"
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    high = kind == "min"
    if isinstance(element, AnyFloat):
        return math.inf if high else -math.inf
    bits = cast(IntegerType, element).width.data
    return (1 << (bits - 1)) - 1 if high else -(1 << (bits - 1))


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


def row_major_order(rank: int) -> tuple[int, ...]:
    """The stride order (nvFuser's: entry i is the rank of dim i's stride, 0 the innermost) of
    a row-major tensor: [rank - 1, ..., 0]."""
    return tuple(range(rank - 1, -1, -1))


def _ints(array: DenseArrayBase) -> tuple[int, ...]:
    """The entries of an i64 dense array."""
    return tuple(int(v) for v in cast(DenseArrayBase[IntegerType], array).get_values())


@irdl_op_definition
class FusionOp(FuncLikeOp):
    """One fusion: inputs are the block arguments, outputs the `fusion.output` operands.

    `fusion.fusion @name(%x: tensor<?x?xf32>, %eps: f32) -> (tensor<?x?xf32>) { ... }`
    """

    name = "fusion.fusion"

    @property
    def inputs(self) -> Sequence[SSAValue]:
        return self.body.block.args

    @property
    def output_op(self) -> OutputOp:
        last = self.body.block.last_op
        assert isinstance(last, OutputOp)
        return last

    def verify_(self) -> None:
        self.verify_func_like()
        block = self.body.block
        name = self.display_name
        inputs = self.function_type.inputs.data
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
        for op in self.body.walk():
            if STREAM_AXIS in op.attributes:
                verify_stream_axis(op)
        verify_shardings(self)


@irdl_op_definition
class OutputOp(IRDLOperation):
    """Terminates a `fusion.fusion`, listing its outputs in order.

    `fusion.output %y, %m : tensor<?x8xf32>, tensor<8xf32> aliases [-1, 2]`

    `aliases` (optional) gives, per output, the input its values are written into after each run
    (nvFuser's `add_output(t, alias_input=x)`: an in-place update), or -1. An aliased output is
    not returned by a run; its input is a tensor of the output's element type and (compatible)
    shape, and is aliased by one output at most.

    `stride_orders` (optional) gives, per output, the layout it is returned in (nvFuser's
    `add_output(t, stride_order=)`: entry i is the rank of dim i's stride, 0 the innermost), or
    an empty array for none: a dense tensor of its own whose strides follow the order (so a
    row-major order makes an output that is a view of an input a copy). The values do not
    depend on it; `transforms.output_layouts` has the kernels write such an output permuted,
    and a run returns its inverse permutation.
    """

    name = "fusion.output"

    values = var_operand_def()
    aliases = opt_prop_def(DenseArrayBase.constr(i64))
    stride_orders = opt_prop_def(ArrayAttr[DenseArrayBase])

    traits = traits_def(IsTerminator(), HasParent(FusionOp))

    assembly_format = (
        "($values^ `:` type($values))? (`aliases` $aliases^)? (`stride_orders` $stride_orders^)? "
        "attr-dict"
    )

    def __init__(
        self,
        values: Sequence[SSAValue | Operation],
        aliases: Sequence[int] | None = None,
        stride_orders: Sequence[Sequence[int]] | None = None,
    ):
        properties: dict[str, Attribute] = {}
        if aliases is not None:
            properties["aliases"] = DenseArrayBase.from_list(i64, aliases)
        if stride_orders is not None:
            properties["stride_orders"] = ArrayAttr(
                [DenseArrayBase.from_list(i64, list(order)) for order in stride_orders]
            )
        super().__init__(operands=[values], properties=properties)

    def layouts(self) -> list[tuple[int, ...] | None]:
        """Per output, the stride order it is returned in, or None where none is given."""
        if self.stride_orders is None:
            return [None] * len(self.values)
        return [_ints(a) or None for a in self.stride_orders.data]

    def alias_inputs(self) -> list[int | None]:
        """Per output, the input its values are written into after a run, or None."""
        if self.aliases is None:
            return [None] * len(self.values)
        return [None if i < 0 else i for i in self.aliases.get_values()]

    def returned(self) -> list[int]:
        """The outputs a run returns: those written into no input."""
        return [o for o, i in enumerate(self.alias_inputs()) if i is None]

    def written(self) -> list[tuple[int, int]]:
        """(output, input) of each output a run writes into an input instead of returning."""
        return [(o, i) for o, i in enumerate(self.alias_inputs()) if i is not None]

    def verify_(self) -> None:
        self._verify_aliases()
        self._verify_stride_orders()

    def _verify_aliases(self) -> None:
        if self.aliases is None:
            return
        entries = self.aliases.get_values()
        if len(entries) != len(self.values):
            raise VerifyException(
                f"'{self.name}' has {len(entries)} aliases for {len(self.values)} outputs: one per "
                "output (-1 for none)"
            )
        block = self.parent_block()
        inputs = block.args if block is not None else ()
        seen: set[int] = set()
        for o, (value, i) in enumerate(zip(self.values, entries, strict=True)):
            if i == -1:
                continue
            if not 0 <= i < len(inputs):
                raise VerifyException(
                    f"'{self.name}' output #{o} aliases input #{i}; the fusion has "
                    f"{len(inputs)} inputs"
                )
            if i in seen:
                raise VerifyException(
                    f"'{self.name}' input #{i} is aliased by two outputs: one writes it"
                )
            seen.add(i)
            target, t = inputs[i].type, value.type
            target_shape, shape = shape_of(target), shape_of(t)
            if (
                target_shape is None
                or shape is None
                or element_type(target) != element_type(t)
                or not shapes_compatible(target_shape, shape)
            ):
                raise VerifyException(
                    f"'{self.name}' output #{o} ({t}) cannot be written into input #{i} "
                    f"({target}): an alias needs the input's element type and shape"
                )

    def _verify_stride_orders(self) -> None:
        if self.stride_orders is None:
            return
        orders = self.stride_orders.data
        if len(orders) != len(self.values):
            raise VerifyException(
                f"'{self.name}' has {len(orders)} stride orders for {len(self.values)} outputs: "
                "one per output (empty for row-major)"
            )
        aliases = self.alias_inputs()
        for o, (value, order) in enumerate(zip(self.values, orders, strict=True)):
            if order.elt_type != i64:
                raise VerifyException(
                    f"'{self.name}' output #{o} has a stride order of {order.elt_type}: an i64 "
                    "array"
                )
            entries = list(_ints(order))
            rank = len(shape_of(value.type) or ())
            if entries and sorted(entries) != list(range(rank)):
                raise VerifyException(
                    f"'{self.name}' output #{o} has stride order {entries}: it must be empty or a "
                    f"permutation of its {rank} dims"
                )
            if entries and tuple(entries) != row_major_order(rank) and aliases[o] is not None:
                raise VerifyException(
                    f"'{self.name}' output #{o} is written into input #{aliases[o]} and has "
                    f"stride order {entries}: an aliased output takes its input's layout"
                )


@irdl_op_definition
class SegmentOp(IRDLOperation):
    """A segment of a segmented fusion: the ops one kernel computes, and the scheduler for it.

    ```
    %m, %v = fusion.segment "reduction" (%x) : (tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
    ^bb0(%x0: tensor<?x?xf32>):
      ...
      fusion.yield %m0, %v0 : tensor<?xf32>, tensor<?xf32>
    }
    ```
    The body is isolated: its block arguments are the segment's inputs (tensors, scalars, and
    `index` extents), so a segment reads like a fusion of its own; `fusion.yield` lists the values
    other segments or the fusion's outputs use. The segmenter creates segments; `scheduler` names
    the scheduler that accepted the segment (the empty string when a custom merge rule chose it).
    """

    name = "fusion.segment"

    scheduler = prop_def(StringAttr)
    args = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")

    traits = lazy_traits_def(lambda: (IsolatedFromAbove(), HasParent(FusionOp)))

    def __init__(
        self,
        scheduler: str,
        args: Sequence[SSAValue],
        output_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[args],
            result_types=[output_types],
            properties={"scheduler": StringAttr(scheduler)},
            regions=[body],
        )

    @property
    def yield_op(self) -> YieldOp:
        last = self.body.block.last_op
        assert isinstance(last, YieldOp)
        return last

    def verify_(self) -> None:
        block = self.body.block
        if tuple(a.type for a in block.args) != tuple(v.type for v in self.args):
            raise VerifyException(
                f"'{self.name}' block argument types must match its operand types"
            )
        if not isinstance(block.last_op, YieldOp):
            raise VerifyException(f"'{self.name}' must end with a 'fusion.yield'")
        yielded = tuple(v.type for v in block.last_op.values)
        if yielded != tuple(r.type for r in self.outputs):
            raise VerifyException(
                f"'{self.name}' yields ({', '.join(map(str, yielded))}) but has results "
                f"({', '.join(str(r.type) for r in self.outputs)})"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.scheduler)
        printer.print_string(" (")
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : (")
        printer.print_list((a.type for a in self.args), printer.print_attribute)
        printer.print_string(") -> (")
        printer.print_list((r.type for r in self.outputs), printer.print_attribute)
        printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        scheduler = parser.parse_str_literal("the scheduler's name")
        unresolved = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attributes = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        arg_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        output_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        if len(arg_types) != len(unresolved):
            parser.raise_error(
                f"fusion.segment has {len(unresolved)} operands but {len(arg_types)} types"
            )
        args = [parser.resolve_operand(u, t) for u, t in zip(unresolved, arg_types, strict=True)]
        op = cls(scheduler, args, output_types, parser.parse_region())
        if attributes is not None:
            op.attributes |= attributes.data
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a `fusion.segment`, listing the values it makes visible outside."""

    name = "fusion.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(SegmentOp))

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
        """A constant of a Python number in an element type (booleans for i1)."""
        if isinstance(type, IntegerType):
            if type.width.data == 1:
                return ConstantOp(IntegerAttr(int(bool(value)), type))
            return ConstantOp(IntegerAttr(int(value), type))
        if not isinstance(type, AnyFloat):
            raise ValueError(f"fusion.constant of type {type}: expected an integer or float type")
        return ConstantOp(FloatAttr(float(value), type))

    def verify_(self) -> None:
        # The type constraint T already makes the result the value's type.
        _check_value_type(self.name, "value", self.result.type)


@irdl_op_definition
class DimOp(TensorDimOp):
    """The runtime extent of one dim of a tensor: `%n = fusion.dim %x[1] : tensor<?x?xf32>`."""

    name = "fusion.dim"

    def verify_(self) -> None:
        _check_values(self)
        super().verify_()


# --------------------------------------------------------------------------------------------
# Pointwise ops
# --------------------------------------------------------------------------------------------


def _print_pointwise_types(
    printer: Printer, operands: Sequence[SSAValue], result: Attribute
) -> None:
    """Prints `: T` when all operands and the result share T, else `: (Ta, Tb) -> Tr`."""
    types = [o.type for o in operands]
    printer.print_string(" : ")
    if all(t == result for t in types):
        printer.print_attribute(result)
    else:
        printer.print_string("(")
        printer.print_list(types, printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(result)


def _parse_pointwise(
    parser: Parser, arity: int
) -> tuple[list[SSAValue], Attribute, dict[str, Attribute]]:
    """Parses `%a, %b attr-dict : T` (all of type T) or `: (Ta, Tb) -> Tr`."""
    unresolved = [parser.parse_unresolved_operand()]
    for _ in range(arity - 1):
        parser.parse_punctuation(",")
        unresolved.append(parser.parse_unresolved_operand())
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    start = parser.pos
    result: Attribute
    if parser.parse_optional_punctuation("(") is not None:
        types: list[Attribute] = [parser.parse_type()]
        while parser.parse_optional_punctuation(",") is not None:
            types.append(parser.parse_type())
        parser.parse_punctuation(")")
        if len(types) != arity:
            parser.raise_error(
                f"expected {arity} operand types, got {len(types)}", start, parser.pos
            )
        parser.parse_punctuation("->")
        result = parser.parse_type()
    else:
        result = parser.parse_type()
        types = [result] * arity
    operands: list[SSAValue] = [
        parser.resolve_operand(u, t) for u, t in zip(unresolved, types, strict=True)
    ]
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
    for s in tensor_shapes:
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
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, self.ALLOWED)


class NumericUnaryOp(UnaryOp, ABC):
    """A unary op defined on integers and floats."""

    ALLOWED: ClassVar[tuple[Attribute, ...]] = NUMERIC_TYPES


@irdl_op_definition
class NegOp(NumericUnaryOp):
    """`-x`."""

    name = "fusion.neg"


@irdl_op_definition
class AbsOp(NumericUnaryOp):
    """`|x|`."""

    name = "fusion.abs"


@irdl_op_definition
class ReluOp(NumericUnaryOp):
    """`max(x, 0)`."""

    name = "fusion.relu"


@irdl_op_definition
class ExpOp(UnaryOp):
    """`e**x`."""

    name = "fusion.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """The natural logarithm."""

    name = "fusion.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """The square root."""

    name = "fusion.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """`1 / sqrt(x)`."""

    name = "fusion.rsqrt"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """`1 / x`."""

    name = "fusion.reciprocal"


@irdl_op_definition
class SinOp(UnaryOp):
    """The sine."""

    name = "fusion.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    """The cosine."""

    name = "fusion.cos"


@irdl_op_definition
class TanhOp(UnaryOp):
    """The hyperbolic tangent."""

    name = "fusion.tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """`1 / (1 + exp(-x))`."""

    name = "fusion.sigmoid"


@irdl_op_definition
class ErfOp(UnaryOp):
    """The error function."""

    name = "fusion.erf"


@irdl_op_definition
class SiluOp(UnaryOp):
    """`x * sigmoid(x)`."""

    name = "fusion.silu"


@irdl_op_definition
class AcosOp(UnaryOp):
    """The inverse cosine."""

    name = "fusion.acos"


@irdl_op_definition
class AcoshOp(UnaryOp):
    """The inverse hyperbolic cosine."""

    name = "fusion.acosh"


@irdl_op_definition
class AsinOp(UnaryOp):
    """The inverse sine."""

    name = "fusion.asin"


@irdl_op_definition
class AsinhOp(UnaryOp):
    """The inverse hyperbolic sine."""

    name = "fusion.asinh"


@irdl_op_definition
class AtanOp(UnaryOp):
    """The inverse tangent."""

    name = "fusion.atan"


@irdl_op_definition
class AtanhOp(UnaryOp):
    """The inverse hyperbolic tangent."""

    name = "fusion.atanh"


@irdl_op_definition
class CoshOp(UnaryOp):
    """The hyperbolic cosine."""

    name = "fusion.cosh"


@irdl_op_definition
class SinhOp(UnaryOp):
    """The hyperbolic sine."""

    name = "fusion.sinh"


@irdl_op_definition
class TanOp(UnaryOp):
    """The tangent."""

    name = "fusion.tan"


@irdl_op_definition
class ErfcOp(UnaryOp):
    """The complementary error function, `1 - erf(x)` without its cancellation."""

    name = "fusion.erfc"


@irdl_op_definition
class ErfinvOp(UnaryOp):
    """The inverse error function: NaN outside [-1, 1], +-inf at +-1."""

    name = "fusion.erfinv"


@irdl_op_definition
class ErfcinvOp(UnaryOp):
    """The inverse complementary error function: NaN outside [0, 2]."""

    name = "fusion.erfcinv"


@irdl_op_definition
class Exp2Op(UnaryOp):
    """`2**x`."""

    name = "fusion.exp2"


@irdl_op_definition
class Expm1Op(UnaryOp):
    """`e**x - 1` without its cancellation near 0."""

    name = "fusion.expm1"


@irdl_op_definition
class Log10Op(UnaryOp):
    """The base-10 logarithm."""

    name = "fusion.log10"


@irdl_op_definition
class Log1pOp(UnaryOp):
    """`log(1 + x)` without its cancellation near 0."""

    name = "fusion.log1p"


@irdl_op_definition
class Log2Op(UnaryOp):
    """The base-2 logarithm."""

    name = "fusion.log2"


@irdl_op_definition
class LgammaOp(UnaryOp):
    """`log(|gamma(x)|)`: +inf at the poles (0 and the negative integers)."""

    name = "fusion.lgamma"


@irdl_op_definition
class FracOp(UnaryOp):
    """`x - trunc(x)`, the fractional part with the sign of `x` (NaN for +-inf)."""

    name = "fusion.frac"


class RoundingOp(NumericUnaryOp, ABC):
    """A unary op on integers and floats whose result on an integer is the integer itself."""


@irdl_op_definition
class CeilOp(RoundingOp):
    """Rounds up to an integral value; integers are kept."""

    name = "fusion.ceil"


@irdl_op_definition
class FloorOp(RoundingOp):
    """Rounds down to an integral value; integers are kept."""

    name = "fusion.floor"


@irdl_op_definition
class RoundOp(RoundingOp):
    """Rounds to the nearest integral value, halves to even (torch.round); integers are kept."""

    name = "fusion.round"


@irdl_op_definition
class TruncOp(RoundingOp):
    """Rounds toward zero to an integral value; integers are kept."""

    name = "fusion.trunc"


@irdl_op_definition
class SignOp(NumericUnaryOp):
    """-1, 0 or 1 by the sign of `x`; 0 for NaN and for -0.0 (torch's CUDA sign)."""

    name = "fusion.sign"


@irdl_op_definition
class BitwiseNotOp(UnaryOp):
    """`~x` on integers; logical not on i1."""

    name = "fusion.bitwise_not"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = BITWISE_TYPES


class UnaryTestOp(IRDLOperation, ABC):
    """A pointwise test of one operand (an integer or a float): an i1 result of its shape."""

    input = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, NUMERIC_TYPES)
        _check_element(self.name, "result", self.result.type, (I1,))
        _check_pointwise_shapes(self, (self.input,))


@irdl_op_definition
class IsFiniteOp(UnaryTestOp):
    """Neither infinite nor NaN (always true for integers)."""

    name = "fusion.isfinite"


@irdl_op_definition
class IsInfOp(UnaryTestOp):
    """+inf or -inf."""

    name = "fusion.isinf"


@irdl_op_definition
class IsNanOp(UnaryTestOp):
    """NaN."""

    name = "fusion.isnan"


@irdl_op_definition
class IsNegInfOp(UnaryTestOp):
    """-inf."""

    name = "fusion.isneginf"


@irdl_op_definition
class IsPosInfOp(UnaryTestOp):
    """+inf."""

    name = "fusion.isposinf"


@irdl_op_definition
class SignbitOp(UnaryTestOp):
    """The sign bit is set: true for -0.0 and for a NaN with its sign bit; `x < 0` for integers."""

    name = "fusion.signbit"


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
        _check_values(self)
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
        _check_values(self)
        for what, v in (("lhs", self.lhs), ("rhs", self.rhs)):
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
    def parse(cls, parser: Parser) -> Self:
        (lhs, rhs), result, attrs = _parse_pointwise(parser, 2)
        op = cls(lhs, rhs, result)
        op.attributes |= attrs
        return op


@irdl_op_definition
class AddOp(BinaryOp):
    """`lhs + rhs`."""

    name = "fusion.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """`lhs - rhs`."""

    name = "fusion.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """`lhs * rhs`."""

    name = "fusion.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """Division; on integers it truncates toward zero, as C does."""

    name = "fusion.div"


@irdl_op_definition
class PowOp(BinaryOp):
    """`lhs ** rhs`, on floats."""

    name = "fusion.pow"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = FLOAT_COMPUTE_TYPES


@irdl_op_definition
class MaximumOp(BinaryOp):
    """The larger operand, pointwise."""

    name = "fusion.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    """The smaller operand, pointwise."""

    name = "fusion.minimum"


@irdl_op_definition
class Atan2Op(BinaryOp):
    """The angle of the point (rhs, lhs): `atan(lhs / rhs)` in the right quadrant."""

    name = "fusion.atan2"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = FLOAT_COMPUTE_TYPES


@irdl_op_definition
class NextafterOp(BinaryOp):
    """The next representable value after `lhs` toward `rhs`."""

    name = "fusion.nextafter"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = FLOAT_COMPUTE_TYPES


@irdl_op_definition
class FmodOp(BinaryOp):
    """The remainder of division truncated toward zero: the sign of `lhs` (C's fmod and `%`)."""

    name = "fusion.fmod"


@irdl_op_definition
class RemainderOp(BinaryOp):
    """The remainder of division rounded down: the sign of `rhs` (Python's `%`, torch.remainder)."""

    name = "fusion.remainder"


@irdl_op_definition
class GcdOp(BinaryOp):
    """The greatest common divisor of the magnitudes; `gcd(0, 0)` is 0; torch's result with
    INT_MIN, whose magnitude wraps (see `libm.gcd`)."""

    name = "fusion.gcd"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = INT_COMPUTE_TYPES


@irdl_op_definition
class BitwiseAndOp(BinaryOp):
    """`lhs & rhs`; logical and on i1."""

    name = "fusion.bitwise_and"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = BITWISE_TYPES


@irdl_op_definition
class BitwiseOrOp(BinaryOp):
    """`lhs | rhs`; logical or on i1."""

    name = "fusion.bitwise_or"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = BITWISE_TYPES


@irdl_op_definition
class BitwiseXorOp(BinaryOp):
    """`lhs ^ rhs`; logical xor on i1."""

    name = "fusion.bitwise_xor"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = BITWISE_TYPES


@irdl_op_definition
class ShiftLeftOp(BinaryOp):
    """`lhs << rhs`; 0 where `rhs` is negative or not below the bit width (torch)."""

    name = "fusion.bitwise_left_shift"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = INT_COMPUTE_TYPES


@irdl_op_definition
class ShiftRightOp(BinaryOp):
    """`lhs >> rhs`, filling with the sign bit; where `rhs` is negative or not below the bit
    width, every bit is the sign bit (torch)."""

    name = "fusion.bitwise_right_shift"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = INT_COMPUTE_TYPES


@irdl_op_definition
class LogicalShiftRightOp(BinaryOp):
    """`lhs >> rhs`, filling with zeros; 0 where `rhs` is negative or not below the bit width."""

    name = "fusion.logical_right_shift"
    ALLOWED: ClassVar[tuple[Attribute, ...]] = INT_COMPUTE_TYPES


class CompareOp(BinaryOp, ABC):
    """A comparison: operands of one numeric element type, an i1 result."""

    IS_COMPARISON: ClassVar[bool] = True
    ALLOWED: ClassVar[tuple[Attribute, ...]] = (*NUMERIC_TYPES, I1)


@irdl_op_definition
class EqOp(CompareOp):
    """`lhs == rhs`."""

    name = "fusion.eq"


@irdl_op_definition
class NeOp(CompareOp):
    """`lhs != rhs`."""

    name = "fusion.ne"


@irdl_op_definition
class LtOp(CompareOp):
    """`lhs < rhs`."""

    name = "fusion.lt"


@irdl_op_definition
class LeOp(CompareOp):
    """`lhs <= rhs`."""

    name = "fusion.le"


@irdl_op_definition
class GtOp(CompareOp):
    """`lhs > rhs`."""

    name = "fusion.gt"


@irdl_op_definition
class GeOp(CompareOp):
    """`lhs >= rhs`."""

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
        _check_values(self)
        _check_element(self.name, "condition", self.cond.type, (I1,))
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
    def parse(cls, parser: Parser) -> Self:
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
        _check_values(self)
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
        _check_values(self)


@irdl_op_definition
class SetOp(CopyOp):
    """A plain copy (nvFuser's `set`)."""

    name = "fusion.set"


@irdl_op_definition
class SegmentSetOp(CopyOp):
    """A copy that forces a kernel boundary between its producer and its consumers."""

    name = "fusion.segment_set"


def broadcast_sized_dims(
    in_shape: Sequence[int], dims: Sequence[int], out_shape: Sequence[int]
) -> list[int]:
    """The result dims of a `broadcast_in_dim` of an operand of `in_shape` (its dim i to
    `dims[i]`) into `out_shape` whose extent its `sizes` give: the dynamic ones the operand
    does not carry (new dims, or dims mapped from a static 1), in order."""
    source = {o: in_shape[i] for i, o in enumerate(dims)}
    return [d for d, ext in enumerate(out_shape) if ext == DYNAMIC_INDEX and source.get(d, 1) == 1]


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
        """The result dim each operand dim maps to."""
        return tuple(self.broadcast_dims.get_values())

    def sized_dims(self) -> list[int]:
        """The result dims whose extent comes from `sizes`, in order."""
        return broadcast_sized_dims(
            shape_of(self.input.type) or (), self.dims, shape_of(self.result.type) or ()
        )

    def verify_(self) -> None:
        _check_values(self)
        in_el, out_el = element_type(self.input.type), element_type(self.result.type)
        if in_el != out_el:
            raise VerifyException(
                f"'{self.name}' must keep the element type: operand {in_el}, result {out_el}"
            )
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
                f"'{self.name}' broadcast dims {list(dims)} out of range for rank {len(out_shape)}"
            )
        if any(b <= a for a, b in pairwise(dims)):
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


class RenumberOp(IRDLOperation, ABC):
    """An op that only renumbers dims: result dim i is operand dim `source_dims[i]`, and the
    operand dims no result dim comes from have extent 1. Kernels index the operand through it;
    nothing moves in memory by itself."""

    input = operand_def(base(TensorType))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    @property
    @abstractmethod
    def source_dims(self) -> tuple[int, ...]:
        """The operand dim each result dim is."""

    def result_extents(self, operand: Sequence[_Extent]) -> tuple[_Extent, ...]:
        """The result's extents from the operand's (ints, or any stand-ins for extents)."""
        return tuple(operand[d] for d in self.source_dims)

    def _check_result(self) -> None:
        """The result keeps the element type and has the operand's extents, renumbered."""
        _check_same_element(self, self.result)
        expected = self.result_extents(shape_of(self.input.type) or ())
        got = tuple(shape_of(self.result.type) or ())
        if got != expected:
            raise VerifyException(
                f"'{self.name}' result shape {format_shape(got)} must be {format_shape(expected)}"
            )


def _check_dims(op: IRDLOperation, dims: Sequence[int], what: str) -> None:
    """`dims` are dims of the operand: each in range, none twice."""
    rank = len(shape_of(op.operands[0].type) or ())
    for d in dims:
        if not 0 <= d < rank:
            raise VerifyException(
                f"'{op.name}' {what} {list(dims)}: {d} is out of range for rank {rank}"
            )
    if len(set(dims)) != len(dims):
        raise VerifyException(f"'{op.name}' {what} {list(dims)} name a dim twice")


class PermuteLikeOp(RenumberOp):
    """Reorders the dims of a tensor: result dim i is operand dim `dims[i]` (torch's
    `permute`): the one definition of `fusion.permute` and `host.permute`."""

    permutation = prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$input $permutation attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int]):
        shape = shape_of(input.type) or ()
        super().__init__(
            operands=[input],
            properties={"permutation": DenseArrayBase.from_list(i64, dims)},
            result_types=[TensorType(element_type(input.type), [shape[d] for d in dims])],
        )

    @property
    def source_dims(self) -> tuple[int, ...]:
        return tuple(self.permutation.get_values())

    def verify_(self) -> None:
        _check_values(self)
        rank = len(shape_of(self.input.type) or ())
        dims = self.source_dims
        if len(dims) != rank:
            raise VerifyException(
                f"'{self.name}' needs one dim per operand dim: got {len(dims)} for rank {rank}"
            )
        _check_dims(self, dims, "dims")
        self._check_result()


@irdl_op_definition
class PermuteOp(PermuteLikeOp):
    """Reorders the dims of a tensor (see `PermuteLikeOp`): kernels index the operand through
    it; an output that is a permute of an input (through views) is returned as a view of it.

    `%y = fusion.permute %x [1, 0] : tensor<4x?xf32> -> tensor<?x4xf32>`
    """

    name = "fusion.permute"


@irdl_op_definition
class SqueezeOp(RenumberOp):
    """Drops dims of extent 1 (`dims`, each static 1 in the operand's type): torch's and
    nvFuser's `squeeze`.

    `%y = fusion.squeeze %x [1] : tensor<?x1x?xf32> -> tensor<?x?xf32>`
    """

    name = "fusion.squeeze"

    squeezed = prop_def(DenseArrayBase.constr(i64))

    assembly_format = "$input $squeezed attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int]):
        kept = reduced_shape(shape_of(input.type) or (), dims, False)
        super().__init__(
            operands=[input],
            properties={"squeezed": DenseArrayBase.from_list(i64, sorted(dims))},
            result_types=[TensorType(element_type(input.type), kept)],
        )

    @property
    def dims(self) -> tuple[int, ...]:
        """The operand dims dropped."""
        return tuple(self.squeezed.get_values())

    @property
    def source_dims(self) -> tuple[int, ...]:
        rank = len(shape_of(self.input.type) or ())
        return tuple(d for d in range(rank) if d not in self.dims)

    def verify_(self) -> None:
        _check_values(self)
        shape = shape_of(self.input.type) or ()
        _check_dims(self, self.dims, "dims")
        if list(self.dims) != sorted(self.dims):
            raise VerifyException(f"'{self.name}' dims {list(self.dims)} must be sorted ascending")
        for d in self.dims:
            if shape[d] != 1:
                raise VerifyException(
                    f"'{self.name}' dim {d} has extent {format_shape([shape[d]])[1:-1]}; only "
                    "dims of static extent 1 can be squeezed"
                )
        self._check_result()


def kept_extents(
    target: Sequence[int], source: Sequence[int], kept: Sequence[int]
) -> tuple[int, ...]:
    """The extents of a reshape's dims that are not `kept` (kept dims hold the operand's extent
    at the same dim): `reshape_extents` of the other dims alone."""
    return reshape_extents(
        [e for d, e in enumerate(target) if d not in kept],
        [n for d, n in enumerate(source) if d not in kept],
    )


def reshape_target(
    target: Sequence[int], source: Sequence[int], kept: Sequence[int]
) -> tuple[int, ...]:
    """A reshape's result shape (`target`, its type's) for an operand of extents `source`, the
    `kept` dims holding the operand's extents there and a `?` besides inferred from the other
    dims (`ReshapeLikeOp.target`). Raises ReshapeError as `reshape_extents`."""
    if not kept:
        return tuple(target)
    try:
        rest = iter(kept_extents(target, source, kept))
    except ReshapeError:  # named with the whole shapes
        shown = [DYNAMIC_INDEX if d in kept else e for d, e in enumerate(target)]
        raise ReshapeError(
            f"cannot reshape {format_shape(source)} to {format_shape(shown)} keeping dims "
            f"{list(kept)}: the other dims hold different element counts"
        ) from None
    return tuple(source[d] if d in kept else next(rest) for d in range(len(target)))


class ReshapeLikeOp(IRDLOperation, ABC):
    """The operand's elements, in row-major order, in the result type's shape (torch's and
    nvFuser's `reshape`): the one definition of `fusion.reshape` and `host.reshape`.

    A result dim listed in `kept` has the operand's extent at the same dim (nvFuser's
    `reshape(x, [x.size(0), x.size(1), 32, 128])`: run-time extents carried through); one
    other `?` of the result is the extent inferred from the element count. `target` gives the
    result's extents for an operand's, all known.

    `%y = fusion.reshape %x kept [0] : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>`
    """

    input = operand_def(base(TensorType))
    result = result_def(base(TensorType))
    kept = opt_prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure())

    assembly_format = "$input (`kept` $kept^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute, kept: Sequence[int] = ()):
        properties = {"kept": DenseArrayBase.from_list(i64, list(kept))} if kept else {}
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    @property
    def kept_dims(self) -> tuple[int, ...]:
        """The result dims whose extents are the operand's at the same dim."""
        return () if self.kept is None else _ints(self.kept)

    def target(self, source: Sequence[int]) -> tuple[int, ...]:
        """The result type's shape for an operand of extents `source`: each kept dim the
        operand's extent there, and a `?` besides inferred from the other dims' elements (well
        defined where a kept dim is 0). Raises ReshapeError as `reshape_extents`."""
        return reshape_target(shape_of(self.result.type) or (), source, self.kept_dims)

    def verify_(self) -> None:
        """The element type is kept; a kept dim is a dim of both, of one extent (`?` in both
        where dynamic); at most one other `?` is left to infer; a static operand has a static
        result of as many elements."""
        _check_same_element(self, self.result)
        shape = shape_of(self.input.type) or ()
        result = shape_of(self.result.type) or ()
        kept = self.kept_dims
        for d in kept:
            if not 0 <= d < min(len(shape), len(result)):
                raise VerifyException(
                    f"'{self.name}' keeps dim {d}, which {format_shape(shape)} -> "
                    f"{format_shape(result)} do not both have"
                )
            if shape[d] != result[d]:
                raise VerifyException(
                    f"'{self.name}' keeps dim {d}, but its extents differ: {format_shape(shape)} "
                    f"-> {format_shape(result)}"
                )
        if len(set(kept)) != len(kept):
            raise VerifyException(f"'{self.name}' keeps {list(kept)}: a dim twice")
        inferred = sum(1 for d, e in enumerate(result) if e == DYNAMIC_INDEX and d not in kept)
        if inferred > 1:
            raise VerifyException(
                f"'{self.name}' result {format_shape(result)} may leave one extent to infer "
                f"(?){' besides the kept dims' if kept else ''}, not {inferred}"
            )
        rest = [n for d, n in enumerate(shape) if d not in kept]
        if DYNAMIC_INDEX in rest:
            if inferred and 0 in result:
                raise VerifyException(
                    f"'{self.name}' result {format_shape(result)} has a zero extent: the ? cannot "
                    "be inferred"
                )
            return
        if kept:  # the other dims are static: they reshape as a static operand's
            try:
                expected = kept_extents(result, shape, kept)
            except ReshapeError:
                raise VerifyException(
                    f"'{self.name}' cannot reshape {format_shape(shape)} to "
                    f"{format_shape(result)} keeping dims {list(kept)}: the other dims hold "
                    "different element counts"
                ) from None
            if inferred:
                raise VerifyException(
                    f"'{self.name}' result {format_shape(result)} must be static outside the kept "
                    f"dims, where the operand's are: {format_shape(expected)} there"
                )
            return
        try:
            expected = reshape_extents(result, shape)
        except ReshapeError as e:
            raise VerifyException(f"'{self.name}' {e}") from None
        if DYNAMIC_INDEX in result:
            raise VerifyException(
                f"'{self.name}' result {format_shape(result)} of a static operand must be "
                f"static: {format_shape(expected)}"
            )


@irdl_op_definition
class ReshapeOp(ReshapeLikeOp):
    """`reshape` in a fusion (see `ReshapeLikeOp`).

    `%y = fusion.reshape %x : tensor<?x768xf32> -> tensor<?x12x64xf32>`

    Kernels never index through a reshape: the segmenter leaves it between segments, and the
    host program takes it as a view of its operand (`host.reshape`), or of a copy where strides
    cannot give the new shape (see `fuser.dialects.views`).
    """

    name = "fusion.reshape"

    def __init__(self, input: SSAValue, shape: Sequence[int], kept: Sequence[int] = ()):
        super().__init__(input, TensorType(element_type(input.type), shape), kept)

    def verify_(self) -> None:
        _check_values(self)
        super().verify_()


class SliceLikeOp(IRDLOperation, ABC):
    """`range(start, stop, step)` along each dim of the operand: the one definition of
    `fusion.slice` and `host.slice` (nvFuser's `slice`, torch's `x[a:b:c, ...]`).

    `%y = fusion.slice %x [:, 32:, 0:8:2] : tensor<?x64x9xf32> -> tensor<?x32x4xf32>`

    Each entry is `start:stop:step` as in Python: an omitted start is 0, an omitted stop the end
    (held as `views.END`), an omitted step 1. Bounds are read as torch reads them (negative from
    the end, clamped to the extent); steps are at least 1. A static operand dim has the static
    result extent the bounds give; a dynamic one a `?`. See `fuser.dialects.views.slice_range`.
    """

    input = operand_def(base(TensorType))
    starts = prop_def(DenseArrayBase.constr(i64))
    stops = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    def __init__(
        self,
        input: SSAValue,
        starts: Sequence[int],
        stops: Sequence[int],
        steps: Sequence[int],
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            shape = shape_of(input.type) or ()
            extents = [
                DYNAMIC_INDEX if n == DYNAMIC_INDEX else slice_range(a, b, c, n)[1]
                for a, b, c, n in zip(starts, stops, steps, shape, strict=True)
            ]
            result_type = TensorType(element_type(input.type), extents)
        super().__init__(
            operands=[input],
            properties={
                "starts": DenseArrayBase.from_list(i64, starts),
                "stops": DenseArrayBase.from_list(i64, stops),
                "steps": DenseArrayBase.from_list(i64, steps),
            },
            result_types=[result_type],
        )

    def bounds(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(starts, stops, steps), one entry per dim."""
        return (
            tuple(self.starts.get_values()),
            tuple(self.stops.get_values()),
            tuple(self.steps.get_values()),
        )

    def verify_(self) -> None:
        _check_values(self)
        _check_same_element(self, self.result)
        shape = shape_of(self.input.type) or ()
        out = shape_of(self.result.type) or ()
        starts, stops, steps = self.bounds()
        if not shape:
            raise VerifyException(f"'{self.name}' operand must have rank 1 or more")
        if not len(starts) == len(stops) == len(steps) == len(shape) == len(out):
            raise VerifyException(
                f"'{self.name}' needs one start, stop and step per dim of its rank-{len(shape)} "
                f"operand and result: got {len(starts)}, {len(stops)}, {len(steps)} for a "
                f"rank-{len(out)} result"
            )
        try:
            check_slice_steps(steps)
        except SliceError as e:
            raise VerifyException(f"'{self.name}' {e}") from None
        for d, (a, b, c, n) in enumerate(zip(starts, stops, steps, shape, strict=True)):
            expected = DYNAMIC_INDEX if n == DYNAMIC_INDEX else slice_range(a, b, c, n)[1]
            if out[d] != expected:
                raise VerifyException(
                    f"'{self.name}' result dim {d} must be {format_shape([expected])[1:-1]} for "
                    f"[{_slice_text(a, b, c)}] of extent {format_shape([n])[1:-1]}, got "
                    f"{format_shape([out[d]])[1:-1]}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        entries = (_slice_text(a, b, c) for a, b, c in zip(*self.bounds(), strict=True))
        printer.print_string(f" [{', '.join(entries)}]")
        _print_attrs_and_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()

        def entry() -> tuple[int, int, int]:
            start = parser.parse_optional_integer(allow_boolean=False)
            parser.parse_punctuation(":")
            stop = parser.parse_optional_integer(allow_boolean=False)
            step = 1
            if parser.parse_optional_punctuation(":") is not None:
                step = parser.parse_integer(allow_boolean=False)
            return (0 if start is None else start, END if stop is None else stop, step)

        entries = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, entry)
        attrs, source, result = _parse_attrs_and_types(parser)
        starts, stops, steps = ([e[i] for e in entries] for i in range(3))
        op = cls(parser.resolve_operand(operand, source), starts, stops, steps, result)
        op.attributes |= attrs
        return op


def _print_attrs_and_types(printer: Printer, op: IRDLOperation) -> None:
    """The end of a custom format with one tensor operand: `{attrs} : <operand> -> <result>`."""
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.operands[0].type)
    printer.print_string(" -> ")
    printer.print_attribute(op.results[0].type)


def _parse_attrs_and_types(parser: Parser) -> tuple[dict[str, Attribute], Attribute, Attribute]:
    """What `_print_attrs_and_types` prints: (attributes, operand type, result type)."""
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    source = parser.parse_type()
    parser.parse_punctuation("->")
    return attrs, source, parser.parse_type()


def _slice_text(start: int, stop: int, step: int) -> str:
    """A slice entry as Python writes it: `:`, `32:`, `0:8:2`, `-3:-1`."""
    text = f"{start if start else ''}:{'' if stop == END else stop}"
    return text if step == 1 else f"{text}:{step}"


@irdl_op_definition
class SliceOp(SliceLikeOp):
    """A slice in a fusion (see `SliceLikeOp`). Kernels never index through it: the segmenter
    leaves it between segments, and the host program takes it as a view of its operand
    (`host.slice`), which needs no copy whatever the strides."""

    name = "fusion.slice"


VIEW_OPS = (ReshapeOp, SliceOp)
"""Ops whose result is a view of their operand: the segmenter leaves them between segments."""


# --------------------------------------------------------------------------------------------
# Resize ops: pad and cat
# --------------------------------------------------------------------------------------------


class ResizeOp(IRDLOperation, ABC):
    """An op that places its tensor operands at offsets along some dims of its result (nvFuser's
    resize ops, `pad` and `cat`): along a placed dim d, result element i is element
    `i - offset` of an operand where that lies in [0, extent), and the op says what fills the
    rest. A kernel computes such an operand shifted, reading it under a predicate
    (`iteration_space.Shifted`), so a pad or cat fuses with what it reads and what reads it.

    Extents along placed dims are static, so the offsets are constants of the kernel: a dynamic
    one is a verifier error for now.
    """

    result = result_def(base(TensorType))

    @abstractmethod
    def placements(self) -> list[tuple[SSAValue, dict[int, int]]]:
        """Each tensor operand, with its offset along each dim it is placed along."""

    def result_extents(self, shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
        """The result's extents for run-time operand `shapes` (tensor operands in order): the
        static type along resized dims, the first operand's elsewhere. Raises ValueError where
        operands disagree on a dim they share."""
        static = shape_of(self.result.type) or ()
        placed = {d for _, offsets in self.placements() for d in offsets}
        for k, shape in enumerate(shapes[1:], 1):
            for j, (a, b) in enumerate(zip(shapes[0], shape, strict=True)):
                if j not in placed and a != b:
                    raise ValueError(
                        f"operand #{k} has shape {list(shape)}, operand #0 {list(shapes[0])}: "
                        f"they differ in dim {j}"
                    )
        return tuple(static[j] if j in placed else e for j, e in enumerate(shapes[0]))


def _static_extent(op: IRDLOperation, what: str, value: SSAValue, dim: int) -> int:
    extent = (shape_of(value.type) or ())[dim]
    if extent == DYNAMIC_INDEX:
        raise VerifyException(
            f"'{op.name}' {what} has a dynamic extent in dim {dim}, which it resizes: resized "
            "dims must be static"
        )
    return extent


def _check_resized_result(op: IRDLOperation, expected: Sequence[int]) -> None:
    got = shape_of(op.results[0].type) or ()
    if tuple(got) != tuple(expected):
        raise VerifyException(
            f"'{op.name}' result must have shape {format_shape(expected)}, got {format_shape(got)}"
        )


@irdl_op_definition
class PadOp(ResizeOp):
    """`input` with `low[d]` elements of `value` before it and `high[d]` after it along each dim
    d (nvFuser's `pad`, torch's `constant_pad_nd`); a negative width removes elements instead.

    `%y = fusion.pad %x low [0, 2] high [0, 3] value %v : tensor<?x4xf32> -> tensor<?x9xf32>`

    `value` is a scalar of the input's element type. A padded dim is static in the operand and
    has extent `low + extent + high` (at least 0) in the result; other dims are the operand's.
    """

    name = "fusion.pad"

    input = operand_def(base(TensorType))
    value = operand_def()
    low = prop_def(DenseArrayBase.constr(i64))
    high = prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure())

    def __init__(
        self,
        input: SSAValue,
        value: SSAValue,
        low: Sequence[int],
        high: Sequence[int],
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            shape = shape_of(input.type) or ()
            extents = [
                n if a == b == 0 else n + a + b for n, a, b in zip(shape, low, high, strict=True)
            ]
            result_type = TensorType(element_type(input.type), extents)
        super().__init__(
            operands=[input, value],
            properties={
                "low": DenseArrayBase.from_list(i64, low),
                "high": DenseArrayBase.from_list(i64, high),
            },
            result_types=[result_type],
        )

    def widths(self) -> list[tuple[int, int]]:
        """(low, high) per dim."""
        return list(zip(self.low.get_values(), self.high.get_values(), strict=True))

    def placements(self) -> list[tuple[SSAValue, dict[int, int]]]:
        return [(self.input, {d: a for d, (a, b) in enumerate(self.widths()) if (a, b) != (0, 0)})]

    def verify_(self) -> None:
        _check_values(self)
        _check_same_element(self, self.result)
        shape = shape_of(self.input.type) or ()
        if not shape:
            raise VerifyException(f"'{self.name}' operand must have rank 1 or more")
        if self.value.type != element_type(self.input.type):
            raise VerifyException(
                f"'{self.name}' value must be a scalar of the operand's element type "
                f"{element_type(self.input.type)}, got {self.value.type}"
            )
        low, high = self.low.get_values(), self.high.get_values()
        if not len(low) == len(high) == len(shape):
            raise VerifyException(
                f"'{self.name}' needs a low and a high width per dim of its rank-{len(shape)} "
                f"operand: got {len(low)} and {len(high)}"
            )
        expected: list[int] = []
        for d, (n, a, b) in enumerate(zip(shape, low, high, strict=True)):
            if a == b == 0:
                expected.append(n)
                continue
            extent = _static_extent(self, "operand", self.input, d) + a + b
            if extent < 0:
                raise VerifyException(
                    f"'{self.name}' widths {a} and {b} leave dim {d} of extent {n} with "
                    f"{extent} elements"
                )
            expected.append(extent)
        _check_resized_result(self, expected)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f" low {list(self.low.get_values())}")
        printer.print_string(f" high {list(self.high.get_values())} value ")
        printer.print_operand(self.value)
        _print_attrs_and_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()

        def widths(keyword: str) -> list[int]:
            parser.parse_keyword(keyword)
            return parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )

        low, high = widths("low"), widths("high")
        parser.parse_keyword("value")
        value = parser.parse_unresolved_operand()
        attrs, source, result = _parse_attrs_and_types(parser)
        op = cls(
            parser.resolve_operand(operand, source),
            parser.resolve_operand(value, element_type(source)),
            low,
            high,
            result,
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class CatOp(ResizeOp):
    """Its operands one after another along `dim` (nvFuser's and torch's `cat`).

    `%y = fusion.cat %a, %b dim 1 : tensor<?x4xf32>, tensor<?x5xf32> -> tensor<?x9xf32>`

    Operands share the rank and element type, and their extents on every other dim; along `dim`
    they are static, and the result's extent is their sum. Another dim of the result is static
    where any operand's is.
    """

    name = "fusion.cat"

    inputs = var_operand_def(base(TensorType))
    dim = prop_def(IntegerAttr.constr(i64))

    traits = traits_def(Pure())

    assembly_format = "$inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: Attribute | None = None):
        if result_type is None:
            result_type = TensorType(element_type(inputs[0].type), cat_shape(inputs, dim))
        super().__init__(
            operands=[inputs], properties={"dim": IntegerAttr(dim, i64)}, result_types=[result_type]
        )

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def placements(self) -> list[tuple[SSAValue, dict[int, int]]]:
        placed: list[tuple[SSAValue, dict[int, int]]] = []
        offset = 0
        for x in self.inputs:
            placed.append((x, {self.axis: offset}))
            offset += (shape_of(x.type) or ())[self.axis]
        return placed

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException(f"'{self.name}' needs at least one operand")
        _check_values(self)
        _check_same_element(self, self.result)
        first = shape_of(self.inputs[0].type) or ()
        d = self.axis
        if not 0 <= d < len(first):
            raise VerifyException(f"'{self.name}' dim {d} is out of range for rank {len(first)}")
        for k, x in enumerate(self.inputs):
            shape = shape_of(x.type) or ()
            if element_type(x.type) != element_type(self.inputs[0].type):
                raise VerifyException(
                    f"'{self.name}' operands must share one element type: #0 is "
                    f"{element_type(self.inputs[0].type)}, #{k} {element_type(x.type)}"
                )
            if len(shape) != len(first):
                raise VerifyException(
                    f"'{self.name}' operands must share one rank: #0 has {len(first)}, #{k} "
                    f"{len(shape)}"
                )
            _static_extent(self, f"operand #{k}", x, d)
        shapes = [shape_of(x.type) or () for x in self.inputs]
        if (clash := cat_clash(shapes, d)) is not None:
            k, other, j = clash
            raise VerifyException(
                f"'{self.name}' operand #{k} has extent {shapes[k][j]} in dim {j}, operand "
                f"#{other} {shapes[other][j]}: only dim {d} may differ"
            )
        _check_resized_result(self, cat_shape(self.inputs, d))


def cat_clash(shapes: Sequence[Sequence[int]], dim: int) -> tuple[int, int, int] | None:
    """Two of a cat's operand shapes whose static extents differ on a dim other than `dim`, as
    (operand, the first operand static there, that dim), or None."""
    for j in range(len(shapes[0])):
        static = [k for k, shape in enumerate(shapes) if j != dim and shape[j] != DYNAMIC_INDEX]
        for k in static[1:]:
            if shapes[k][j] != shapes[static[0]][j]:
                return k, static[0], j
    return None


def cat_shape(inputs: Sequence[SSAValue], dim: int) -> tuple[int, ...]:
    """The shape of `cat(inputs, dim)`: the sum of the (static) extents along `dim`; another dim
    static where any operand's is."""
    shapes = [shape_of(x.type) or () for x in inputs]
    result: list[int] = []
    for j in range(len(shapes[0])):
        extents = [s[j] for s in shapes if j < len(s)]
        if j == dim:
            result.append(DYNAMIC_INDEX if DYNAMIC_INDEX in extents else sum(extents))
        else:
            result.append(next((e for e in extents if e != DYNAMIC_INDEX), DYNAMIC_INDEX))
    return tuple(result)


class IotaLikeOp(IRDLOperation, ABC):
    """`start + i * step` for i in [0, length): the one definition of `fusion.iota` and
    `host.iota` (nvFuser's `iota`, torch's `arange`).

    `%r = fusion.iota start 0 step 1 : tensor<6xi64>`, or with a run-time length
    `%r = fusion.iota(%n) start 0.5 step 2.0 : tensor<?xf32>`.

    `start` and `step` are finite numbers held as i64 for an integer result, f64 for a float
    one: a float iota is computed in f64 and rounded once to its type, an integer one in i64
    (and wrapped to i32). The length is the result's static extent, or the `index` operand where
    that extent is `?`.
    """

    length = opt_operand_def(IndexType)
    start = prop_def(base(IntegerAttr) | base(FloatAttr))
    step = prop_def(base(IntegerAttr) | base(FloatAttr))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    def __init__(
        self, start: float, step: float, result_type: TensorType, length: SSAValue | None = None
    ):
        held = F64 if isinstance(result_type.element_type, AnyFloat) else I64
        super().__init__(
            operands=[[length] if length is not None else []],
            properties={
                "start": ConstantOp.of(start, held).value,
                "step": ConstantOp.of(step, held).value,
            },
            result_types=[result_type],
        )

    def values(self) -> tuple[float, float]:
        """(start, step) as Python numbers."""
        return self.start.value.data, self.step.value.data

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "result", self.result.type, (F16, BF16, F32, F64, I32, I64))
        shape = shape_of(self.result.type) or ()
        if len(shape) != 1:
            raise VerifyException(
                f"'{self.name}' result must have rank 1, got {format_shape(shape)}"
            )
        held = F64 if isinstance(element_type(self.result.type), AnyFloat) else I64
        for name, attr in (("start", self.start), ("step", self.step)):
            if attr.type != held:
                raise VerifyException(
                    f"'{self.name}' {name} has type {type_name(attr.type)}, expected "
                    f"{type_name(held)} for a {type_name(element_type(self.result.type))} result"
                )
            if isinstance(attr, FloatAttr) and not math.isfinite(attr.value.data):
                raise VerifyException(f"'{self.name}' {name} must be finite, got {attr.value.data}")
        if (shape[0] == DYNAMIC_INDEX) != (self.length is not None):
            raise VerifyException(
                f"'{self.name}' takes a length operand exactly where its extent is ?: result "
                f"{format_shape(shape)}, {'a' if self.length is not None else 'no'} length operand"
            )

    def print(self, printer: Printer) -> None:
        if self.length is not None:
            printer.print_string("(")
            printer.print_operand(self.length)
            printer.print_string(")")
        for name, attr in (("start", self.start), ("step", self.step)):
            printer.print_string(f" {name} ")
            if isinstance(attr, FloatAttr):
                printer.print_float(attr.value.data, F64)
            else:
                printer.print_int(attr.value.data)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        length = None
        if parser.parse_optional_punctuation("(") is not None:
            length = parser.parse_operand(IndexType())
            parser.parse_punctuation(")")
        parser.parse_keyword("start")
        numbers_at = parser.pos
        start = parser.parse_number()
        parser.parse_keyword("step")
        step = parser.parse_number()
        numbers_end = parser.pos
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parsed = parser.parse_type()
        if not isinstance(parsed, TensorType):
            parser.raise_error(f"'{cls.name}' result must be a tensor type, got {parsed}")
        result = cast(TensorType[Attribute], parsed)
        el = result.element_type
        integers = isinstance(start, int) and isinstance(step, int)
        if not integers and not isinstance(el, AnyFloat):
            parser.raise_error(
                f"'{cls.name}' of {type_name(el)} takes integer start and "
                f"step, got {start} and {step}",
                numbers_at,
                numbers_end,
            )
        op = cls(start, step, result, length)
        op.attributes |= attrs
        return op


@irdl_op_definition
class IotaOp(IotaLikeOp):
    """An iota in a fusion (see `IotaLikeOp`). Kernels read it as a tensor: the segmenter leaves
    it between segments, and the host program materializes it once per signature
    (`host.iota`), so no kernel computes it on a call."""

    name = "fusion.iota"

    def length_dim(self) -> DimOp | None:
        """The `fusion.dim` the length is (None for a static length)."""
        return None if self.length is None else cast(DimOp, self.length.owner)

    def verify_(self) -> None:
        super().verify_()
        if self.length is not None and not isinstance(self.length.owner, DimOp):
            raise VerifyException(
                f"'{self.name}' length must be a fusion.dim: the segmenter and the host program "
                "take an iota's extent from the tensor it measures"
            )


def _check_index_along(
    op: IRDLOperation, input: SSAValue, index: SSAValue, dim: int
) -> tuple[int, ...]:
    """An index along `dim` of `input` (`take_along_axis`, `scatter`): the input's rank, `dim`
    in range, every other dim the input's extent. Returns the index's shape."""
    shape, index_shape = shape_of(input.type) or (), shape_of(index.type) or ()
    if len(index_shape) != len(shape):
        raise VerifyException(
            f"'{op.name}' index has rank {len(index_shape)}; it needs the input's rank {len(shape)}"
        )
    if not 0 <= dim < len(shape):
        raise VerifyException(f"'{op.name}' dim {dim} is out of range for rank {len(shape)}")
    for j, (a, b) in enumerate(zip(shape, index_shape, strict=True)):
        if j != dim and not dims_compatible(a, b):
            raise VerifyException(
                f"'{op.name}' index dim {j} has extent {b}, the input's {a}: only dim {dim} "
                "may differ"
            )
    return index_shape


@irdl_op_definition
class TakeAlongAxisOp(IRDLOperation):
    """`input` gathered along `dim` at `index` (nvFuser's `take_along_axis`, numpy's and
    torch's `take_along_dim`): `result[..., i, ...] = input[..., index[..., i, ...], ...]`.

    `%y = fusion.take_along_axis %x, %i[1] : tensor<?x9xf32>, tensor<?x1xi64> -> tensor<?x1xf32>`

    `index` (i32 or i64) has the input's rank and, on every other dim, its extent; the result
    has the index's shape (static where either operand is) and the input's element type. An
    index in [-extent, 0) counts from the end; one outside [-extent, extent) is clamped into
    [0, extent) (fuser's choice, as `take`'s: torch raises, and no kernel may read outside
    `input`). The pointwise kernel loads the input at the index (an `iteration_space.Indexed`
    dim), as it loads a `take`'s: one load per result element.
    """

    name = "fusion.take_along_axis"

    input = operand_def(base(TensorType))
    index = operand_def(base(TensorType))
    dim = prop_def(IntegerAttr.constr(i64))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input `,` $index `[` $dim `]` attr-dict `:` type($input) `,` type($index) "
        "`->` type($result)"
    )

    def __init__(self, input: SSAValue, index: SSAValue, dim: int):
        super().__init__(
            operands=[input, index],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[TensorType(element_type(input.type), gathered_shape(input, index, dim))],
        )

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        _check_values(self)
        _check_same_element(self, self.result)
        _check_element(self.name, "index", self.index.type, (I32, I64))
        _check_index_along(self, self.input, self.index, self.axis)
        expected = gathered_shape(self.input, self.index, self.axis)
        if tuple(shape_of(self.result.type) or ()) != expected:
            raise VerifyException(
                f"'{self.name}' result must have shape {format_shape(expected)}, got "
                f"{format_shape(shape_of(self.result.type) or ())}"
            )


def _other_dim_differs(shape: Sequence[int], index: Sequence[int], dim: int) -> int | None:
    """The first dim other than `dim` where run-time extents differ, or None."""
    return next(
        (j for j, (a, b) in enumerate(zip(shape, index, strict=True)) if j != dim and a != b), None
    )


def take_mismatch(shape: Sequence[int], index: Sequence[int], dim: int) -> str | None:
    """Why a `take_along_axis` along `dim` of run-time `shape` at an index of run-time `index`
    shape cannot run (another dim differs, or there is nothing to take), or None."""
    if (j := _other_dim_differs(shape, index, dim)) is not None:
        return f"cannot take {list(index)} indices from {list(shape)}: dim {j} differs"
    if shape[dim] == 0:
        return f"cannot take from dim {dim} of extent 0"
    return None


def gathered_shape(input: SSAValue, index: SSAValue, dim: int) -> tuple[int, ...]:
    """The shape of `take_along_axis(input, index, dim)`: the index's, each other dim static
    where either operand's is."""
    shape, index_shape = shape_of(input.type) or (), shape_of(index.type) or ()
    return tuple(
        b if j == dim or b != DYNAMIC_INDEX or j >= len(shape) else shape[j]
        for j, b in enumerate(index_shape)
    )


@irdl_op_definition
class ScatterOp(IRDLOperation):
    """`input` with `src` written along `dim` at `index` (nvFuser's and torch's `scatter`):
    `result[..., index[..., i, ...], ...] = src[..., i, ...]`, every other element `input`'s.

    `%y = fusion.scatter %x, %i, %s [1] : tensor<?x9xf32>, tensor<?x2xi64>, tensor<?x2xf32> ->
    tensor<?x9xf32>`

    `index` (i32 or i64) has the input's rank and, on every other dim, its extent; `src` is a
    tensor of the index's shape or a scalar, of the input's element type; the result has the
    input's type, whose dim `dim` may not be empty. An index in [-extent, 0) counts from the
    end; one outside [-extent, extent) writes nothing (fuser's choice: torch raises, and no
    kernel may write outside its output).
    Where several indices write one element, the largest of their values is written (torch
    leaves it unspecified; a NaN among them wins). `fuser-decompose` rewrites the op into a
    compare against an iota and max reductions over the index's dim `dim`: meant for a small
    extent of the index there (it costs the input's extent times the index's per row).
    """

    name = "fusion.scatter"

    input = operand_def(base(TensorType))
    index = operand_def(base(TensorType))
    src = operand_def()
    dim = prop_def(IntegerAttr.constr(i64))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input `,` $index `,` $src `[` $dim `]` attr-dict `:` type($input) `,` type($index) "
        "`,` type($src) `->` type($result)"
    )

    def __init__(self, input: SSAValue, index: SSAValue, src: SSAValue, dim: int):
        super().__init__(
            operands=[input, index, src],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[input.type],
        )

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "index", self.index.type, (I32, I64))
        index = _check_index_along(self, self.input, self.index, self.axis)
        el = element_type(self.input.type)
        if element_type(self.src.type) != el:
            raise VerifyException(
                f"'{self.name}' src has element type {type_name(element_type(self.src.type))}; "
                f"it must be the input's, {type_name(el)}"
            )
        src = shape_of(self.src.type)
        if src is not None and not shapes_compatible(src, index):
            raise VerifyException(
                f"'{self.name}' src has shape {format_shape(src)}; it must be a scalar or have "
                f"the index's shape {format_shape(index)}"
            )
        if self.result.type != self.input.type:
            raise VerifyException(
                f"'{self.name}' result has type {self.result.type}; it must be the input's, "
                f"{self.input.type}"
            )


def scatter_mismatch(
    shape: Sequence[int], index: Sequence[int], src: Sequence[int] | None, dim: int
) -> str | None:
    """Why a `scatter` along `dim` into run-time `shape` at an index of run-time `index` shape
    from a `src` of run-time shape (None: a scalar) cannot run, or None."""
    if (j := _other_dim_differs(shape, index, dim)) is not None:
        return f"cannot scatter {list(index)} indices into {list(shape)}: dim {j} differs"
    if src is not None and tuple(src) != tuple(index):
        return f"src has shape {list(src)}, the index {list(index)}"
    if shape[dim] == 0:
        return f"cannot scatter into dim {dim} of extent 0"
    return None


@irdl_op_definition
class TakeOp(IRDLOperation):
    """`input` indexed along `dim` by each element of `index` (numpy's `take`; nvFuser's
    `index_select`, `select` and `embedding_fwd`): the result's shape is the input's with dim
    `dim` replaced by the index's shape, and
    `result[a..., i..., b...] = input[a..., index[i...], b...]`.

    `%y = fusion.take %w, %i dim 0 : tensor<?x64xf32>, tensor<?x?xi64> -> tensor<?x?x64xf32>`

    `index` is a tensor (an embedding's token ids, an `index_select`'s 1-D list) or a scalar (a
    `select`: the dim is dropped), of i32 or i64. An index in [-extent, 0) counts from the end
    (torch's `select`); one outside [-extent, extent) is clamped into [0, extent) (fuser's
    choice, as `take_along_axis`'s: torch raises, and no kernel may read outside `input`).
    The pointwise kernel loads the input at the index it computed (an `iteration_space.Indexed`
    dim), so a row of an embedding table is one coalesced read.
    """

    name = "fusion.take"

    input = operand_def(base(TensorType))
    index = operand_def()
    dim = prop_def(IntegerAttr.constr(i64))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input `,` $index `dim` $dim attr-dict `:` type($input) `,` type($index) "
        "`->` type($result)"
    )

    def __init__(self, input: SSAValue, index: SSAValue, dim: int):
        super().__init__(
            operands=[input, index],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[
                TensorType(
                    element_type(input.type),
                    taken_shape(shape_of(input.type) or (), shape_of(index.type) or (), dim),
                )
            ],
        )

    @property
    def axis(self) -> int:
        return self.dim.value.data

    @property
    def index_rank(self) -> int:
        """The number of result dims the index gives (0 for a scalar index)."""
        return len(shape_of(self.index.type) or ())

    def verify_(self) -> None:
        _check_values(self)
        _check_same_element(self, self.result)
        _check_element(self.name, "index", self.index.type, (I32, I64))
        shape = shape_of(self.input.type) or ()
        if not 0 <= self.axis < len(shape):
            raise VerifyException(
                f"'{self.name}' dim {self.axis} is out of range for rank {len(shape)}"
            )
        expected = taken_shape(shape, shape_of(self.index.type) or (), self.axis)
        _check_resized_result(self, expected)


class RandomOp(IRDLOperation, ABC):
    """Random numbers of a counter-based generator (Philox4x32-10, as nvFuser's and curand's):
    element i of the result (its row-major index in the result's shape) is a function of
    (`seed`, `offset`, i) alone, never of how a kernel is scheduled.

    `%r = fusion.rand %seed, %offset sizes(%n) : tensor<?x128xf32>` (`sizes`: one `index` per
    dynamic result dim). For f32, element i is word `i % 4` of Philox at subsequence `i / 4`
    and counter `offset` under key `seed`; for f64, words `2 (i % 2)` and `2 (i % 2) + 1` at
    subsequence `i / 2` (`fuser.runtime.philox` states the conversions)."""

    seed = operand_def(I64)
    offset = operand_def(I64)
    sizes = var_operand_def(IndexType)
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = "$seed `,` $offset (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($result)"

    def __init__(
        self, seed: SSAValue, offset: SSAValue, result_type: TensorType, sizes: Sequence[SSAValue]
    ):
        super().__init__(operands=[seed, offset, sizes], result_types=[result_type])

    def sized_dims(self) -> list[int]:
        """The result dims whose extent comes from `sizes` (the dynamic ones), in order."""
        return [d for d, e in enumerate(shape_of(self.result.type) or ()) if e == DYNAMIC_INDEX]

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "result", self.result.type, FLOAT_COMPUTE_TYPES)
        dynamic = len(self.sized_dims())
        if len(self.sizes) != dynamic:
            raise VerifyException(
                f"'{self.name}' needs one size operand per dynamic result dim: {dynamic} "
                f"dynamic, {len(self.sizes)} given"
            )


@irdl_op_definition
class RandOp(RandomOp):
    """Uniform random numbers in [0, 1) (torch.rand)."""

    name = "fusion.rand"


@irdl_op_definition
class RandnOp(RandomOp):
    """Standard normal random numbers (torch.randn), by the Box-Muller transform."""

    name = "fusion.randn"


INDEXING_OPS = (TakeOp, TakeAlongAxisOp)
"""Ops that read their input at an index computed from another tensor: the pointwise kernel
loads it there (`iteration_space.Indexed`)."""


def taken_shape(
    shape: Sequence[_Extent], index: Sequence[_Extent], dim: int
) -> tuple[_Extent, ...]:
    """The shape of `take(input, index, dim)` for an input of `shape` and an index of shape
    `index` (() for a scalar index): the input's, dim `dim` replaced by the index's."""
    return (*shape[:dim], *index, *shape[dim + 1 :])


def take_from_empty(shape: Sequence[int], index: Sequence[int], dim: int) -> str | None:
    """Why a `take` along `dim` of run-time `shape` at an index of run-time shape `index`
    cannot run (there is nothing to take from), or None."""
    if shape[dim] == 0 and 0 not in index:
        return f"cannot take {list(index) or 'a scalar'} indices from dim {dim} of extent 0"
    return None


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

    def __init__(self, input: SSAValue, axes: Sequence[int], keepdim: bool, result_type: Attribute):
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
        """The reduced axes, ascending."""
        return tuple(self.axes.get_values())

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, NUMERIC_TYPES)
        _check_same_element(self, self.result)
        shape = shape_of(self.input.type) or ()
        _check_axes(self.name, self.reduction_axes, len(shape))
        _check_reduced_result(self, shape, self.result.type, self.keepdim is not None)


def _check_same_element(op: IRDLOperation, result: SSAValue) -> None:
    """`result` keeps the element type of the op's (first) operand."""
    el, got = element_type(op.operands[0].type), element_type(result.type)
    if got != el:
        raise VerifyException(f"'{op.name}' must keep the element type: operand {el}, result {got}")


def _check_reduced_result(
    op: ReductionOp | WelfordOp | VarMeanOp,
    shape: Sequence[int],
    result_t: Attribute,
    keepdim: bool,
) -> None:
    """`result_t` has the shape a reduction of `shape` over `op.axes` leaves."""
    expected = reduced_shape(shape, tuple(op.axes.get_values()), keepdim)
    got = shape_of(result_t) or ()
    if not shapes_compatible(expected, got):
        raise VerifyException(
            f"'{op.name}' result shape {format_shape(got)} does not match the reduced shape "
            f"{format_shape(expected)}"
        )


@irdl_op_definition
class SumOp(ReductionOp):
    """The sum over `axes`."""

    name = "fusion.sum"


@irdl_op_definition
class MaxOp(ReductionOp):
    """The maximum over `axes`."""

    name = "fusion.max"


@irdl_op_definition
class MinOp(ReductionOp):
    """The minimum over `axes`."""

    name = "fusion.min"


@irdl_op_definition
class ProdOp(ReductionOp):
    """The product over `axes` (1 over none: an empty row)."""

    name = "fusion.prod"


class ScanOp(IRDLOperation, ABC):
    """The inclusive scan of `input` along `dim` (torch's `cumsum`, `cumprod`, `cummax`,
    `cummin`; nvFuser's `scan`): `result[..., i, ...]` combines `input[..., 0..i, ...]`.

    `%y = fusion.cumsum %x along 1 : tensor<?x?xf32>`

    The result has the input's type, as nvFuser's scans keep it (the frontend computes f16 and
    bf16 in f32, as every fusion op does). Integers wrap; `cummax`/`cummin` carry a NaN to the
    end of the row, as torch's."""

    T: ClassVar = VarConstraint("T", base(TensorType))

    input = operand_def(T)
    dim = prop_def(IntegerAttr.constr(i64))
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$input `along` $dim attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, dim: int):
        super().__init__(
            operands=[input], properties={"dim": IntegerAttr(dim, i64)}, result_types=[input.type]
        )

    @property
    def axis(self) -> int:
        return self.dim.value.data

    @property
    def kind(self) -> str:
        """The combining function, as a reduction names it (`reduction_identity`)."""
        return SCAN_KINDS[type(self)]

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, NUMERIC_TYPES)
        rank = len(shape_of(self.input.type) or ())
        if not 0 <= self.axis < rank:
            raise VerifyException(f"'{self.name}' dim {self.axis} is out of range for rank {rank}")


@irdl_op_definition
class CumsumOp(ScanOp):
    """The running sum along `dim`."""

    name = "fusion.cumsum"


@irdl_op_definition
class CumprodOp(ScanOp):
    """The running product along `dim`."""

    name = "fusion.cumprod"


@irdl_op_definition
class CummaxOp(ScanOp):
    """The running maximum along `dim` (values only, as nvFuser's)."""

    name = "fusion.cummax"


@irdl_op_definition
class CumminOp(ScanOp):
    """The running minimum along `dim` (values only, as nvFuser's)."""

    name = "fusion.cummin"


SCAN_KINDS: dict[type[ScanOp], str] = {
    CumsumOp: "sum",
    CumprodOp: "prod",
    CummaxOp: "max",
    CumminOp: "min",
}
"""Each scan's combining function, named as `reduction_identity` names it."""


def topk_shape(shape: Sequence[_Extent], dim: int, k: int) -> tuple[_Extent | int, ...]:
    """The shape of a top-k's results: `shape` with `k` along `dim`."""
    return (*shape[:dim], k, *shape[dim + 1 :])


def _check_sort_dim(op: IRDLOperation, dim: int) -> int:
    rank = len(shape_of(op.operands[0].type) or ())
    if not 0 <= dim < rank:
        raise VerifyException(f"'{op.name}' dim {dim} is out of range for rank {rank}")
    return rank


@irdl_op_definition
class TopkOp(IRDLOperation):
    """The `k` largest elements along `dim` (without `largest`, the smallest) and their indices,
    in order: torch.topk with `sorted=True`, nvFuser's `topk`.

    `%v, %i = fusion.topk %x along 1 k(50) largest : tensor<?x?xf32> -> tensor<?x50xf32>,
    tensor<?x50xi64>`

    NaN is larger than every number, and -0.0 smaller than +0.0 (torch's radix selection);
    equal elements come in the order of their indices. `k` may not exceed the extent along
    `dim` (checked when the extent is known)."""

    name = "fusion.topk"

    input = operand_def(base(TensorType))
    dim = prop_def(IntegerAttr.constr(i64))
    k = prop_def(IntegerAttr.constr(i64))
    largest = opt_prop_def(UnitAttr)
    values = result_def(base(TensorType))
    indices = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input `along` $dim `k` `(` $k `)` (`largest` $largest^)? attr-dict `:` type($input) "
        "`->` type($values) `,` type($indices)"
    )

    def __init__(self, input: SSAValue, dim: int, k: int, largest: bool):
        shape = topk_shape(shape_of(input.type) or (), dim, k)
        super().__init__(
            operands=[input],
            properties={
                "dim": IntegerAttr(dim, i64),
                "k": IntegerAttr(k, i64),
                "largest": UnitAttr() if largest else None,
            },
            result_types=[TensorType(element_type(input.type), shape), TensorType(I64, shape)],
        )

    @property
    def axis(self) -> int:
        return self.dim.value.data

    @property
    def count(self) -> int:
        """`k`, as an int."""
        return self.k.value.data

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, NUMERIC_TYPES)
        _check_sort_dim(self, self.axis)
        shape = shape_of(self.input.type) or ()
        if self.count < 0:
            raise VerifyException(f"'{self.name}' k is {self.count}, expected k >= 0")
        if shape[self.axis] != DYNAMIC_INDEX and self.count > shape[self.axis]:
            raise VerifyException(
                f"'{self.name}' k ({self.count}) is more than the extent {shape[self.axis]} of "
                f"dim {self.axis}"
            )
        expected = topk_shape(shape, self.axis, self.count)
        _check_same_element(self, self.values)
        _check_element(self.name, "indices", self.indices.type, (I64,))
        for what, r in (("values", self.values), ("indices", self.indices)):
            got = shape_of(r.type) or ()
            if not shapes_compatible(expected, got) or got[self.axis] != self.count:
                raise VerifyException(
                    f"'{self.name}' {what} shape {format_shape(got)}, expected "
                    f"{format_shape(expected)}"
                )


@irdl_op_definition
class ArgsortOp(IRDLOperation):
    """The indices that sort `input` along `dim`, ascending (or `descending`): torch.argsort,
    nvFuser's `argsort`. Equal elements keep the order of their indices (a stable sort); NaN is
    larger than every number, as `fusion.topk` has it, and -0.0 equals +0.0 (torch's sort
    compares values, where its top-k selects on their bits).

    `%i = fusion.argsort %x along 1 descending : tensor<?x?xf32> -> tensor<?x?xi64>`"""

    name = "fusion.argsort"

    input = operand_def(base(TensorType))
    dim = prop_def(IntegerAttr.constr(i64))
    descending = opt_prop_def(UnitAttr)
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input `along` $dim (`descending` $descending^)? attr-dict `:` type($input) `->` "
        "type($result)"
    )

    def __init__(self, input: SSAValue, dim: int, descending: bool):
        super().__init__(
            operands=[input],
            properties={
                "dim": IntegerAttr(dim, i64),
                "descending": UnitAttr() if descending else None,
            },
            result_types=[TensorType(I64, shape_of(input.type) or ())],
        )

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, NUMERIC_TYPES)
        _check_sort_dim(self, self.axis)
        _check_element(self.name, "result", self.result.type, (I64,))
        shape, got = shape_of(self.input.type) or (), shape_of(self.result.type) or ()
        if not shapes_compatible(shape, got):
            raise VerifyException(
                f"'{self.name}' result shape {format_shape(got)}, expected {format_shape(shape)}"
            )


SORT_OPS = (TopkOp, ArgsortOp)
"""Ops that order their operand along one dim (the `sort` scheduler's)."""


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
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, FLOAT_COMPUTE_TYPES)
        el = element_type(self.input.type)
        if element_type(self.avg.type) != el or element_type(self.var_sum.type) != el:
            raise VerifyException(f"'{self.name}' avg and var_sum must have element type {el}")
        if element_type(self.count.type) != I64:
            raise VerifyException(f"'{self.name}' count must have element type i64")
        shape = shape_of(self.input.type) or ()
        _check_axes(self.name, tuple(self.axes.get_values()), len(shape))
        for r in (self.avg, self.var_sum, self.count):
            _check_reduced_result(self, shape, r.type, False)


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
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, FLOAT_COMPUTE_TYPES)
        for r in (self.var, self.mean):
            _check_same_element(self, r)
        if self.correction.value.data < 0:
            raise VerifyException(
                f"'{self.name}' correction must be non-negative, got {self.correction.value.data}"
            )
        shape = shape_of(self.input.type) or ()
        _check_axes(self.name, tuple(self.axes.get_values()), len(shape))
        for r in (self.var, self.mean):
            _check_reduced_result(self, shape, r.type, self.keepdim is not None)


@irdl_op_definition
class PartialSumOp(IRDLOperation):
    """Sums of chunks of one axis: the first half of a reduction split across kernels.

    `%p = fusion.partial_sum %x [0] splits(4) : tensor<?x?xf32> -> tensor<4x?xf32>` cuts axis 0
    of `%x` (extent n) into 4 chunks of `ceil(n / 4)` elements (the last ones shorter or empty)
    and sums each: the result is `%x`'s shape with that axis replaced by the splits, and a `sum`
    over it completes the sum of `%x` over the axis. The element type is kept.

    It exists so that a reduction with few outputs (a column sum of a tall matrix, the weight
    gradients of a norm's backward) can be spread over thread blocks, each summing its chunks,
    with a second kernel summing the chunks, as `split-k` does for a matmul's K:
    `split-reductions` writes it. The `inner_outer` scheduler takes it over rows (axis 0 of a
    2-D tensor); the `reduction` scheduler over the last axis (runs of a few long rows, a block
    each).
    """

    name = "fusion.partial_sum"

    input = operand_def(base(TensorType))
    axes = prop_def(DenseArrayBase.constr(i64))
    splits = prop_def(IntegerAttr.constr(i64))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input $axes `splits` `(` $splits `)` attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, axis: int, splits: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={
                "axes": DenseArrayBase.from_list(i64, [axis]),
                "splits": IntegerAttr(splits, i64),
            },
            result_types=[result_type],
        )

    @property
    def axis(self) -> int:
        """The axis cut into chunks."""
        return self.axes.get_values()[0]

    @property
    def split_count(self) -> int:
        return self.splits.value.data

    def verify_(self) -> None:
        _check_values(self)
        _check_element(self.name, "operand", self.input.type, NUMERIC_TYPES)
        _check_same_element(self, self.result)
        shape = shape_of(self.input.type) or ()
        axes = tuple(self.axes.get_values())
        _check_axes(self.name, axes, len(shape))
        if len(axes) != 1:
            raise VerifyException(f"'{self.name}' cuts one axis into chunks, got {list(axes)}")
        splits = self.split_count
        if splits < 1:
            raise VerifyException(f"'{self.name}' splits must be >= 1, got {splits}")
        expected = partial_sum_shape(shape, axes[0], splits)
        got = shape_of(self.result.type) or ()
        if not shapes_compatible(expected, got) or got[axes[0]] != splits:
            raise VerifyException(
                f"'{self.name}' result shape {format_shape(got)}, expected "
                f"{format_shape(expected)} (axis {axes[0]} replaced by the {splits} splits)"
            )


def partial_sum_shape(
    shape: Sequence[_Extent], axis: int, splits: int
) -> tuple[_Extent | int, ...]:
    """The shape a `partial_sum` of `shape` over `axis` into `splits` chunks leaves (extents
    may be ints or the symbolic extents of a pass)."""
    return (*shape[:axis], splits, *shape[axis + 1 :])


# --------------------------------------------------------------------------------------------
# Matmul
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """`[..., M, K] x [..., K, N] -> [..., M, N]`, accumulating in f32 for half operands.

    Leading batch dims must agree. Operands share one element type (f16, bf16, f32 or f64),
    which the result keeps.

    With `splits(s)` the op is the first half of a split-K matmul: K is cut into `s` chunks of
    `ceil(K / s)` (the last ones shorter or empty) and the result `[s, ..., M, N]` holds each
    chunk's partial product, unrounded in the accumulator type (f32, f64 for f64 operands); a
    `sum` over axis 0 completes it. `split-k` writes this form.
    """

    name = "fusion.matmul"

    lhs = operand_def(base(TensorType))
    rhs = operand_def(base(TensorType))
    splits = opt_prop_def(IntegerAttr.constr(i64))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs (`splits` `(` $splits^ `)`)? attr-dict `:` type($lhs) `,` type($rhs) "
        "`->` type($result)"
    )

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute, splits: int | None = None
    ):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={"splits": IntegerAttr(splits, i64)} if splits is not None else {},
        )

    @property
    def split_count(self) -> int | None:
        """The `splits` factor, or None for a plain matmul."""
        return None if self.splits is None else self.splits.value.data

    def verify_(self) -> None:
        _check_values(self)
        allowed = (F16, BF16, F32, F64)
        _check_element(self.name, "lhs", self.lhs.type, allowed)
        _check_element(self.name, "rhs", self.rhs.type, allowed)
        el, rel, resl = (element_type(v.type) for v in (self.lhs, self.rhs, self.result))
        splits = self.split_count
        expected_el = el if splits is None else (F64 if el == F64 else F32)
        if rel != el or resl != expected_el:
            what = (
                "operands and result must share one element type"
                if splits is None
                else (
                    f"operands must share one element type and the partial result be {expected_el}"
                )
            )
            raise VerifyException(f"'{self.name}' {what}, got {el}, {rel} -> {resl}")
        shapes: list[tuple[int, ...]] = [
            shape_of(v.type) or () for v in (self.lhs, self.rhs, self.result)
        ]
        a, b, r = shapes
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
        if splits is not None:
            if splits < 1:
                raise VerifyException(f"'{self.name}' splits must be >= 1, got {splits}")
            if r and r[0] != splits:
                raise VerifyException(
                    f"'{self.name}' partial result must have {splits} (the splits) as its static "
                    f"first dim, got {format_shape(r)}"
                )
            expected = (splits, *expected)
        if not shapes_compatible(expected, r):
            raise VerifyException(
                f"'{self.name}' result shape {format_shape(r)}, expected {format_shape(expected)}"
            )


# --------------------------------------------------------------------------------------------
# Stream parallelism
# --------------------------------------------------------------------------------------------

STREAM_AXIS = "fusion.stream_axis"
"""The discardable attribute (an i64) marking an axis of an op's results stream-parallel."""


class StreamAxisError(OpVerifyException):
    """A `fusion.stream_axis` that is not valid; `op` is the op carrying it (fuser-opt reports
    the error at that op, even when the verifier of the enclosing fusion found it)."""


def stream_axis(op: Operation) -> int | None:
    """The stream-parallel axis of `op`'s results, or None (the attribute's value unchecked:
    `verify_stream_axis` checks it)."""
    attr = op.attributes.get(STREAM_AXIS)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


ELEMENTWISE_OPS = (UnaryOp, UnaryTestOp, GeluOp, BinaryOp, WhereOp, CastOp, SetOp)
"""Pointwise ops whose tensor operands have the result's shape (no broadcast, no renumbering;
a `segment_set` is a boundary the user asked for): a stream-parallel one is sliced along the
result's axis, and views commute with them (`hoist_views`)."""


def stream_operand_axes(op: Operation, axis: int) -> tuple[int | None, ...]:
    """For `op` computed slice by slice along `axis` of its results: the axis each operand is
    sliced along at the same index, or None for an operand every slice reads whole.

    Raises VerifyException (naming the op) when `axis` is not a full logical axis of the results
    along which the op's slices are computed by the same op on slices: out of range, a scalar
    result, a dim a reduction reduces (with `keepdim`), a scan's or sort's dim, a
    `broadcast_in_dim` dim expanded from extent 1, a matmul's M, N or split dim, or an op without
    slices (`segment_set`, `segment`, `constant`, `dim`).
    """
    where = f"'{op.name}' {STREAM_AXIS} {axis}"
    shapes = [shape_of(r.type) for r in op.results]
    if not op.results or any(s is None for s in shapes):
        got = ", ".join(str(r.type) for r in op.results) or "none"
        raise VerifyException(f"'{op.name}' {STREAM_AXIS} needs tensor results, got {got}")
    rank = len(shapes[0] or ())
    if not 0 <= axis < rank:
        raise VerifyException(
            f"{where} is out of range for its result {op.results[0].type} (rank {rank})"
        )
    if isinstance(op, ELEMENTWISE_OPS):
        return tuple(axis if isinstance(o.type, TensorType) else None for o in op.operands)
    if isinstance(op, BroadcastInDimOp):
        dims = op.dims
        if len(dims) != len(shape_of(op.input.type) or ()):
            op.verify_()  # the op's own rule, checked before the stream axis is
        if axis not in dims:
            return (None, *(None for _ in op.sizes))  # a new dim: every slice reads it all
        i = dims.index(axis)
        if (shape_of(op.input.type) or ())[i] == 1 and (shapes[0] or ())[axis] != 1:
            raise VerifyException(
                f"{where} is expanded from extent 1 (operand dim {i}): a stream axis must be "
                "carried by the operand or be a new dim"
            )
        return (i, *(None for _ in op.sizes))
    if isinstance(op, ReductionOp | WelfordOp | VarMeanOp):
        reduced = tuple(op.axes.get_values())
        keep = getattr(op, "keepdim", None) is not None
        if keep:
            if axis in reduced:
                raise VerifyException(
                    f"{where} is a reduced dim: a stream axis must be one the reduction keeps"
                )
            return (axis,)
        kept = [d for d in range(rank + len(reduced)) if d not in reduced]
        return (kept[axis],)
    if isinstance(op, ScanOp | TopkOp | ArgsortOp):
        if axis == op.axis:
            walk = "scanned" if isinstance(op, ScanOp) else "sorted"
            raise VerifyException(
                f"{where} is the {walk} dim: a stream axis must be one the op does not walk"
            )
        return (axis,)
    if isinstance(op, MatmulOp):
        if op.split_count is not None:
            raise VerifyException(f"{where}: a split-K partial cannot be stream-parallel")
        if axis >= rank - 2:
            raise VerifyException(
                f"{where} is {'M' if axis == rank - 2 else 'N'}: a stream axis of a matmul must "
                f"be a batch dim (one of the first {rank - 2})"
            )
        return (axis, axis)
    raise VerifyException(f"'{op.name}' cannot be stream-parallel ({STREAM_AXIS})")


def verify_stream_axis(op: Operation) -> None:
    """Checks the `fusion.stream_axis` attribute of `op` (see `stream_operand_axes`); raises a
    StreamAxisError located at `op`."""
    attr = op.attributes.get(STREAM_AXIS)
    if not isinstance(attr, IntegerAttr) or attr.type != i64:
        raise StreamAxisError(op, f"'{op.name}' {STREAM_AXIS} must be an i64, got {attr}")
    try:
        stream_operand_axes(op, attr.value.data)
    except VerifyException as e:
        raise StreamAxisError(op, str(e)) from None


# --------------------------------------------------------------------------------------------
# Sharding over devices
# --------------------------------------------------------------------------------------------

SHARDING = "fusion.sharding"
"""The discardable attribute (a `#fusion.sharding`) giving the devices an op's results live on
and the axis they are split along."""

INPUT_SHARDINGS = "fusion.input_shardings"
"""The discardable attribute of a `fusion.fusion` (an array of `#fusion.sharding`, one per input)
giving its inputs' shardings."""


@irdl_attr_definition
class ShardingAttr(ParametrizedAttribute):
    """Where a tensor lives on a multi-GPU run: `#fusion.sharding<mesh [0, 1], axis 1>`.

    `mesh` lists the devices (global ranks, one process per GPU) that hold the tensor, as
    nvFuser's `DeviceMesh`. With `axis a` the tensor is split evenly along its dim `a` over the
    mesh, in mesh order (nvFuser's `axis(a).parallelize(ParallelType.mesh_x)`): each device holds
    an extent of `n / len(mesh)`; without an axis every device of the mesh holds all of it
    (replicated). Types and extents in a sharded fusion are the global ones; `fuser-shard` makes
    each device's program of its local pieces.
    """

    name = "fusion.sharding"

    mesh: ArrayAttr[IntAttr]
    axis: IntAttr
    """The split axis, or -1 for a replicated tensor."""

    def __init__(self, mesh: Sequence[int], axis: int | None = None):
        super().__init__(ArrayAttr(IntAttr(d) for d in mesh), IntAttr(-1 if axis is None else axis))

    @property
    def devices(self) -> tuple[int, ...]:
        """The mesh: the global ranks holding the tensor, in order."""
        return tuple(d.data for d in self.mesh.data)

    @property
    def split_axis(self) -> int | None:
        """The axis the tensor is split along, or None when it is replicated."""
        return None if self.axis.data < 0 else self.axis.data

    def with_axis(self, axis: int | None) -> ShardingAttr:
        """The same mesh, split along `axis` (None: replicated)."""
        return ShardingAttr(self.devices, axis)

    def __str__(self) -> str:
        mesh = ", ".join(map(str, self.devices))
        axis = "" if self.split_axis is None else f", axis {self.split_axis}"
        return f"#fusion.sharding<mesh [{mesh}]{axis}>"

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"mesh [{', '.join(map(str, self.devices))}]")
            if self.split_axis is not None:
                printer.print_string(f", axis {self.split_axis}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[ArrayAttr[IntAttr], IntAttr]:
        with parser.in_angle_brackets():
            parser.parse_keyword("mesh")
            start = parser.pos
            devices = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: parser.parse_integer(allow_boolean=False),
                " in a sharding's mesh",
            )
            if (error := mesh_error(devices)) is not None:
                parser.raise_error(f"#fusion.sharding: {error}", start, parser.pos)
            axis = -1
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("axis")
                axis = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return ArrayAttr(IntAttr(d) for d in devices), IntAttr(axis)

    def verify(self) -> None:
        if (error := mesh_error(self.devices)) is not None:
            raise VerifyException(f"{self}: {error}")
        if self.axis.data < -1:
            raise VerifyException(f"{self} has a negative axis")


def mesh_error(devices: Sequence[int]) -> str | None:
    """Why `devices` is not a device mesh (empty, a negative rank, a rank twice), or None."""
    if not devices:
        return "a mesh needs at least one device"
    if any(d < 0 for d in devices):
        return f"mesh {list(devices)} has a negative device; devices are ranks from 0"
    if len(set(devices)) != len(devices):
        return f"mesh {list(devices)} lists a device twice; a mesh's devices are distinct"
    return None


class ShardingAttrError(OpVerifyException):
    """A `fusion.sharding` that does not fit the op carrying it (fuser-opt reports the error at
    that op, even when the verifier of the enclosing fusion found it)."""


def sharding(op: Operation) -> ShardingAttr | None:
    """The sharding `op`'s results were given, or None (checked by `verify_shardings`)."""
    attr = op.attributes.get(SHARDING)
    return attr if isinstance(attr, ShardingAttr) else None


def input_shardings(fusion: FusionOp) -> tuple[ShardingAttr, ...] | None:
    """The shardings of `fusion`'s inputs, or None when it gives none."""
    attr = fusion.attributes.get(INPUT_SHARDINGS)
    if not isinstance(attr, ArrayAttr):
        return None
    return tuple(cast(ArrayAttr[ShardingAttr], attr).data)


def is_sharded(fusion: FusionOp) -> bool:
    """Whether `fusion` says where its tensors live (any `fusion.sharding` or input shardings):
    then it runs on a mesh of devices, through `fuser-shard`."""
    return bool(input_shardings(fusion)) or any(
        SHARDING in op.attributes for op in fusion.body.walk()
    )


def sharding_fits(s: ShardingAttr, t: Attribute, what: str) -> str | None:
    """Why sharding `s` cannot describe a value of type `t` (`what` names the value), or None."""
    axis = s.split_axis
    if not isinstance(t, TensorType):
        return None if axis is None else f"{what} is the scalar {t}; a scalar cannot be split"
    if axis is None:
        return None
    shape = t.get_shape()
    if axis >= len(shape):
        return f"{what} of type {t} (rank {len(shape)}) cannot be split along axis {axis}"
    n = len(s.devices)
    if shape[axis] != DYNAMIC_INDEX and shape[axis] % n:
        return (
            f"{what} of type {t} cannot be split along axis {axis} over {n} devices: "
            f"{shape[axis]} is not a multiple of {n}"
        )
    return None


def verify_shardings(fusion: FusionOp) -> None:
    """Checks `fusion.input_shardings` of `fusion` and every `fusion.sharding` in it: a
    `#fusion.sharding` each, one per input, an axis in range of the tensor's rank whose static
    extent the mesh divides (raises VerificationError located at the op)."""
    attr = fusion.attributes.get(INPUT_SHARDINGS)
    if attr is not None:
        if not isinstance(attr, ArrayAttr) or not all(
            isinstance(a, ShardingAttr) for a in cast(ArrayAttr[Attribute], attr).data
        ):
            raise VerifyException(
                f"'{fusion.display_name}' {INPUT_SHARDINGS} must be an array of "
                f"#fusion.sharding, got {attr}"
            )
        given = input_shardings(fusion) or ()
        if len(given) != len(fusion.inputs):
            raise VerifyException(
                f"'{fusion.display_name}' {INPUT_SHARDINGS} has {len(given)} entries for "
                f"{len(fusion.inputs)} inputs"
            )
        for i, (s, arg) in enumerate(zip(given, fusion.inputs, strict=True)):
            if (why := sharding_fits(s, arg.type, f"input #{i}")) is not None:
                raise VerifyException(f"'{fusion.display_name}' {INPUT_SHARDINGS}: {why}")
    for op in fusion.body.walk():
        attr = op.attributes.get(SHARDING)
        if attr is None:
            continue
        if not isinstance(attr, ShardingAttr):
            raise ShardingAttrError(
                op, f"'{op.name}' {SHARDING} must be a #fusion.sharding, got {attr}"
            )
        tensors = [r for r in op.results if isinstance(r.type, TensorType)]
        if not tensors:
            raise ShardingAttrError(op, f"'{op.name}' {SHARDING} needs a tensor result")
        for i, r in enumerate(tensors):
            if (why := sharding_fits(attr, r.type, f"result #{i}")) is not None:
                raise ShardingAttrError(op, f"'{op.name}' {SHARDING}: {why}")


Fusion = Dialect(
    "fusion",
    [
        FusionOp,
        OutputOp,
        SegmentOp,
        YieldOp,
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
        AcosOp,
        AcoshOp,
        AsinOp,
        AsinhOp,
        AtanOp,
        AtanhOp,
        CoshOp,
        SinhOp,
        TanOp,
        ErfcOp,
        ErfinvOp,
        ErfcinvOp,
        Exp2Op,
        Expm1Op,
        Log10Op,
        Log1pOp,
        Log2Op,
        LgammaOp,
        FracOp,
        CeilOp,
        FloorOp,
        RoundOp,
        TruncOp,
        SignOp,
        BitwiseNotOp,
        IsFiniteOp,
        IsInfOp,
        IsNanOp,
        IsNegInfOp,
        IsPosInfOp,
        SignbitOp,
        GeluOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        PowOp,
        MaximumOp,
        MinimumOp,
        Atan2Op,
        NextafterOp,
        FmodOp,
        RemainderOp,
        GcdOp,
        BitwiseAndOp,
        BitwiseOrOp,
        BitwiseXorOp,
        ShiftLeftOp,
        ShiftRightOp,
        LogicalShiftRightOp,
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
        PermuteOp,
        SqueezeOp,
        ReshapeOp,
        IotaOp,
        SliceOp,
        PadOp,
        CatOp,
        TakeAlongAxisOp,
        TakeOp,
        ScatterOp,
        RandOp,
        RandnOp,
        SumOp,
        MaxOp,
        MinOp,
        ProdOp,
        CumsumOp,
        CumprodOp,
        CummaxOp,
        CumminOp,
        TopkOp,
        ArgsortOp,
        WelfordOp,
        VarMeanOp,
        PartialSumOp,
        MatmulOp,
    ],
    [GeluApproximationAttr, ShardingAttr],
)
