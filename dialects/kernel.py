"""The `kernel` dialect: one CUDA kernel, close enough to CUDA C++ that each op prints as a few
lines of it.

A `kernel.func` is a `__global__` function. Its parameters are scalars or `!kernel.tensor<T, N>`,
the CUDA struct `Tensor<T, N> { T* data; int64_t size[N]; int64_t stride[N]; }` (sizes and
strides in elements), so one compiled kernel serves tensors of any extents and strides. The body
uses xDSL's `arith`, `math` and `scf` for scalar math and control flow, with i32 or i64 integers
as indices (there is no `index` type inside a kernel), and this dialect's ops for what is
specific to a GPU:

- thread geometry: `kernel.thread_id`, `block_id`, `block_dim`, `grid_dim` (`threadIdx.x`, ...);
- tensor parameters: `kernel.size`, `kernel.stride`, `kernel.load`, `kernel.store`, addressed by
  an element offset that the kernel computes from strides with `arith`; `kernel.select_load`
  reads at one of two such places;
- arrays: `kernel.alloc` of a `!kernel.array<NxT, local|shared>` (registers or `__shared__`;
  `zeroed` clears a local one), `kernel.array_load`, `kernel.array_store`. A local array stays in
  registers where every index is a constant once nvcc has unrolled the loops around it: loops
  over an array are `scf.for` with the `unroll` attribute (`#pragma unroll`) and constant bounds;
- cooperation: `kernel.barrier` (`__syncthreads()`), warp/block/grid reductions and Welford
  combines, block scans, a block's top-k (`block_topk`, which also sorts a row);
- `kernel.comment`, a `//` line naming the fusion op the following code comes from.
- matmul tiles: `kernel.matmul_mainloop` accumulates a block's tile of C = A B into per-thread
  accumulators (a `local` array) through a C++ tile of the preamble that `#kernel.matmul<...>`
  names (tensor cores with a cp.async / ldmatrix / mma.sync pipeline for f16/bf16, CUDA cores for
  f32/f64), and `kernel.matmul_frag` says which row and column of the tile an accumulator holds,
  so the epilogue after it is ordinary kernel IR.

Vector accesses: a load may return, and a store may take, a `vector<NxT>` of N consecutive
elements (N in {2, 4, 8}, at most 16 bytes), one 32/64/128-bit memory transaction. Vectors are
moved, not computed on: they travel between `kernel.load`/`kernel.select_load`/
`kernel.array_load` and `kernel.store`/`kernel.array_store` (typically global memory <-> a local
array), and arithmetic works on scalars read from the array. The offset of a vector access must
be a multiple of N, and the tensor's data suitably aligned; that is a precondition the generated
code does not check.

Cooperative ops (`barrier`, `block_reduce`, `block_scan`, `block_topk`, `block_welford`,
`grid_reduce`, `matmul_mainloop`) must be reached by every thread of the block; warp ops by
every lane of the warp (full mask).
Verifiers check what the CUDA emitter relies on; they cannot check uniform control flow.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Iterable, Sequence
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    MemoryAllocEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from fuser.dialects.common import FuncLikeOp
from fuser.dialects.fusion import (
    BF16,
    ELEMENT_TYPES,
    F16,
    F32,
    F64,
    I1,
    I32,
    I64,
    type_name,
)

# --------------------------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------------------------

INDEX_TYPES: tuple[Attribute, ...] = (I32, I64)
"""The integer types that index tensors and arrays inside a kernel."""

REDUCE_TYPES: tuple[Attribute, ...] = (F32, F64, I32, I64)
"""The types warp and block reductions combine."""

WELFORD_TYPES: tuple[Attribute, ...] = (F32, F64)
"""The types of Welford states (mean, M2 and the count, all floats)."""

MAX_THREADS_PER_BLOCK = 1024
MAX_STATIC_SHARED_BYTES = 48 * 1024
MAX_VECTOR_BYTES = 16
VECTOR_WIDTHS = (2, 4, 8)

_BYTES: dict[Attribute, int] = {F16: 2, BF16: 2, F32: 4, F64: 8, I32: 4, I64: 8, I1: 1}


def byte_size(t: Attribute) -> int:
    """The size in bytes of an element type in CUDA (`i1` is a 1-byte `bool`)."""
    return _BYTES[t]


def _names(types: Sequence[Attribute]) -> str:
    return ", ".join(type_name(t) for t in types)


def _check_type_in(op_name: str, what: str, t: Attribute, allowed: Sequence[Attribute]) -> None:
    if t not in allowed:
        raise VerifyException(f"'{op_name}' {what} has type {t}, expected one of {_names(allowed)}")


# --------------------------------------------------------------------------------------------
# Attributes and types
# --------------------------------------------------------------------------------------------


class Dimension(StrEnum):
    """A component of CUDA's dim3 built-ins (`threadIdx.x`, ...)."""

    X = "x"
    Y = "y"
    Z = "z"


@irdl_attr_definition
class DimensionAttr(EnumAttribute[Dimension], SpacedOpaqueSyntaxAttribute):
    """Which component of a dim3: `#kernel<dim x>`, bare `x` in ops' custom syntax."""

    name = "kernel.dim"


class ReduceKind(StrEnum):
    """The combining function of a reduction."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    """The combining function of a reduction: `#kernel<reduce_kind sum>`."""

    name = "kernel.reduce_kind"


class Distribution(StrEnum):
    """What `kernel.random` draws: uniform in [0, 1), or standard normal."""

    UNIFORM = "uniform"
    NORMAL = "normal"


@irdl_attr_definition
class DistributionAttr(EnumAttribute[Distribution], SpacedOpaqueSyntaxAttribute):
    """The distribution of a `kernel.random`: `#kernel<distribution normal>`."""

    name = "kernel.distribution"


class MemorySpace(StrEnum):
    """Where a `kernel.alloc` array lives: per-thread registers, block shared memory of a size
    fixed in the kernel (`shared`, at most 48 KiB in all), or block shared memory the launch
    gives (`dynamic`: beyond 48 KiB; the launch must give `dynamic_shared_bytes` of the
    kernel's dynamic arrays)."""

    LOCAL = "local"
    SHARED = "shared"
    DYNAMIC = "dynamic"


SHARED_ALIGNMENT = 16
"""Bytes each array in dynamic shared memory is aligned to (vector accesses are legal)."""


def dynamic_shared_bytes(arrays: Iterable[ArrayType]) -> int:
    """The dynamic shared memory a kernel's `dynamic` arrays take, laid out in program order
    each at the next `SHARED_ALIGNMENT`-byte boundary: what its launch must give."""
    total = 0
    for t in arrays:
        if t.memory_space.data == MemorySpace.DYNAMIC:
            total = -(-total // SHARED_ALIGNMENT) * SHARED_ALIGNMENT + t.size_in_bytes
    return total


@irdl_attr_definition
class MemorySpaceAttr(EnumAttribute[MemorySpace], SpacedOpaqueSyntaxAttribute):
    """The memory space of a `!kernel.array`: `#kernel<memory_space shared>`."""

    name = "kernel.memory_space"


def _element_type_error(type_name: str, t: Attribute) -> str | None:
    """Why `t` cannot be the element type of a `!kernel.tensor` or `!kernel.array`, or None."""
    if t in ELEMENT_TYPES:
        return None
    return f"!{type_name} element type {t} is not one of {_names(ELEMENT_TYPES)}"


_ARRAY_SIZE_ERROR = "!kernel.array size {} must be at least 1"


@irdl_attr_definition
class TensorParamType(ParametrizedAttribute, TypeAttribute):
    """A tensor kernel parameter, `!kernel.tensor<f32, 2>`: element type and rank.

    In CUDA it is `Tensor<T, N> { T* data; long long size[N]; long long stride[N]; }`
    (`fuser/core.cuh`), passed by value; extents and strides are runtime values (`kernel.size`,
    `kernel.stride`), so one compiled kernel serves any shape and layout of that rank. Rank 0 is
    a scalar in memory (only `data`).
    """

    name = "kernel.tensor"

    element_type: Attribute
    rank: IntAttr

    def __init__(self, element_type: Attribute, rank: int | IntAttr):
        super().__init__(element_type, IntAttr(rank) if isinstance(rank, int) else rank)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.element_type)
            printer.print_string(", ")
            printer.print_int(self.rank.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, IntAttr]:
        with parser.in_angle_brackets():
            start = parser.pos
            element_type = parser.parse_type()
            if (error := _element_type_error(cls.name, element_type)) is not None:
                parser.raise_error(error, start, parser.pos)
            parser.parse_punctuation(",")
            rank = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return element_type, IntAttr(rank)

    def verify(self) -> None:
        if (error := _element_type_error(self.name, self.element_type)) is not None:
            raise VerifyException(error)
        if self.rank.data < 0:
            raise VerifyException(f"!kernel.tensor rank {self.rank.data} is negative")


@irdl_attr_definition
class ArrayType(ParametrizedAttribute, TypeAttribute):
    """A fixed-size array made by `kernel.alloc`: `!kernel.array<8xf32, local>`.

    `local` arrays are per-thread (`T a[8];`, in registers when indexed by constants after
    unrolling); `shared` arrays are one per block (`__shared__ T a[1024];`), and so are
    `dynamic` ones (a pointer into the launch's dynamic shared memory). All are 16-byte aligned
    so vector accesses are legal.
    """

    name = "kernel.array"

    size: IntAttr
    element_type: Attribute
    memory_space: MemorySpaceAttr

    def __init__(
        self, size: int, element_type: Attribute, memory_space: MemorySpace | MemorySpaceAttr
    ):
        if isinstance(memory_space, MemorySpace):
            memory_space = MemorySpaceAttr(memory_space)
        super().__init__(IntAttr(size), element_type, memory_space)

    @property
    def size_in_bytes(self) -> int:
        return self.size.data * byte_size(self.element_type)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_int(self.size.data)
            printer.print_string("x")
            printer.print_attribute(self.element_type)
            printer.print_string(", ")
            printer.print_string(self.memory_space.data.value)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr, Attribute, MemorySpaceAttr]:
        with parser.in_angle_brackets():
            start = parser.pos
            size = parser.parse_shape_dimension(allow_dynamic=False)
            if size < 1:
                parser.raise_error(_ARRAY_SIZE_ERROR.format(size), start, parser.pos)
            parser.parse_shape_delimiter()
            start = parser.pos
            element_type = parser.parse_type()
            if (error := _element_type_error(cls.name, element_type)) is not None:
                parser.raise_error(error, start, parser.pos)
            parser.parse_punctuation(",")
            space = MemorySpaceAttr(MemorySpaceAttr.parse_parameter(parser))
        return IntAttr(size), element_type, space

    def verify(self) -> None:
        if (error := _element_type_error(self.name, self.element_type)) is not None:
            raise VerifyException(error)
        if self.size.data < 1:
            raise VerifyException(_ARRAY_SIZE_ERROR.format(self.size.data))


# --------------------------------------------------------------------------------------------
# The kernel: kernel.func and kernel.return
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class FuncOp(FuncLikeOp):
    """A `__global__` function.

    `kernel.func @name(%x: !kernel.tensor<f32, 2>, %eps: f32) attributes {max_threads = 256}`

    Parameters are `!kernel.tensor` or scalars of the fusion element types; outputs are tensor
    parameters the kernel stores to, so there are no results. `max_threads` (a property, shown in
    the `attributes` dict of the custom syntax) is the block size the kernel is compiled for:
    `__launch_bounds__(max_threads)`, which also caps registers per thread; launches must not
    exceed it.
    """

    name = "kernel.func"

    max_threads = opt_prop_def(IntegerAttr.constr(i64))

    PRINT_EMPTY_OUTPUTS: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        input_types: Sequence[Attribute],
        body: Region | None = None,
        max_threads: int | None = None,
    ):
        super().__init__(
            name,
            input_types,
            [],
            body,
            {"max_threads": None if max_threads is None else IntegerAttr(max_threads, i64)},
        )

    def verify_(self) -> None:
        self.verify_func_like()
        name = self.display_name
        inputs = self.function_type.inputs.data
        if self.function_type.outputs.data:
            raise VerifyException(
                f"'{name}' has results; a kernel writes its outputs through tensor parameters"
            )
        block = self.body.block
        for i, t in enumerate(inputs):
            if not isinstance(t, TensorParamType) and t not in ELEMENT_TYPES:
                raise VerifyException(
                    f"'{name}' parameter #{i} has type {t}, expected a !kernel.tensor or a "
                    f"scalar of {_names(ELEMENT_TYPES)}"
                )
        if not isinstance(block.last_op, ReturnOp):
            raise VerifyException(f"'{name}' must end with a 'kernel.return'")
        if self.max_threads is not None:
            n = self.max_threads.value.data
            if not 1 <= n <= MAX_THREADS_PER_BLOCK:
                raise VerifyException(
                    f"'{name}' max_threads {n} must be between 1 and {MAX_THREADS_PER_BLOCK}"
                )
        shared = sum(
            op.result.type.size_in_bytes
            for op in self.walk()
            if isinstance(op, AllocOp)  # its result is an ArrayType (verified before this)
            and op.result.type.memory_space.data == MemorySpace.SHARED
        )
        if shared > MAX_STATIC_SHARED_BYTES:
            raise VerifyException(
                f"'{name}' allocates {shared} bytes of shared arrays, more than the "
                f"{MAX_STATIC_SHARED_BYTES} bytes of static shared memory a block may have"
            )

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        name, inputs, outputs, region, attributes = cls.parse_signature(parser)
        if outputs:
            parser.raise_error("kernel.func has no results")
        op = cls(name, inputs, region)
        max_threads = attributes.pop("max_threads", None)
        if max_threads is not None:
            if not isinstance(max_threads, IntegerAttr):
                parser.raise_error("kernel.func max_threads must be an integer")
            op.max_threads = IntegerAttr(max_threads.value.data, i64)
        op.attributes |= attributes
        return op

    def printed_attributes(self) -> dict[str, Attribute]:
        attributes = dict(self.attributes)
        if self.max_threads is not None:
            attributes["max_threads"] = self.max_threads
        return attributes


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """Ends a `kernel.func` (`return;`)."""

    name = "kernel.return"

    traits = traits_def(IsTerminator(), HasParent(FuncOp))

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


# --------------------------------------------------------------------------------------------
# Thread geometry
# --------------------------------------------------------------------------------------------


class GeometryOp(IRDLOperation, ABC):
    """A component of a CUDA built-in, as i32 or i64: `%i = kernel.thread_id x : i32`."""

    dimension = prop_def(DimensionAttr)
    result = result_def()

    traits = traits_def(Pure())

    assembly_format = "$dimension attr-dict `:` type($result)"

    def __init__(self, dimension: Dimension, result_type: Attribute = I32):
        super().__init__(
            properties={"dimension": DimensionAttr(dimension)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        _check_type_in(self.name, "result", self.result.type, INDEX_TYPES)


@irdl_op_definition
class ThreadIdOp(GeometryOp):
    """`threadIdx.<dim>`."""

    name = "kernel.thread_id"


@irdl_op_definition
class BlockIdOp(GeometryOp):
    """`blockIdx.<dim>`."""

    name = "kernel.block_id"


@irdl_op_definition
class BlockDimOp(GeometryOp):
    """`blockDim.<dim>`."""

    name = "kernel.block_dim"


@irdl_op_definition
class GridDimOp(GeometryOp):
    """`gridDim.<dim>`."""

    name = "kernel.grid_dim"


# --------------------------------------------------------------------------------------------
# Tensor parameters
# --------------------------------------------------------------------------------------------


class TensorInfoOp(IRDLOperation, ABC):
    """An extent or stride (in elements) of a tensor parameter, as i64."""

    tensor = operand_def(TensorParamType)
    axis = prop_def(IntegerAttr.constr(i64))
    result = result_def(I64)

    traits = traits_def(Pure())

    assembly_format = "$tensor `[` $axis `]` attr-dict `:` type($tensor)"

    def __init__(self, tensor: SSAValue, axis: int):
        super().__init__(
            operands=[tensor],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[I64],
        )

    def verify_(self) -> None:
        t = self.tensor.type
        assert isinstance(t, TensorParamType)
        axis = self.axis.value.data
        if not 0 <= axis < t.rank.data:
            raise VerifyException(
                f"'{self.name}' axis {axis} is out of range for rank {t.rank.data}"
            )


@irdl_op_definition
class TransposedOp(IRDLOperation):
    """`%bt = kernel.transposed %b : !kernel.tensor<bf16, 2>` is `b` with its last two dims
    swapped (`fuser::transposed`): sizes and strides exchanged, no data moved. A matmul reads a
    permuted input through it (linear's `[N, K]` weight as `[K, N]`)."""

    name = "kernel.transposed"

    T: ClassVar = VarConstraint("T", base(TensorParamType))

    tensor = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$tensor attr-dict `:` type($tensor)"

    def __init__(self, tensor: SSAValue):
        super().__init__(operands=[tensor], result_types=[tensor.type])

    def verify_(self) -> None:
        t = self.tensor.type
        assert isinstance(t, TensorParamType)
        if t.rank.data < 2:
            raise VerifyException(f"'{self.name}' needs a tensor of rank 2 or more, got {t}")


@irdl_op_definition
class SizeOp(TensorInfoOp):
    """`%n = kernel.size %t[1] : !kernel.tensor<f32, 2>` is `t.size[1]`."""

    name = "kernel.size"


@irdl_op_definition
class StrideOp(TensorInfoOp):
    """`%s = kernel.stride %t[1] : !kernel.tensor<f32, 2>` is `t.stride[1]`."""

    name = "kernel.stride"


def _check_index(op_name: str, index: SSAValue) -> None:
    _check_type_in(op_name, "index", index.type, INDEX_TYPES)


def _check_access(op_name: str, what: str, value_type: Attribute, element_type: Attribute) -> int:
    """Checks a loaded or stored value against its container's element type; returns its width
    (1 for a scalar)."""
    if isinstance(value_type, VectorType):
        shape = value_type.get_shape()
        if len(shape) != 1 or value_type.get_num_scalable_dims() != 0:
            raise VerifyException(
                f"'{op_name}' {what} type {value_type} must be a 1-d, fixed-size vector"
            )
        if value_type.element_type != element_type:
            raise VerifyException(
                f"'{op_name}' {what} type {value_type} does not match element type {element_type}"
            )
        n = shape[0]
        if n not in VECTOR_WIDTHS:
            raise VerifyException(
                f"'{op_name}' vector width {n} must be one of {', '.join(map(str, VECTOR_WIDTHS))}"
            )
        if n * byte_size(element_type) > MAX_VECTOR_BYTES:
            raise VerifyException(
                f"'{op_name}' vector {value_type} is {n * byte_size(element_type)} bytes, "
                f"more than {MAX_VECTOR_BYTES}"
            )
        return n
    if value_type != element_type:
        raise VerifyException(
            f"'{op_name}' {what} type {value_type} does not match element type {element_type}"
        )
    return 1


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Reads the element at `offset` of a tensor parameter, or `N` consecutive ones as a vector.

    `%v = kernel.load %t[%off] : !kernel.tensor<f32, 2>, i64 -> f32` is `t.data[off]`.
    """

    name = "kernel.load"

    tensor = operand_def(TensorParamType)
    offset = operand_def()
    result = result_def()

    traits = traits_def(MemoryReadEffect())

    assembly_format = (
        "$tensor `[` $offset `]` attr-dict `:` type($tensor) `,` type($offset) `->` type($result)"
    )

    def __init__(self, tensor: SSAValue, offset: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            assert isinstance(tensor.type, TensorParamType)
            result_type = tensor.type.element_type
        super().__init__(operands=[tensor, offset], result_types=[result_type])

    def verify_(self) -> None:
        _check_index(self.name, self.offset)
        t = self.tensor.type
        assert isinstance(t, TensorParamType)
        _check_access(self.name, "result", self.result.type, t.element_type)


@irdl_op_definition
class SelectLoadOp(IRDLOperation):
    """Reads at one of two places: `offset_true` of `tensor_true` where `condition` holds, else
    `offset_false` of `tensor_false`; an element or a vector, as `kernel.load`.

    `%v = kernel.select_load %c, %a[%i], %b[%j] : ...` is `*(c ? &a.data[i] : &b.data[j])`: one
    load instruction where a predicated load of each place would issue two (the operands of a
    `fusion.cat` read at disjoint intervals of one dim: RoPE's rotated halves).
    """

    name = "kernel.select_load"

    condition = operand_def(I1)
    tensor_true = operand_def(TensorParamType)
    offset_true = operand_def()
    tensor_false = operand_def(TensorParamType)
    offset_false = operand_def()
    result = result_def()

    traits = traits_def(MemoryReadEffect())

    assembly_format = (
        "$condition `,` $tensor_true `[` $offset_true `]` `,` $tensor_false `[` $offset_false `]`"
        " attr-dict `:` type($tensor_true) `,` type($offset_true) `,` type($tensor_false) `,`"
        " type($offset_false) `->` type($result)"
    )

    def __init__(
        self,
        condition: SSAValue,
        places: tuple[tuple[SSAValue, SSAValue], tuple[SSAValue, SSAValue]],
        result_type: Attribute,
    ):
        (a, i), (b, j) = places
        super().__init__(operands=[condition, a, i, b, j], result_types=[result_type])

    def verify_(self) -> None:
        _check_index(self.name, self.offset_true)
        _check_index(self.name, self.offset_false)
        a, b = self.tensor_true.type, self.tensor_false.type
        assert isinstance(a, TensorParamType) and isinstance(b, TensorParamType)
        if a.element_type != b.element_type:
            raise VerifyException(
                f"'{self.name}' reads tensors of element types {a.element_type} and "
                f"{b.element_type}: they must be the same"
            )
        _check_access(self.name, "result", self.result.type, a.element_type)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Writes a value (or vector) at element `offset` of a tensor parameter.

    `kernel.store %v, %t[%off] : f32, !kernel.tensor<f32, 2>, i64` is `t.data[off] = v`.
    """

    name = "kernel.store"

    value = operand_def()
    tensor = operand_def(TensorParamType)
    offset = operand_def()

    traits = traits_def(MemoryWriteEffect())

    assembly_format = (
        "$value `,` $tensor `[` $offset `]` attr-dict `:` type($value) `,` type($tensor) `,` "
        "type($offset)"
    )

    def __init__(self, value: SSAValue, tensor: SSAValue, offset: SSAValue):
        super().__init__(operands=[value, tensor, offset])

    def verify_(self) -> None:
        _check_index(self.name, self.offset)
        t = self.tensor.type
        assert isinstance(t, TensorParamType)
        _check_access(self.name, "value", self.value.type, t.element_type)


# --------------------------------------------------------------------------------------------
# Arrays
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Declares an array: `%a = kernel.alloc : !kernel.array<8xf32, local>`.

    `alignas(16) T a[8];`, or `__shared__ alignas(16) T a[8];` for `shared`. Shared arrays of a
    kernel add up to at most 48 KiB (checked by `kernel.func`).

    `%a = kernel.alloc zeroed : !kernel.array<32xbf16, local>` starts with every element zero
    (all bits clear: +0.0), a register array that predicated loads fill, without a store per
    element in the IR. Only local arrays: a `__shared__` array is one per block and the
    kernel's threads would race to clear it.
    """

    name = "kernel.alloc"

    result = result_def(ArrayType)
    zeroed = opt_prop_def(UnitAttr)

    traits = traits_def(MemoryAllocEffect())

    assembly_format = "(`zeroed` $zeroed^)? attr-dict `:` type($result)"

    def __init__(self, array_type: ArrayType, zeroed: bool = False):
        super().__init__(
            result_types=[array_type], properties={"zeroed": UnitAttr() if zeroed else None}
        )

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, ArrayType)
        if self.zeroed is not None and t.memory_space.data != MemorySpace.LOCAL:
            raise VerifyException(
                f"'{self.name}' zeroed needs a local array, got {t.memory_space.data.value}: "
                "a shared array is one per block, and its threads would race to clear it"
            )


def _constant_int(value: SSAValue) -> int | None:
    """The value of an integer `arith.constant`, or None."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _check_array_bounds(op_name: str, array: ArrayType, index: SSAValue, width: int) -> None:
    i = _constant_int(index)
    if i is not None and not (i >= 0 and i + width <= array.size.data):
        span = f"[{i}, {i + width})" if width > 1 else str(i)
        raise VerifyException(
            f"'{op_name}' constant index {span} is out of bounds for {array.size.data} elements"
        )


@irdl_op_definition
class ArrayLoadOp(IRDLOperation):
    """Reads element `index` of an array, or `N` consecutive ones as a vector.

    `%v = kernel.array_load %a[%i] : !kernel.array<8xf32, local>, i32 -> f32`
    """

    name = "kernel.array_load"

    array = operand_def(ArrayType)
    index = operand_def()
    result = result_def()

    traits = traits_def(MemoryReadEffect())

    assembly_format = (
        "$array `[` $index `]` attr-dict `:` type($array) `,` type($index) `->` type($result)"
    )

    def __init__(self, array: SSAValue, index: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            assert isinstance(array.type, ArrayType)
            result_type = array.type.element_type
        super().__init__(operands=[array, index], result_types=[result_type])

    def verify_(self) -> None:
        _check_index(self.name, self.index)
        a = self.array.type
        assert isinstance(a, ArrayType)
        n = _check_access(self.name, "result", self.result.type, a.element_type)
        _check_array_bounds(self.name, a, self.index, n)


@irdl_op_definition
class ArrayStoreOp(IRDLOperation):
    """Writes a value (or vector) at element `index` of an array.

    `kernel.array_store %v, %a[%i] : f32, !kernel.array<8xf32, local>, i32`
    """

    name = "kernel.array_store"

    value = operand_def()
    array = operand_def(ArrayType)
    index = operand_def()

    traits = traits_def(MemoryWriteEffect())

    assembly_format = (
        "$value `,` $array `[` $index `]` attr-dict `:` type($value) `,` type($array) `,` "
        "type($index)"
    )

    def __init__(self, value: SSAValue, array: SSAValue, index: SSAValue):
        super().__init__(operands=[value, array, index])

    def verify_(self) -> None:
        _check_index(self.name, self.index)
        a = self.array.type
        assert isinstance(a, ArrayType)
        n = _check_access(self.name, "value", self.value.type, a.element_type)
        _check_array_bounds(self.name, a, self.index, n)


ASYNC_COPY_BYTES = (4, 8, 16)
"""The sizes of one asynchronous copy (`cp.async`)."""
ASYNC_COPY_ARCH = 80
"""The first compute capability whose copies are asynchronous (`cp.async`); before it
`fuser::copy_async` is a plain copy that has landed when it returns (copy.cuh)."""


@irdl_op_definition
class CopyAsyncOp(IRDLOperation):
    """Starts copying `elements` consecutive elements of a tensor parameter, from `offset`, to a
    shared array at `index` (`cp.async`, sm_80 on), or zeros where `valid` is false (nothing
    is read then). The copy lands after a `kernel.copy_async_commit` closes its group and a
    `kernel.copy_async_wait` waits for the group; only the thread that started it may read it
    before a barrier. 4, 8 or 16 bytes, aligned to their size at both ends.

    `kernel.copy_async %t[%off], %a[%i] elements 8 if %ok : !kernel.tensor<bf16, 2>, i32,
    !kernel.array<4096xbf16, dynamic>, i32`
    """

    name = "kernel.copy_async"

    tensor = operand_def(TensorParamType)
    offset = operand_def()
    array = operand_def(ArrayType)
    index = operand_def()
    valid = operand_def(I1)
    elements = prop_def(IntegerAttr.constr(i64))

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    assembly_format = (
        "$tensor `[` $offset `]` `,` $array `[` $index `]` `elements` $elements `if` $valid "
        "attr-dict `:` type($tensor) `,` type($offset) `,` type($array) `,` type($index)"
    )

    def __init__(
        self,
        tensor: SSAValue,
        offset: SSAValue,
        array: SSAValue,
        index: SSAValue,
        elements: int,
        valid: SSAValue,
    ):
        super().__init__(
            operands=[tensor, offset, array, index, valid],
            properties={"elements": IntegerAttr(elements, i64)},
        )

    def verify_(self) -> None:
        _check_index(self.name, self.offset)
        _check_index(self.name, self.index)
        t, a = self.tensor.type, self.array.type
        assert isinstance(t, TensorParamType) and isinstance(a, ArrayType)
        if a.memory_space.data == MemorySpace.LOCAL:
            raise VerifyException(f"'{self.name}' copies into a shared array, not a local one")
        if a.element_type != t.element_type:
            raise VerifyException(
                f"'{self.name}' array element type {a.element_type} does not match the "
                f"tensor's {t.element_type}"
            )
        n = self.elements.value.data
        if n * byte_size(a.element_type) not in ASYNC_COPY_BYTES:
            raise VerifyException(
                f"'{self.name}' copies {n} x {a.element_type} = {n * byte_size(a.element_type)} "
                f"bytes, not one of {', '.join(map(str, ASYNC_COPY_BYTES))}"
            )
        _check_array_bounds(self.name, a, self.index, n)


@irdl_op_definition
class CopyAsyncCommitOp(IRDLOperation):
    """Closes the group of the `kernel.copy_async`s the thread started since the last one
    (`cp.async.commit_group`)."""

    name = "kernel.copy_async_commit"

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class CopyAsyncWaitOp(IRDLOperation):
    """Waits until at most `pending` of the thread's committed copy groups are still in flight
    (`cp.async.wait_group`): the older groups' copies have landed.

    `kernel.copy_async_wait pending 1`
    """

    name = "kernel.copy_async_wait"

    pending = prop_def(IntegerAttr.constr(i64))

    assembly_format = "`pending` $pending attr-dict"

    def __init__(self, pending: int):
        super().__init__(properties={"pending": IntegerAttr(pending, i64)})

    def verify_(self) -> None:
        if not 0 <= self.pending.value.data <= 7:
            raise VerifyException(f"'{self.name}' pending must be between 0 and 7")


# --------------------------------------------------------------------------------------------
# Cooperation between threads
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """`__syncthreads()`: every thread of the block must reach it."""

    name = "kernel.barrier"

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


def _check_along(op_name: str, along: DimensionAttr, allowed: Sequence[Dimension]) -> None:
    if along.data not in allowed:
        names = " or ".join(d.value for d in allowed)
        raise VerifyException(f"'{op_name}' reduces along {names}, not {along.data.value}")


class ReduceOp(IRDLOperation, ABC):
    """Combines `value` over a set of threads with `kind`; its threads all get the result."""

    T: ClassVar = VarConstraint("T", AnyAttr())

    kind = prop_def(ReduceKindAttr)
    value = operand_def(T)
    result = result_def(T)

    def verify_(self) -> None:
        _check_type_in(self.name, "operand", self.value.type, REDUCE_TYPES)


@irdl_op_definition
class WarpReduceOp(ReduceOp):
    """Reduces over the 32 lanes of a warp (`__shfl_xor_sync` butterfly, full mask).

    `%r = kernel.warp_reduce sum %v : f32`
    """

    name = "kernel.warp_reduce"

    assembly_format = "$kind $value attr-dict `:` type($value)"

    def __init__(self, kind: ReduceKind, value: SSAValue):
        super().__init__(
            operands=[value],
            properties={"kind": ReduceKindAttr(kind)},
            result_types=[value.type],
        )


BLOCK_DIMENSIONS = (Dimension.X, Dimension.Y)


@irdl_op_definition
class BlockReduceOp(ReduceOp):
    """Reduces across `threadIdx.<along>` (x or y), separately for each group of threads that
    share the other thread indices; every thread of a group gets its group's result.

    `%r = kernel.block_reduce sum %v along x : f32`

    The emitter implements it with warp shuffles and a shared scratch buffer it declares
    itself; every thread of the block must reach it.
    """

    name = "kernel.block_reduce"

    along = prop_def(DimensionAttr)

    assembly_format = "$kind $value `along` $along attr-dict `:` type($value)"

    def __init__(self, kind: ReduceKind, value: SSAValue, along: Dimension = Dimension.X):
        super().__init__(
            operands=[value],
            properties={"kind": ReduceKindAttr(kind), "along": DimensionAttr(along)},
            result_types=[value.type],
        )

    def verify_(self) -> None:
        super().verify_()
        _check_along(self.name, self.along, BLOCK_DIMENSIONS)


@irdl_op_definition
class BlockScanOp(IRDLOperation):
    """Scans across `threadIdx.<along>` (x only), separately for each group of threads that
    share the other thread indices: each thread gets the combination (`kind`) of the values
    of the threads before it in its group (`exclusive`; the identity for the first) and of the
    whole group (`total`).

    `%before, %total = kernel.block_scan sum %v along x : f32`

    The emitter implements it with warp shuffles (`__shfl_up_sync`) and, for groups wider than
    a warp, a shared scratch buffer it declares itself; every thread of the block must reach
    it.
    """

    name = "kernel.block_scan"

    T: ClassVar = VarConstraint("T", AnyAttr())

    kind = prop_def(ReduceKindAttr)
    along = prop_def(DimensionAttr)
    value = operand_def(T)
    exclusive = result_def(T)
    total = result_def(T)

    assembly_format = "$kind $value `along` $along attr-dict `:` type($value)"

    def __init__(self, kind: ReduceKind, value: SSAValue, along: Dimension = Dimension.X):
        super().__init__(
            operands=[value],
            properties={"kind": ReduceKindAttr(kind), "along": DimensionAttr(along)},
            result_types=[value.type, value.type],
        )

    def verify_(self) -> None:
        _check_type_in(self.name, "operand", self.value.type, REDUCE_TYPES)
        if self.along.data != Dimension.X:
            raise VerifyException(f"'{self.name}' scans along x, not {self.along.data.value}")


@irdl_op_definition
class BlockTopkOp(IRDLOperation):
    """The block's row, in order: of the elements `values` hold (element e of thread t at index
    t + e * blockDim.x; those at `count` or past it are not read), the `k` smallest (with
    `descending`, the largest) into `out_values` and their indices into `out_indices`, sorted,
    equal ones by index, NaN above every number, -0.0 below +0.0 unless `equal_zeros`. Every
    thread of the block must reach it; the outputs may be read after it.

    `kernel.block_topk %vals, %n, %k, %top, %at descending : !kernel.array<32xf32, local>, i32,
    !kernel.array<64xf32, dynamic>, !kernel.array<64xi32, dynamic>`

    The emitter calls `fuser::block_topk` (`fuser/sort.cuh`): a radix selection of the k-th
    key over the threads' registers (shared histograms), then a bitonic sort of the k taken in
    the output arrays, whose size (a power of two, at least k) is the sort's width.
    """

    name = "kernel.block_topk"

    N: ClassVar = VarConstraint("N", AnyAttr())

    values = operand_def(ArrayType)
    count = operand_def(N)
    k = operand_def(N)
    out_values = operand_def(ArrayType)
    out_indices = operand_def(ArrayType)
    descending = opt_prop_def(UnitAttr)
    equal_zeros = opt_prop_def(UnitAttr)
    """-0.0 and +0.0 compare equal (an argsort's order, torch.argsort's); without it -0.0 is
    below +0.0 (a top-k's, torch's radix selection)."""

    assembly_format = (
        "$values `,` $count `,` $k `,` $out_values `,` $out_indices (`descending` "
        "$descending^)? (`equal_zeros` $equal_zeros^)? attr-dict `:` type($values) `,` "
        "type($count) `,` type($out_values) `,` type($out_indices)"
    )

    def __init__(
        self,
        values: SSAValue,
        count: SSAValue,
        k: SSAValue,
        out_values: SSAValue,
        out_indices: SSAValue,
        descending: bool,
        equal_zeros: bool = False,
    ):
        super().__init__(
            operands=[values, count, k, out_values, out_indices],
            properties={
                "descending": UnitAttr() if descending else None,
                "equal_zeros": UnitAttr() if equal_zeros else None,
            },
        )

    def verify_(self) -> None:
        t, out, at = self.values.type, self.out_values.type, self.out_indices.type
        assert isinstance(t, ArrayType) and isinstance(out, ArrayType)
        assert isinstance(at, ArrayType)
        _check_type_in(self.name, "element", t.element_type, REDUCE_TYPES)
        if t.memory_space.data != MemorySpace.LOCAL:
            raise VerifyException(f"'{self.name}' values must be a local array, got {t}")
        for what, v in (("count", self.count), ("k", self.k)):
            if v.type not in INDEX_TYPES:
                raise VerifyException(f"'{self.name}' {what} must be i32 or i64, got {v.type}")
        size = out.size.data
        if size & (size - 1) or out.element_type != t.element_type:
            raise VerifyException(
                f"'{self.name}' out_values must hold a power of two of {t.element_type}, got {out}"
            )
        if (
            at != ArrayType(size, I32, at.memory_space)
            or out.memory_space.data == MemorySpace.LOCAL
        ):
            raise VerifyException(
                f"'{self.name}' takes shared output arrays of one size, i32 indices; got {out} "
                f"and {at}"
            )


class WelfordCombineOp(IRDLOperation, ABC):
    """Combines Welford partial states (mean, M2 = sum of squared deviations, count as a float)
    over a set of threads; each of them gets the combined state. A thread without data holds
    count 0 (with mean and M2 0)."""

    T: ClassVar = VarConstraint("T", AnyAttr())

    avg = operand_def(T)
    m2 = operand_def(T)
    count = operand_def(T)
    result_avg = result_def(T)
    result_m2 = result_def(T)
    result_count = result_def(T)

    def verify_(self) -> None:
        _check_type_in(self.name, "state", self.avg.type, WELFORD_TYPES)


@irdl_op_definition
class WarpWelfordOp(WelfordCombineOp):
    """Combines Welford states over the 32 lanes of a warp.

    `%avg2, %m2_2, %n2 = kernel.warp_welford %avg, %m2, %n : f32`
    """

    name = "kernel.warp_welford"

    assembly_format = "$avg `,` $m2 `,` $count attr-dict `:` type($avg)"

    def __init__(self, avg: SSAValue, m2: SSAValue, count: SSAValue):
        super().__init__(operands=[avg, m2, count], result_types=[avg.type] * 3)


@irdl_op_definition
class BlockWelfordOp(WelfordCombineOp):
    """Combines Welford states across `threadIdx.<along>` (x or y), per group of threads that
    share the other thread indices, as `kernel.block_reduce` does.

    `%avg2, %m2_2, %n2 = kernel.block_welford %avg, %m2, %n along x : f32`
    """

    name = "kernel.block_welford"

    along = prop_def(DimensionAttr)

    assembly_format = "$avg `,` $m2 `,` $count `along` $along attr-dict `:` type($avg)"

    def __init__(
        self, avg: SSAValue, m2: SSAValue, count: SSAValue, along: Dimension = Dimension.X
    ):
        super().__init__(
            operands=[avg, m2, count],
            properties={"along": DimensionAttr(along)},
            result_types=[avg.type] * 3,
        )

    def verify_(self) -> None:
        super().verify_()
        _check_along(self.name, self.along, BLOCK_DIMENSIONS)


@irdl_op_definition
class GridReduceOp(IRDLOperation):
    """Combines the values of the blocks that share the other block indices across
    `blockIdx.<along>`, through a global work buffer and a semaphore.

    `%r, %last = kernel.grid_reduce sum %v, %work, %sem along x : f32`

    Each block writes its partial value to `work` (`!kernel.tensor<T, 1>`) and counts itself
    in `sem` (`!kernel.tensor<i32, 1>`, one counter per group of blocks, zero before the
    launch and reset by the last block). `%last` is true in the one block of a group that
    arrives last; there `%r` is the group's result, elsewhere it is undefined. Every thread of
    every block must reach it.
    """

    name = "kernel.grid_reduce"

    T: ClassVar = VarConstraint("T", AnyAttr())

    kind = prop_def(ReduceKindAttr)
    along = prop_def(DimensionAttr)
    value = operand_def(T)
    work = operand_def(TensorParamType)
    semaphore = operand_def(TensorParamType)
    result = result_def(T)
    last = result_def(I1)

    assembly_format = (
        "$kind $value `,` $work `,` $semaphore `along` $along attr-dict `:` type($value) `,` "
        "type($work) `,` type($semaphore)"
    )

    def __init__(
        self,
        kind: ReduceKind,
        value: SSAValue,
        work: SSAValue,
        semaphore: SSAValue,
        along: Dimension = Dimension.X,
    ):
        super().__init__(
            operands=[value, work, semaphore],
            properties={"kind": ReduceKindAttr(kind), "along": DimensionAttr(along)},
            result_types=[value.type, I1],
        )

    def verify_(self) -> None:
        t = self.value.type
        _check_type_in(self.name, "operand", t, REDUCE_TYPES)
        if self.work.type != TensorParamType(t, 1):
            raise VerifyException(
                f"'{self.name}' work buffer has type {self.work.type}, expected "
                f"{TensorParamType(t, 1)}"
            )
        if self.semaphore.type != TensorParamType(I32, 1):
            raise VerifyException(
                f"'{self.name}' semaphore has type {self.semaphore.type}, expected "
                f"{TensorParamType(I32, 1)}"
            )


# --------------------------------------------------------------------------------------------
# Matmul tiles
# --------------------------------------------------------------------------------------------


class MatmulEngine(StrEnum):
    """Which units multiply: Hopper's tensor cores through warpgroup MMA (`wgmma.mma_async`
    from shared memory, sm_90a), the tensor cores through `mma.sync` (sm_80 on; f16/bf16
    operands, f32 accumulators both), or the CUDA cores (f32/f64, fused multiply-adds)."""

    WGMMA = "wgmma"
    MMA = "mma"
    SIMT = "simt"


class MatmulLoad(StrEnum):
    """How an operand tile moves to shared memory, and its layout there.

    `k_*`: a shared row per M (or N) index, holding consecutive k (the operand's K dim is
    contiguous: `ldmatrix`); `mn_*`: a row per k, holding consecutive M (or N) indices
    (`ldmatrix.trans`). `*_async`: 16-byte `cp.async` chunks (rows of the operand 16-byte aligned;
    a chunk not wholly inside the operand is loaded element by element and zero-filled);
    `*_elements`: element by element, any strides.
    """

    K_ASYNC = "k_async"
    MN_ASYNC = "mn_async"
    K_ELEMENTS = "k_elements"
    MN_ELEMENTS = "mn_elements"


MATMUL_ELEMENTS: dict[MatmulEngine, tuple[Attribute, ...]] = {
    MatmulEngine.WGMMA: (F16, BF16),
    MatmulEngine.MMA: (F16, BF16),
    MatmulEngine.SIMT: (F32, F64),
}
SIMT_WARPS = (8, 1)
"""A SIMT tile has 256 threads (a 16 x 16 grid of them) and two shared buffers."""
WGMMA_N = (64, 128, 256)
"""The tile widths (N of `wgmma.mma_async` m64nNk16) the preamble's wgmma tile is built for."""


def accumulator_type(element_type: Attribute) -> Attribute:
    """The type a matmul of `element_type` operands accumulates in: f64 for f64, else f32."""
    return F64 if element_type == F64 else F32


@irdl_attr_definition
class MatmulConfigAttr(ParametrizedAttribute):
    """The C++ tile a `kernel.matmul_mainloop` runs and `kernel.matmul_frag` indexes:

    `#kernel.matmul<mma bf16, tile 128x256x32, warps 2x4, stages 3, a k_async, b mn_async>`

    is `fuser::mm::Mma<__nv_bfloat16, 128, 256, 32, 2, 4, 3, K_ASYNC, MN_ASYNC>` of the preamble:
    a 128 x 256 tile of C per block, k tiles of 32, 2 x 4 warps (64 x 64 outputs each), a
    3-stage cp.async pipeline. `wgmma` tiles are `fuser::mm::Wgmma<T, BM, BN, 64, STAGES,
    LOAD_A, LOAD_B>` (sm_90a): a warpgroup (`warps 4x1`) per 64 rows, k tiles of 64. `simt`
    tiles are `fuser::mm::Simt<T, BM, BN, BK, LOAD_A, LOAD_B>` with 256 threads (`warps 8x1`)
    and two buffers (`stages 2`), loads `*_elements`.
    """

    name = "kernel.matmul"

    engine: StringAttr
    element_type: Attribute
    tile_m: IntAttr
    tile_n: IntAttr
    tile_k: IntAttr
    warps_m: IntAttr
    warps_n: IntAttr
    stages: IntAttr
    load_a: StringAttr
    load_b: StringAttr

    def __init__(
        self,
        engine: MatmulEngine,
        element_type: Attribute,
        tile: tuple[int, int, int],
        warps: tuple[int, int],
        stages: int,
        load_a: MatmulLoad,
        load_b: MatmulLoad,
    ):
        super().__init__(
            StringAttr(engine.value),
            element_type,
            *(IntAttr(x) for x in (*tile, *warps, stages)),
            StringAttr(load_a.value),
            StringAttr(load_b.value),
        )

    @property
    def tile(self) -> tuple[int, int, int]:
        return (self.tile_m.data, self.tile_n.data, self.tile_k.data)

    @property
    def warps(self) -> tuple[int, int]:
        return (self.warps_m.data, self.warps_n.data)

    @property
    def threads(self) -> int:
        return 32 * self.warps_m.data * self.warps_n.data

    @property
    def acc_size(self) -> int:
        """Accumulators per thread: the tile's outputs over the threads."""
        return self.tile_m.data * self.tile_n.data // self.threads

    def shared_bytes(self) -> int:
        """The dynamic shared memory the tile's mainloop takes."""
        bm, bn, bk = self.tile
        el = byte_size(self.element_type)
        if self.engine.data == MatmulEngine.MMA:
            return self.stages.data * (bm + bn) * bk * el
        if self.engine.data == MatmulEngine.WGMMA:
            return self.stages.data * (bm + bn) * bk * el + 1024  # + aligning to 1024
        pad = 16 // el
        return 2 * bk * (bm + pad + bn + pad) * el

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"{self.engine.data} ")
            printer.print_attribute(self.element_type)
            bm, bn, bk = self.tile
            printer.print_string(
                f", tile {bm}x{bn}x{bk}, warps {self.warps_m.data}x{self.warps_n.data}, "
                f"stages {self.stages.data}, a {self.load_a.data}, b {self.load_b.data}"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def keyword(options: Sequence[str], what: str) -> str:
            start = parser.pos
            word = parser.parse_identifier()
            if word not in options:
                parser.raise_error(
                    f"#kernel.matmul {what} must be one of {', '.join(options)}", start, parser.pos
                )
            return word

        def dims(label: str, count: int) -> list[int]:
            parser.parse_punctuation(",")
            parser.parse_keyword(label)
            values = [parser.parse_integer(allow_boolean=False, allow_negative=False)]
            for _ in range(count - 1):
                parser.parse_shape_delimiter()
                values.append(parser.parse_integer(allow_boolean=False, allow_negative=False))
            return values

        with parser.in_angle_brackets():
            engine = keyword([e.value for e in MatmulEngine], "engine")
            element_type = parser.parse_type()
            tile = dims("tile", 3)
            warps = dims("warps", 2)
            (stages,) = dims("stages", 1)
            loads = [e.value for e in MatmulLoad]
            parser.parse_punctuation(",")
            parser.parse_keyword("a")
            load_a = keyword(loads, "load")
            parser.parse_punctuation(",")
            parser.parse_keyword("b")
            load_b = keyword(loads, "load")
        return (
            StringAttr(engine),
            element_type,
            *(IntAttr(x) for x in (*tile, *warps, stages)),
            StringAttr(load_a),
            StringAttr(load_b),
        )

    def verify(self) -> None:
        bm, bn, bk = self.tile
        wm, wn = self.warps
        engines = [e.value for e in MatmulEngine]
        loads = [e.value for e in MatmulLoad]
        if self.engine.data not in engines:
            raise VerifyException(
                f"#kernel.matmul engine {self.engine.data} is not one of {engines}"
            )
        for which, load in (("a", self.load_a.data), ("b", self.load_b.data)):
            if load not in loads:
                raise VerifyException(
                    f"#kernel.matmul load of {which} {load} is not one of {loads}"
                )
        engine = MatmulEngine(self.engine.data)
        allowed = MATMUL_ELEMENTS[engine]
        if self.element_type not in allowed:
            raise VerifyException(
                f"#kernel.matmul {engine.value} tiles take {_names(allowed)} operands, not "
                f"{self.element_type}"
            )
        if min(bm, bn, bk, wm, wn, self.stages.data) < 1:
            raise VerifyException("#kernel.matmul extents must be positive")
        if engine == MatmulEngine.SIMT:
            problem = self._simt_problem(bm, bn, bk)
        elif engine == MatmulEngine.WGMMA:
            problem = self._wgmma_problem(bm, bn, bk, wm, wn)
        else:
            problem = self._mma_problem(bm, bn, bk, wm, wn)
        if problem is not None:
            raise VerifyException(f"#kernel.matmul {engine.value} tile {bm}x{bn}x{bk}: {problem}")

    def _simt_problem(self, bm: int, bn: int, bk: int) -> str | None:
        if self.warps != SIMT_WARPS or self.stages.data != 2:
            return "simt tiles have warps 8x1 and stages 2"
        if any(x.data.endswith("async") for x in (self.load_a, self.load_b)):
            return "simt tiles load *_elements"
        if bm % 16 or bn % 32 or (bm * bk) % 256 or (bn * bk) % 256:
            return "needs M a multiple of 16, N of 32, M x K and N x K of 256"
        return None

    def _wgmma_problem(self, bm: int, bn: int, bk: int, wm: int, wn: int) -> str | None:
        if bm % 64 or bn not in WGMMA_N or bk != 64 or self.stages.data < 3:
            return (
                f"needs M a multiple of 64, N one of {', '.join(map(str, WGMMA_N))}, K 64 and at "
                "least 3 stages"
            )
        if (wm, wn) != (bm // 16, 1):
            return f"has a warpgroup per 64 rows: warps {bm // 16}x1"
        return self._operand_problem(bm, bn, bk)

    def _mma_problem(self, bm: int, bn: int, bk: int, wm: int, wn: int) -> str | None:
        if bm % (16 * wm) or bn % (16 * wn):
            return f"{wm}x{wn} warps need M and N multiples of 16 per warp"
        if bk % 16 or bk < 32 or self.stages.data < 2:
            return "needs K a multiple of 16, at least 32, and at least 2 stages"
        return self._operand_problem(bm, bn, bk)

    def _operand_problem(self, bm: int, bn: int, bk: int) -> str | None:
        """Whether both operands' tiles spread evenly over the threads in 16-byte chunks."""
        threads = self.threads
        for which, mn, load in (("a", bm, self.load_a.data), ("b", bn, self.load_b.data)):
            row = bk if load.startswith("k") else mn
            rows = mn if load.startswith("k") else bk
            chunks = row // 8
            if row % 8 or chunks < 2 or chunks & (chunks - 1):
                return f"operand {which} needs rows of 2^n >= 2 16-byte chunks, not {row} elements"
            if threads % chunks or (rows * chunks) % threads:
                return (
                    f"operand {which}'s {rows * chunks} chunks do not spread over {threads} threads"
                )
        return None


def _check_matmul_index(op_name: str, values: Sequence[SSAValue]) -> None:
    for v in values:
        _check_index(op_name, v)


@irdl_op_definition
class MatmulMainloopOp(IRDLOperation):
    """Accumulates a tile of C = A B into a thread's accumulators (the config's C++ tile):

    `kernel.matmul_mainloop %acc, %a[%a_off], %b[%b_off] rows %m0 cols %n0 k %k0 to %k1 config
    #kernel.matmul<...> : !kernel.array<128xf32, local>, !kernel.tensor<bf16, 2>,
    !kernel.tensor<bf16, 2>, i32`

    sets `acc` to `A[m0 : m0 + BM, k0 : k1] B[k0 : k1, n0 : n0 + BN]` over the last two dims of `a`
    (`[.., M, K]`) and `b` (`[.., K, N]`) at element offsets `a_off` and `b_off` (a batch);
    rows and columns past M, N and k1 count as zero. Accumulator `i` of a thread holds the element
    `kernel.matmul_frag` gives for `i`. It stages the operands in dynamic shared memory
    (`config.shared_bytes()`, the launch's `smem`) and synchronizes the block: every thread must
    reach it.
    """

    name = "kernel.matmul_mainloop"

    T: ClassVar = VarConstraint("T", AnyAttr())

    acc = operand_def(ArrayType)
    lhs = operand_def(TensorParamType)
    lhs_offset = operand_def(T)
    rhs = operand_def(TensorParamType)
    rhs_offset = operand_def(T)
    row = operand_def(T)
    col = operand_def(T)
    k_begin = operand_def(T)
    k_end = operand_def(T)
    config = prop_def(MatmulConfigAttr)

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    assembly_format = (
        "$acc `,` $lhs `[` $lhs_offset `]` `,` $rhs `[` $rhs_offset `]` `rows` $row `cols` $col "
        "`k` $k_begin `to` $k_end `config` qualified($config) attr-dict `:` type($acc) `,` "
        "type($lhs) `,` type($rhs) `,` type($row)"
    )

    def __init__(
        self,
        acc: SSAValue,
        lhs: SSAValue,
        lhs_offset: SSAValue,
        rhs: SSAValue,
        rhs_offset: SSAValue,
        row: SSAValue,
        col: SSAValue,
        k_begin: SSAValue,
        k_end: SSAValue,
        config: MatmulConfigAttr,
    ):
        super().__init__(
            operands=[acc, lhs, lhs_offset, rhs, rhs_offset, row, col, k_begin, k_end],
            properties={"config": config},
        )

    def verify_(self) -> None:
        _check_matmul_index(self.name, [self.row])
        config = self.config
        a, b, acc = self.lhs.type, self.rhs.type, self.acc.type
        assert isinstance(a, TensorParamType) and isinstance(b, TensorParamType)
        assert isinstance(acc, ArrayType)
        if a.element_type != config.element_type or b.element_type != config.element_type:
            raise VerifyException(
                f"'{self.name}' operands {a} and {b} must have the config's element type "
                f"{config.element_type}"
            )
        if a.rank.data < 2 or a.rank != b.rank:
            raise VerifyException(
                f"'{self.name}' operands need one rank >= 2, got {a.rank.data} and {b.rank.data}"
            )
        accumulator = accumulator_type(config.element_type)
        expected = ArrayType(config.acc_size, accumulator, MemorySpace.LOCAL)
        if acc != expected:
            raise VerifyException(f"'{self.name}' accumulators {acc} must be {expected}")


@irdl_op_definition
class MatmulFragOp(IRDLOperation):
    """Where accumulator `index` of this thread lies in the tile of a `kernel.matmul_mainloop`
    with the same config: `%r, %c = kernel.matmul_frag %i config #kernel.matmul<...> : i32` (row
    and column within the tile). For even `index`, accumulator `index + 1` is at `(%r, %c + 1)`."""

    name = "kernel.matmul_frag"

    T: ClassVar = VarConstraint("T", AnyAttr())

    index = operand_def(T)
    row = result_def(T)
    col = result_def(T)
    config = prop_def(MatmulConfigAttr)

    traits = traits_def(Pure())

    assembly_format = "$index `config` qualified($config) attr-dict `:` type($index)"

    def __init__(self, index: SSAValue, config: MatmulConfigAttr):
        super().__init__(
            operands=[index], result_types=[index.type, index.type], properties={"config": config}
        )

    def verify_(self) -> None:
        _check_index(self.name, self.index)
        i = _constant_int(self.index)
        if i is not None and not 0 <= i < self.config.acc_size:
            raise VerifyException(
                f"'{self.name}' index {i} is out of range for {self.config.acc_size} accumulators"
            )


# --------------------------------------------------------------------------------------------
# Comments
# --------------------------------------------------------------------------------------------


def random_per_block(t: Attribute) -> int:
    """The elements of type `t` one Philox block gives: 4 f32 (a word each), 2 f64 (two)."""
    return 4 if t == F32 else 2


@irdl_op_definition
class RandomOp(IRDLOperation):
    """Element `subsequence * k + component` of `fusion.rand` / `fusion.randn` under `seed`
    and `offset` (i64), where k is the elements one Philox block gives (4 for f32, 2 for f64):
    a function of those alone (`fuser.runtime.philox` defines it; the emitter calls
    `fuser/random.cuh`). Elements of one block share `subsequence`, so a kernel drawing them
    together computes the block once.

    `%r = kernel.random uniform %seed, %offset, %block, %c : i32 -> f32`
    """

    name = "kernel.random"

    distribution = prop_def(DistributionAttr)
    seed = operand_def(I64)
    offset = operand_def(I64)
    T: ClassVar = VarConstraint("T", AnyAttr())
    subsequence = operand_def(T)
    component = operand_def(T)
    result = result_def()

    assembly_format = (
        "$distribution $seed `,` $offset `,` $subsequence `,` $component attr-dict `:` "
        "type($subsequence) `->` type($result)"
    )

    traits = traits_def(Pure())

    def __init__(
        self,
        distribution: Distribution,
        seed: SSAValue,
        offset: SSAValue,
        subsequence: SSAValue,
        component: SSAValue,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[seed, offset, subsequence, component],
            properties={"distribution": DistributionAttr(distribution)},
            result_types=[result_type],
        )

    @property
    def per_block(self) -> int:
        """The elements one Philox block gives (`random_per_block`)."""
        return random_per_block(self.result.type)

    def verify_(self) -> None:
        if self.subsequence.type not in INDEX_TYPES:
            raise VerifyException(
                f"'{self.name}' subsequence and component must be i32 or i64, got "
                f"{self.subsequence.type}"
            )
        if self.result.type not in (F32, F64):
            raise VerifyException(
                f"'{self.name}' result must be f32 or f64, got {self.result.type}"
            )


@irdl_op_definition
class CommentOp(IRDLOperation):
    """A `//` line in the CUDA source: `kernel.comment "fusion.var_mean %var"` names the fusion
    op that the following code comes from."""

    name = "kernel.comment"

    text = prop_def(StringAttr)

    assembly_format = "$text attr-dict"

    def __init__(self, text: str):
        super().__init__(properties={"text": StringAttr(text)})

    def verify_(self) -> None:
        if "\n" in self.text.data or "\r" in self.text.data:
            raise VerifyException(f"'{self.name}' text must be a single line")


Kernel = Dialect(
    "kernel",
    [
        FuncOp,
        ReturnOp,
        ThreadIdOp,
        BlockIdOp,
        BlockDimOp,
        GridDimOp,
        SizeOp,
        StrideOp,
        TransposedOp,
        LoadOp,
        SelectLoadOp,
        StoreOp,
        AllocOp,
        ArrayLoadOp,
        ArrayStoreOp,
        CopyAsyncOp,
        CopyAsyncCommitOp,
        CopyAsyncWaitOp,
        BarrierOp,
        WarpReduceOp,
        BlockReduceOp,
        BlockScanOp,
        BlockTopkOp,
        WarpWelfordOp,
        BlockWelfordOp,
        GridReduceOp,
        RandomOp,
        CommentOp,
        MatmulMainloopOp,
        MatmulFragOp,
    ],
    [
        DimensionAttr,
        ReduceKindAttr,
        DistributionAttr,
        MemorySpaceAttr,
        TensorParamType,
        ArrayType,
        MatmulConfigAttr,
    ],
)
