"""Op shapes the dialects share (undecorated bases; each dialect names its ops).

- `FuncLikeOp`: `fusion.fusion`, `kernel.func` and `host.program` -- a symbol, a signature and one
  block whose arguments are the inputs, written like `func.func` (`@name(%x: T, ...) -> (R, ...)
  attributes {...} { ... }`) and parsed and printed with xDSL's func-like helpers.
- `TensorDimOp`: `fusion.dim` and `host.dim` -- the run-time extent of one dim of a tensor.
- `op_text`: an op as the text `fuser-opt` prints (what dumps, records and introspection show).
- `verify_dominance`: every operand is defined before its use (xDSL 0.74 does not check SSA
  dominance), run by the verifier of every func-like op, so `op.verify()` in the Python API and
  `fuser-opt` both reject a use before its definition.

The dialects add their own rules in `verify_`.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from io import StringIO
from typing import ClassVar, Self

from xdsl.dialects.builtin import FunctionType, IndexType, IntegerAttr, StringAttr, TensorType, i64
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    OpResult,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    base,
    lazy_traits_def,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException


class OpVerifyException(VerifyException):
    """A verifier error about an op nested in the one whose verifier found it: `op` is the op it
    is about, so `fuser-opt` reports the error at that op."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


def op_text(op: Operation) -> str:
    """`op` in its custom syntax, as `fuser-opt` prints it, ending with a newline."""
    out = StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue() + "\n"


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def verify_dominance(region: Region) -> None:
    """Raises OpVerifyException at the first op of `region` (nested ops included) that uses a
    value not defined before it: by an earlier op of its block or of an enclosing block, or as an
    argument of its block or of an enclosing one. Values of the other blocks of a multi-block
    region are taken as visible (no op of ours has one; a CFG dominance check is not needed).
    An op that is IsolatedFromAbove sees nothing from outside its regions."""
    visible: set[SSAValue] = set()

    def visit(region: Region) -> None:
        added: list[SSAValue] = []
        for block in region.blocks:
            added.extend(block.args)
            if len(region.blocks) > 1:
                added.extend(r for op in block.ops for r in op.results)
        visible.update(added)
        for block in region.blocks:
            for op in block.ops:
                for i, operand in enumerate(op.operands):
                    if operand not in visible:
                        raise OpVerifyException(op, _use_before_definition(op, i, operand))
                for nested in op.regions:
                    if op.has_trait(IsolatedFromAbove):
                        outer = set(visible)
                        visible.clear()
                        visit(nested)
                        visible.update(outer)
                    else:
                        visit(nested)
                visible.update(op.results)
                added.extend(op.results)
        visible.difference_update(added)

    visit(region)


def _use_before_definition(op: Operation, index: int, operand: SSAValue) -> str:
    where = f"'{op.name}' operand #{index} ({_value_name(operand)})"
    if isinstance(operand, OpResult) and operand.op is op:
        return f"{where} is its own result"
    if isinstance(operand, OpResult | BlockArgument):
        return f"{where} is used before its definition or outside the region that defines it"
    return f"{where} is not defined where it is used"  # a parser's unresolved forward reference


class FuncLikeOp(IRDLOperation, ABC):
    """A symbol with a signature and a single-block body (undecorated: subclasses name the op)."""

    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    body = region_def("single_block")

    traits = lazy_traits_def(lambda: (SymbolOpInterface(), IsolatedFromAbove()))

    PRINT_EMPTY_OUTPUTS: ClassVar[bool] = True
    """Whether `-> ()` is printed for a signature without results."""

    def __init__(
        self,
        name: str,
        input_types: Sequence[Attribute],
        output_types: Sequence[Attribute],
        body: Region | None = None,
        properties: dict[str, Attribute | None] | None = None,
    ):
        if body is None:
            body = Region(Block(arg_types=input_types))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(input_types, output_types),
                **(properties or {}),
            },
            regions=[body],
        )

    @property
    def args(self) -> Sequence[SSAValue]:
        """The block arguments: the inputs, in order."""
        return self.body.block.args

    @property
    def display_name(self) -> str:
        """How messages name this op: `fusion.fusion @layer_norm`."""
        return f"{self.name} @{self.sym_name.data}"

    def verify_func_like(self) -> None:
        """The block arguments have the signature's input types, and every value of the body is
        defined before its uses (`verify_dominance`)."""
        if tuple(a.type for a in self.args) != tuple(self.function_type.inputs.data):
            raise VerifyException(
                f"'{self.display_name}' block argument types do not match its signature"
            )
        verify_dominance(self.body)

    @classmethod
    def parse_signature(
        cls, parser: Parser
    ) -> tuple[str, list[Attribute], list[Attribute], Region, dict[str, Attribute]]:
        """Parses `@name(%x: T, ...) -> (...) attributes {...} { ... }`; errors point at `@name`."""
        start = parser.pos
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type")
        )
        symbol_end = start + 1 + len(name)
        if arg_attrs is not None or res_attrs is not None:
            parser.raise_error(
                f"{cls.name} takes no argument or result attributes", start, symbol_end
            )
        if not region.blocks:
            parser.raise_error(f"{cls.name} needs a body", start, symbol_end)
        return name, list(inputs), list(outputs), region, dict(extra.data) if extra else {}

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name, inputs, outputs, region, attributes = cls.parse_signature(parser)
        op = cls(name, inputs, outputs, region)
        op.attributes |= attributes
        return op

    def printed_attributes(self) -> dict[str, Attribute]:
        """The attributes shown in the `attributes {...}` dict of the custom syntax."""
        return dict(self.attributes)

    def print(self, printer: Printer) -> None:
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.printed_attributes(),
            reserved_attr_names=("sym_name", "function_type"),
            print_empty_outputs=self.PRINT_EMPTY_OUTPUTS,
        )


class TensorDimOp(IRDLOperation, ABC):
    """The run-time extent of one dim of a tensor: `%n = <dialect>.dim %x[1] : tensor<?x?xf32>`."""

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
        assert isinstance(self.input.type, TensorType)
        rank = self.input.type.get_num_dims()
        axis = self.axis.value.data
        if not 0 <= axis < rank:
            raise VerifyException(f"'{self.name}' axis {axis} is out of range for rank {rank}")
