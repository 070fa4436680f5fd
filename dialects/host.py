"""The `host` dialect: the program around kernels, as the host runs it over CUDA streams.

A `host.program` takes and returns builtin ranked tensors (static or `?` dims) and scalars. Its
body allocates device tensors (`host.allocate`, `host.deallocate`), takes extents (`host.dim`,
then `arith` on `index`), asks kernels for their grids (`host.grid`), launches kernels
(`host.launch`), loops (`host.for`), takes views (`host.alias_select`, `host.reshape`,
`host.slice`, `host.permute`) and holds constants (`host.iota`). A tensor value is a device buffer
with sizes and strides (in elements): the evaluator passes it to a kernel as the `Tensor<T, N>`
struct of a `!kernel.tensor<T, N>` parameter. A program may return a view of an argument (an
output that is a view of a fusion input, as nvFuser returns it): the evaluator hands back a view
of the caller's tensor.

Work is issued on the *current stream*, a piece of evaluator state: `host.get_current_stream`,
`host.set_current_stream`, `host.stream %i` (a stream of the evaluator's pool) and
`host.synchronize %s` (the current stream waits for the work issued so far on `%s`, through an
event; the host does not block) let a program spread independent launches over streams. A
launch may also name its stream with `on %s`.

Multi-GPU programs (nvFuser's multidevice host IR) run one program per rank; each rank's program
names the ranks it talks to. Communication ops (`host.allreduce`, `host.reduce_scatter`,
`host.allgather`, `host.broadcast` over a `mesh` of ranks, `host.send` and `host.recv` between
two) issue an NCCL call on the current stream, or on `%s` with `on %s`, and return a
`!host.work`, the handle of the communication in flight. They are asynchronous: their results
are valid on the current stream only after `host.wait %w` of their work (the current stream
waits for the communication through an event; the host does not block). `host.allreduce`
reduces in place into its operands' buffers, so it must be each operand's only use; the others
write into tensors the runtime allocates (so a receiving rank's result type must be static),
except on a broadcast's root, whose result is its operand. `host.run_fusion` runs
a whole `fusion.fusion` of the module on the current stream (nvFuser's PostOnStream of a
HostUnit): a program's stages of computation, between its communications.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    MemoryAllocEffect,
    MemoryFreeEffect,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    SymbolTable,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from fuser.dialects.common import FuncLikeOp, TensorDimOp
from fuser.dialects.fusion import (
    ELEMENT_TYPES,
    FusionOp,
    IotaLikeOp,
    PermuteLikeOp,
    ReshapeLikeOp,
    SliceLikeOp,
    format_shape,
    mesh_error,
)
from fuser.dialects.kernel import FuncOp as KernelFuncOp
from fuser.dialects.kernel import ReduceKind, TensorParamType

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)

# --------------------------------------------------------------------------------------------
# Types and the rules on values
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class StreamType(ParametrizedAttribute, TypeAttribute):
    """A CUDA stream of the evaluator: `!host.stream`."""

    name = "host.stream"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        """None: xDSL's default reads any `<...>` and fails outside a diagnostic when the
        count differs from the type's."""
        if parser.parse_optional_punctuation("<") is not None:
            parser.raise_error("!host.stream takes no parameters")
        return ()


@irdl_attr_definition
class WorkType(ParametrizedAttribute, TypeAttribute):
    """The handle of one communication in flight: `!host.work` (see `host.wait`)."""

    name = "host.work"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is not None:
            parser.raise_error("!host.work takes no parameters")
        return ()


@irdl_attr_definition
class WorkspaceType(ParametrizedAttribute, TypeAttribute):
    """One call's block of device memory that a program's intermediates are laid out in:
    `!host.workspace` (see `host.workspace`)."""

    name = "host.workspace"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is not None:
            parser.raise_error("!host.workspace takes no parameters")
        return ()


def _is_tensor(t: Attribute) -> bool:
    return isinstance(t, TensorType) and t.element_type in ELEMENT_TYPES


def _is_scalar(t: Attribute) -> bool:
    return t in ELEMENT_TYPES or isinstance(t, IndexType)


def _check_tensor(op_name: str, what: str, t: Attribute) -> None:
    if not _is_tensor(t):
        raise VerifyException(
            f"'{op_name}' {what} has type {t}, expected a ranked tensor of f16, bf16, f32, "
            "f64, i32, i64 or i1"
        )


def _check_sizes(op_name: str, t: TensorType, sizes: Sequence[SSAValue]) -> None:
    """A tensor made from `index` extents: one per dynamic dim of `t`."""
    dynamic = sum(1 for d in t.get_shape() if d == DYNAMIC_INDEX)
    if len(sizes) != dynamic:
        raise VerifyException(
            f"'{op_name}' needs one size operand per dynamic dim of {t}: expected {dynamic}, "
            f"got {len(sizes)}"
        )


def _constant_index(value: SSAValue) -> int | None:
    """The value of an integer `arith.constant`, or None."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


# --------------------------------------------------------------------------------------------
# The program: host.program and host.return
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class ProgramOp(FuncLikeOp):
    """A host program: its arguments and results are tensors and scalars.

    `host.program @name(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) { ... }`
    """

    name = "host.program"

    def verify_(self) -> None:
        self.verify_func_like()
        name = self.display_name
        block = self.body.block
        inputs = self.function_type.inputs.data
        for what, types in (("argument", inputs), ("result", self.function_type.outputs.data)):
            for i, t in enumerate(types):
                if not _is_tensor(t) and not _is_scalar(t):
                    raise VerifyException(
                        f"'{name}' {what} #{i} has type {t}, expected a ranked tensor or a "
                        "scalar of f16, bf16, f32, f64, i32, i64, i1 or index"
                    )
        if not isinstance(block.last_op, ReturnOp):
            raise VerifyException(f"'{name}' must end with a 'host.return'")


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """Ends a `host.program` with its results: `host.return %y : tensor<?x?xf32>`."""

    name = "host.return"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(ProgramOp))

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue | Operation] = ()):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        program = self.parent_op()
        assert isinstance(program, ProgramOp)
        got = tuple(v.type for v in self.values)
        expected = tuple(program.function_type.outputs.data)
        if got != expected:
            raise VerifyException(
                f"'{self.name}' types ({', '.join(map(str, got))}) do not match the results of "
                f"@{program.sym_name.data} ({', '.join(map(str, expected))})"
            )


# --------------------------------------------------------------------------------------------
# Tensors: extents, allocation, views
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class DimOp(TensorDimOp):
    """The runtime extent of one dim of a tensor: `%n = host.dim %x[1] : tensor<?x?xf32>`."""

    name = "host.dim"


@irdl_op_definition
class AllocateOp(IRDLOperation):
    """A new contiguous (row-major) device tensor, uninitialized.

    `%t = host.allocate(%d0, %d1) : tensor<?x?xf32>`, one `index` extent per dynamic dim, in
    order. The allocation is ordered on the current stream.
    """

    name = "host.allocate"

    dynamic_sizes = var_operand_def(IndexType)
    result = result_def(base(TensorType))

    traits = traits_def(MemoryAllocEffect())

    assembly_format = "`(` $dynamic_sizes `)` attr-dict `:` type($result)"

    def __init__(self, result_type: TensorType, dynamic_sizes: Sequence[SSAValue] = ()):
        super().__init__(operands=[dynamic_sizes], result_types=[result_type])

    def verify_(self) -> None:
        t = self.result.type
        _check_tensor(self.name, "result", t)
        assert isinstance(t, TensorType)
        _check_sizes(self.name, t, self.dynamic_sizes)


@irdl_op_definition
class DeallocateOp(IRDLOperation):
    """Frees a tensor made by `host.allocate`, ordered on the current stream.

    `host.deallocate %t : tensor<?x?xf32>`
    """

    name = "host.deallocate"

    input = operand_def(base(TensorType))

    traits = traits_def(MemoryFreeEffect())

    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input])


@irdl_op_definition
class WorkspaceOp(IRDLOperation):
    """`%ws = host.workspace %nbytes`: `nbytes` bytes of device memory for the intermediates of
    one call, ordered on the current stream; `host.workspace_view` lays tensors out in it and
    `host.release` frees it. `fuser-plan-memory` makes these from allocations whose lifetimes
    it has planned, so that a call allocates once for all its intermediates."""

    name = "host.workspace"

    nbytes = operand_def(IndexType)
    result = result_def(WorkspaceType)

    traits = traits_def(MemoryAllocEffect())

    assembly_format = "$nbytes attr-dict"

    def __init__(self, nbytes: SSAValue):
        super().__init__(operands=[nbytes], result_types=[WorkspaceType()])


@irdl_op_definition
class WorkspaceViewOp(IRDLOperation):
    """A contiguous tensor at byte `offset` of a workspace, one `index` extent per dynamic dim:
    `%t = host.workspace_view %ws[%offset] (%d0) : tensor<?xf32>`. It lives as long as the
    workspace; it is not deallocated on its own."""

    name = "host.workspace_view"

    workspace = operand_def(WorkspaceType)
    offset = operand_def(IndexType)
    dynamic_sizes = var_operand_def(IndexType)
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$workspace `[` $offset `]` `(` $dynamic_sizes `)` attr-dict `:` type($result)"
    )

    def __init__(
        self,
        workspace: SSAValue,
        offset: SSAValue,
        result_type: TensorType,
        dynamic_sizes: Sequence[SSAValue] = (),
    ):
        super().__init__(operands=[workspace, offset, dynamic_sizes], result_types=[result_type])

    def verify_(self) -> None:
        t = self.result.type
        _check_tensor(self.name, "result", t)
        assert isinstance(t, TensorType)
        _check_sizes(self.name, t, self.dynamic_sizes)
        offset = _constant_index(self.offset)
        if offset is not None and offset < 0:
            raise VerifyException(f"'{self.name}' constant offset {offset} is negative")


@irdl_op_definition
class ReleaseOp(IRDLOperation):
    """Frees a workspace, ordered on the current stream: `host.release %ws`."""

    name = "host.release"

    workspace = operand_def(WorkspaceType)

    traits = traits_def(MemoryFreeEffect())

    assembly_format = "$workspace attr-dict"

    def __init__(self, workspace: SSAValue):
        super().__init__(operands=[workspace])


@irdl_op_definition
class AliasSelectOp(IRDLOperation):
    """A view of `input` at position `index` along `axis`, sharing its memory (`x.select(axis,
    i)` in PyTorch): the result drops that dim and keeps the other sizes and strides.

    `%v = host.alias_select %t[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>`
    """

    name = "host.alias_select"

    input = operand_def(base(TensorType))
    index = operand_def(IndexType)
    axis = prop_def(IntegerAttr.constr(i64))
    result = result_def(base(TensorType))

    traits = traits_def(Pure())

    assembly_format = (
        "$input `[` $index `]` `axis` $axis attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, index: SSAValue, axis: int):
        t = input.type
        assert isinstance(t, TensorType)
        shape = [d for i, d in enumerate(t.get_shape()) if i != axis]
        super().__init__(
            operands=[input, index],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[TensorType(t.element_type, shape)],
        )

    def verify_(self) -> None:
        t, r = self.input.type, self.result.type
        assert isinstance(t, TensorType) and isinstance(r, TensorType)
        shape = t.get_shape()
        axis = self.axis.value.data
        if not 0 <= axis < len(shape):
            raise VerifyException(
                f"'{self.name}' axis {axis} is out of range for rank {len(shape)}"
            )
        expected = tuple(d for i, d in enumerate(shape) if i != axis)
        if tuple(r.get_shape()) != expected or r.element_type != t.element_type:
            raise VerifyException(
                f"'{self.name}' result type {r} must be the operand's without dim {axis}: "
                f"{format_shape(expected)} of {t.element_type}"
            )
        i = _constant_index(self.index)
        if i is not None and shape[axis] != DYNAMIC_INDEX and not 0 <= i < shape[axis]:
            raise VerifyException(
                f"'{self.name}' constant index {i} is out of range for extent {shape[axis]}"
            )


@irdl_op_definition
class ReshapeOp(ReshapeLikeOp):
    """A view of `input` in the result type's shape, sharing its memory (`x.view(shape)` in
    PyTorch; see `fuser.dialects.fusion.ReshapeLikeOp` for `kept` and the inferred `?`). The
    evaluator computes the view's strides when it specializes the program
    (`fuser.dialects.views.view_strides`); the segmenter copies an operand that no strides can
    view so.

    `%v = host.reshape %t : tensor<?x768xf32> -> tensor<?x12x64xf32>`
    """

    name = "host.reshape"


@irdl_op_definition
class PermuteOp(PermuteLikeOp):
    """A view of `input` with its dims reordered (see `fuser.dialects.fusion.PermuteLikeOp`),
    sharing its memory (`x.permute(dims)` in PyTorch): the evaluator permutes the operand's
    extents and strides when it specializes the program.

    `%v = host.permute %t [0, 2, 1, 3] : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>`
    """

    name = "host.permute"


@irdl_op_definition
class SliceOp(SliceLikeOp):
    """A view of a slice of `input` (see `fuser.dialects.fusion.SliceLikeOp`), sharing its
    memory (`x[a:b:c, ...]` in PyTorch): the evaluator computes its extents, strides and the
    offset of its first element when it specializes the program
    (`fuser.dialects.views.slice_view`).

    `%v = host.slice %t [:, 32:] : tensor<?x64xf32> -> tensor<?x32xf32>`
    """

    name = "host.slice"


@irdl_op_definition
class IotaOp(IotaLikeOp):
    """A tensor holding `start + i * step` for i in [0, length) (see
    `fuser.dialects.fusion.IotaLikeOp`): a constant of the program that the evaluator computes
    and uploads once per signature, and that every call's kernels read. It is never written:
    the segmenter copies an iota that a fusion returns.

    `%r = host.iota(%n) start 0 step 1 : tensor<?xi64>`
    """

    name = "host.iota"


# --------------------------------------------------------------------------------------------
# Launching kernels
# --------------------------------------------------------------------------------------------


def _lookup(op: Operation, symbol: SymbolRefAttr) -> Operation | None:
    """The op `symbol` names in the nearest enclosing symbol table, or None (also when there is
    no symbol table)."""
    anchor = op.parent_op()
    while anchor is not None and not anchor.has_trait(SymbolTable):
        anchor = anchor.parent_op()
    if anchor is None:
        return None
    return SymbolTable.lookup_symbol(anchor, symbol)


@irdl_op_definition
class GridOp(IRDLOperation):
    """The grid a kernel's launch rule gives for these arguments, computed when the program
    runs: `%gx, %gy, %gz = host.grid @k ins(%a, %b : T1, T2)`.

    A kernel's grid follows from the shapes of its arguments by the rule of the scheduler that
    made it (a block per row, per tile, per chunk of elements). A program is reused for every
    signature whose heuristics its kernels still fit, so the grid is a value of each call, not
    a constant of the program: `host.grid` names that computation, and the evaluator asks the
    kernel for it once per signature. Its results are ordinary `index` values: a launch may
    take them, or any other values (an edited program that launches a fixed grid runs it).
    `ins` are the kernel's leading parameters, as `host.launch` passes them.
    """

    name = "host.grid"

    kernel = prop_def(SymbolRefAttr)
    ins = var_operand_def()
    grid_x = result_def(IndexType)
    grid_y = result_def(IndexType)
    grid_z = result_def(IndexType)

    assembly_format = "$kernel (`ins` `(` $ins^ `:` type($ins) `)`)? attr-dict"

    def __init__(self, kernel: str | SymbolRefAttr, ins: Sequence[SSAValue]):
        if isinstance(kernel, str):
            kernel = SymbolRefAttr(kernel)  # FlatSymbolRefAttr is a type alias; this is its class
        super().__init__(
            operands=[ins],
            result_types=[IndexType(), IndexType(), IndexType()],
            properties={"kernel": kernel},
        )

    @property
    def grid(self) -> tuple[SSAValue, SSAValue, SSAValue]:
        return self.grid_x, self.grid_y, self.grid_z

    def verify_(self) -> None:
        callee = _lookup(self, self.kernel)
        if callee is None:
            return  # compiled elsewhere
        if not isinstance(callee, KernelFuncOp):
            raise VerifyException(
                f"'{self.name}' {self.kernel} is a '{callee.name}', not a kernel.func"
            )
        params = callee.function_type.inputs.data
        if len(self.ins) > len(params):
            raise VerifyException(
                f"'{self.name}' passes {len(self.ins)} arguments to {self.kernel}, which takes "
                f"{len(params)}"
            )


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Launches a kernel on the current stream, or on `%s` with `on %s`.

    `host.launch @k grid(%gx, %gy, %gz) block [128, 1, 1] smem 0 ins(%a, %b : T1, T2)
    outs(%c : T3) on %s`

    `grid` is three `index` values; `block` three static extents (at most 1024 threads, z at
    most 64); `smem` the bytes of dynamic shared memory. The kernel's parameters are `ins`
    then `outs`, in order: tensors (passed as `Tensor<T, N>` with their sizes and strides) or
    scalars; `outs` are the tensors the kernel writes.

    When the enclosing symbol table (the module) holds a `kernel.func` of that name, the
    verifier checks the operands against its parameters and the block against its
    `max_threads`. A name it does not hold is allowed: the kernel may be compiled elsewhere
    (the evaluator resolves it when the program runs).
    """

    name = "host.launch"

    kernel = prop_def(SymbolRefAttr)
    block = prop_def(DenseArrayBase.constr(i64))
    smem = prop_def(IntegerAttr.constr(i64))
    grid_x = operand_def(IndexType)
    grid_y = operand_def(IndexType)
    grid_z = operand_def(IndexType)
    ins = var_operand_def()
    outs = var_operand_def()
    stream = opt_operand_def(StreamType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$kernel `grid` `(` $grid_x `,` $grid_y `,` $grid_z `)` `block` $block `smem` $smem "
        "(`ins` `(` $ins^ `:` type($ins) `)`)? (`outs` `(` $outs^ `:` type($outs) `)`)? "
        "(`on` $stream^)? attr-dict"
    )

    def __init__(
        self,
        kernel: str | SymbolRefAttr,
        grid: Sequence[SSAValue],
        block: Sequence[int],
        ins: Sequence[SSAValue],
        outs: Sequence[SSAValue],
        smem: int = 0,
        stream: SSAValue | None = None,
    ):
        if isinstance(kernel, str):
            kernel = SymbolRefAttr(kernel)  # FlatSymbolRefAttr is a type alias; this is its class
        gx, gy, gz = grid
        super().__init__(
            operands=[gx, gy, gz, ins, outs, [] if stream is None else [stream]],
            properties={
                "kernel": kernel,
                "block": DenseArrayBase.from_list(i64, block),
                "smem": IntegerAttr(smem, i64),
            },
        )

    @property
    def grid(self) -> tuple[SSAValue, SSAValue, SSAValue]:
        return self.grid_x, self.grid_y, self.grid_z

    @property
    def block_dims(self) -> tuple[int, ...]:
        return tuple(self.block.get_values())

    @property
    def params(self) -> tuple[SSAValue, ...]:
        """The kernel's arguments: `ins` then `outs`."""
        return (*self.ins, *self.outs)

    def verify_(self) -> None:
        block = self.block_dims
        if len(block) != 3:
            raise VerifyException(f"'{self.name}' block must have 3 extents, got {len(block)}")
        for axis, (n, most) in enumerate(zip(block, MAX_BLOCK_DIMS, strict=True)):
            if not 1 <= n <= most:
                raise VerifyException(
                    f"'{self.name}' block extent {'xyz'[axis]} = {n} must be between 1 and {most}"
                )
        threads = block[0] * block[1] * block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise VerifyException(
                f"'{self.name}' block {list(block)} has {threads} threads, more than "
                f"{MAX_THREADS_PER_BLOCK}"
            )
        if self.smem.value.data < 0:
            raise VerifyException(f"'{self.name}' smem {self.smem.value.data} is negative")
        for i, v in enumerate(self.ins):
            if not _is_tensor(v.type) and v.type not in ELEMENT_TYPES:
                raise VerifyException(
                    f"'{self.name}' input #{i} has type {v.type}, expected a ranked tensor or "
                    "a scalar of f16, bf16, f32, f64, i32, i64 or i1"
                )
        for i, v in enumerate(self.outs):
            _check_tensor(self.name, f"output #{i}", v.type)
        self._verify_against_kernel(threads)

    def _verify_against_kernel(self, threads: int) -> None:
        callee = _lookup(self, self.kernel)
        if callee is None:
            return  # compiled elsewhere
        sym = str(self.kernel)  # @name, or @module::@name
        if not isinstance(callee, KernelFuncOp):
            raise VerifyException(f"'{self.name}' {sym} is a '{callee.name}', not a kernel.func")
        params = callee.function_type.inputs.data
        args = self.params
        if len(args) != len(params):
            raise VerifyException(
                f"'{self.name}' passes {len(args)} arguments to {sym}, which takes {len(params)}"
            )
        for i, (a, p) in enumerate(zip(args, params, strict=True)):
            t = a.type
            if isinstance(t, TensorType):
                ok = p == TensorParamType(t.element_type, t.get_num_dims())
            else:
                ok = p == t
            if not ok:
                raise VerifyException(
                    f"'{self.name}' argument #{i} of type {t} does not match parameter #{i} "
                    f"of {sym} ({p})"
                )
        if callee.max_threads is not None and threads > callee.max_threads.value.data:
            raise VerifyException(
                f"'{self.name}' block of {threads} threads exceeds max_threads "
                f"{callee.max_threads.value.data} of {sym}"
            )


# --------------------------------------------------------------------------------------------
# Loops
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends the body of a `host.for` (implicit in the custom syntax)."""

    name = "host.yield"

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp)))

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class ForOp(IRDLOperation):
    """A host loop over `index` values: `host.for %i = %lb to %ub step %s { ... }`.

    The body runs for `%i = lb, lb + step, ...` while `%i < ub`; it carries no values (its
    effects are launches and allocations).
    """

    name = "host.for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: SSAValue | Operation,
        ub: SSAValue | Operation,
        step: SSAValue | Operation,
        body: Region | Block | None = None,
    ):
        """Without `body`, the loop gets an empty block with the induction variable: build
        its ops and end it with a `host.yield`, as for `scf.for`."""
        if body is None:
            body = Block(arg_types=[IndexType()])
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(operands=[lb, ub, step], regions=[body])

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            raise VerifyException(
                f"'{self.name}' body must have one index argument, the induction variable"
            )
        step = _constant_index(self.step)
        if step is not None and step <= 0:
            raise VerifyException(f"'{self.name}' constant step {step} must be positive")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        printer.print_operand(self.lb)
        printer.print_string(" to ")
        printer.print_operand(self.ub)
        printer.print_string(" step ")
        printer.print_operand(self.step)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)
        printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = parser.parse_operand(IndexType())
        parser.parse_keyword("to")
        ub = parser.parse_operand(IndexType())
        parser.parse_keyword("step")
        step = parser.parse_operand(IndexType())
        body = parser.parse_region((iv.resolve(IndexType()),))
        op = cls(lb, ub, step, body)
        ensure_terminator(op, SingleBlockImplicitTerminator(YieldOp))
        attrs = parser.parse_optional_attr_dict_with_keyword()
        if attrs is not None:
            op.attributes |= attrs.data
        return op


# --------------------------------------------------------------------------------------------
# Streams
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class GetCurrentStreamOp(IRDLOperation):
    """The stream work is issued on now: `%s = host.get_current_stream : !host.stream`."""

    name = "host.get_current_stream"

    result = result_def(StreamType)

    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[StreamType()])


@irdl_op_definition
class SetCurrentStreamOp(IRDLOperation):
    """Issues the following work on `%s`: `host.set_current_stream %s`."""

    name = "host.set_current_stream"

    stream = operand_def(StreamType)

    assembly_format = "$stream attr-dict"

    def __init__(self, stream: SSAValue):
        super().__init__(operands=[stream])


@irdl_op_definition
class StreamOp(IRDLOperation):
    """Stream number `%i` of the evaluator's pool: `%s = host.stream %i`.

    `%i` must be non-negative; the evaluator maps it into its pool modulo the pool size, so a
    loop may pass its induction variable (or `%i mod n`, computed with `arith`, to use `n`
    streams).
    """

    name = "host.stream"

    index = operand_def(IndexType)
    result = result_def(StreamType)

    traits = traits_def(Pure())

    assembly_format = "$index attr-dict"

    def __init__(self, index: SSAValue):
        super().__init__(operands=[index], result_types=[StreamType()])

    def verify_(self) -> None:
        i = _constant_index(self.index)
        if i is not None and i < 0:
            raise VerifyException(f"'{self.name}' constant index {i} is negative")


@irdl_op_definition
class SynchronizeOp(IRDLOperation):
    """The current stream waits for the work issued so far on `%s` (an event recorded on `%s`,
    `cudaStreamWaitEvent` on the current stream); the host does not block.

    `host.synchronize %s`
    """

    name = "host.synchronize"

    stream = operand_def(StreamType)

    assembly_format = "$stream attr-dict"

    def __init__(self, stream: SSAValue):
        super().__init__(operands=[stream])


# --------------------------------------------------------------------------------------------
# Communication among ranks (multi-GPU)
# --------------------------------------------------------------------------------------------

REDUCTIONS = tuple(k.value for k in ReduceKind)
"""The reductions of `host.allreduce` and `host.reduce_scatter` (NCCL's ncclSum, ncclMax, ...)."""


def _check_reduction(op_name: str, reduction: StringAttr) -> None:
    if reduction.data not in REDUCTIONS:
        raise VerifyException(
            f"'{op_name}' kind '{reduction.data}' must be one of {', '.join(REDUCTIONS)}"
        )


def _check_static(op_name: str, t: TensorType) -> None:
    if DYNAMIC_INDEX in t.get_shape():
        raise VerifyException(
            f"'{op_name}' result {t} is not static: the receiving rank allocates the result, "
            "so its shape must be static"
        )


def _check_peer(op_name: str, peer: int) -> None:
    if peer < 0:
        raise VerifyException(f"'{op_name}' peer {peer} is negative")


def _stream_operand(stream: SSAValue | None) -> list[SSAValue]:
    return [] if stream is None else [stream]


@irdl_custom_directive
class BareReduction(CustomDirective):
    """A reduction kind written as a bare word (`sum`), held in a StringAttr property that the
    op's verifier checks (so a bad kind is a verifier error that names the op)."""

    reduction: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.reduction.set(state, StringAttr(parser.parse_identifier()))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        reduction = self.reduction.get(op)
        assert isinstance(reduction, StringAttr)
        printer.print_string(reduction.data)


class CollectiveOp(IRDLOperation, ABC):
    """A communication among the ranks of `mesh` (undecorated: subclasses name the op). `mesh`
    lists global ranks, non-negative and unique, printed `mesh [0, 1]`; its order is the order
    of the shards (rank `mesh[i]` holds shard i)."""

    mesh = prop_def(DenseArrayBase.constr(i64))

    @property
    def mesh_ranks(self) -> tuple[int, ...]:
        return tuple(self.mesh.get_values())

    def verify_mesh(self) -> None:
        """The mesh's rules are the fusion dialect's (`fusion.mesh_error`)."""
        if (error := mesh_error(self.mesh_ranks)) is not None:
            raise VerifyException(f"'{self.name}' {error}")


@irdl_op_definition
class AllreduceOp(CollectiveOp):
    """Reduces each operand over the ranks of the mesh, in place (ncclAllReduce, the operands
    coalesced into one NCCL group):

    `%r0, %r1, %w = host.allreduce sum %a, %b mesh [0, 1] on %s : tensor<?xf32>, tensor<8xf32>
    -> tensor<?xf32>, tensor<8xf32>`

    The runtime reduces into each operand's buffer: result i is operand i's buffer, holding the
    reduction once `host.wait %w` has made the current stream wait for it. So this op must be
    each operand's only use (no later op may read the operand expecting its old values). The
    last result is the `!host.work` of the communication.
    """

    name = "host.allreduce"

    reduction = prop_def(StringAttr)
    inputs = var_operand_def(base(TensorType))
    stream = opt_operand_def(StreamType)
    outputs = var_result_def(base(TensorType))
    work = result_def(WorkType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    custom_directives = (BareReduction,)

    assembly_format = (
        "custom<BareReduction>($reduction) $inputs `mesh` $mesh (`on` $stream^)? attr-dict "
        "`:` type($inputs) `->` type($outputs)"
    )

    def __init__(
        self,
        kind: str,
        inputs: Sequence[SSAValue],
        mesh: Sequence[int],
        stream: SSAValue | None = None,
    ):
        super().__init__(
            operands=[inputs, _stream_operand(stream)],
            result_types=[[v.type for v in inputs], WorkType()],
            properties={
                "reduction": StringAttr(kind),
                "mesh": DenseArrayBase.from_list(i64, mesh),
            },
        )

    @property
    def kind(self) -> str:
        return self.reduction.data

    def verify_(self) -> None:
        _check_reduction(self.name, self.reduction)
        self.verify_mesh()
        if not self.inputs:
            raise VerifyException(f"'{self.name}' needs at least one tensor operand")
        if len(self.outputs) != len(self.inputs):
            raise VerifyException(
                f"'{self.name}' has {len(self.inputs)} operands and {len(self.outputs)} tensor "
                "results: expected one result per operand"
            )
        for i, (v, r) in enumerate(zip(self.inputs, self.outputs, strict=True)):
            _check_tensor(self.name, f"operand #{i}", v.type)
            if r.type != v.type:
                raise VerifyException(
                    f"'{self.name}' result #{i} has type {r.type}, expected {v.type}, the type "
                    f"of operand #{i}"
                )
            uses = v.uses.get_length()
            if uses != 1:
                raise VerifyException(
                    f"'{self.name}' operand #{i} has {uses} uses: the allreduce reduces in "
                    "place into its buffer, so it must be the operand's only use"
                )


class AlongMeshOp(CollectiveOp, ABC):
    """A collective whose result is its operand with dim `along` divided (reduce-scatter) or
    multiplied (allgather) by the mesh size; a `?` extent stays `?` (undecorated)."""

    input = operand_def(base(TensorType))
    along = prop_def(IntegerAttr.constr(i64))
    stream = opt_operand_def(StreamType)
    result = result_def(base(TensorType))
    work = result_def(WorkType)

    GATHERS: ClassVar[bool]
    """Whether dim `along` is multiplied by the mesh size (else divided)."""

    @classmethod
    def result_type_for(cls, t: TensorType, axis: int, mesh_size: int) -> TensorType:
        """The result type for operand type `t` (`t` itself where `axis` is out of range or the
        mesh is empty: the verifier reports those)."""
        shape = list(t.get_shape())
        if 0 <= axis < len(shape) and shape[axis] != DYNAMIC_INDEX and mesh_size > 0:
            shape[axis] = shape[axis] * mesh_size if cls.GATHERS else shape[axis] // mesh_size
        return TensorType(t.element_type, shape)

    def _init(
        self,
        input: SSAValue,
        axis: int,
        mesh: Sequence[int],
        stream: SSAValue | None,
        properties: dict[str, Attribute],
    ) -> None:
        t = input.type
        assert isa(t, TensorType[Attribute])
        super().__init__(
            operands=[input, _stream_operand(stream)],
            result_types=[self.result_type_for(t, axis, len(mesh)), WorkType()],
            properties={
                "along": IntegerAttr(axis, i64),
                "mesh": DenseArrayBase.from_list(i64, mesh),
                **properties,
            },
        )

    @property
    def axis(self) -> int:
        return self.along.value.data

    def verify_(self) -> None:
        self.verify_mesh()
        t, r = self.input.type, self.result.type
        _check_tensor(self.name, "operand", t)
        assert isa(t, TensorType[Attribute])
        shape, axis, n = t.get_shape(), self.axis, len(self.mesh_ranks)
        if not 0 <= axis < len(shape):
            raise VerifyException(
                f"'{self.name}' along {axis} is out of range for rank {len(shape)}"
            )
        if not self.GATHERS and shape[axis] != DYNAMIC_INDEX and shape[axis] % n:
            raise VerifyException(
                f"'{self.name}' dim {axis} of {t} (extent {shape[axis]}) is not divisible by "
                f"the mesh size {n}"
            )
        expected = self.result_type_for(t, axis, n)
        if r != expected:
            how = "times" if self.GATHERS else "divided by"
            raise VerifyException(
                f"'{self.name}' result {r} must be the operand with dim {axis} {how} the mesh "
                f"size {n}: expected {expected}"
            )


@irdl_op_definition
class ReduceScatterOp(AlongMeshOp):
    """Reduces the operand over the ranks of the mesh and leaves shard i of the reduction,
    split along dim `along`, on rank `mesh[i]` (ncclReduceScatter, out of place into a tensor
    the runtime allocates):

    `%r, %w = host.reduce_scatter sum %x along 0 mesh [0, 1] on %s : tensor<8x?xf32> ->
    tensor<4x?xf32>`

    A static extent along `along` must be divisible by the mesh size. The result is valid on
    the current stream after `host.wait %w`.
    """

    name = "host.reduce_scatter"

    reduction = prop_def(StringAttr)

    GATHERS: ClassVar[bool] = False

    custom_directives = (BareReduction,)

    assembly_format = (
        "custom<BareReduction>($reduction) $input `along` $along `mesh` $mesh "
        "(`on` $stream^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        kind: str,
        input: SSAValue,
        axis: int,
        mesh: Sequence[int],
        stream: SSAValue | None = None,
    ):
        self._init(input, axis, mesh, stream, {"reduction": StringAttr(kind)})

    @property
    def kind(self) -> str:
        return self.reduction.data

    def verify_(self) -> None:
        _check_reduction(self.name, self.reduction)
        super().verify_()


@irdl_op_definition
class AllgatherOp(AlongMeshOp):
    """Concatenates the operands of the ranks of the mesh along dim `along`, rank `mesh[i]`'s
    as shard i, on every rank (ncclAllGather, out of place into a tensor the runtime
    allocates):

    `%r, %w = host.allgather %x along 1 mesh [0, 1] on %s : tensor<4x2xf32> -> tensor<4x4xf32>`

    The result is valid on the current stream after `host.wait %w`.
    """

    name = "host.allgather"

    GATHERS: ClassVar[bool] = True

    assembly_format = (
        "$input `along` $along `mesh` $mesh (`on` $stream^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self, input: SSAValue, axis: int, mesh: Sequence[int], stream: SSAValue | None = None
    ):
        self._init(input, axis, mesh, stream, {})


@irdl_op_definition
class BroadcastOp(CollectiveOp):
    """Sends the root's tensor to every rank of the mesh (ncclBroadcast). The root's program
    passes the operand; the other ranks' programs have none:

    `%r, %w = host.broadcast %x root 0 mesh [0, 1] on %s : tensor<4x8xf32> -> tensor<4x8xf32>`
    `%r, %w = host.broadcast root 0 mesh [0, 1] on %s : tensor<4x8xf32>`

    On the root the result is the operand's buffer (nothing is copied) and has its type; on
    the other ranks the runtime allocates the result, so its type must be static, and receives
    into it. The result is valid on the current stream after `host.wait %w`.
    """

    name = "host.broadcast"

    root_rank = prop_def(IntegerAttr.constr(i64))
    input = opt_operand_def(base(TensorType))
    stream = opt_operand_def(StreamType)
    result = result_def(base(TensorType))
    work = result_def(WorkType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        source: SSAValue | TensorType,
        root: int,
        mesh: Sequence[int],
        stream: SSAValue | None = None,
    ):
        """`source` is the operand on the root's program, the result type on the others'."""
        if isinstance(source, SSAValue):
            operand, result_type = [source], source.type
        else:
            operand, result_type = [], source
        super().__init__(
            operands=[operand, _stream_operand(stream)],
            result_types=[result_type, WorkType()],
            properties={
                "root_rank": IntegerAttr(root, i64),
                "mesh": DenseArrayBase.from_list(i64, mesh),
            },
        )

    @property
    def root(self) -> int:
        return self.root_rank.value.data

    def verify_(self) -> None:
        self.verify_mesh()
        if self.root not in self.mesh_ranks:
            raise VerifyException(
                f"'{self.name}' root {self.root} is not in the mesh {list(self.mesh_ranks)}"
            )
        r = self.result.type
        if self.input is None:
            _check_tensor(self.name, "result", r)
            assert isinstance(r, TensorType)
            _check_static(self.name, r)
            return
        t = self.input.type
        _check_tensor(self.name, "operand", t)
        if r != t:
            raise VerifyException(f"'{self.name}' result {r} must have the operand's type {t}")

    def print(self, printer: Printer) -> None:
        if self.input is not None:
            printer.print_string(" ")
            printer.print_operand(self.input)
        printer.print_string(f" root {self.root} mesh [{', '.join(map(str, self.mesh_ranks))}]")
        if self.stream is not None:
            printer.print_string(" on ")
            printer.print_operand(self.stream)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if self.input is not None:
            printer.print_attribute(self.input.type)
            printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> BroadcastOp:
        operand = parser.parse_optional_unresolved_operand()
        parser.parse_keyword("root")
        root = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("mesh")
        mesh = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
        )
        stream: list[SSAValue] = []
        if parser.parse_optional_keyword("on") is not None:
            stream.append(parser.resolve_operand(parser.parse_unresolved_operand(), StreamType()))
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        inputs: list[SSAValue] = []
        result_type = parser.parse_type()
        if operand is not None:
            inputs.append(parser.resolve_operand(operand, result_type))
            parser.parse_punctuation("->")
            result_type = parser.parse_type()
        op = cls.build(
            operands=[inputs, stream],
            result_types=[result_type, WorkType()],
            properties={
                "root_rank": IntegerAttr(root, i64),
                "mesh": DenseArrayBase.from_list(i64, mesh),
            },
        )
        op.attributes |= attributes
        return op


@irdl_op_definition
class SendOp(IRDLOperation):
    """Sends the operand to rank `peer` (ncclSend; that rank's program has the matching
    `host.recv`): `%w = host.send %x to 1 on %s : tensor<4x8xf32>`. The operand must not be
    written until `host.wait %w`."""

    name = "host.send"

    input = operand_def(base(TensorType))
    peer_rank = prop_def(IntegerAttr.constr(i64))
    stream = opt_operand_def(StreamType)
    work = result_def(WorkType)

    assembly_format = "$input `to` $peer_rank (`on` $stream^)? attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, peer: int, stream: SSAValue | None = None):
        super().__init__(
            operands=[input, _stream_operand(stream)],
            result_types=[WorkType()],
            properties={"peer_rank": IntegerAttr(peer, i64)},
        )

    @property
    def peer(self) -> int:
        return self.peer_rank.value.data

    def verify_(self) -> None:
        _check_peer(self.name, self.peer)
        _check_tensor(self.name, "operand", self.input.type)


@irdl_op_definition
class RecvOp(IRDLOperation):
    """Receives a tensor from rank `peer` (ncclRecv, matching that rank's `host.send`) into a
    tensor the runtime allocates, so its type must be static:
    `%r, %w = host.recv from 0 on %s : tensor<4x8xf32>`. The result is valid on the current
    stream after `host.wait %w`."""

    name = "host.recv"

    peer_rank = prop_def(IntegerAttr.constr(i64))
    stream = opt_operand_def(StreamType)
    result = result_def(base(TensorType))
    work = result_def(WorkType)

    assembly_format = "`from` $peer_rank (`on` $stream^)? attr-dict `:` type($result)"

    def __init__(self, result_type: TensorType, peer: int, stream: SSAValue | None = None):
        super().__init__(
            operands=[_stream_operand(stream)],
            result_types=[result_type, WorkType()],
            properties={"peer_rank": IntegerAttr(peer, i64)},
        )

    @property
    def peer(self) -> int:
        return self.peer_rank.value.data

    def verify_(self) -> None:
        _check_peer(self.name, self.peer)
        t = self.result.type
        _check_tensor(self.name, "result", t)
        assert isinstance(t, TensorType)
        _check_static(self.name, t)


@irdl_op_definition
class WaitOp(IRDLOperation):
    """The current stream waits for the communication `%w` (an event recorded after its NCCL
    call, `cudaStreamWaitEvent` on the current stream); the host does not block. After it, the
    communication's results are valid on the current stream. `host.wait %w`"""

    name = "host.wait"

    work = operand_def(WorkType)

    assembly_format = "$work attr-dict"

    def __init__(self, work: SSAValue):
        super().__init__(operands=[work])


@irdl_op_definition
class RunFusionOp(IRDLOperation):
    """Runs a whole `fusion.fusion` of the module on the current stream, or on `%s` with
    `on %s` (nvFuser's PostOnStream of a HostUnit): the runtime compiles that fusion on its own
    (segmenting and scheduling it as for a single-GPU call) and runs all its kernels.

    `%y, %z = host.run_fusion @stage0(%x, %n) on %s : (tensor<?x8xf32>, f32) ->
    (tensor<?x8xf32>, tensor<?xf32>)`

    The operands and results have the types of the fusion's inputs and outputs, one result per
    output (an output that aliases an input is that input's buffer after the run). The callee
    must be a `fusion.fusion` of the enclosing symbol table (the module).
    """

    name = "host.run_fusion"

    callee = prop_def(SymbolRefAttr)
    args = var_operand_def()
    stream = opt_operand_def(StreamType)
    outputs = var_result_def()

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$callee `(` $args `)` (`on` $stream^)? attr-dict `:` functional-type($args, $outputs)"
    )

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        args: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        stream: SSAValue | None = None,
    ):
        if isinstance(callee, str):
            callee = SymbolRefAttr(callee)  # FlatSymbolRefAttr is a type alias; this is its class
        super().__init__(
            operands=[args, _stream_operand(stream)],
            result_types=[result_types],
            properties={"callee": callee},
        )

    @classmethod
    def of(
        cls, fusion: FusionOp, args: Sequence[SSAValue], stream: SSAValue | None = None
    ) -> RunFusionOp:
        """A run of `fusion`, with its output types."""
        return cls(fusion.sym_name.data, args, fusion.function_type.outputs.data, stream)

    def verify_(self) -> None:
        sym = str(self.callee)  # @name, or @module::@name
        callee = _lookup(self, self.callee)
        if callee is None:
            raise VerifyException(f"'{self.name}' no fusion.fusion {sym} in the module")
        if not isinstance(callee, FusionOp):
            raise VerifyException(f"'{self.name}' {sym} is a '{callee.name}', not a fusion.fusion")
        inputs = callee.function_type.inputs.data
        outputs = callee.function_type.outputs.data
        if len(self.args) != len(inputs):
            raise VerifyException(
                f"'{self.name}' passes {len(self.args)} arguments to {sym}, which takes "
                f"{len(inputs)}"
            )
        if len(self.outputs) != len(outputs):
            raise VerifyException(
                f"'{self.name}' has {len(self.outputs)} results, but {sym} has {len(outputs)} "
                "outputs"
            )
        for what, values, types, theirs in (
            ("argument", self.args, inputs, "input"),
            ("result", self.outputs, outputs, "output"),
        ):
            for i, (v, t) in enumerate(zip(values, types, strict=True)):
                if v.type != t:
                    raise VerifyException(
                        f"'{self.name}' {what} #{i} of type {v.type} does not match {theirs} "
                        f"#{i} of {sym} ({t})"
                    )


Host = Dialect(
    "host",
    [
        ProgramOp,
        ReturnOp,
        DimOp,
        AllocateOp,
        DeallocateOp,
        AliasSelectOp,
        PermuteOp,
        ReshapeOp,
        SliceOp,
        IotaOp,
        WorkspaceOp,
        WorkspaceViewOp,
        ReleaseOp,
        GridOp,
        LaunchOp,
        ForOp,
        YieldOp,
        GetCurrentStreamOp,
        SetCurrentStreamOp,
        StreamOp,
        SynchronizeOp,
        AllreduceOp,
        ReduceScatterOp,
        AllgatherOp,
        BroadcastOp,
        SendOp,
        RecvOp,
        WaitOp,
        RunFusionOp,
    ],
    [StreamType, WorkType, WorkspaceType],
)
