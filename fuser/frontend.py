"""The Python API: define a fusion the way nvFuser users do, and get fusion-dialect IR.

```python
with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
    y = fd.ops.relu(fd.ops.cast(x, DataType.Float))
    fd.add_output(y)
print(fd.fusion_ir())
```

The fusion dialect is strict (no implicit promotion or broadcasting, f16/bf16 only as storage
types), so that later passes see every conversion. This module is where the friendliness
lives: it applies torch's type promotion and nvFuser's implicit broadcast (inserting
`broadcast_in_dim`), computes half-precision math in f32, normalizes dims, and reports a user's
mistake as a `DefinitionError` naming the op and the argument, before any IR is verified.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import numbers
import threading
from collections.abc import Callable, Sequence
from enum import Enum, auto
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

if TYPE_CHECKING:
    from fuser.compiler import CompiledFusion, FusionCompiler, SegmentSummary
    from fuser.profiler import FusionProfile

from fuser import dump
from fuser.dialects.common import op_text
from fuser.dialects.fusion import (
    I1,
    INPUT_SHARDINGS,
    SHARDING,
    STREAM_AXIS,
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
    PermuteOp,
    PowOp,
    ProdOp,
    RandnOp,
    RandOp,
    ReciprocalOp,
    ReductionOp,
    ReluOp,
    RemainderOp,
    ReshapeOp,
    RoundOp,
    RsqrtOp,
    ScanOp,
    ScatterOp,
    SegmentSetOp,
    SetOp,
    ShardingAttr,
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
    UnaryTestOp,
    VarMeanOp,
    WelfordOp,
    WhereOp,
    cat_clash,
    dims_compatible,
    element_type,
    format_shape,
    kept_extents,
    reduced_shape,
    row_major_order,
    shapes_compatible,
    stream_operand_axes,
    take_from_empty,
)
from fuser.dialects.views import END, ReshapeError, SliceError, check_slice_steps
from fuser.dtypes import (
    DataType,
    ParallelType,
    compute_dtype,
    number_dtype,
    result_type,
    unsupported_message,
)
from fuser.errors import DefinitionError, InputError, ValidationError, VerificationError
from fuser.options import DEFAULT_STREAMS, check_options
from fuser.python_definition import Call, definition_text, python_text, recorded

Number = bool | int | float


# --------------------------------------------------------------------------------------------
# Handles
# --------------------------------------------------------------------------------------------


class Extent:
    """The runtime extent of one dim of a tensor, from `t.size(i)` or `t.shape()`.

    Extents size the new dims of `fd.ops.broadcast_in_dim`. A static dim gives a static
    extent (`static` holds it); a dynamic one becomes a `fusion.dim` op when first used.
    """

    def __init__(self, tensor: Tensor, axis: int):
        self.tensor = tensor
        self.axis = axis

    @property
    def static(self) -> int | None:
        """The extent when the dim is static, else None."""
        ext = self.tensor._shape[self.axis]
        return None if ext == DYNAMIC_INDEX else ext

    def _ssa(self) -> SSAValue:
        return self.tensor._fd._extent_value(self.tensor, self.axis)

    def __repr__(self) -> str:
        ext = "?" if self.static is None else self.static
        return f"Extent({self.tensor.name}[{self.axis}] = {ext})"


class _Value:
    """A value of a FusionDefinition (a tensor or a scalar), with Python operators."""

    def __init__(self, fd: FusionDefinition, value: SSAValue):
        self._fd = fd
        self._value = value

    @property
    def dtype(self) -> DataType:
        return DataType.from_element_type(element_type(self._value.type))

    @property
    def name(self) -> str:
        """The name of the value in the IR (`t0`, `s1`), nvFuser's T0, S1."""
        return self._value.name_hint or "?"

    def __add__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.add(self, other)

    def __radd__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.add(other, self)

    def __sub__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.sub(self, other)

    def __rsub__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.sub(other, self)

    def __mul__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.mul(self, other)

    def __rmul__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.mul(other, self)

    def __truediv__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.truediv(self, other)

    def __rtruediv__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.truediv(other, self)

    def __pow__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.pow(self, other)

    def __rpow__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.pow(other, self)

    def __neg__(self) -> Tensor | Scalar:
        return self._fd.ops.neg(self)

    def __abs__(self) -> Tensor | Scalar:
        return self._fd.ops.abs(self)

    def __lt__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.lt(self, other)

    def __le__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.le(self, other)

    def __gt__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.gt(self, other)

    def __ge__(self, other: Any) -> Tensor | Scalar:
        return self._fd.ops.ge(self, other)

    # `==` and `!=` build ops as nvFuser's do, so a handle's hash is its identity (set and dict
    # membership then never calls `==`), and a handle has no truth value: `if a == b` and
    # `a in [b]` raise instead of silently comparing identities.

    def __eq__(self, other: object) -> Tensor | Scalar:  # type: ignore[override]
        if not isinstance(other, _Value | numbers.Real):
            return NotImplemented
        return self._fd.ops.eq(self, other)

    def __ne__(self, other: object) -> Tensor | Scalar:  # type: ignore[override]
        if not isinstance(other, _Value | numbers.Real):
            return NotImplemented
        return self._fd.ops.ne(self, other)

    __hash__ = object.__hash__

    def __bool__(self) -> NoReturn:
        raise DefinitionError(
            f"{type(self).__name__} {self.name} has no truth value while a fusion is defined "
            "(use fd.ops.where to select, fd.ops.eq or fd.ops.ne to compare values, and `is` "
            "to compare handles)"
        )


def _stride_order_arg(op: str, order: object, rank: int) -> tuple[int, ...]:
    """An nvFuser `stride_order` argument (entry i: the rank of dim i's stride, 0 the
    innermost; empty: none given), checked."""
    if (
        not isinstance(order, Sequence)
        or isinstance(order, str)
        or not all(type(i) is int for i in order)
        or (order and sorted(cast(Sequence[int], order)) != list(range(rank)))
    ):
        _fail(
            op,
            f"argument 'stride_order' must be empty or a permutation of the {rank} dims, "
            f"got {order!r}",
        )
    return tuple(cast(Sequence[int], order))


class Tensor(_Value):
    """A tensor of a FusionDefinition: an input, or the result of an `fd.ops` call."""

    _stride_order: tuple[int, ...] | None = None
    """The layout `fd.ops.stride_order` asked for (None: none), which `add_output` gives."""

    @property
    def _shape(self) -> tuple[int, ...]:
        t = self._value.type
        assert isinstance(t, TensorType)
        return tuple(t.get_shape())

    @property
    def static_shape(self) -> tuple[int, ...]:
        """The shape as `define_tensor` takes it: -1 for a dynamic dim."""
        return tuple(-1 if d == DYNAMIC_INDEX else d for d in self._shape)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def size(self, dim: int) -> Extent:
        """The extent of dim `dim` (negative counts from the end)."""
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise DefinitionError(f"Tensor.size: argument 'dim' must be an int, got {dim!r}")
        if not -self.ndim <= dim < self.ndim:
            raise DefinitionError(
                f"Tensor.size: argument 'dim' is {dim}, out of range for rank {self.ndim}"
            )
        return Extent(self, int(dim) % self.ndim)

    def shape(self) -> list[Extent]:
        """The extents of all dims, as nvFuser's `Tensor.shape()`."""
        return [Extent(self, i) for i in range(self.ndim)]

    def __repr__(self) -> str:
        return f"Tensor({self.name}: {self._value.type})"

    # ---- where the tensor lives on a multi-GPU run (nvFuser's multidevice schedule) --------

    def set_device_mesh(self, mesh: Any) -> None:
        """Places the tensor on the devices of `mesh` (a `fuser.multidevice.DeviceMesh`),
        replicated until an axis is parallelized with `ParallelType.mesh_x`."""
        from fuser.multidevice import DeviceMesh

        self._fd._check_open("Tensor.set_device_mesh")
        if not isinstance(mesh, DeviceMesh):
            raise DefinitionError(
                f"Tensor.set_device_mesh: argument 'mesh' must be a multidevice.DeviceMesh, "
                f"got {mesh!r}"
            )
        old = self._fd._placements.get(self._value)
        self._fd._placements[self._value] = _Placement(mesh, old.axis if old else None)
        self._fd._record(f"{python_text(self)}.set_device_mesh", (mesh,))

    def outer_split(self, axis: int, factor: int) -> None:
        """nvFuser's `outer_split(axis, d)` before `axis(axis).parallelize(mesh_x)`: names the
        split of `axis` into `d` blocks, one per device; `d` must be the mesh's size."""
        self.split(axis, factor, inner_split=False)

    def split(self, axis: int, factor: int, inner_split: bool = True) -> None:
        """nvFuser's `split`: only the outer split of an axis into one block per device of the
        mesh (`inner_split=False`, factor = the mesh's size) is taken, as the split that
        `parallelize(ParallelType.mesh_x)` then spreads over the mesh."""
        what = "Tensor.split" if inner_split else "Tensor.outer_split"
        placement = self._mesh_placement(what)
        dim = self._fd.ops._dims(what, axis, self.ndim, "axis")[0]
        if inner_split or factor != placement.mesh.size:
            raise DefinitionError(
                f"{what}: only an outer split of an axis into the mesh's {placement.mesh.size} "
                f"devices is taken (the block each device holds), got "
                f"{'an inner' if inner_split else 'an outer'} split by {factor!r}"
            )
        self._fd._placements[self._value] = _Placement(placement.mesh, placement.axis, dim)
        self._fd._record(f"{python_text(self)}.outer_split", (axis, factor))

    def axis(self, i: int) -> _Axis:
        """Loop axis `i` of the tensor (its dim `i`; after `outer_split(a, d)`, axis `a` is the
        split's outer part), for `parallelize`."""
        placement = self._fd._placements.get(self._value)
        split = placement.split if placement else None
        n = self.ndim + (split is not None)
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not -n <= i < n:
            raise DefinitionError(f"Tensor.axis: {i!r} is not an axis of {self}")
        i = int(i) % n
        if split is not None and i > split:
            if i - 1 == split:
                return _Axis(self, None, i)
            return _Axis(self, i - 1, i)
        return _Axis(self, i, i)

    def _mesh_placement(self, what: str) -> _Placement:
        self._fd._check_open(what)
        placement = self._fd._placements.get(self._value)
        if placement is None:
            raise DefinitionError(f"{what}: call set_device_mesh(mesh) on {self.name} first")
        return placement


class _Axis:
    """One axis of a tensor, as `tv.axis(i)` gives it, to parallelize."""

    def __init__(self, tensor: Tensor, dim: int | None, loop_axis: int):
        self.tensor = tensor
        self.dim = dim
        """The tensor dim this axis is (None: the inner part of a split)."""
        self.loop_axis = loop_axis

    def parallelize(self, ptype: ParallelType) -> None:
        """`ParallelType.mesh_x` splits the tensor's dim evenly over its mesh, in mesh order;
        `ParallelType.Serial` undoes it."""
        t = self.tensor
        placement = t._mesh_placement("IterDomain.parallelize")
        if ptype is ParallelType.Serial:
            t._fd._placements[t._value] = _Placement(placement.mesh, None)
            t._fd._record(f"{python_text(t)}.axis({self.loop_axis}).parallelize", (ptype,))
            return
        if ptype is not ParallelType.mesh_x:
            raise DefinitionError(
                f"IterDomain.parallelize: {ptype!r} is not a device parallel type; use "
                "ParallelType.mesh_x (or fd.parallelize for ParallelType.Stream)"
            )
        if self.dim is None:
            raise DefinitionError(
                f"IterDomain.parallelize: the inner part of {t.name}'s split cannot be spread "
                "over the mesh; parallelize the outer axis"
            )
        if placement.split is not None and placement.split != self.dim:
            raise DefinitionError(
                f"IterDomain.parallelize: {t.name} was split along axis {placement.split}, "
                f"not {self.dim}"
            )
        t._fd._placements[t._value] = _Placement(placement.mesh, self.dim, placement.split)
        t._fd._record(f"{python_text(t)}.axis({self.loop_axis}).parallelize", (ptype,))


class _Placement(NamedTuple):
    """Where a tensor of a definition lives: its mesh, the dim split over it (None:
    replicated), and the dim `outer_split` named."""

    mesh: Any
    axis: int | None
    split: int | None = None


class Scalar(_Value):
    """A scalar of a FusionDefinition: an input, a constant, or a scalar op's result."""

    def __repr__(self) -> str:
        return f"Scalar({self.name}: {self._value.type})"


_Operand = Tensor | Scalar | bool | int | float

# --------------------------------------------------------------------------------------------
# Argument checking of the public entry points
# --------------------------------------------------------------------------------------------

_F = TypeVar("_F", bound=Callable[..., Any])


def _signature_text(fn: Callable[..., Any]) -> tuple[inspect.Signature, str]:
    """A method's signature, and its parameters as users read them: `(t, dims, keepdim=False)`."""
    sig = inspect.signature(fn)
    parts: list[str] = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind == inspect.Parameter.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        if p.default is inspect.Parameter.empty:
            parts.append(p.name)
        elif isinstance(p.default, Enum):
            parts.append(f"{p.name}={type(p.default).__name__}.{p.default.name}")
        else:
            parts.append(f"{p.name}={p.default!r}")
    return sig, "(" + ", ".join(parts) + ")"


def _api(fn: _F) -> _F:
    """Checks that the definition is open, turns a bad call into a DefinitionError, and
    records a user's call for `python_definition` (not the calls an entry point makes itself;
    one marked `_records_inner` is recorded as the calls it makes)."""
    sig, shown = _signature_text(fn)
    transparent = getattr(fn, "_records_inner", False)

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        qual = f"{self._prefix}{fn.__name__}"
        fd = self._definition
        fd._check_open(qual)
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as e:
            text = str(e)
            if "unexpected keyword" in text or "multiple values" in text:
                detail = text if text.startswith("got ") else f"got {text}"
                raise DefinitionError(f"{qual} {detail}; it takes {shown}") from None
            n = len(args) + len(kwargs)
            raise DefinitionError(
                f"{qual} takes {shown}, got {n} argument{'' if n == 1 else 's'}"
            ) from None
        if transparent or fd._depth:  # a call an entry point makes: checked and recorded there
            return fn(self, *args, **kwargs)
        for arg, value in list(bound.arguments.items())[1:]:
            if (foreign := _foreign(fd, value)) is not None:
                _fail(qual, f"argument '{arg}' ({foreign!r}) is of another FusionDefinition")
        before = fd._mark()
        fd._depth += 1
        try:
            result = fn(self, *args, **kwargs)
        except BaseException:
            fd._undo(before)  # a call the user catches leaves nothing behind
            raise
        finally:
            fd._depth -= 1
        fd._calls.append(Call(qual, recorded(args), recorded(tuple(kwargs.items())), result))
        return result

    return wrapper  # type: ignore[return-value]


def _foreign(fd: FusionDefinition, x: object) -> object | None:
    """A handle or extent of another FusionDefinition within an entry point's arguments."""
    if isinstance(x, _Value):
        return x if x._fd is not fd else None
    if isinstance(x, Extent):
        return x if x.tensor._fd is not fd else None
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, list | tuple):
        return next((f for e in x if (f := _foreign(fd, e)) is not None), None)
    return None


def _records_inner(fn: _F) -> _F:
    """Marks an entry point that `python_definition` prints as the entry points it calls
    (`from_pytorch` as its `define_tensor`: the text then runs without the torch tensor)."""
    fn._records_inner = True  # type: ignore[attr-defined]
    return fn


def _fail(op: str, message: str) -> NoReturn:
    raise DefinitionError(f"{op}: {message}")


def _check_dtype(op: str, arg: str, x: object, *, optional: bool = False) -> DataType | None:
    """`x` as a DataType fuser computes; None for None or `DataType.Null` where `optional`."""
    if optional and (x is None or x is DataType.Null):
        return None
    if not isinstance(x, DataType):
        _fail(op, f"argument '{arg}' must be a DataType, got {x!r}")
    if not x.supported:
        _fail(op, f"argument '{arg}': {unsupported_message(x)}")
    return x


_BITWISE_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor")
"""Binary ops on integers and Bools."""
_INTEGER_OPS = ("gcd", "bitwise_left_shift", "bitwise_right_shift", "logical_right_shift")
"""Binary ops on integers only."""


def _type(dtype: DataType | Attribute, shape: Sequence[int] | None) -> Attribute:
    el = dtype.element_type if isinstance(dtype, DataType) else dtype
    return el if shape is None else TensorType(el, shape)


def _shape_of(x: object) -> tuple[int, ...] | None:
    return x._shape if isinstance(x, Tensor) else None


def _value_shape(value: SSAValue) -> tuple[int, ...] | None:
    return tuple(value.type.get_shape()) if isinstance(value.type, TensorType) else None


def _constant_number(x: object) -> Number | None:
    """The number `x` is when it is known while the fusion is defined: a Python number or a
    `define_scalar` constant; else None."""
    if isinstance(x, Scalar) and isinstance(x._value.owner, ConstantOp):
        return x._value.owner.value.value.data
    if isinstance(x, bool | int | float):
        return x
    return None


def _constant_int(op: str, what: str, x: object, expected: str) -> int:
    """`x` as an int where it is one while the fusion is defined (a Python int or a constant
    Int Scalar); else a DefinitionError saying `what` must be `expected`."""
    number = x if isinstance(x, numbers.Integral) else _constant_number(x)  # numpy ints too
    if not isinstance(number, numbers.Integral) or isinstance(number, bool):
        _fail(op, f"{what} must be {expected}, got {x!r}")
    return int(number)


_INT_RANGES = {DataType.Int32: (-(2**31), 2**31), DataType.Int: (-(2**63), 2**63)}

# --------------------------------------------------------------------------------------------
# fd.ops
# --------------------------------------------------------------------------------------------


class FusionOps:
    """`fd.ops`: every fusion-dialect op under nvFuser's name, with torch's type promotion.

    Binary and ternary ops promote as torch does (f16 + f32 -> f32, i32 + 2.5 -> f32) and
    broadcast as nvFuser does (`_broadcast`); half (f16/bf16) math runs in f32 and is cast
    back. Python numbers are accepted wherever a value is. Each call appends ops to the fusion
    and returns a `Tensor` or `Scalar`.
    """

    _prefix = "fd.ops."

    def __init__(self, fd: FusionDefinition):
        self._definition = fd

    # ---- helpers -----------------------------------------------------------------------

    def _operand(
        self, op: str, arg: str, x: object, *, numbers_ok: bool = True, scalars_ok: bool = True
    ) -> _Operand:
        if isinstance(x, Tensor | Scalar):  # of this definition: `_api` checked
            if isinstance(x, Scalar) and not scalars_ok:
                _fail(op, f"argument '{arg}' must be a Tensor, got a Scalar")
            return x
        expected = "a Tensor" if not scalars_ok else "a Tensor or Scalar"
        if numbers_ok:
            expected += " or a Python number"
        if isinstance(x, Extent):
            _fail(
                op,
                f"argument '{arg}' is an Extent (from t.size(i)); extents only size the "
                "shape of fd.ops.broadcast_in_dim",
            )
        if numbers_ok and isinstance(x, numbers.Real):
            if isinstance(x, bool):
                return x
            return int(x) if isinstance(x, numbers.Integral) else float(x)
        _fail(op, f"argument '{arg}' must be {expected}, got {type(x).__name__}")

    def _tensor(self, op: str, arg: str, x: object) -> Tensor:
        t = self._operand(op, arg, x, numbers_ok=False, scalars_ok=False)
        assert isinstance(t, Tensor)
        return t

    def _bool(self, op: str, arg: str, x: object) -> bool:
        if not isinstance(x, bool):
            _fail(op, f"argument '{arg}' must be True or False, got {x!r}")
        return x

    def _broadcast(
        self, op: str, operands: Sequence[tuple[str, _Operand]]
    ) -> tuple[tuple[int, ...] | None, list[_Operand]]:
        """nvFuser's implicit broadcast for a pointwise op: the result shape, and the operands
        with every tensor expanded to it.

        Shapes align at their last dims and a tensor of lower rank gains leading dims (nvFuser's
        `maybeBroadcast`). In each result dim, a static 1 expands to the other operands'
        extent (`fusion.broadcast_in_dim`, its `sizes(...)` read from a dynamic operand with
        `fusion.dim`); any other static extents must be equal, and a dynamic extent must
        match the others at run time. Scalars and numbers pass through.
        """
        tensors = [(arg, x) for arg, x in operands if isinstance(x, Tensor)]
        if not tensors:
            return None, [x for _, x in operands]
        rank = max(t.ndim for _, t in tensors)
        shape: list[int] = []
        dynamic_source: dict[int, Extent] = {}  # result dim -> the extent of a dynamic operand
        for d in range(rank):
            extents = [(arg, t, t.ndim - rank + d) for arg, t in tensors if t.ndim - rank + d >= 0]
            static = [(arg, t, t._shape[a]) for arg, t, a in extents if t._shape[a] != 1]
            fixed = [(arg, t, e) for arg, t, e in static if e != DYNAMIC_INDEX]
            for arg, t, e in fixed[1:]:
                first, first_t, first_e = fixed[0]
                if e != first_e:
                    _fail(
                        op,
                        f"argument '{arg}' has shape {format_shape(t._shape)}, which cannot "
                        f"broadcast against '{first}' shape {format_shape(first_t._shape)} in "
                        f"dim {d} of the result (extents {e} and {first_e}; only 1 broadcasts)",
                    )
            if fixed:
                shape.append(fixed[0][2])
            elif static:
                shape.append(DYNAMIC_INDEX)  # read from an input when one has it
                _, t, _ = min(static, key=lambda s: not isinstance(s[1]._value, BlockArgument))
                dynamic_source[d] = Extent(t, t.ndim - rank + d)
            else:
                shape.append(1)
        expanded: list[_Operand] = []
        for _, x in operands:
            if isinstance(x, Tensor):
                x = self._expand(x, shape, dynamic_source)
            expanded.append(x)
        return tuple(shape), expanded

    def _expand(self, t: Tensor, shape: Sequence[int], sources: dict[int, Extent]) -> Tensor:
        """`t` as a tensor of `shape` (from `_broadcast`): itself when no dim expands, else a
        `broadcast_in_dim` that adds the missing leading dims and expands its static 1s."""
        offset = len(shape) - t.ndim
        carried = [d >= offset and t._shape[d - offset] != 1 for d in range(len(shape))]
        if offset == 0 and all(c or shape[d] == 1 for d, c in enumerate(carried)):
            return t
        entries: list[int | Extent] = [
            -1 if carried[d] else sources.get(d, extent) for d, extent in enumerate(shape)
        ]
        return self.broadcast_in_dim(t, entries, list(range(offset, len(shape))))

    @staticmethod
    def _promote(operands: Sequence[_Operand]) -> DataType:
        """torch's result type: a 0-d tensor (a CPU scalar tensor among them) ranks with the
        Scalars, below the tensors with dims (bf16 [n] * f32 [] is bf16)."""
        return result_type(
            [x.dtype for x in operands if isinstance(x, Tensor) and x.ndim],
            [
                x.dtype
                for x in operands
                if isinstance(x, Scalar) or (isinstance(x, Tensor) and not x.ndim)
            ],
            [number_dtype(x) for x in operands if not isinstance(x, _Value)],
        )

    def _as(self, op: str, arg: str, x: _Operand, dtype: DataType) -> SSAValue:
        """`x` as a value of `dtype`: a cast of a handle, or a constant for a number."""
        fd = self._definition
        if isinstance(x, _Value):
            return fd._cast(x._value, dtype)
        if dtype in _INT_RANGES:
            if isinstance(x, float):
                if not x.is_integer():
                    _fail(op, f"argument '{arg}' ({x!r}) is not an integer; {dtype.name} needs one")
                x = int(x)
            lo, hi = _INT_RANGES[dtype]
            if not lo <= x < hi:
                _fail(op, f"argument '{arg}' ({x!r}) does not fit in {dtype.name}")
        return fd._emit(ConstantOp.of(x, dtype.element_type)).results[0]

    def _binary(self, op: str, cls: type[BinaryOp], lhs: object, rhs: object) -> Tensor | Scalar:
        qual = f"fd.ops.{op}"
        a = self._operand(qual, "lhs", lhs)
        b = self._operand(qual, "rhs", rhs)
        if not isinstance(a, _Value) and not isinstance(b, _Value):
            _fail(qual, "needs a Tensor or Scalar operand, got two Python numbers")
        promoted = self._promote([a, b])  # before the broadcast: a 0-d tensor ranks low
        shape, (a, b) = self._broadcast(qual, [("lhs", a), ("rhs", b)])
        out = promoted
        is_compare = op in ("eq", "ne", "lt", "le", "gt", "ge")
        if is_compare:
            compute, out = compute_dtype(promoted), DataType.Bool
        elif op in ("truediv", "atan2"):
            compute = compute_dtype(promoted)
            if not promoted.is_floating_point:
                compute = out = DataType.Float
        elif op in _BITWISE_OPS or op in _INTEGER_OPS:
            if not (promoted.is_integral or (promoted == DataType.Bool and op in _BITWISE_OPS)):
                kinds = "integer or Bool" if op in _BITWISE_OPS else "integer"
                _fail(qual, f"takes {kinds} operands, got {promoted.name}")
            compute = promoted
        elif op == "nextafter":
            if promoted not in (DataType.Float, DataType.Double):
                _fail(
                    qual,
                    f"takes Float or Double operands, got {promoted.name} (Half and BFloat16 "
                    "compute in Float here, whose next value rounds back: cast to Float first)",
                )
            compute = promoted
        elif promoted == DataType.Bool:
            if op not in ("add", "mul", "maximum", "minimum"):
                _fail(qual, "does not take Bool operands; cast them to Int or Float first")
            compute = DataType.Int32  # or / and on {0, 1}, cast back to Bool
        elif op == "pow" and promoted.is_integral:
            exponent = _constant_number(b)
            if exponent is not None and exponent < 0:
                _fail(
                    qual,
                    f"argument 'rhs' ({exponent}) is a negative power of an integer "
                    "base; integers to negative integer powers are not allowed, as in torch "
                    "(cast to Float first)",
                )
            compute = DataType.Double  # exact for |result| < 2**53, cast back
        else:
            compute = compute_dtype(promoted)
        va = self._as(qual, "lhs", a, compute)
        vb = self._as(qual, "rhs", b, compute)
        rtype = _type(I1 if is_compare else compute.element_type, shape)
        r = self._definition._emit(cls(va, vb, rtype)).results[0]
        if op == "pow" and promoted.is_integral and _constant_number(b) is None:
            r = self._negative_powers_of_zero(vb, r)  # (a constant exponent is non-negative)
        return self._definition._wrap(self._definition._cast(r, out))

    def _negative_powers_of_zero(self, exponent: SSAValue, power: SSAValue) -> SSAValue:
        """Integer `pow` computed in f64, with torch's (CUDA) rule for a negative exponent, which
        gives 1 for base 1, +-1 for base -1 and 0 for every other base: 0 ** -n is 0, not the
        f64 pow's inf (which the cast back would saturate). For a negative exponent the f64
        power lies in [-1, 1] but for base 0, so `power > 1` there marks base 0."""
        fd = self._definition
        zero = fd._emit(ConstantOp.of(0.0, DataType.Double.element_type)).results[0]
        one = fd._emit(ConstantOp.of(1.0, DataType.Double.element_type)).results[0]
        shape, exponent_shape = _value_shape(power), _value_shape(exponent)
        negative = fd._emit(LtOp(exponent, zero, _type(I1, exponent_shape))).results[0]
        infinite = fd._emit(GtOp(power, one, _type(I1, shape))).results[0]
        f64 = DataType.Double.element_type
        of_zero = fd._emit(WhereOp(infinite, zero, power, _type(f64, shape))).results[0]
        return fd._emit(WhereOp(negative, of_zero, power, _type(f64, shape))).results[0]

    def _unary(
        self, op: str, build: Callable[[SSAValue], Operation], x: object, *, float_only: bool
    ) -> Tensor | Scalar:
        qual = f"fd.ops.{op}"
        a = self._operand(qual, "x", x, numbers_ok=False)
        assert isinstance(a, _Value)
        out = a.dtype
        if a.dtype == DataType.Bool and not float_only:
            _fail(qual, "does not take a Bool operand; cast it to Int or Float first")
        if float_only and not a.dtype.is_floating_point:
            out = DataType.Float
        compute = compute_dtype(out)
        fd = self._definition
        r = fd._emit(build(fd._cast(a._value, compute))).results[0]
        return fd._wrap(fd._cast(r, out))

    def _unary_of(
        self,
        op: str,
        build: Callable[[SSAValue], Operation],
        x: object,
        accepts: Callable[[DataType], bool],
        expected: str,
    ) -> Tensor | Scalar:
        """A unary op on the operand types `accepts` takes (others fail naming `expected`),
        computed in the operand's compute type and cast back."""
        qual = f"fd.ops.{op}"
        a = self._operand(qual, "x", x, numbers_ok=False)
        assert isinstance(a, _Value)
        if not accepts(a.dtype):
            _fail(qual, f"takes {expected} operand, got {a.dtype.name}")
        fd = self._definition
        r = fd._emit(build(fd._cast(a._value, compute_dtype(a.dtype)))).results[0]
        return fd._wrap(fd._cast(r, a.dtype))

    def _test(self, op: str, cls: type[UnaryTestOp], x: object) -> Tensor | Scalar:
        """A test of any operand, a Bool result (a Bool operand is tested as Int32)."""
        qual = f"fd.ops.{op}"
        a = self._operand(qual, "x", x, numbers_ok=False)
        assert isinstance(a, _Value)
        compute = DataType.Int32 if a.dtype == DataType.Bool else compute_dtype(a.dtype)
        fd = self._definition
        v = fd._cast(a._value, compute)
        return fd._wrap(fd._emit(cls(v, _type(I1, _value_shape(v)))).results[0])

    def _composite(
        self,
        op: str,
        operands: Sequence[tuple[str, object]],
        build: Callable[[list[SSAValue]], SSAValue],
        *,
        floats_only: bool = False,
    ) -> Tensor | Scalar:
        """An op made of other ops, as one: its operands promoted together (torch's
        `result_type`) and broadcast, `build` run on them in the compute type (so f16/bf16 are
        rounded once, at the end, as torch's kernels do), the result cast back."""
        qual = f"fd.ops.{op}"
        values = [(arg, self._operand(qual, arg, x)) for arg, x in operands]
        if not any(isinstance(v, _Value) for _, v in values):
            _fail(qual, "needs a Tensor or Scalar operand, got only Python numbers")
        promoted = self._promote([v for _, v in values])
        handles = [v.dtype for _, v in values if isinstance(v, _Value)]
        if promoted == DataType.Bool or (
            floats_only and not all(d.is_floating_point for d in handles)
        ):
            kind = "floating-point" if floats_only else "numeric"
            bad = next((d for d in handles if not d.is_floating_point), promoted)
            _fail(qual, f"takes {kind} operands, got {bad.name}")
        _, broadcast = self._broadcast(qual, values)
        compute = compute_dtype(promoted)
        args = [
            self._as(qual, arg, v, compute) for (arg, _), v in zip(values, broadcast, strict=True)
        ]
        fd = self._definition
        return fd._wrap(fd._cast(build(args), promoted))

    def _apply(
        self, make: Callable[..., Operation], *args: SSAValue, result: Attribute | None = None
    ) -> SSAValue:
        """`make(*args, result_type)`, a pointwise op of `args` (tensors of compatible shapes,
        or scalars): its result a tensor where any operand is a tensor, each dim static where
        one operand's is, of element type `result` (default the first operand's)."""
        shapes = [sh for a in args if (sh := _value_shape(a)) is not None]
        shape = None
        if shapes:
            shape = [
                next((d for d in dims if d != DYNAMIC_INDEX), DYNAMIC_INDEX)
                for dims in zip(*shapes, strict=True)
            ]
        el = result if result is not None else element_type(args[0].type)
        return self._definition._emit(make(*args, _type(el, shape))).results[0]

    def _constant(self, value: Number, like: SSAValue) -> SSAValue:
        """A constant of the element type of `like`."""
        return self._definition._emit(ConstantOp.of(value, element_type(like.type))).results[0]

    def _dims(self, op: str, dims: object, rank: int, arg: str = "dims") -> list[int]:
        if isinstance(dims, numbers.Integral) and not isinstance(dims, bool):
            items: list[object] = [dims]
        elif isinstance(dims, Sequence) and not isinstance(dims, str):
            items = list(dims)
        else:
            _fail(op, f"argument '{arg}' must be an int or a list of ints, got {dims!r}")
        if not items:
            _fail(op, f"argument '{arg}' is empty; name at least one dim")
        out: list[int] = []
        for d in items:
            if isinstance(d, bool) or not isinstance(d, numbers.Integral):
                _fail(op, f"argument '{arg}' must hold ints, got {d!r}")
            dim = int(d)  # an Integral (a numpy integer too) as a Python int
            if not -rank <= dim < rank:
                _fail(op, f"argument '{arg}' has dim {d}, out of range for rank {rank}")
            n = dim % rank
            if n in out:
                _fail(op, f"argument '{arg}' names dim {n} twice")
            out.append(n)
        return sorted(out)

    def _reduce(
        self,
        op: str,
        cls: type[ReductionOp],
        t: object,
        dims: object,
        keepdim: object,
        dtype: object,
    ) -> Tensor:
        qual = f"fd.ops.{op}"
        x = self._tensor(qual, "t", t)
        if isinstance(dims, DataType) and dtype is None:  # nvFuser's sum(t, dtype)
            dims, dtype = None, dims
        keep = self._bool(qual, "keepdim", keepdim)
        out = _check_dtype(qual, "dtype", dtype, optional=True)
        if out is None:  # nvFuser's and torch's: Bool and integer sums and products are Int
            promoted = op in ("sum", "prod") and (x.dtype == DataType.Bool or x.dtype.is_integral)
            out = DataType.Int if promoted else x.dtype
        elif out == DataType.Bool and x.dtype != DataType.Bool:
            as_bool = self.cast(x, DataType.Bool)  # the input is cast to the dtype first
            assert isinstance(as_bool, Tensor)
            x = as_bool
        fd = self._definition
        if x.ndim == 0:  # every axis of a 0-dim tensor: the value itself
            if dims is not None and (
                not isinstance(dims, Sequence) or isinstance(dims, str) or len(dims)
            ):
                _fail(qual, f"argument 'dims' is {dims!r}; a 0-dim tensor has no dims")
            result = fd._wrap(fd._cast(fd._emit(SetOp(x._value)).results[0], out))
            assert isinstance(result, Tensor)
            return result
        axes = list(range(x.ndim)) if dims is None else self._dims(qual, dims, x.ndim)
        compute = DataType.Int32 if out == DataType.Bool else compute_dtype(out)
        shape = reduced_shape(x._shape, axes, keep)
        r = fd._emit(cls(fd._cast(x._value, compute), axes, keep, _type(compute, shape)))
        result = fd._wrap(fd._cast(r.results[0], out))
        assert isinstance(result, Tensor)
        return result

    def _statistics_input(self, op: str, t: object) -> Tensor:
        x = self._tensor(op, "t", t)
        if x.dtype.is_half:
            _fail(
                op,
                f"argument 't' is {x.dtype.name}; upcast to float first "
                "(fd.ops.cast(t, DataType.Float)), as nvFuser requires",
            )
        if not x.dtype.is_floating_point:
            _fail(op, f"argument 't' is {x.dtype.name}; it needs Float or Double, cast it first")
        if x.ndim == 0:
            _fail(op, "argument 't' is a 0-dim tensor; there is nothing to reduce")
        return x

    # ---- unary ops ---------------------------------------------------------------------

    @_api
    def neg(self, x: Any) -> Tensor | Scalar:
        """`-x`."""
        return self._unary("neg", NegOp, x, float_only=False)

    @_api
    def abs(self, x: Any) -> Tensor | Scalar:
        """`|x|`."""
        return self._unary("abs", AbsOp, x, float_only=False)

    @_api
    def relu(self, x: Any) -> Tensor | Scalar:
        """`max(x, 0)`."""
        return self._unary("relu", ReluOp, x, float_only=False)

    @_api
    def exp(self, x: Any) -> Tensor | Scalar:
        """`e**x`; integer inputs compute in Float."""
        return self._unary("exp", ExpOp, x, float_only=True)

    @_api
    def log(self, x: Any) -> Tensor | Scalar:
        """Natural logarithm; integer inputs compute in Float."""
        return self._unary("log", LogOp, x, float_only=True)

    @_api
    def sqrt(self, x: Any) -> Tensor | Scalar:
        """Square root; integer inputs compute in Float."""
        return self._unary("sqrt", SqrtOp, x, float_only=True)

    @_api
    def rsqrt(self, x: Any) -> Tensor | Scalar:
        """`1 / sqrt(x)`; integer inputs compute in Float."""
        return self._unary("rsqrt", RsqrtOp, x, float_only=True)

    @_api
    def reciprocal(self, x: Any) -> Tensor | Scalar:
        """`1 / x`; integer inputs compute in Float."""
        return self._unary("reciprocal", ReciprocalOp, x, float_only=True)

    @_api
    def sin(self, x: Any) -> Tensor | Scalar:
        """Sine; integer inputs compute in Float."""
        return self._unary("sin", SinOp, x, float_only=True)

    @_api
    def cos(self, x: Any) -> Tensor | Scalar:
        """Cosine; integer inputs compute in Float."""
        return self._unary("cos", CosOp, x, float_only=True)

    @_api
    def tanh(self, x: Any) -> Tensor | Scalar:
        """Hyperbolic tangent; integer inputs compute in Float."""
        return self._unary("tanh", TanhOp, x, float_only=True)

    @_api
    def sigmoid(self, x: Any) -> Tensor | Scalar:
        """`1 / (1 + exp(-x))`; integer inputs compute in Float."""
        return self._unary("sigmoid", SigmoidOp, x, float_only=True)

    @_api
    def erf(self, x: Any) -> Tensor | Scalar:
        """The error function; integer inputs compute in Float."""
        return self._unary("erf", ErfOp, x, float_only=True)

    @_api
    def silu(self, x: Any) -> Tensor | Scalar:
        """`x * sigmoid(x)`; integer inputs compute in Float."""
        return self._unary("silu", SiluOp, x, float_only=True)

    @_api
    def gelu(self, x: Any, approximate: str = "none") -> Tensor | Scalar:
        """GELU, exact (`approximate="none"`) or with the tanh approximation (`"tanh"`)."""
        if approximate not in ("none", "tanh"):
            _fail(
                "fd.ops.gelu",
                f"argument 'approximate' must be 'none' or 'tanh', got {approximate!r}",
            )
        mode = GeluApproximation(approximate)
        return self._unary("gelu", lambda v: GeluOp(v, mode), x, float_only=True)

    @_api
    def acos(self, x: Any) -> Tensor | Scalar:
        """The inverse cosine; integer inputs compute in Float."""
        return self._unary("acos", AcosOp, x, float_only=True)

    @_api
    def acosh(self, x: Any) -> Tensor | Scalar:
        """The inverse hyperbolic cosine; integer inputs compute in Float."""
        return self._unary("acosh", AcoshOp, x, float_only=True)

    @_api
    def asin(self, x: Any) -> Tensor | Scalar:
        """The inverse sine; integer inputs compute in Float."""
        return self._unary("asin", AsinOp, x, float_only=True)

    @_api
    def asinh(self, x: Any) -> Tensor | Scalar:
        """The inverse hyperbolic sine; integer inputs compute in Float."""
        return self._unary("asinh", AsinhOp, x, float_only=True)

    @_api
    def atan(self, x: Any) -> Tensor | Scalar:
        """The inverse tangent; integer inputs compute in Float."""
        return self._unary("atan", AtanOp, x, float_only=True)

    @_api
    def atanh(self, x: Any) -> Tensor | Scalar:
        """The inverse hyperbolic tangent; integer inputs compute in Float."""
        return self._unary("atanh", AtanhOp, x, float_only=True)

    @_api
    def cosh(self, x: Any) -> Tensor | Scalar:
        """The hyperbolic cosine; integer inputs compute in Float."""
        return self._unary("cosh", CoshOp, x, float_only=True)

    @_api
    def sinh(self, x: Any) -> Tensor | Scalar:
        """The hyperbolic sine; integer inputs compute in Float."""
        return self._unary("sinh", SinhOp, x, float_only=True)

    @_api
    def tan(self, x: Any) -> Tensor | Scalar:
        """The tangent; integer inputs compute in Float."""
        return self._unary("tan", TanOp, x, float_only=True)

    @_api
    def erfc(self, x: Any) -> Tensor | Scalar:
        """The complementary error function `1 - erf(x)`; integer inputs compute in Float."""
        return self._unary("erfc", ErfcOp, x, float_only=True)

    @_api
    def erfinv(self, x: Any) -> Tensor | Scalar:
        """The inverse error function; integer inputs compute in Float."""
        return self._unary("erfinv", ErfinvOp, x, float_only=True)

    @_api
    def erfcinv(self, x: Any) -> Tensor | Scalar:
        """The inverse complementary error function; integer inputs compute in Float."""
        return self._unary("erfcinv", ErfcinvOp, x, float_only=True)

    @_api
    def exp2(self, x: Any) -> Tensor | Scalar:
        """`2**x`; integer inputs compute in Float."""
        return self._unary("exp2", Exp2Op, x, float_only=True)

    @_api
    def expm1(self, x: Any) -> Tensor | Scalar:
        """`e**x - 1`; integer inputs compute in Float."""
        return self._unary("expm1", Expm1Op, x, float_only=True)

    @_api
    def log10(self, x: Any) -> Tensor | Scalar:
        """The base-10 logarithm; integer inputs compute in Float."""
        return self._unary("log10", Log10Op, x, float_only=True)

    @_api
    def log1p(self, x: Any) -> Tensor | Scalar:
        """`log(1 + x)`; integer inputs compute in Float."""
        return self._unary("log1p", Log1pOp, x, float_only=True)

    @_api
    def log2(self, x: Any) -> Tensor | Scalar:
        """The base-2 logarithm; integer inputs compute in Float."""
        return self._unary("log2", Log2Op, x, float_only=True)

    @_api
    def lgamma(self, x: Any) -> Tensor | Scalar:
        """`log(|gamma(x)|)`; integer inputs compute in Float."""
        return self._unary("lgamma", LgammaOp, x, float_only=True)

    @_api
    def ceil(self, x: Any) -> Tensor | Scalar:
        """Rounds up; integers are kept as they are."""
        return self._unary("ceil", CeilOp, x, float_only=False)

    @_api
    def floor(self, x: Any) -> Tensor | Scalar:
        """Rounds down; integers are kept as they are."""
        return self._unary("floor", FloorOp, x, float_only=False)

    @_api
    def round(self, x: Any) -> Tensor | Scalar:
        """Rounds to the nearest integer, halves to even (torch.round); integers are kept."""
        return self._unary("round", RoundOp, x, float_only=False)

    @_api
    def trunc(self, x: Any) -> Tensor | Scalar:
        """Rounds toward zero; integers are kept as they are."""
        return self._unary("trunc", TruncOp, x, float_only=False)

    @_api
    def sign(self, x: Any) -> Tensor | Scalar:
        """-1, 0 or 1 by the sign of `x`, of its type; 0 for NaN (torch's CUDA sign)."""
        return self._unary("sign", SignOp, x, float_only=False)

    @_api
    def frac(self, x: Any) -> Tensor | Scalar:
        """`x - trunc(x)`; floating-point operands only, as in torch."""
        return self._unary_of("frac", FracOp, x, lambda d: d.is_floating_point, "a floating-point")

    @_api
    def bitwise_not(self, x: Any) -> Tensor | Scalar:
        """`~x` on integers, logical not on Bool."""
        return self._unary_of(
            "bitwise_not",
            BitwiseNotOp,
            x,
            lambda d: d.is_integral or d == DataType.Bool,
            "an integer or Bool",
        )

    @_api
    def logical_not(self, x: Any) -> Tensor | Scalar:
        """`x == 0` (NaN is true, so its logical not is false), a Bool result."""
        a = self._operand("fd.ops.logical_not", "x", x, numbers_ok=False)
        return self.bitwise_not(self.cast(a, DataType.Bool))

    @_api
    def isfinite(self, x: Any) -> Tensor | Scalar:
        """Neither infinite nor NaN (true for integers): a Bool result."""
        return self._test("isfinite", IsFiniteOp, x)

    @_api
    def isinf(self, x: Any) -> Tensor | Scalar:
        """+inf or -inf: a Bool result."""
        return self._test("isinf", IsInfOp, x)

    @_api
    def isnan(self, x: Any) -> Tensor | Scalar:
        """NaN: a Bool result."""
        return self._test("isnan", IsNanOp, x)

    @_api
    def isneginf(self, x: Any) -> Tensor | Scalar:
        """-inf: a Bool result."""
        return self._test("isneginf", IsNegInfOp, x)

    @_api
    def isposinf(self, x: Any) -> Tensor | Scalar:
        """+inf: a Bool result."""
        return self._test("isposinf", IsPosInfOp, x)

    @_api
    def signbit(self, x: Any) -> Tensor | Scalar:
        """The sign bit is set (-0.0 included; `x < 0` for integers): a Bool result."""
        return self._test("signbit", SignbitOp, x)

    @_api
    def isreal(self, x: Any) -> Tensor | Scalar:
        """True everywhere: fuser has no complex types."""
        a = self._operand("fd.ops.isreal", "x", x, numbers_ok=False)
        if isinstance(a, Tensor):
            return self.full(a.shape(), True, DataType.Bool)
        fd = self._definition
        return fd._wrap(fd._emit(ConstantOp.of(True, I1)).results[0])

    @_api
    def real(self, x: Any) -> Tensor | Scalar:
        """`x` itself (a copy of a tensor): the real part of a real number."""
        a = self._operand("fd.ops.real", "x", x, numbers_ok=False)
        assert isinstance(a, _Value)
        return self.set(a) if isinstance(a, Tensor) else a

    @_api
    def imag(self, x: Any) -> Tensor | Scalar:
        """Refused: the imaginary part needs a complex operand, and fuser has none."""
        a = self._operand("fd.ops.imag", "x", x, numbers_ok=False)
        assert isinstance(a, _Value)
        _fail(
            "fd.ops.imag",
            f"needs a complex operand, got {a.dtype.name}; fuser computes no complex types "
            "(ComplexFloat and ComplexDouble are refused at definition)",
        )

    # ---- binary ops --------------------------------------------------------------------

    @_api
    def add(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs + rhs`."""
        return self._binary("add", AddOp, lhs, rhs)

    @_api
    def sub(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs - rhs`."""
        return self._binary("sub", SubOp, lhs, rhs)

    @_api
    def mul(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs * rhs`."""
        return self._binary("mul", MulOp, lhs, rhs)

    @_api
    def div(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs / rhs`; on integers it truncates toward zero, as nvFuser's `div` (C), and an
        integer divided by zero is -1 (what torch's CUDA kernels give; torch on the CPU raises)."""
        return self._binary("div", DivOp, lhs, rhs)

    @_api
    def truediv(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs / rhs` as Python's `/`: integer operands divide in Float."""
        return self._binary("truediv", DivOp, lhs, rhs)

    @_api
    def pow(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs ** rhs`; integer operands compute in Double and keep their integer type.

        As in torch: x ** 0 is 1 for every x (NaN included), a negative base to a fractional
        power is NaN; for integers a negative constant exponent is an error, and a negative
        exponent at run time gives 1 for base 1, +-1 for base -1 and 0 for any other base.
        Unlike torch, integer results beyond 2**53 in magnitude are rounded (f64) and results
        beyond the integer range saturate rather than wrap.
        """
        return self._binary("pow", PowOp, lhs, rhs)

    @_api
    def maximum(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """Pointwise maximum."""
        return self._binary("maximum", MaximumOp, lhs, rhs)

    @_api
    def minimum(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """Pointwise minimum."""
        return self._binary("minimum", MinimumOp, lhs, rhs)

    @_api
    def eq(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs == rhs`, a Bool result."""
        return self._binary("eq", EqOp, lhs, rhs)

    @_api
    def ne(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs != rhs`, a Bool result."""
        return self._binary("ne", NeOp, lhs, rhs)

    @_api
    def lt(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs < rhs`, a Bool result."""
        return self._binary("lt", LtOp, lhs, rhs)

    @_api
    def le(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs <= rhs`, a Bool result."""
        return self._binary("le", LeOp, lhs, rhs)

    @_api
    def gt(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs > rhs`, a Bool result."""
        return self._binary("gt", GtOp, lhs, rhs)

    @_api
    def ge(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs >= rhs`, a Bool result."""
        return self._binary("ge", GeOp, lhs, rhs)

    @_api
    def atan2(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """The angle of the point (rhs, lhs), in (-pi, pi]; integer operands compute in Float."""
        return self._binary("atan2", Atan2Op, lhs, rhs)

    @_api
    def nextafter(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """The Float or Double next to `lhs` toward `rhs`. Half and BFloat16 are refused: fuser
        computes them in Float, whose next value would round back to `lhs`."""
        return self._binary("nextafter", NextafterOp, lhs, rhs)

    @_api
    def fmod(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """The remainder of division truncated toward zero (the sign of `lhs`), as C's fmod and
        `%`; an integer by 0 gives what `div` gives."""
        return self._binary("fmod", FmodOp, lhs, rhs)

    @_api
    def mod(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """nvFuser's `mod`: `fmod`."""
        return self._binary("mod", FmodOp, lhs, rhs)

    @_api
    def remainder(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """The remainder of division rounded down (the sign of `rhs`), as torch.remainder and
        Python's `%`; an integer by 0 gives what `div` gives."""
        return self._binary("remainder", RemainderOp, lhs, rhs)

    @_api
    def gcd(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """The greatest common divisor of the magnitudes of two integers; `gcd(0, 0)` is 0. With
        INT_MIN, whose magnitude wraps, torch's CUDA result (`gcd(380, INT_MIN)` is -4)."""
        return self._binary("gcd", GcdOp, lhs, rhs)

    @_api
    def bitwise_and(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs & rhs` on integers or Bools."""
        return self._binary("bitwise_and", BitwiseAndOp, lhs, rhs)

    @_api
    def bitwise_or(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs | rhs` on integers or Bools."""
        return self._binary("bitwise_or", BitwiseOrOp, lhs, rhs)

    @_api
    def bitwise_xor(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs ^ rhs` on integers or Bools."""
        return self._binary("bitwise_xor", BitwiseXorOp, lhs, rhs)

    @_api
    def bitwise_left_shift(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs << rhs` on integers; 0 where `rhs` is negative or not below the bit width."""
        return self._binary("bitwise_left_shift", ShiftLeftOp, lhs, rhs)

    @_api
    def bitwise_right_shift(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs >> rhs` on integers, shifting in the sign bit; where `rhs` is negative or not
        below the bit width, the sign bit everywhere (torch)."""
        return self._binary("bitwise_right_shift", ShiftRightOp, lhs, rhs)

    @_api
    def logical_right_shift(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs >> rhs` on integers, shifting in zeros; 0 where `rhs` is negative or not below
        the bit width."""
        return self._binary("logical_right_shift", LogicalShiftRightOp, lhs, rhs)

    @_api
    def logical_and(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs != 0 and rhs != 0`, a Bool result (NaN counts as true)."""
        return self._logical("logical_and", BitwiseAndOp, lhs, rhs)

    @_api
    def logical_or(self, lhs: Any, rhs: Any) -> Tensor | Scalar:
        """`lhs != 0 or rhs != 0`, a Bool result (NaN counts as true)."""
        return self._logical("logical_or", BitwiseOrOp, lhs, rhs)

    def _logical(self, op: str, cls: type[BinaryOp], lhs: object, rhs: object) -> Tensor | Scalar:
        qual = f"fd.ops.{op}"
        values = [(arg, self._operand(qual, arg, x)) for arg, x in (("lhs", lhs), ("rhs", rhs))]
        if not any(isinstance(v, _Value) for _, v in values):
            _fail(qual, "needs a Tensor or Scalar operand, got two Python numbers")
        _, (a, b) = self._broadcast(qual, values)
        fd = self._definition

        def truth(x: _Operand) -> SSAValue:
            if isinstance(x, _Value):
                return fd._cast(x._value, DataType.Bool)
            return fd._emit(ConstantOp.of(bool(x), I1)).results[0]

        return fd._wrap(self._apply(cls, truth(a), truth(b)))

    # ---- ternary and data movement -----------------------------------------------------

    @_api
    def where(self, cond: Any, a: Any, b: Any) -> Tensor | Scalar:
        """`cond ? a : b`, pointwise; `cond` is Bool, `a` and `b` promote to one type."""
        op = "fd.ops.where"
        c = self._operand(op, "cond", cond)
        x = self._operand(op, "a", a)
        y = self._operand(op, "b", b)
        if not any(isinstance(v, _Value) for v in (c, x, y)):
            _fail(op, "needs a Tensor or Scalar operand, got three Python numbers")
        cdtype = c.dtype if isinstance(c, _Value) else number_dtype(c)
        if cdtype != DataType.Bool:
            _fail(op, f"argument 'cond' must be Bool, got {cdtype.name} (compare first)")
        dtype = self._promote([x, y])  # before the broadcast: a 0-d tensor ranks low
        shape, (c, x, y) = self._broadcast(op, [("cond", c), ("a", x), ("b", y)])
        fd = self._definition
        vc = self._as(op, "cond", c, DataType.Bool)
        va, vb = self._as(op, "a", x, dtype), self._as(op, "b", y, dtype)
        return fd._wrap(fd._emit(WhereOp(vc, va, vb, _type(dtype, shape))).results[0])

    @_api
    def lerp(self, start: Any, end: Any, weight: Any) -> Tensor | Scalar:
        """`start + weight * (end - start)`, as torch.lerp computes it: from `end` backwards
        where `|weight| >= 0.5`; floating-point operands only."""

        def build(v: list[SSAValue]) -> SSAValue:
            start, end, weight = v
            f, el = self._apply, element_type(start.type)
            diff = f(SubOp, end, start)
            magnitude = f(lambda x, t: AbsOp(x), weight)
            near_start = f(LtOp, magnitude, self._constant(0.5, start), result=I1)
            forward = f(AddOp, start, f(MulOp, weight, diff))
            backward = f(SubOp, end, f(MulOp, diff, f(SubOp, self._constant(1.0, start), weight)))
            return f(WhereOp, near_start, forward, backward, result=el)

        return self._composite(
            "lerp", [("start", start), ("end", end), ("weight", weight)], build, floats_only=True
        )

    @_api
    def addcmul(self, arg: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Tensor | Scalar:
        """`arg + value * tensor1 * tensor2`, rounded once (torch.addcmul)."""

        def build(v: list[SSAValue]) -> SSAValue:
            x, t1, t2, scale = v
            f = self._apply
            return f(AddOp, x, f(MulOp, f(MulOp, scale, t1), t2))

        operands = [("arg", arg), ("tensor1", tensor1), ("tensor2", tensor2), ("value", value)]
        return self._composite("addcmul", operands, build)

    @_api
    def clamp(self, arg: Any, min: Any = None, max: Any = None) -> Tensor | Scalar:
        """`arg` limited to [min, max] (either may be None), as torch.clamp with number
        bounds: NaN stays NaN, and a NaN bound limits nothing."""
        if min is None and max is None:
            _fail("fd.ops.clamp", "needs 'min' or 'max' (or both), got neither")
        bounds = [(name, b) for name, b in (("min", min), ("max", max)) if b is not None]
        for name, b in bounds:  # (torch's tensor bounds have another NaN rule: not taken)
            if isinstance(b, Tensor):
                _fail(
                    "fd.ops.clamp", f"argument '{name}' must be a number or a Scalar, got a Tensor"
                )
        if isinstance(arg, Tensor | Scalar) and arg.dtype == DataType.Bool:
            _fail("fd.ops.clamp", "does not take a Bool operand; cast it to Int or Float first")

        def build(v: list[SSAValue]) -> SSAValue:
            x, f, el = v[0], self._apply, element_type(v[0].type)
            for (name, _), bound in zip(bounds, v[1:], strict=True):
                outside = f(LtOp if name == "min" else GtOp, x, bound, result=I1)
                x = f(WhereOp, outside, bound, x, result=el)
            return x

        return self._composite("clamp", [("arg", arg), *bounds], build)

    @_api
    def threshold(self, arg: Any, threshold: Any, value: Any) -> Tensor | Scalar:
        """`value` where `arg <= threshold`, else `arg` (torch's `F.threshold`; NaN stays)."""

        def build(v: list[SSAValue]) -> SSAValue:
            x, limit, fill = v
            f = self._apply
            below = f(LeOp, x, limit, result=I1)
            return f(WhereOp, below, fill, x, result=element_type(x.type))

        x = self._tensor("fd.ops.threshold", "arg", arg)
        operands = [("arg", x), ("threshold", threshold), ("value", value)]
        result = self._composite("threshold", operands, build)
        # torch's result has the input's dtype (an integer input compares as exactly)
        return result if result.dtype == x.dtype else self.cast(result, x.dtype)

    @_api
    def triu(self, x: Any, diagonal: Any = 0) -> Tensor:
        """The upper triangle of the last two dims (torch.triu): the elements whose column
        less row is at least `diagonal` kept, the others 0, per matrix of any leading dims."""
        return self._triangle("triu", x, diagonal, upper=True)

    @_api
    def tril(self, x: Any, diagonal: Any = 0) -> Tensor:
        """The lower triangle of the last two dims (torch.tril): column less row at most
        `diagonal` kept, the others 0."""
        return self._triangle("tril", x, diagonal, upper=False)

    def _triangle(self, op: str, x: Any, diagonal: Any, upper: bool) -> Tensor:
        """`where(column - row >= diagonal, x, 0)` (`<=` for the lower one), the rows and
        columns iotas broadcast over `x`'s shape."""
        qual = f"fd.ops.{op}"
        t = self._tensor(qual, "x", x)
        if t.ndim < 2:
            _fail(qual, f"needs a tensor of rank 2 or more, got rank {t.ndim}")
        k = _constant_int(qual, "argument 'diagonal'", diagonal, "an int or a constant Int Scalar")
        if not -(2**63) <= k < 2**63:
            _fail(qual, f"argument 'diagonal' ({k}) does not fit in Int")
        rank, shape = t.ndim, t.shape()
        rows = self.iota(shape[rank - 2], 0, 1, DataType.Int)
        cols = self.iota(shape[rank - 1], 0, 1, DataType.Int)
        distance = self.sub(
            self.broadcast_in_dim(cols, shape, [rank - 1]),
            self.broadcast_in_dim(rows, shape, [rank - 2]),
        )
        kept = self.ge(distance, k) if upper else self.le(distance, k)
        return cast(Tensor, self.where(kept, t, False if t.dtype == DataType.Bool else 0))

    @_api
    def cast(self, t: Any, dtype: Any) -> Tensor | Scalar:
        """`t` converted to `dtype` (a `set` when it has that type already)."""
        op = "fd.ops.cast"
        x = self._operand(op, "t", t, numbers_ok=False)
        assert isinstance(x, _Value)
        target = _check_dtype(op, "dtype", dtype)
        assert target is not None
        fd = self._definition
        if x.dtype == target:
            if isinstance(x, Scalar):
                return x
            return fd._wrap(fd._emit(SetOp(x._value)).results[0])
        return fd._wrap(fd._cast(x._value, target))

    @_api
    def set(self, t: Any) -> Tensor:
        """A copy of `t`."""
        x = self._tensor("fd.ops.set", "t", t)
        return self._definition._wrap_tensor(SetOp(x._value))

    @_api
    def segment_set(self, t: Any) -> Tensor:
        """A copy of `t` that forces a kernel boundary between producer and consumers."""
        x = self._tensor("fd.ops.segment_set", "t", t)
        return self._definition._wrap_tensor(SegmentSetOp(x._value))

    @_api
    def broadcast_in_dim(self, t: Any, shape: Any, broadcast_dims: Any) -> Tensor:
        """`t` broadcast to `shape`, operand dim i becoming output dim `broadcast_dims[i]`.

        `shape` holds ints (-1 dynamic, else static) or extents (`x.size(i)`, `x.shape()`).
        A -1 keeps the extent of the operand dim mapped there; a dynamic dim the operand does
        not carry (a new dim, or one from an extent-1 dim) needs an extent.
        """
        return self._broadcast_in_dim("fd.ops.broadcast_in_dim", t, shape, broadcast_dims)

    @_api
    def expand(self, t: Any, shape: Any) -> Tensor:
        """`t` with its dims of extent 1 expanded to `shape` (-1 keeps a dim), and new leading
        dims where `shape` has more, as torch's `expand`."""
        op = "fd.ops.expand"
        x = self._tensor(op, "t", t)
        if not isinstance(shape, Sequence) or isinstance(shape, str):
            _fail(op, f"argument 'shape' must be a list of ints or extents, got {shape!r}")
        new = len(shape) - x.ndim  # leading dims torch's expand adds
        if new < 0:
            _fail(op, f"argument 'shape' has rank {len(shape)}, below the operand's rank {x.ndim}")
        # -1 keeps a dim, one of extent 1 too (torch), where broadcast_in_dim wants its 1
        entries = [
            1 if type(e) is int and e == -1 and d >= new and x._shape[d - new] == 1 else e
            for d, e in enumerate(shape)
        ]
        return self._broadcast_in_dim(op, x, entries, list(range(new, len(shape))))

    @_api
    def broadcast(self, t: Any, is_broadcast_dim: Any) -> Tensor:
        """`t` with new dims of extent 1 where `is_broadcast_dim` is True (one entry per result
        dim; the False entries take `t`'s dims in order), as nvFuser's `broadcast`."""
        op = "fd.ops.broadcast"
        x = self._tensor(op, "t", t)
        flags = is_broadcast_dim
        if (
            not isinstance(flags, Sequence)
            or isinstance(flags, str)
            or not all(isinstance(f, bool) for f in flags)
        ):
            _fail(op, f"argument 'is_broadcast_dim' must be a list of bools, got {flags!r}")
        kept = [d for d, new in enumerate(flags) if not new]
        if len(kept) != x.ndim:
            _fail(
                op,
                f"argument 'is_broadcast_dim' has {len(kept)} False entries; it needs one for "
                f"each of the operand's {x.ndim} dims",
            )
        carried = dict(zip(kept, x.static_shape, strict=True))
        return self._broadcast_in_dim(op, x, [carried.get(d, 1) for d in range(len(flags))], kept)

    @_api
    def permute(self, t: Any, dims: Any) -> Tensor:
        """`t` with its dims reordered: result dim i is dim `dims[i]` of `t` (negative dims
        count from the end), as torch's `permute`."""
        op = "fd.ops.permute"
        x = self._tensor(op, "t", t)
        if not isinstance(dims, Sequence) or isinstance(dims, str):
            _fail(op, f"argument 'dims' must be a list of ints, got {dims!r}")
        if len(dims) != x.ndim:
            _fail(op, f"argument 'dims' has {len(dims)} entries; the operand has rank {x.ndim}")
        order = [self._dims(op, [d], x.ndim)[0] for d in dims]
        if len(set(order)) != len(order):
            _fail(op, f"argument 'dims' {list(dims)} names a dim twice")
        return self._definition._wrap_tensor(PermuteOp(x._value, order))

    @_api
    def stride_order(self, t: Any, stride_order: Any) -> Tensor:
        """`t`, to be laid out in `stride_order` (nvFuser's: entry i is the rank of dim i's
        stride, 0 the innermost, so [n-1, ..., 0] is row-major). The values are `t`'s: inside
        the fusion a layout is fuser's to choose; `add_output` returns the tensor dense in this
        order (unless given its own `stride_order`), a copy where it would be a view of an
        input. An empty order asks for none."""
        op = "fd.ops.stride_order"
        x = self._tensor(op, "t", t)
        order = _stride_order_arg(op, stride_order, x.ndim)
        if not order and x._stride_order is None:
            return x
        ordered = Tensor(self._definition, x._value)
        ordered._stride_order = order or None
        return ordered

    @_api
    def squeeze(self, t: Any, dims: Any, squeeze_expanded: Any = False) -> Tensor:
        """`t` without `dims` (an int or a list; negative dims count from the end), each of
        extent 1 in the definition: a 1 in `define_tensor`'s shape, or a dim `broadcast` made.
        fuser squeezes no expanded dims, so `squeeze_expanded` changes nothing."""
        op = "fd.ops.squeeze"
        x = self._tensor(op, "t", t)
        self._bool(op, "squeeze_expanded", squeeze_expanded)
        if isinstance(dims, Sequence) and not isinstance(dims, str) and not dims:
            return x
        dropped = self._dims(op, dims, x.ndim)
        for d in dropped:
            if x._shape[d] != 1:
                extent = "dynamic" if x._shape[d] == DYNAMIC_INDEX else str(x._shape[d])
                _fail(
                    op,
                    f"dim {d} has extent {extent}; only dims of extent 1 can be squeezed (a 1 "
                    "in define_tensor's shape, or a dim broadcast made)",
                )
        return self._definition._wrap_tensor(SqueezeOp(x._value, dropped))

    @_api
    def full(self, shape: Any, fill_value: Any, dtype: Any) -> Tensor:
        """A tensor of `shape` (ints, or extents such as `x.size(0)`) holding `fill_value` (a
        number or a Scalar) as `dtype`: nvFuser's `full`. It is a broadcast of the scalar, so
        kernels compute it where it is read and no kernel writes it unless it is an output."""
        return self._full("fd.ops.full", shape, fill_value, dtype)

    @_api
    def zeros(self, shape: Any, dtype: Any = DataType.Float) -> Tensor:
        """`full(shape, 0, dtype)`."""
        return self._full("fd.ops.zeros", shape, 0, dtype)

    @_api
    def ones(self, shape: Any, dtype: Any = DataType.Float) -> Tensor:
        """`full(shape, 1, dtype)`."""
        return self._full("fd.ops.ones", shape, 1, dtype)

    def _full(self, op: str, shape: Any, fill_value: Any, dtype: Any) -> Tensor:
        out = _check_dtype(op, "dtype", dtype)
        assert out is not None
        value = self._operand(op, "fill_value", fill_value)
        if isinstance(value, Tensor):
            _fail(op, "argument 'fill_value' must be a Scalar or a Python number, got a Tensor")
        scalar = self._definition._wrap(self._as(op, "fill_value", value, out))
        return self._broadcast_in_dim(op, scalar, shape, [])

    @_api
    def iota(
        self, length: Any, start: Any = None, step: Any = None, dtype: Any = DataType.Int
    ) -> Tensor:
        """`[start, start + step, ...]`, `length` values of `dtype` (nvFuser's `iota`, torch's
        `arange`); `start` and `step` default to 0 and 1. `length` is an int, a constant
        Scalar or an extent (`x.size(0)`); `start` and `step` are numbers or Scalars (integers
        for an integer `dtype`). With constant ones the host computes the values once per input
        signature (in float64, rounded once) and kernels read them, so a call launches nothing
        for it; a Scalar known only at run time (an input, or computed) makes it
        `start + iota(length) * step`, computed where it is read (in f32, f64 for Double; in
        Int, wrapping, for an integer dtype)."""
        op = "fd.ops.iota"
        fd = self._definition
        out = _check_dtype(op, "dtype", dtype)
        assert out is not None
        if not (out.is_floating_point or out.is_integral):
            _fail(op, f"argument 'dtype' must be an integer or float DataType, got {out}")
        if any(isinstance(v, Scalar) and _constant_number(v) is None for v in (start, step)):
            return self._run_time_iota(op, out, length, start, step)
        size: SSAValue | None = None
        if isinstance(length, Extent):
            extent = length.static
            if extent is None:
                size = length._ssa()
        else:
            expected = "an int, a constant Scalar or an extent such as x.size(0)"
            extent = _constant_int(op, "argument 'length'", length, expected)
        if extent is not None and extent < 0:
            _fail(op, f"argument 'length' is {extent}; it must be at least 0")
        bounds: list[float] = []
        for arg, value, default in (("start", start, 0), ("step", step, 1)):
            number = default if value is None else _constant_number(value)
            if number is None or isinstance(number, bool):
                _fail(
                    op,
                    f"argument '{arg}' must be a Python number or a constant Scalar "
                    f"(define_scalar(value)), got {value!r}",
                )
            if out.is_integral and not isinstance(number, int):
                _fail(op, f"argument '{arg}' is {number!r}; an iota of {out} takes integers")
            low, high = _INT_RANGES[DataType.Int]
            if out.is_integral and not low <= number < high:
                _fail(op, f"argument '{arg}' is {number}; it must fit in 64 bits")
            try:
                finite = math.isfinite(number)
            except OverflowError:
                _fail(op, f"argument '{arg}' is an int of {len(str(number))} digits, past f64")
            if not finite:
                _fail(op, f"argument '{arg}' is {number!r}; it must be finite")
            bounds.append(number)
        shape = [DYNAMIC_INDEX if extent is None else extent]
        rtype = TensorType(out.element_type, shape)
        return fd._wrap_tensor(IotaOp(bounds[0], bounds[1], rtype, size))

    def _run_time_iota(self, op: str, out: DataType, length: Any, start: Any, step: Any) -> Tensor:
        """`iota` with a `start` or `step` known only at run time: `start + iota(length) *
        step` in the compute type (see `iota`)."""
        compute = DataType.Int if out.is_integral else compute_dtype(out)
        values: list[SSAValue] = []
        for arg, value, default in (("start", start, 0), ("step", step, 1)):
            x = self._operand(op, arg, default if value is None else value)
            if isinstance(x, Tensor):
                _fail(op, f"argument '{arg}' must be a Scalar or a Python number, got a Tensor")
            dtype = x.dtype if isinstance(x, Scalar) else None
            if dtype == DataType.Bool or isinstance(x, bool):
                _fail(op, f"argument '{arg}' is a Bool; it needs a number")
            if out.is_integral and (dtype is not None and not dtype.is_integral):
                _fail(
                    op,
                    f"argument '{arg}' is a {dtype.name} Scalar; an iota of {out.name} takes "
                    "integers",
                )
            values.append(self._as(op, arg, x, compute))
        positions = self.iota(length, 0, 1, compute)
        first, stride = (self._definition._wrap(v) for v in values)
        result = self.cast(self.add(self.mul(positions, stride), first), out)
        assert isinstance(result, Tensor)
        return result

    @_api
    def slice(
        self,
        arg: Any,
        start_indices: Any,
        end_indices: Any,
        strides: Any = None,
        manual_normalization: Any = False,
    ) -> Tensor:
        """`arg[start:end:stride, ...]`, one entry per dim (nvFuser's `slice`): bounds are ints
        or constant Scalars, read as torch reads them (negative from the end, clamped to the
        extent); an end may also be the dim's own extent (`arg.size(d)`); strides default to 1
        and must be at least 1. With `manual_normalization` the caller promises bounds in
        [0, extent] (negative ones are refused). On the GPU a slice is a view: no copy."""
        op = "fd.ops.slice"
        x = self._tensor(op, "arg", arg)
        rank = x.ndim
        if rank == 0:
            _fail(op, "argument 'arg' is a 0-d tensor; there is no dim to slice")
        if type(manual_normalization) is int and manual_normalization in (0, 1):
            manual_normalization = bool(manual_normalization)  # nvFuser's printed form: 0 or 1
        manual = self._bool(op, "manual_normalization", manual_normalization)
        starts = self._slice_entries(op, "start_indices", start_indices, x, manual)
        stops = self._slice_entries(op, "end_indices", end_indices, x, manual)
        steps = [1] * rank if strides is None else self._slice_entries(op, "strides", strides, x)
        try:
            check_slice_steps(steps)
        except SliceError as e:
            _fail(op, f"argument 'strides': {e}")
        identity = all(
            a == 0 and c == 1 and (b == END or (n != DYNAMIC_INDEX and b >= n))
            for a, b, c, n in zip(starts, stops, steps, x._shape, strict=True)
        )
        if identity:
            return x
        return self._definition._wrap_tensor(SliceOp(x._value, starts, stops, steps))

    def _slice_entries(
        self, op: str, arg: str, entries: object, x: Tensor, manual: bool = False
    ) -> list[int]:
        """A slice's bounds or strides as ints, one per dim of `x` (an end that is `x`'s own
        extent of that dim is `END`)."""
        if not isinstance(entries, Sequence) or isinstance(entries, str):
            _fail(op, f"argument '{arg}' must be a list of ints, got {entries!r}")
        if len(entries) != x.ndim:
            _fail(op, f"argument '{arg}' has {len(entries)} entries; the operand has rank {x.ndim}")
        values: list[int] = []
        for d, entry in enumerate(entries):
            if isinstance(entry, Extent) and entry.static is not None:
                values.append(entry.static)
                continue
            if (
                isinstance(entry, Extent)
                and arg == "end_indices"
                and self._same_extent(entry, x, d)
            ):
                values.append(END)  # to the end
                continue
            expected = "an int or a constant Scalar"
            if isinstance(entry, Extent):  # not the dim's own end
                expected += (
                    " (a run-time extent is an end only, and only the dim's own)"
                    if arg == "end_indices"
                    else " (a run-time extent can only end a dim)"
                )
            number = _constant_int(op, f"argument '{arg}' entry {d}", entry, expected)
            if manual and number < 0:
                _fail(
                    op,
                    f"argument '{arg}' entry {d} is {number}, but manual_normalization promises "
                    "bounds in [0, extent]",
                )
            # past either end of int64 means the same as the end itself: bounds clamp
            values.append(min(max(number, -END - 1), END))
        return values

    def _same_extent(self, extent: Extent, x: Tensor, d: int) -> bool:
        """Whether `extent` is dim `d` of `x` by the typing rules (`x.size(d)`, or the extent
        of a dim that a pointwise op or broadcast made equal to it)."""
        fd = self._definition
        if extent.tensor._fd is not fd:
            return False
        if extent.tensor is x and extent.axis == d:
            return True
        from fuser.transforms.segment import Extents  # the compiler's, imported when needed

        extents = Extents(fd._block.args, list(fd._block.ops))
        return extents.same((extent.tensor._value, extent.axis), (x._value, d))

    @_api
    def pad(self, arg: Any, pad_widths: Any, value: Any = None) -> Tensor:
        """`arg` with `value` (default 0) added before and after its dims (nvFuser's `pad`,
        torch's `constant_pad_nd`): `pad_widths` holds (before, after) pairs from the innermost
        dim outwards, as torch's `F.pad` takes them, ints or constant Scalars; a negative width
        removes elements. A padded dim must have a static extent. It fuses: a kernel reads the
        operand shifted, with no copy."""
        op = "fd.ops.pad"
        x = self._tensor(op, "arg", arg)
        if not isinstance(pad_widths, Sequence) or isinstance(pad_widths, str):
            _fail(op, f"argument 'pad_widths' must be a list of ints, got {pad_widths!r}")
        if len(pad_widths) % 2 or len(pad_widths) > 2 * x.ndim:
            _fail(
                op,
                f"argument 'pad_widths' has {len(pad_widths)} entries; it needs (before, after) "
                f"pairs for at most the operand's {x.ndim} dims",
            )
        widths = [
            _constant_int(op, f"argument 'pad_widths' entry {i}", w, "an int or a constant Scalar")
            for i, w in enumerate(pad_widths)
        ]
        low, high = [0] * x.ndim, [0] * x.ndim
        for pair in range(len(widths) // 2):
            d = x.ndim - 1 - pair
            low[d], high[d] = widths[2 * pair], widths[2 * pair + 1]
            if (low[d], high[d]) == (0, 0):
                continue
            n = x._shape[d]
            if n == DYNAMIC_INDEX:
                _fail(
                    op,
                    f"pads dim {d}, whose extent is dynamic: fuser pads static extents only "
                    "(define the tensor with a static shape)",
                )
            if n + low[d] + high[d] < 0:
                _fail(op, f"widths {low[d]} and {high[d]} leave dim {d} of extent {n} below 0")
            if n + low[d] + high[d] >= 2**63:
                _fail(op, f"widths {low[d]} and {high[d]} make dim {d} longer than int64 counts")
        if not any(low) and not any(high):
            return x
        fill = self._operand(op, "value", 0 if value is None else value)
        if isinstance(fill, Tensor):
            _fail(op, "argument 'value' must be a Scalar or a Python number, got a Tensor")
        v = self._as(op, "value", fill, x.dtype)
        return self._definition._wrap_tensor(PadOp(x._value, v, low, high))

    @_api
    def cat(self, tensors: Any, dim: Any, manual_padding: Any = False) -> Tensor:
        """`tensors` one after another along `dim` (nvFuser's and torch's `cat`): they share the
        rank and every other extent; their dtypes promote to one, as torch's do. Extents along
        `dim` must be static. It fuses: a kernel reads each operand shifted, with no copy.
        `manual_padding` (inputs already padded to the result) is not supported."""
        op = "fd.ops.cat"
        if not isinstance(tensors, Sequence) or isinstance(tensors, str) or not tensors:
            _fail(op, f"argument 'tensors' must be a non-empty list of Tensors, got {tensors!r}")
        xs = [self._tensor(op, f"tensors[{k}]", t) for k, t in enumerate(tensors)]
        if type(manual_padding) is int and manual_padding in (0, 1):
            manual_padding = bool(manual_padding)  # nvFuser's printed form: 0 or 1
        if self._bool(op, "manual_padding", manual_padding):
            _fail(op, "manual_padding=True (inputs already padded) is not supported")
        rank = xs[0].ndim
        for k, x in enumerate(xs):
            if x.ndim != rank:
                _fail(op, f"tensors[{k}] has rank {x.ndim}, tensors[0] rank {rank}")
        if rank == 0:
            _fail(op, "tensors are 0-d; there is no dim to concatenate along")
        if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
            _fail(op, f"argument 'dim' must be an int, got {dim!r}")
        d = self._dims(op, [dim], rank, "dim")[0]
        if len(xs) == 1:
            return xs[0]
        for k, x in enumerate(xs):
            if x._shape[d] == DYNAMIC_INDEX:
                _fail(
                    op,
                    f"tensors[{k}] has a dynamic extent in dim {d}: fuser concatenates static "
                    "extents only (define the tensor with a static shape)",
                )
        if (clash := cat_clash([x._shape for x in xs], d)) is not None:
            k, other, _ = clash
            _fail(
                op,
                f"tensors[{k}] has shape {format_shape(xs[k]._shape)}, tensors[{other}] "
                f"{format_shape(xs[other]._shape)}: only dim {d} may differ",
            )
        dtype = self._promote(xs)
        fd = self._definition
        values = [fd._cast(x._value, dtype) for x in xs]
        return fd._wrap_tensor(CatOp(values, d))

    @_api
    def size(self, arg: Any, dim: Any) -> Extent:
        """The extent of dim `dim` of `arg` (nvFuser's `fd.ops.size`): `arg.size(dim)`."""
        return self._tensor("fd.ops.size", "arg", arg).size(dim)

    @_api
    def shape(self, arg: Any) -> list[Extent]:
        """The extents of `arg` (nvFuser's `fd.ops.shape`): `arg.shape()`."""
        return self._tensor("fd.ops.shape", "arg", arg).shape()

    @_api
    def take_along_axis(self, arg: Any, index: Any, dim: Any) -> Tensor:
        """`arg` gathered along `dim` at `index` (nvFuser's `take_along_axis`, torch's
        `take_along_dim`): the index (Int or Int32) has `arg`'s rank and, on every other dim,
        its extent; the result has the index's shape. An index in [-extent, 0) counts from the
        end; one outside [-extent, extent) is clamped into [0, extent) (where torch raises), so
        no kernel reads outside `arg`. The pointwise kernel loads `arg` at the index: one load
        per element of the result."""
        return self._take("fd.ops.take_along_axis", arg, index, dim, exact=True)

    @_api
    def gather(self, arg: Any, index: Any, dim: Any) -> Tensor:
        """torch's `gather` (nvFuser's): as `take_along_axis`, but the index may be smaller
        than `arg` on the other dims (static extents: `arg` is sliced to the index's)."""
        return self._take("fd.ops.gather", arg, index, dim, exact=False)

    def _take(self, op: str, arg: Any, index: Any, dim: Any, exact: bool) -> Tensor:
        x, i, d = self._take_operands(op, arg, index, dim)
        if i.ndim != x.ndim:
            _fail(op, f"argument 'index' has rank {i.ndim}; it needs arg's rank {x.ndim}")
        if x._shape[d] == 0:  # even for no indices: the kernel needs an element to clamp to
            _fail(op, f"argument 'arg' has extent 0 on dim {d}; there is nothing to take")
        ends: list[int] = []
        for j, (a, b) in enumerate(zip(x._shape, i._shape, strict=True)):
            if j == d or a == b or DYNAMIC_INDEX in (a, b):
                ends.append(END)  # (a run-time extent: equal then, or the call's error)
            elif not exact and b < a:
                ends.append(b)  # gather reads the leading part of arg
            else:
                what = "at most" if not exact else "exactly"
                _fail(
                    op,
                    f"argument 'index' has extent {b} on dim {j}; it needs {what} arg's {a} "
                    f"there (index {format_shape(i._shape)}, arg {format_shape(x._shape)})",
                )
        if any(e != END for e in ends):
            x = self.slice(x, [0] * x.ndim, ends)
        return self._definition._wrap_tensor(TakeAlongAxisOp(x._value, i._value, d))

    @_api
    def scatter(self, arg1: Any, index: Any, src: Any, dim: Any) -> Tensor:
        """`arg1` with `src` written along `dim` at `index` (nvFuser's and torch's `scatter`):
        `out[..., index[..., i, ...], ...] = src[..., i, ...]`. The index (Int or Int32) has
        `arg1`'s rank and, on every other dim, its extent; `src` is a Tensor of the index's shape
        and `arg1`'s dtype, or a Scalar or number (cast to it). A negative index counts from the
        end; one outside [-extent, extent) writes nothing (where torch raises), so no kernel
        writes outside the result; where several indices write one element the largest value
        wins (torch leaves it unspecified). It runs as a compare with an iota and a max over
        the index's dim `dim`: one pointwise kernel for one index per row, a reduction reading
        each row's indices once per element otherwise (meant for few indices per row)."""
        op = "fd.ops.scatter"
        x, i, d = self._index_operands(op, "arg1", arg1, index, dim)
        if i.ndim != x.ndim:
            _fail(op, f"argument 'index' has rank {i.ndim}; it needs arg1's rank {x.ndim}")
        if x._shape[d] == 0:
            _fail(op, f"argument 'arg1' has extent 0 on dim {d}; there is nothing to write")
        for j, (a, b) in enumerate(zip(x._shape, i._shape, strict=True)):
            if j != d and not dims_compatible(a, b):
                _fail(
                    op,
                    f"argument 'index' has extent {b} on dim {j}; it needs arg1's {a} there "
                    f"(index {format_shape(i._shape)}, arg1 {format_shape(x._shape)})",
                )
        value = self._operand(op, "src", src)
        if isinstance(value, Tensor):
            if value.dtype != x.dtype:
                _fail(op, f"argument 'src' is {value.dtype.name}; it needs arg1's {x.dtype.name}")
            if not shapes_compatible(value._shape, i._shape):
                _fail(
                    op,
                    f"argument 'src' has shape {format_shape(value._shape)}; it needs the "
                    f"index's {format_shape(i._shape)}",
                )
            v = value._value
        else:
            v = self._as(op, "src", value, x.dtype)
        return self._definition._wrap_tensor(ScatterOp(x._value, i._value, v, d))

    @_api
    def index_select(self, arg: Any, index: Any, dim: Any) -> Tensor:
        """The entries of `arg` along `dim` at each element of `index` (a 1-D, or 0-d, Int or
        Int32 tensor), as torch's and nvFuser's `index_select`: dim `dim` of the result has the
        index's length. A negative index counts from the end and one outside [-extent, extent)
        is clamped (torch raises; no kernel reads outside `arg`). It fuses: a kernel loads
        `arg` at the index, a row at a time along the other dims."""
        op = "fd.ops.index_select"
        x, i, d = self._take_operands(op, arg, index, dim)
        if i.ndim > 1:
            _fail(op, f"argument 'index' has rank {i.ndim}; it must be 1-D (or 0-d)")
        if i.ndim == 0:  # torch keeps the dim, of extent 1
            i = self._broadcast_in_dim(op, i, [1], [])
        return self._definition._wrap_tensor(TakeOp(x._value, i._value, d))

    @_api
    def select(self, arg: Any, index: Any, dim: Any) -> Tensor:
        """`arg` at position `index` (an Int or Int32 Scalar, or an int) along `dim`, which the
        result drops, as torch's and nvFuser's `select`. A negative index counts from the end;
        an int outside [-extent, extent) of a static dim is an error, a run-time one is
        clamped."""
        op = "fd.ops.select"
        x = self._tensor(op, "arg", arg)
        if x.ndim == 0:
            _fail(op, "argument 'arg' is a 0-d tensor; there is no dim to select along")
        d = self._dims(op, [dim], x.ndim, "dim")[0]
        position = self._operand(op, "index", index)
        if isinstance(position, Tensor):
            _fail(op, "argument 'index' must be a Scalar or an int, got a Tensor")
        known = _constant_number(position)
        n = x._shape[d]
        if (
            isinstance(known, int)
            and not isinstance(known, bool)
            and n != DYNAMIC_INDEX
            and not -n <= known < n
        ):
            _fail(op, f"index {known} is out of range for dim {d} of extent {n}")
        if isinstance(position, Scalar):
            if position.dtype not in (DataType.Int, DataType.Int32):
                _fail(op, f"argument 'index' must be an Int or Int32 Scalar, got {position.dtype}")
            value = position._value
        else:
            if not isinstance(position, int) or isinstance(position, bool):
                _fail(op, f"argument 'index' must be an int, got {position!r}")
            value = self._as(op, "index", position, DataType.Int)
        if n == 0:
            _fail(op, f"argument 'arg' has extent 0 on dim {d}; there is nothing to select")
        return self._definition._wrap_tensor(TakeOp(x._value, value, d))

    @_api
    def embedding_fwd(
        self,
        input: Any,
        weight: Any,
        padding_idx: Any = None,
        max_norm: Any = None,
        norm_type: Any = None,
        scale_grad_by_freq: Any = None,
        sparse: Any = None,
    ) -> Tensor:
        """The rows of `weight` ([num_embeddings, embedding_dim]) at each element of `input`
        (Int or Int32 indices of any shape), as torch's `F.embedding` and nvFuser's
        `embedding_fwd`: the result has shape `[*input.shape, embedding_dim]`. The scalars are
        ints, floats, bools or constant Scalars (None: torch's default).

        - `max_norm`: a row whose `norm_type`-norm (default 2) exceeds it is scaled to
          `max_norm / (norm + 1e-7)` of itself, as torch renormalizes. torch also writes the
          renormalized rows back into `weight`; fuser does not modify an input (its result is
          the same).
        - `padding_idx` (in [-num_embeddings, num_embeddings)), `scale_grad_by_freq` and
          `sparse` change only the gradient: checked, then unused.

        An index outside [0, num_embeddings) is clamped (a negative one counts from the end),
        where torch raises. It fuses: a kernel loads each row at its index."""
        op = "fd.ops.embedding_fwd"
        ids = self._tensor(op, "input", input)
        table = self._tensor(op, "weight", weight)
        if ids.dtype not in (DataType.Int, DataType.Int32):
            _fail(op, f"argument 'input' must be an Int or Int32 tensor, got {ids.dtype}")
        if table.ndim != 2:
            _fail(op, f"argument 'weight' has rank {table.ndim}; it must be 2-D")
        if not table.dtype.is_floating_point:
            _fail(op, f"argument 'weight' must be a floating-point tensor, got {table.dtype}")
        rows = table._shape[0]
        if rows == 0:
            _fail(op, "argument 'weight' has no rows; there is nothing to take")
        if padding_idx is not None:
            p = _constant_int(op, "argument 'padding_idx'", padding_idx, "an int or None")
            if rows != DYNAMIC_INDEX and not -rows <= p < rows:
                _fail(op, f"padding_idx {p} must be within num_embeddings ({rows})")
        for name, flag in (("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse)):
            constant_bool = isinstance(flag, Scalar) and flag.dtype == DataType.Bool
            if not (flag is None or isinstance(flag, bool) or constant_bool):
                _fail(op, f"argument '{name}' must be a bool, a Bool Scalar or None, got {flag!r}")
        fd = self._definition
        rows_taken = fd._wrap_tensor(TakeOp(table._value, ids._value, 0))
        if max_norm is None:
            if norm_type is not None:
                self._norm_order(op, norm_type)  # checked, as torch checks it
            return rows_taken
        return self._renormalized(op, rows_taken, max_norm, norm_type)

    @staticmethod
    def _norm_order(op: str, norm_type: object) -> float:
        p = _constant_number(norm_type)
        if p is None or isinstance(p, bool):
            _fail(
                op, f"argument 'norm_type' must be a number or a constant Scalar, got {norm_type!r}"
            )
        if not p >= 0:
            _fail(op, f"argument 'norm_type' is {p}; a p-norm needs p >= 0")
        return float(p)

    def _renormalized(self, op: str, rows: Tensor, max_norm: object, norm_type: object) -> Tensor:
        """`rows` each scaled as torch's `embedding_renorm_` scales a row whose
        `norm_type`-norm exceeds `max_norm`: by `max_norm / (norm + 1e-7)`."""
        p = 2.0 if norm_type is None else self._norm_order(op, norm_type)
        limit = self._operand(op, "max_norm", max_norm)
        if isinstance(limit, Tensor | bool) or (
            isinstance(limit, Scalar) and limit.dtype == DataType.Bool
        ):
            _fail(op, f"argument 'max_norm' must be a number or a Scalar, got {max_norm!r}")
        compute = compute_dtype(rows.dtype)
        x = self.cast(rows, compute)
        last = rows.ndim - 1
        if p == 2:
            norm = self.sqrt(self.sum(x * x, [last], keepdim=True))
        elif p == 1:
            norm = self.sum(self.abs(x), [last], keepdim=True)
        elif math.isinf(p):
            norm = self.max(self.abs(x), [last], keepdim=True)
        elif p == 0:
            norm = self.sum(self.cast(self.ne(x, 0), compute), [last], keepdim=True)
        else:
            norm = self.pow(self.sum(self.pow(self.abs(x), p), [last], keepdim=True), 1 / p)
        scale = self.where(norm > limit, self.div(limit, norm + 1e-7), 1.0)
        result = self.cast(x * scale, rows.dtype)
        assert isinstance(result, Tensor)
        return result

    def _index_operands(
        self, op: str, name: str, arg: object, index: object, dim: object
    ) -> tuple[Tensor, Tensor, int]:
        """The tensor `arg` (argument `name`), an Int or Int32 `index` tensor and `dim` of an
        op that indexes along a dim, checked."""
        x = self._tensor(op, name, arg)
        i = self._tensor(op, "index", index)
        if i.dtype not in (DataType.Int, DataType.Int32):
            _fail(op, f"argument 'index' must be an Int or Int32 tensor, got {i.dtype}")
        if x.ndim == 0:
            _fail(op, f"argument '{name}' is a 0-d tensor; there is no dim to index along")
        return x, i, self._dims(op, [dim], x.ndim, "dim")[0]

    def _take_operands(
        self, op: str, arg: object, index: object, dim: object
    ) -> tuple[Tensor, Tensor, int]:
        """`arg`, an Int or Int32 `index` tensor and `dim` of a take, checked."""
        x, i, d = self._index_operands(op, "arg", arg, index, dim)
        if take_from_empty(x._shape, i._shape, d):
            _fail(op, f"argument 'arg' has extent 0 on dim {d}; there is nothing to take")
        return x, i, d

    @_api
    def reshape(self, t: Any, new_shape: Any, legacy_new_shape: Any = None) -> Tensor:
        """`t`'s elements in row-major order in `new_shape` (ints, static extents, `t`'s own
        run-time extents at their own dims, `t.size(d)` at entry d, and one -1 for the extent
        inferred from the element count), as torch's and nvFuser's `reshape`. nvFuser's older
        `reshape(t, original_shape, new_shape)` is accepted too. On the GPU it is a view where
        strides allow (a contiguous tensor always), else a copy."""
        op = "fd.ops.reshape"
        x = self._tensor(op, "t", t)
        if legacy_new_shape is not None:  # reshape(t, original_shape, new_shape)
            self._check_original_shape(op, x, new_shape)
            new_shape = legacy_new_shape
        if not isinstance(new_shape, Sequence) or isinstance(new_shape, str):
            _fail(op, f"argument 'new_shape' must be a list of ints, got {new_shape!r}")
        shape: list[int] = []
        kept: list[int] = []
        for d, entry in enumerate(new_shape):
            if isinstance(entry, Extent) and entry.static is None and entry.tensor is x:
                if entry.axis != d:
                    _fail(
                        op,
                        f"argument 'new_shape' entry {d} is {entry!r}, a run-time extent of "
                        f"dim {entry.axis}; a run-time extent of the operand is kept at its own "
                        "dim only (use -1 for the one extent to infer)",
                    )
                kept.append(d)
                shape.append(DYNAMIC_INDEX)
                continue
            value = self._static_extent(op, "new_shape", d, entry)
            if value < -1:
                _fail(op, f"argument 'new_shape' entry {d} is {value}; use -1 or an extent")
            shape.append(DYNAMIC_INDEX if value == -1 else value)
        if sum(1 for d, e in enumerate(shape) if e == DYNAMIC_INDEX and d not in kept) > 1:
            _fail(op, f"argument 'new_shape' {list(new_shape)} has more than one -1")
        source = x._shape
        if DYNAMIC_INDEX not in [n for d, n in enumerate(source) if d not in kept]:
            # the dims besides the kept ones reshape as a static operand's
            try:
                others = iter(kept_extents(shape, source, kept))
            except ReshapeError as e:
                kept_text = f"keeping dims {kept} of {format_shape(source)}, the others: "
                _fail(op, f"{kept_text if kept else ''}{e}")
            shape = [DYNAMIC_INDEX if d in kept else next(others) for d in range(len(shape))]
        elif DYNAMIC_INDEX in [e for d, e in enumerate(shape) if d not in kept] and 0 in shape:
            _fail(
                op,
                f"argument 'new_shape' {list(new_shape)} has a 0 beside the -1, which "
                "then cannot be inferred",
            )
        if shape == list(source):
            return x
        return self._definition._wrap_tensor(ReshapeOp(x._value, shape, kept))

    def _check_original_shape(self, op: str, x: Tensor, original: Any) -> None:
        """nvFuser's legacy `original_shape` must match the operand where it is static."""
        if not isinstance(original, Sequence) or isinstance(original, str):
            _fail(op, f"argument 'original_shape' must be a list of ints, got {original!r}")
        if len(original) != x.ndim:
            _fail(
                op,
                f"argument 'original_shape' has {len(original)} entries; the operand has "
                f"rank {x.ndim}",
            )
        for d, (entry, static) in enumerate(zip(original, x._shape, strict=True)):
            if isinstance(entry, Extent) and entry.tensor is x and entry.axis == d:
                continue  # the operand's own extent (`t.shape()`)
            value = self._static_extent(op, "original_shape", d, entry)
            if static != DYNAMIC_INDEX and value not in (-1, static):
                _fail(
                    op,
                    f"argument 'original_shape' entry {d} is {value}; the operand's "
                    f"extent there is {static}",
                )

    @staticmethod
    def _static_extent(op: str, arg: str, d: int, entry: object) -> int:
        """An int, a constant Int Scalar (`define_scalar(4, dtype=DataType.Int)`, as Thunder
        writes shapes) or a static Extent, from a shape argument, as an int."""
        if isinstance(entry, Extent):
            if entry.static is None:
                _fail(
                    op,
                    f"argument '{arg}' entry {d} is a run-time extent ({entry!r}), not the "
                    "operand's own at that dim; fuser's reshape takes ints, the operand's own "
                    "run-time extents at their dims, and one -1, the extent it infers",
                )
            return entry.static
        expected = "an int or a constant Int Scalar"
        return _constant_int(op, f"argument '{arg}' entry {d}", entry, expected)

    def _broadcast_in_dim(self, op: str, t: Any, shape: Any, broadcast_dims: Any) -> Tensor:
        fd = self._definition
        x = self._operand(op, "t", t, numbers_ok=False)
        assert isinstance(x, _Value)
        in_shape = _shape_of(x) or ()
        if not isinstance(shape, Sequence) or isinstance(shape, str):
            _fail(op, f"argument 'shape' must be a list of ints or extents, got {shape!r}")
        if not isinstance(broadcast_dims, Sequence) or isinstance(broadcast_dims, str):
            _fail(op, f"argument 'broadcast_dims' must be a list of ints, got {broadcast_dims!r}")
        rank = len(shape)
        if len(broadcast_dims) != len(in_shape):
            _fail(
                op,
                f"argument 'broadcast_dims' has {len(broadcast_dims)} entries; it needs one "
                f"for each of the operand's {len(in_shape)} dims",
            )
        if rank < len(in_shape):
            _fail(op, f"argument 'shape' has rank {rank}, below the operand's rank {len(in_shape)}")
        dims = [self._dims(op, [d], rank, "broadcast_dims")[0] for d in broadcast_dims]
        if len(set(dims)) != len(dims) or dims != sorted(dims):
            _fail(op, f"argument 'broadcast_dims' {dims} must be strictly increasing")
        source = {o: in_shape[i] for i, o in enumerate(dims)}
        out_shape: list[int] = []
        sizes: list[SSAValue] = []
        for d, entry in enumerate(shape):
            src = source.get(d, 1)
            carried = src != 1
            if isinstance(entry, Extent):
                static = entry.static
                if static is None:
                    if carried:
                        out_shape.append(src)
                    else:
                        out_shape.append(DYNAMIC_INDEX)
                        sizes.append(entry._ssa())
                    continue
                entry_value = static
            elif isinstance(entry, numbers.Integral) and not isinstance(entry, bool):
                entry_value = int(entry)
            else:
                _fail(op, f"argument 'shape' entry {d} must be an int or an extent, got {entry!r}")
            if entry_value == -1:
                if not carried:
                    _fail(
                        op,
                        f"argument 'shape' entry {d} is -1 but the operand does not carry "
                        "that dim (it is new or broadcast from extent 1); pass its extent, "
                        "e.g. x.size(i)",
                    )
                out_shape.append(src)
            elif entry_value < -1:
                _fail(op, f"argument 'shape' entry {d} is {entry_value}; use -1 or an extent")
            else:
                if carried and src != DYNAMIC_INDEX and src != entry_value:
                    _fail(
                        op,
                        f"argument 'shape' entry {d} is {entry_value} but operand dim "
                        f"{dims.index(d)} has extent {src}, which only broadcasts from 1",
                    )
                out_shape.append(entry_value)
        rtype = TensorType(element_type(x._value.type), out_shape)
        return fd._wrap_tensor(BroadcastInDimOp(x._value, dims, rtype, sizes))

    # ---- random numbers ----------------------------------------------------------------

    @_api
    def uniform(
        self,
        minval: Any,
        maxval: Any,
        shape: Any,
        *,
        rng_seed: Any = None,
        rng_offset: Any = None,
        dtype: Any = DataType.Float,
    ) -> Tensor:
        """Uniform random numbers in [minval, maxval) of `shape` (ints, constant Scalars or
        extents) and a floating `dtype`: `minval + (maxval - minval) * rand` computed in Float
        (Double for Double), a value that rounds to `maxval` given `minval` (torch's rule).
        Element i depends on (`rng_seed`, `rng_offset`, i) alone (`fusion.rand`)."""
        return self._random("uniform", RandOp, minval, maxval, shape, rng_seed, rng_offset, dtype)

    @_api
    def normal(
        self,
        mean: Any,
        std: Any,
        shape: Any,
        *,
        rng_seed: Any = None,
        rng_offset: Any = None,
        dtype: Any = DataType.Float,
    ) -> Tensor:
        """Normal random numbers `mean + std * randn` of `shape` and a floating `dtype`
        (`fusion.randn`, Box-Muller); as `uniform` for the shape, seed and offset."""
        return self._random("normal", RandnOp, mean, std, shape, rng_seed, rng_offset, dtype)

    @_api
    def rand_like(self, x: Any, *, rng_seed: Any = None, rng_offset: Any = None) -> Tensor:
        """`uniform(0, 1, x.shape(), dtype=x.dtype)`."""
        t = self._tensor("fd.ops.rand_like", "x", x)
        return self._random("rand_like", RandOp, 0, 1, t.shape(), rng_seed, rng_offset, t.dtype)

    @_api
    def randn_like(self, x: Any, *, rng_seed: Any = None, rng_offset: Any = None) -> Tensor:
        """`normal(0, 1, x.shape(), dtype=x.dtype)`."""
        t = self._tensor("fd.ops.randn_like", "x", x)
        return self._random("randn_like", RandnOp, 0, 1, t.shape(), rng_seed, rng_offset, t.dtype)

    def _random(
        self,
        op: str,
        cls: type[RandOp] | type[RandnOp],
        a: Any,
        b: Any,
        shape: Any,
        seed: Any,
        offset: Any,
        dtype: Any,
    ) -> Tensor:
        """`a + (b - a) * rand` (uniform) or `a + b * randn` (normal) in the compute type,
        rounded once to `dtype`."""
        qual = f"fd.ops.{op}"
        out = _check_dtype(qual, "dtype", dtype)
        assert out is not None
        if not out.is_floating_point:
            _fail(qual, f"argument 'dtype' must be a floating-point type, got {out.name}")
        if seed is None or offset is None:
            _fail(
                qual,
                "needs rng_seed and rng_offset (ints or Int Scalars): fuser keeps no generator "
                "state of its own, so the numbers are the caller's to advance (as Thunder's "
                "uniform_philox passes them)",
            )
        static, sizes = self._random_shape(qual, shape)
        compute = compute_dtype(out)
        fd = self._definition
        names = ("minval", "maxval") if cls is RandOp else ("mean", "std")
        for arg, v in ((names[0], a), (names[1], b), ("rng_seed", seed), ("rng_offset", offset)):
            if isinstance(v, Tensor | bool) or not isinstance(v, Scalar | numbers.Real):
                _fail(qual, f"argument '{arg}' must be a Python number or a Scalar, got {v!r}")
            kind = v.dtype if isinstance(v, Scalar) else number_dtype(cast(Number, v))
            if arg.startswith("rng_") and not kind.is_integral:
                _fail(qual, f"argument '{arg}' must be an int or an Int Scalar, got {kind.name}")
        low_number, high_number = _constant_number(a), _constant_number(b)
        known = cls is RandOp and low_number is not None and high_number is not None
        if known and float(cast(Number, low_number)) > float(cast(Number, high_number)):
            _fail(qual, f"needs minval <= maxval, got {low_number} > {high_number}")
        seed_value, offset_value = (
            self._as(qual, arg, self._operand(qual, arg, v), DataType.Int)
            for arg, v in (("rng_seed", seed), ("rng_offset", offset))
        )
        random = cls(seed_value, offset_value, TensorType(compute.element_type, static), sizes)
        value = fd._emit(random).results[0]
        standard = low_number == 0 and high_number == 1
        if standard and (cls is RandnOp or not out.is_half):  # (a half rounds up to 1: below)
            return cast(Tensor, fd._wrap(fd._cast(value, out)))
        low = self._as(qual, names[0], self._operand(qual, names[0], a), compute)
        scale = self._as(qual, names[1], self._operand(qual, names[1], b), compute)
        if cls is RandnOp:
            value = self._apply(AddOp, low, self._apply(MulOp, value, scale))
            return cast(Tensor, fd._wrap(fd._cast(value, out)))
        span = self._apply(SubOp, scale, low)
        value = self._apply(AddOp, low, self._apply(MulOp, value, span))
        # a value that rounds up to maxval in `dtype` is minval, as in torch's uniform_
        seen = fd._cast(fd._cast(value, out), compute)
        limit = fd._cast(fd._cast(scale, out), compute)
        at_high = self._apply(EqOp, seen, limit, result=I1)
        value = self._apply(WhereOp, at_high, low, seen, result=compute.element_type)
        return cast(Tensor, fd._wrap(fd._cast(value, out)))

    def _random_shape(self, op: str, shape: Any) -> tuple[list[int], list[SSAValue]]:
        """The static extents (DYNAMIC_INDEX for a run-time one) and the `index` values of the
        run-time ones of a random op's `shape`."""
        if not isinstance(shape, Sequence) or isinstance(shape, str):
            _fail(op, f"argument 'shape' must be a list of ints or extents, got {shape!r}")
        static: list[int] = []
        sizes: list[SSAValue] = []
        for d, entry in enumerate(shape):
            if isinstance(entry, Extent) and entry.static is None:
                static.append(DYNAMIC_INDEX)
                sizes.append(entry._ssa())
                continue
            extent = entry.static if isinstance(entry, Extent) else entry
            what = f"argument 'shape' entry {d}"
            n = _constant_int(op, what, extent, "an int, a constant Int Scalar or an extent")
            if n < 0:
                _fail(op, f"argument 'shape' entry {d} is {n}; extents are >= 0")
            static.append(n)
        return static, sizes

    # ---- reductions --------------------------------------------------------------------

    @_api
    def sum(self, t: Any, dims: Any = None, keepdim: Any = False, dtype: Any = None) -> Tensor:
        """Sum over `dims` (every dim when None, as `sum(t)` and `sum(t, dtype)`); half inputs
        accumulate in f32 and the result is cast back, unless `dtype` names the result type. A
        Bool or integer input sums to Int (nvFuser's and torch's rule); a `dtype` casts the
        input first."""
        return self._reduce("sum", SumOp, t, dims, keepdim, dtype)

    @_api
    def max(self, t: Any, dims: Any = None, keepdim: Any = False, dtype: Any = None) -> Tensor:
        """Maximum over `dims` (every dim when None); half inputs reduce in f32."""
        return self._reduce("max", MaxOp, t, dims, keepdim, dtype)

    @_api
    def min(self, t: Any, dims: Any = None, keepdim: Any = False, dtype: Any = None) -> Tensor:
        """Minimum over `dims` (every dim when None); half inputs reduce in f32."""
        return self._reduce("min", MinOp, t, dims, keepdim, dtype)

    @_api
    def prod(self, t: Any, dims: Any = None, keepdim: Any = False, dtype: Any = None) -> Tensor:
        """Product over `dims` (every dim when None; 1 over an empty dim); half inputs multiply
        in f32 and the result is cast back, unless `dtype` names the result type. A Bool or
        integer input multiplies to Int (nvFuser's and torch's rule; Int wraps on overflow, as
        torch's does); a `dtype` casts the input first."""
        return self._reduce("prod", ProdOp, t, dims, keepdim, dtype)

    @_api
    def cumsum(self, arg: Any, dim: Any, dtype: Any = None) -> Tensor:
        """The running sum along `dim` (torch.cumsum, nvFuser's `cumsum`): f16/bf16 add in f32,
        each result rounded once; a Bool or integer input sums to Int (torch's rule, as `sum`'s;
        Int wraps); a `dtype` casts the input first, as torch's does."""
        return self._scan("cumsum", CumsumOp, arg, dim, dtype)

    @_api
    def cumprod(self, arg: Any, dim: Any, dtype: Any = None) -> Tensor:
        """The running product along `dim` (torch.cumprod), typed as `cumsum`."""
        return self._scan("cumprod", CumprodOp, arg, dim, dtype)

    @_api
    def cummax(self, arg: Any, dim: Any) -> Tensor:
        """The running maximum along `dim`: the values of torch.cummax (a NaN is carried to
        the end of the row); the dtype is kept."""
        return self._scan("cummax", CummaxOp, arg, dim, None)

    @_api
    def cummin(self, arg: Any, dim: Any) -> Tensor:
        """The running minimum along `dim`: the values of torch.cummin; the dtype is kept."""
        return self._scan("cummin", CumminOp, arg, dim, None)

    def _scan(self, op: str, cls: type[ScanOp], arg: object, dim: object, dtype: object) -> Tensor:
        qual = f"fd.ops.{op}"
        x = self._tensor(qual, "arg", arg)
        if x.ndim == 0:
            _fail(qual, "argument 'arg' is a 0-dim tensor; a scan needs a dim to walk")
        axis = self._one_dim(qual, dim, x.ndim)
        out = _check_dtype(qual, "dtype", dtype, optional=True)
        if out is not None:
            cast = self.cast(x, out)
            assert isinstance(cast, Tensor)
            x = cast
        elif op in ("cumsum", "cumprod") and (x.dtype == DataType.Bool or x.dtype.is_integral):
            out = DataType.Int  # torch's: a Bool or integer sum or product counts in Int
        else:
            out = x.dtype
        compute = compute_dtype(x.dtype)
        if x.dtype == DataType.Bool or (out == DataType.Int and x.dtype.is_integral):
            compute = DataType.Int32 if out == DataType.Bool else out
        fd = self._definition
        r = fd._emit(cls(fd._cast(x._value, compute), axis))
        result = fd._wrap(fd._cast(r.results[0], out))
        assert isinstance(result, Tensor)
        return result

    @_api
    def topk(
        self, arg: Any, k: Any, dim: Any = -1, largest: Any = True, sorted: Any = False
    ) -> tuple[Tensor, Tensor]:
        """The `k` largest elements along `dim` (the smallest with `largest=False`) and their
        indices (Int), as torch.topk: NaN counts as larger than every number, and -0.0 as
        smaller than +0.0; the results come sorted, ties in index order, whatever `sorted`
        asks (torch leaves an unsorted order unspecified). `k` is an int or a constant Int
        Scalar, at most the extent (checked at run time where it is dynamic). f16/bf16 values
        are ordered in f32 (exactly: the conversion keeps order)."""
        qual = "fd.ops.topk"
        x = self._ordered_input(qual, arg, allow_bool=False)
        count = _constant_int(qual, "argument 'k'", k, "an int or a constant Int Scalar")
        if count < 0:
            _fail(qual, f"argument 'k' is {count}; it must be at least 0")
        axis = self._one_dim(qual, dim, x.ndim)
        extent = x._shape[axis]
        if isinstance(extent, int) and extent != DYNAMIC_INDEX and count > extent:
            _fail(qual, f"argument 'k' ({count}) is more than the extent {extent} of dim {axis}")
        self._bool(qual, "largest", largest)
        self._bool(qual, "sorted", sorted)
        fd = self._definition
        value, back = self._innermost(x, axis)
        op = fd._emit(
            TopkOp(fd._cast(value, compute_dtype(x.dtype)), x.ndim - 1, count, bool(largest))
        )
        values = fd._wrap(fd._cast(back(op.results[0]), x.dtype))
        indices = fd._wrap(back(op.results[1]))
        assert isinstance(values, Tensor) and isinstance(indices, Tensor)
        return values, indices

    @_api
    def argsort(
        self, arg: Any, dim: Any = -1, descending: Any = False, stable: Any = False
    ) -> Tensor:
        """The indices (Int) that sort `arg` along `dim`, as torch.argsort; the sort is always
        stable (equal elements in index order), NaN above every number, -0.0 equal to +0.0. A Bool
        input sorts as 0 and 1."""
        qual = "fd.ops.argsort"
        x = self._ordered_input(qual, arg, allow_bool=True)
        axis = self._one_dim(qual, dim, x.ndim)
        self._bool(qual, "descending", descending)
        self._bool(qual, "stable", stable)
        fd = self._definition
        compute = DataType.Int32 if x.dtype == DataType.Bool else compute_dtype(x.dtype)
        value, back = self._innermost(x, axis)
        op = fd._emit(ArgsortOp(fd._cast(value, compute), x.ndim - 1, bool(descending)))
        result = fd._wrap(back(op.results[0]))
        assert isinstance(result, Tensor)
        return result

    def _ordered_input(self, qual: str, arg: object, allow_bool: bool) -> Tensor:
        x = self._tensor(qual, "arg", arg)
        if x.ndim == 0:
            _fail(qual, "argument 'arg' is a 0-dim tensor; it needs a dim to order")
        if x.dtype == DataType.Bool and not allow_bool:
            _fail(qual, "argument 'arg' is Bool; torch.topk takes numbers (cast it first)")
        return x

    def _one_dim(self, qual: str, dim: object, rank: int) -> int:
        """`dim` (an int, negative from the end) as a dim of a tensor of `rank` dims."""
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            _fail(qual, f"argument 'dim' must be an int, got {dim!r}")
        return self._dims(qual, [dim], rank, "dim")[0]

    def _innermost(self, x: Tensor, axis: int) -> tuple[SSAValue, Callable[[SSAValue], SSAValue]]:
        """`x` with `axis` moved innermost (the sort kernel orders rows), and how to move a
        result's innermost dim back to `axis`."""
        last = x.ndim - 1
        if axis == last:
            return x._value, lambda v: v
        fd = self._definition
        order = [d for d in range(x.ndim) if d != axis] + [axis]
        moved = fd._emit(PermuteOp(x._value, order)).results[0]
        inverse = [order.index(d) for d in range(x.ndim)]
        return moved, lambda v: fd._emit(PermuteOp(v, inverse)).results[0]

    @_api
    def welford(self, t: Any, dims: Any = None) -> tuple[Tensor, Tensor, Tensor]:
        """Welford statistics over `dims` (every dim when None): `(avg, var_sum, n)`; `n` is
        Int."""
        op = "fd.ops.welford"
        x = self._statistics_input(op, t)
        axes = list(range(x.ndim)) if dims is None else self._dims(op, dims, x.ndim)
        fd = self._definition
        w = fd._emit(
            WelfordOp(
                x._value,
                axes,
                TensorType(element_type(x._value.type), reduced_shape(x._shape, axes, False)),
            )
        )
        avg, var_sum, n = (fd._wrap(r) for r in w.results)
        assert isinstance(avg, Tensor) and isinstance(var_sum, Tensor) and isinstance(n, Tensor)
        return avg, var_sum, n

    @_api
    def var_mean(
        self, t: Any, dims: Any = None, correction: Any = 1, keepdim: Any = False
    ) -> tuple[Tensor, Tensor]:
        """`(var, mean)` over `dims` (every dim when None); the variance divides by
        `N - correction`."""
        return self._var_mean("fd.ops.var_mean", t, dims, correction, keepdim)

    @_api
    def var(self, t: Any, dims: Any = None, correction: Any = 1, keepdim: Any = False) -> Tensor:
        """The variance over `dims` (every dim when None), dividing by `N - correction`
        (nvFuser's `var`): `var_mean`'s first result, one Welford pass."""
        return self._var_mean("fd.ops.var", t, dims, correction, keepdim)[0]

    def _var_mean(
        self, op: str, t: Any, dims: Any, correction: Any, keepdim: Any
    ) -> tuple[Tensor, Tensor]:
        x = self._statistics_input(op, t)
        axes = list(range(x.ndim)) if dims is None else self._dims(op, dims, x.ndim)
        if isinstance(correction, bool) or not isinstance(correction, numbers.Integral):
            _fail(op, f"argument 'correction' must be an int, got {correction!r}")
        if correction < 0:
            _fail(op, f"argument 'correction' must be non-negative, got {correction}")
        keep = self._bool(op, "keepdim", keepdim)
        fd = self._definition
        rtype = TensorType(element_type(x._value.type), reduced_shape(x._shape, axes, keep))
        vm = fd._emit(VarMeanOp(x._value, axes, int(correction), keep, rtype))
        var, mean = (fd._wrap(r) for r in vm.results)
        assert isinstance(var, Tensor) and isinstance(mean, Tensor)
        return var, mean

    # ---- matmul ------------------------------------------------------------------------

    @_api
    def matmul(self, a: Any, b: Any) -> Tensor:
        """`a @ b` as torch's `matmul`, for ranks 1 to 4: a 1-D operand is a row (`a`) or a
        column (`b`) that the result drops; batch dims broadcast as torch's (right-aligned,
        1 against n: a static 1, as nvFuser broadcasts). Both operands have one dtype among
        Half, BFloat16, Float and Double (half types accumulate in f32). One matmul kernel
        reads `[..., M, K]` and `[..., K, N]` inputs in place (a 1-D operand as a view); a
        batched `a` against a 2-D `b` is read as one `[M', K]` matrix (its rows a view: K
        static, at most one other dim dynamic); an operand a batch dim broadcasts is copied
        first."""
        op = "fd.ops.matmul"
        x, y = self._matmul_operands(op, a, b)
        shapes = f"'a' has shape {format_shape(x._shape)}, 'b' has shape {format_shape(y._shape)}"
        if not (1 <= x.ndim <= 4 and 1 <= y.ndim <= 4):
            _fail(op, f"takes operands of rank 1 to 4: {shapes}")
        row, column = x.ndim == 1, y.ndim == 1
        if row:  # [K] -> [1, K], a view
            x = self.reshape(x, [1, -1])
        if column:  # [K] -> [K, 1], a view
            y = self.reshape(y, [-1, 1])
        if not dims_compatible(x._shape[-1], y._shape[-2]):
            _fail(op, f"contraction dims differ: {shapes}")
        if y.ndim == 2 and x.ndim > 2 and (folded := self._folded(op, x, y, shapes)) is not None:
            out = folded
        else:
            out = self._batched(op, x, y, shapes)
        dropped = [d for d, v in ((out.ndim - 2, row), (out.ndim - 1, column)) if v]
        if not dropped:
            return out
        kept = [e for d, e in enumerate(out._shape) if d not in dropped]
        if sum(e == DYNAMIC_INDEX for e in kept) <= 1:  # a view of the result
            return self.reshape(out, [-1 if e == DYNAMIC_INDEX else e for e in kept])
        return self.squeeze(out, dropped)

    @_api
    def linear(self, a: Any, w: Any, bias: Any = None) -> Tensor:
        """`a @ w.T + bias`, as torch's and nvFuser's `linear`: `a` of shape `[..., K]`, `w`
        `[N, K]` (or `[K]`: `a @ w`), `bias` `[N]` or `[1]` (or a scalar, or None). One matmul
        kernel reads `w` transposed in place (`kernel.transposed`) and adds the bias in its
        epilogue; `a` of rank above 2 is read as `[M, K]` (a view of its rows) where reshape can
        say the shapes: K static in `a` or `w`, and at most one dynamic extent among `a`'s
        leading dims and N; otherwise `w` is broadcast over the batch (a copy)."""
        op = "fd.ops.linear"
        x, weight = self._matmul_operands(op, a, w, ("a", "w"))
        shapes = (
            f"'a' has shape {format_shape(x._shape)}, 'w' has shape {format_shape(weight._shape)}"
        )
        if weight.ndim not in (1, 2):
            _fail(
                op, f"argument 'w' must be [out_features, in_features] or [in_features]: {shapes}"
            )
        if x.ndim < 1:
            _fail(op, f"argument 'a' must have rank 1 or more ([..., in_features]): {shapes}")
        if not dims_compatible(x._shape[-1], weight._shape[-1]):
            _fail(op, f"in_features differ: {shapes}")
        b = None if bias is None else self._operand(op, "bias", bias)
        if isinstance(b, bool) or (isinstance(b, _Value) and b.dtype == DataType.Bool):
            _fail(op, f"argument 'bias' must be a tensor or a number, got {bias!r}")
        n = weight._shape[0] if weight.ndim == 2 else 1
        if isinstance(b, Tensor):
            if b.ndim > 1 or (
                b.ndim == 1 and b._shape[0] != 1 and not dims_compatible(b._shape[0], n)
            ):
                _fail(
                    op,
                    f"argument 'bias' has shape {format_shape(b._shape)}; it needs [N]: {shapes}",
                )
            if b.dtype != x.dtype:
                _fail(op, f"argument 'bias' is {b.dtype.name}; it needs a's {x.dtype.name}")

        def biased(c: Tensor) -> Tensor:
            """The bias added to the matmul's 2-D result (its epilogue, before any reshape)."""
            if b is None:
                return c
            result = self.add(c, b)
            assert isinstance(result, Tensor)
            return result

        if weight.ndim == 1:  # torch's a @ w: [..., K] @ [K] -> [...]
            return biased(self.matmul(x, weight))
        wt = self.permute(weight, [1, 0])
        if x.ndim == 1:  # [K] -> [1, K] -> [1, N] -> [N], views
            out = biased(self._batched(op, self.reshape(x, [1, -1]), wt, shapes))
            return self.reshape(out, [-1])
        if x.ndim > 2 and (folded := self._folded(op, x, wt, shapes, biased)) is not None:
            return folded
        return biased(self._batched(op, x, wt, shapes))

    def _matmul_operands(
        self, op: str, a: object, b: object, names: tuple[str, str] = ("a", "b")
    ) -> tuple[Tensor, Tensor]:
        """Two tensor operands of one float dtype."""
        x, y = self._tensor(op, names[0], a), self._tensor(op, names[1], b)
        allowed = (DataType.Half, DataType.BFloat16, DataType.Float, DataType.Double)
        for arg, v in zip(names, (x, y), strict=True):
            if v.dtype not in allowed:
                _fail(
                    op,
                    f"argument '{arg}' is {v.dtype.name}; it needs Half, BFloat16, Float or Double",
                )
        if x.dtype != y.dtype:
            _fail(
                op,
                f"arguments '{names[0]}' ({x.dtype.name}) and '{names[1]}' ({y.dtype.name}) must "
                "have one dtype; cast one",
            )
        return x, y

    def _folded(
        self,
        op: str,
        x: Tensor,
        y: Tensor,
        shapes: str,
        epilogue: Callable[[Tensor], Tensor] = lambda c: c,
    ) -> Tensor | None:
        """`epilogue(x @ y)` for a batched `x` and a 2-D `y` as one `[M', K] @ [K, N]` matmul
        (`x`'s rows a reshape's view, `epilogue` on its result, then reshaped back), or None
        where reshape cannot say the shapes (K dynamic in both, or two leading dims and N
        dynamic among them)."""
        k = next((e for e in (x._shape[-1], y._shape[0]) if e != DYNAMIC_INDEX), None)
        back = [*x._shape[:-1], y._shape[1]]
        if k is None or sum(e == DYNAMIC_INDEX for e in back) > 1 or 0 in (k, *back):
            return None  # (reshape infers no -1 beside a 0)
        rows = self.reshape(x, [-1, k])
        out = epilogue(self._batched(op, rows, y, shapes))
        return self.reshape(out, [-1 if e == DYNAMIC_INDEX else e for e in back])

    def _batched(self, op: str, x: Tensor, y: Tensor, shapes: str) -> Tensor:
        """`fusion.matmul` of `[..., M, K]` and `[..., K, N]`, batch dims broadcast to one
        shape first (right-aligned, as torch's)."""
        rank = max(x.ndim, y.ndim)
        batch: list[int | Extent] = []
        for d in range(rank - 2):
            extents = [(t, t.ndim - rank + d) for t in (x, y) if t.ndim - rank + d >= 0]
            sized = [(t, j) for t, j in extents if t._shape[j] != 1]
            if len({t._shape[j] for t, j in sized if t._shape[j] != DYNAMIC_INDEX}) > 1:
                _fail(op, f"batch dims do not broadcast: {shapes}")
            if not sized:
                batch.append(1)
            else:
                t, j = next(((t, j) for t, j in sized if t._shape[j] != DYNAMIC_INDEX), sized[0])
                batch.append(t._shape[j] if t._shape[j] != DYNAMIC_INDEX else t.size(j))
        x, y = (self._expand_batch(t, batch) for t in (x, y))
        for d, (p, q) in enumerate(zip(x._shape[:-2], y._shape[:-2], strict=True)):
            if not dims_compatible(p, q):
                _fail(op, f"batch dim {d} differs: {shapes}")
        sa, sb = x._shape, y._shape
        dims = [q if p == DYNAMIC_INDEX else p for p, q in zip(sa[:-2], sb[:-2], strict=True)]
        rtype = TensorType(element_type(x._value.type), [*dims, sa[-2], sb[-1]])
        return self._definition._wrap_tensor(MatmulOp(x._value, y._value, rtype))

    def _expand_batch(self, t: Tensor, batch: Sequence[int | Extent]) -> Tensor:
        """`t` (`[..., R, C]`) with the batch dims `batch`: itself where it has them (a
        dynamic dim equal at run time), else a broadcast (a copy the matmul reads)."""
        own = t._shape[:-2]
        lead = len(batch) - len(own)
        if lead == 0 and all(e != 1 or b == 1 for e, b in zip(own, batch, strict=True)):
            return t
        # a dim `t` carries keeps its extent (-1: dynamic); a new or extent-1 one takes batch's
        shape: list[int | Extent] = [
            (-1 if own[d - lead] == DYNAMIC_INDEX else own[d - lead])
            if d >= lead and own[d - lead] != 1
            else batch[d]
            for d in range(len(batch))
        ]
        shape += [-1 if e == DYNAMIC_INDEX else e for e in t._shape[-2:]]
        return self.broadcast_in_dim(t, shape, list(range(lead, len(shape))))


# --------------------------------------------------------------------------------------------
# FusionDefinition
# --------------------------------------------------------------------------------------------


class _State(Enum):
    NEW = auto()
    OPEN = auto()
    DONE = auto()
    FAILED = auto()


_COMPILER_LOCK = threading.Lock()  # see FusionDefinition._fusion_compiler


class FusionDefinition:
    """Builds one fusion, nvFuser style, as a `fusion.fusion` op.

    Use it as a context manager: define inputs and ops inside the `with` block; at its end
    the fusion is closed with its outputs and verified. Then `fusion_ir()` prints it,
    `fusion` and `module` give the IR, and `reference(inputs)` evaluates it with numpy.
    Inputs are the fusion's arguments in definition order.
    """

    _prefix = "fd."

    def __init__(
        self, name: str = "fusion", *, streams: int = DEFAULT_STREAMS, welford: str = "auto"
    ):
        """`streams`: the CUDA streams the slices of stream-parallel tensors (`parallelize`)
        are spread over when the fusion runs. `welford`: whether `var_mean`/`welford` run as
        two passes (`translate-welford`): "auto" (where measured faster), "always" or "never"."""
        if not isinstance(name, str) or not name:
            raise DefinitionError(
                f"FusionDefinition: argument 'name' must be a non-empty str, got {name!r}"
            )

        check_options("FusionDefinition", streams=streams, welford=welford)
        self.name = name
        self.streams = streams
        self.welford = welford
        self.ops = FusionOps(self)
        self._block = Block()
        self._builder = Builder(InsertPoint.at_end(self._block))
        self._inputs: list[Tensor | Scalar] = []
        self._cpu_inputs: list[int] = []
        """The positions of the CPU scalar tensor inputs (`is_cpu=True`): read on the host."""
        self._outputs: list[Tensor] = []
        self._output_aliases: list[int] = []
        """Per output, the input it is written into after a run (`alias_input`), or -1."""
        self._output_orders: list[tuple[int, ...]] = []
        """Per output, the stride order it is returned in (`stride_order`), or () for none."""
        self._counters = {"t": 0, "s": 0}
        self._extents: dict[tuple[SSAValue, int], SSAValue] = {}
        self._casts: dict[tuple[SSAValue, DataType], SSAValue] = {}
        self._state = _State.NEW
        self._calls: list[Call] = []
        """The user's calls, for `python_definition`."""
        self._depth = 0
        """How many entry points are running (a call is recorded at depth 0)."""
        self._fusion: FusionOp | None = None
        self._module: ModuleOp | None = None
        self._placements: dict[SSAValue, _Placement] = {}
        """Where tensors live on a multi-GPU run (`Tensor.set_device_mesh`)."""
        self._sharded = False
        self._multidevice: Any = None
        """The multi-GPU executor of a sharded definition, made on first use."""
        self._compiler: FusionCompiler | None = None
        self._profile: FusionProfile | None = None
        """What the last `execute(..., profile=True)` measured."""

    @property
    def _definition(self) -> FusionDefinition:
        return self

    # ---- the with block ----------------------------------------------------------------

    def __enter__(self) -> FusionDefinition:
        if self._state != _State.NEW:
            raise DefinitionError(
                f"FusionDefinition '{self.name}' was already defined; a FusionDefinition is "
                "entered once (create a new one)"
            )
        self._state = _State.OPEN
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self._state = _State.FAILED
            return
        self._state = _State.FAILED
        if not self._outputs:
            raise DefinitionError(
                f"FusionDefinition '{self.name}' has no outputs; call fd.add_output(t) "
                "inside the with block"
            )
        aliases = self._output_aliases if any(i >= 0 for i in self._output_aliases) else None
        orders = self._output_orders if any(self._output_orders) else None
        self._builder.insert(OutputOp([t._value for t in self._outputs], aliases, orders))
        fusion = FusionOp(
            self.name,
            [a.type for a in self._block.args],
            [t._value.type for t in self._outputs],
            Region(self._block),
        )
        module = ModuleOp([fusion])
        if self._placements:
            self._place(fusion)
        try:
            module.verify()
        except VerifyException as e:
            raise VerificationError(f"fusion '{self.name}' does not verify: {e}") from e
        self._fusion, self._module = fusion, module
        self._sharded = bool(self._placements)
        self._state = _State.DONE
        dump.dump("python_definition", f"@{self.name}", lambda: repr(self))

    def _record(self, name: str, args: tuple[Any, ...], **kwargs: Any) -> None:
        """Records a call on a tensor's placement (`T0.set_device_mesh(...)`) for
        `python_definition`."""
        if not self._depth:
            self._calls.append(Call(name, recorded(args), tuple(kwargs.items()), None))

    def _place(self, fusion: FusionOp) -> None:
        """Writes the placements given by `set_device_mesh`/`parallelize` into the fusion:
        `fusion.input_shardings` (inputs given nothing are replicated on the first mesh given)
        and `fusion.sharding` on the ops of the other tensors."""
        first = next(iter(self._placements.values())).mesh

        def attr(p: _Placement | None) -> ShardingAttr:
            return (
                ShardingAttr(first.devices) if p is None else ShardingAttr(p.mesh.devices, p.axis)
            )

        fusion.attributes[INPUT_SHARDINGS] = ArrayAttr(
            [attr(self._placements.get(a)) for a in fusion.inputs]
        )
        for value, placement in self._placements.items():
            owner = value.owner
            if not isinstance(owner, Operation):
                continue
            given = owner.attributes.get(SHARDING)
            if given is not None and given != attr(placement):
                raise DefinitionError(
                    f"the results of {owner.name} are placed twice: {given} and {attr(placement)}"
                )
            owner.attributes[SHARDING] = attr(placement)

    def _mark(self) -> tuple[Any, ...]:
        """Where the definition stands, for `_undo`: its last op, its arguments, its names and
        caches."""
        return (
            self._block.last_op,
            len(self._block.args),
            len(self._inputs),
            len(self._cpu_inputs),
            len(self._outputs),
            dict(self._counters),
            len(self._casts),
            len(self._extents),
        )

    def _undo(self, mark: tuple[Any, ...]) -> None:
        """Erases what a failed entry point built since `mark` (the ops, in reverse; the
        arguments; the names and cached casts and extents, which may name erased values)."""
        last, n_args, n_inputs, n_cpu, n_outputs, counters, n_casts, n_extents = mark
        while (op := self._block.last_op) is not None and op is not last:
            self._block.erase_op(op, safe_erase=False)
        while len(self._block.args) > n_args:
            self._block.erase_arg(self._block.args[-1], safe_erase=False)
        del self._inputs[n_inputs:], self._cpu_inputs[n_cpu:], self._outputs[n_outputs:]
        del self._output_aliases[n_outputs:], self._output_orders[n_outputs:]
        self._counters = counters
        # the caches are only ever inserted into: the newest keys come last
        for cast_key in list(self._casts)[n_casts:]:
            del self._casts[cast_key]
        for extent_key in list(self._extents)[n_extents:]:
            del self._extents[extent_key]

    def _check_open(self, what: str) -> None:
        if self._state == _State.OPEN:
            return
        if self._state == _State.NEW:
            where = "before its `with` block"
        elif self._state == _State.DONE:
            where = "after its `with` block ended"
        else:
            where = "after its `with` block failed"
        raise DefinitionError(
            f"{what} used {where}; define fusions inside `with FusionDefinition() as fd:`"
        )

    def _check_done(self, what: str) -> None:
        if self._state != _State.DONE:
            raise DefinitionError(
                f"fd.{what} needs a finished definition: use it after the "
                "`with FusionDefinition() as fd:` block ends without error"
            )

    # ---- building IR -------------------------------------------------------------------

    def _name(self, value: SSAValue) -> None:
        kind = "t" if isinstance(value.type, TensorType) else "s"
        value.name_hint = f"{kind}{self._counters[kind]}"
        self._counters[kind] += 1

    def _emit(self, op: Operation) -> Operation:
        self._builder.insert(op)
        for r in op.results:
            self._name(r)
        return op

    def _wrap(self, value: SSAValue) -> Tensor | Scalar:
        if isinstance(value.type, TensorType):
            return Tensor(self, value)
        return Scalar(self, value)

    def _wrap_tensor(self, op: Operation) -> Tensor:
        t = self._wrap(self._emit(op).results[0])
        assert isinstance(t, Tensor)
        return t

    def _cast(self, value: SSAValue, dtype: DataType) -> SSAValue:
        el = dtype.element_type
        t = value.type
        if element_type(t) == el:
            return value
        key = (value, dtype)
        if key not in self._casts:  # one cast per value and type, however often it is needed
            new_t = TensorType(el, t.get_shape()) if isinstance(t, TensorType) else el
            self._casts[key] = self._emit(CastOp(value, new_t)).results[0]
        return self._casts[key]

    def _extent_value(self, tensor: Tensor, axis: int) -> SSAValue:
        key = (tensor._value, axis)
        if key not in self._extents:
            dim = DimOp(tensor._value, axis)
            self._builder.insert(dim)
            dim.result.name_hint = f"{tensor.name}_size{axis}"
            self._extents[key] = dim.result
        return self._extents[key]

    def _argument(self, t: Attribute) -> SSAValue:
        arg = self._block.insert_arg(t, len(self._block.args))
        self._name(arg)
        return arg

    # ---- public API --------------------------------------------------------------------

    @_api
    def define_tensor(
        self,
        shape: Any = None,
        contiguity: Any = None,
        dtype: Any = None,
        is_cpu: Any = False,
        stride_order: Any = None,
        *,
        sizes: Any = None,
        strides: Any = None,
        static_sizes: Any = False,
    ) -> Tensor:
        """A tensor input, in either of nvFuser's forms:

        - `shape` (-1 for a dynamic dim, n for a static one, 1 for a broadcast dim) with
          `contiguity` (one bool, or per dim True, False or None; None marks a broadcast dim,
          so a -1 there becomes a static 1), `dtype` (Float when None), `is_cpu` and
          `stride_order` (a permutation of the dims); `is_cpu=True` with shape [] is a CPU
          scalar tensor (torch's 0-d CPU tensor: a step count, a scale), read on the host at
          each call and passed to the kernels as a scalar;
        - `sizes` and `strides` of a concrete tensor (nvFuser's legacy form): every extent
          dynamic except the 1s (broadcast dims), or every extent static with `static_sizes`.

        fuser kernels take strides at run time, so contiguity and stride order describe the
        inputs without binding them: a call with other strides runs as well.
        `define_tensor(shape, dtype)` (a DataType second) is fuser's own short form.
        """
        op = "fd.define_tensor"
        if isinstance(contiguity, DataType) and dtype is None:
            contiguity, dtype = None, contiguity  # define_tensor(shape, dtype)
        if dtype is None:
            dtype = DataType.Float
        if sizes is not None or strides is not None:
            shape = self._legacy_shape(op, shape, contiguity, sizes, strides, static_sizes)
        elif static_sizes is not False:
            _fail(op, "argument 'static_sizes' goes with nvFuser's legacy 'sizes' and 'strides'")
        if shape is None:
            _fail(op, "needs 'shape' (or nvFuser's legacy 'sizes' and 'strides')")
        if not isinstance(shape, Sequence) or isinstance(shape, str):
            _fail(op, f"argument 'shape' must be a list of ints, got {shape!r}")
        dims: list[int] = []
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < -1:
                _fail(op, f"argument 'shape' entries must be -1 (dynamic) or >= 0, got {d!r}")
            dims.append(DYNAMIC_INDEX if d == -1 else int(d))
        _check_dtype(op, "dtype", dtype)
        assert isinstance(dtype, DataType)
        for d, c in enumerate(self._contiguity(op, contiguity, len(dims))):
            if c is None:  # a broadcast dim: extent 1
                if dims[d] not in (1, DYNAMIC_INDEX):
                    _fail(
                        op,
                        f"argument 'contiguity' is None at dim {d} (a broadcast dim, extent 1) "
                        f"but 'shape' gives it extent {dims[d]}",
                    )
                dims[d] = 1
        if stride_order is not None:
            _stride_order_arg(op, stride_order, len(dims))
        if is_cpu is not False:
            if is_cpu is not True:
                _fail(op, f"argument 'is_cpu' must be True or False, got {is_cpu!r}")
            if dims:
                _fail(
                    op,
                    f"is_cpu=True is for 0-d CPU scalar tensors (shape []); got shape "
                    f"{format_shape(dims)}: define it as a GPU tensor (is_cpu=False)",
                )
            return self._cpu_scalar(dtype)
        t = Tensor(self, self._argument(TensorType(dtype.element_type, dims)))
        self._inputs.append(t)
        return t

    def _cpu_scalar(self, dtype: DataType) -> Tensor:
        """A 0-d CPU tensor input (`is_cpu=True`): a scalar argument of the kernels (its value
        is read on the host at each call, `host_values`), broadcast to a 0-d tensor so that it
        is a Tensor to every op, as nvFuser's CPU scalar tensor is."""
        arg = self._argument(dtype.element_type)
        scalar = BroadcastInDimOp(arg, [], TensorType(dtype.element_type, []))
        t = Tensor(self, self._emit(scalar).results[0])
        self._inputs.append(t)
        self._cpu_inputs.append(len(self._inputs) - 1)
        return t

    @staticmethod
    def _contiguity(op: str, contiguity: object, rank: int) -> list[bool | None]:
        """Per-dim contiguity from None, one bool, or a list of True/False/None."""
        if contiguity is None:
            return [False] * rank
        if isinstance(contiguity, bool):
            return [contiguity] * rank
        if (
            not isinstance(contiguity, Sequence)
            or isinstance(contiguity, str)
            or not all(c is None or isinstance(c, bool) for c in contiguity)
        ):
            _fail(
                op,
                "argument 'contiguity' must be a bool or a list of True/False/None, got "
                f"{contiguity!r}",
            )
        if len(contiguity) != rank:
            _fail(op, f"argument 'contiguity' has {len(contiguity)} entries for rank {rank}")
        return list(contiguity)

    @staticmethod
    def _legacy_shape(
        op: str, shape: object, contiguity: object, sizes: object, strides: object, static: object
    ) -> list[int]:
        """The shape of nvFuser's `define_tensor(sizes=, strides=, static_sizes=)`."""
        if shape is not None or contiguity is not None:
            _fail(op, "takes 'shape' and 'contiguity', or 'sizes' and 'strides', not both")
        ints = (list, tuple)
        if not isinstance(sizes, ints) or not isinstance(strides, ints):
            _fail(
                op, f"needs 'sizes' and 'strides' as lists of ints, got {sizes!r} and {strides!r}"
            )
        if len(sizes) != len(strides):
            _fail(op, f"argument 'sizes' has {len(sizes)} entries but 'strides' {len(strides)}")
        if not isinstance(static, bool):
            _fail(op, f"argument 'static_sizes' must be True or False, got {static!r}")
        for x in (*sizes, *strides):
            if isinstance(x, bool) or not isinstance(x, numbers.Integral):
                _fail(op, f"'sizes' and 'strides' must hold ints, got {x!r}")
        if any(n < 0 for n in sizes):
            _fail(op, f"argument 'sizes' {list(sizes)} has a negative extent")
        return [int(n) if static or n == 1 else -1 for n in sizes]

    @_api
    @_records_inner
    def from_pytorch(self, tensor: Any, static_sizes: Any = False) -> Tensor:
        """A tensor input like `tensor` (a torch tensor): its dtype, rank and broadcast
        (extent 1) dims, every other extent dynamic, or all static with `static_sizes`; a 0-d
        CPU tensor is a CPU scalar tensor input (`is_cpu=True`)."""
        from fuser.runtime.arrays import torch_numpy_dtype
        from fuser.runtime.dtypes import FUSION_DTYPES, element_type_of

        op = "fd.from_pytorch"
        np_dtype = torch_numpy_dtype(getattr(tensor, "dtype", None))
        dtype = None
        if np_dtype is not None and np_dtype in FUSION_DTYPES and hasattr(tensor, "stride"):
            dtype = DataType.from_element_type(element_type_of(np_dtype))
        if dtype is None:
            what = getattr(tensor, "dtype", type(tensor).__name__)
            _fail(op, f"argument 'tensor' must be a torch tensor of a fuser dtype, got {what}")
        if getattr(tensor, "is_cpu", False) and tensor.dim() == 0:
            return self.define_tensor(shape=[], dtype=dtype, is_cpu=True)
        return self.define_tensor(
            sizes=list(tensor.shape),
            strides=list(tensor.stride()),
            dtype=dtype,
            static_sizes=static_sizes,
        )

    @_api
    def define_scalar(self, value: Any = None, dtype: Any = None) -> Scalar:
        """A scalar: an input when `value` is None or a DataType (nvFuser's
        `define_scalar(DataType.Float)`), else a `fusion.constant`.

        `dtype` defaults to Double for an input or a float, Int for an int, Bool for a bool.
        """
        op = "fd.define_scalar"
        if isinstance(value, DataType):  # nvFuser's define_scalar(DataType): an input
            if dtype is not None:
                _fail(op, f"got a DataType as 'value' ({value}) and 'dtype' ({dtype!r}); pass one")
            value, dtype = None, _check_dtype(op, "value", value)
        dtype = _check_dtype(op, "dtype", dtype, optional=True)
        if value is None:
            s = Scalar(self, self._argument((dtype or DataType.Double).element_type))
            self._inputs.append(s)
            return s
        if not isinstance(value, numbers.Real):
            _fail(op, f"argument 'value' must be a Python number or None, got {value!r}")
        number = self.ops._operand(op, "value", value)
        assert not isinstance(number, _Value)
        if dtype is None:
            dtype = DataType.Double if isinstance(number, float) else number_dtype(number)
        s = self._wrap(self.ops._as(op, "value", number, dtype))
        assert isinstance(s, Scalar)
        return s

    @_api
    def define_vector(self, values: Any, dtype: Any = DataType.Int) -> list[Any]:
        """nvFuser's vector of Int scalars, for a shape argument (`reshape`, `broadcast_in_dim`,
        `expand`, `full`): the entries (ints, constant Int Scalars or extents such as
        `x.size(0)`) as a list, which every shape argument takes."""
        op = "fd.define_vector"
        if _check_dtype(op, "dtype", dtype) != DataType.Int:
            _fail(op, f"argument 'dtype' must be DataType.Int (a vector of extents), got {dtype}")
        if not isinstance(values, Sequence) or isinstance(values, str):
            _fail(op, f"argument 'values' must be a list, got {values!r}")
        entries: list[Any] = []
        for i, v in enumerate(values):
            if isinstance(v, Extent):
                entries.append(v)
                continue
            expected = "an int, a constant Int Scalar or an extent"
            entries.append(_constant_int(op, f"argument 'values' entry {i}", v, expected))
        return entries

    @_api
    def add_output(self, t: Any, alias_input: Any = None, stride_order: Any = None) -> None:
        """Marks `t` an output; outputs are returned in the order they are added.

        With `alias_input` (a tensor input of `t`'s dtype and shape), `t` is written into that
        input's memory after each run instead (nvFuser's in-place update: `fusion.output`'s
        `aliases`), and is not returned; add `t` again without it to have it returned too. The
        input may be read by the fusion as well: it is written after every kernel has run.

        With `stride_order` (nvFuser's: entry i is the rank of dim i's stride, 0 the innermost;
        None or empty: the order `fd.ops.stride_order` gave `t`, if any), the output is returned
        in that layout: a dense tensor of its own whose strides follow the order (a copy where
        it would be a view of an input; `fusion.output`'s `stride_orders`,
        `transforms.output_layouts`). An output written into an input takes the input's
        layout, so it takes no other order than row-major.
        """
        op = "fd.add_output"
        if isinstance(t, Scalar):
            _fail(op, "argument 't' is a Scalar; fusion outputs are tensors")
        value = self.ops._tensor(op, "t", t)
        order = value._stride_order or ()
        if stride_order is not None:
            given = _stride_order_arg(op, stride_order, value.ndim)
            if given:  # empty: unspecified, as nvFuser reads it
                order = given
        if order and order != row_major_order(value.ndim) and alias_input is not None:
            _fail(
                op,
                f"output {value.name} is written into 'alias_input' and asked for stride_order "
                f"{list(order)}: an aliased output takes its input's layout",
            )
        into = -1
        if alias_input is not None:
            x = self.ops._tensor(op, "alias_input", alias_input)
            if any(self._inputs[k] is x for k in self._cpu_inputs):
                _fail(
                    op,
                    "argument 'alias_input' is a CPU scalar tensor; outputs are written on the GPU",
                )
            arg = x._value
            if not (isinstance(arg, BlockArgument) and arg.owner is self._block):
                _fail(
                    op,
                    "argument 'alias_input' must be an input of the definition (a defined "
                    "tensor), got a computed tensor",
                )
            into = arg.index
            if into in self._output_aliases:
                _fail(op, f"argument 'alias_input' ({x.name}) is already written by another output")
            if x.dtype != value.dtype or not shapes_compatible(x._shape, value._shape):
                _fail(
                    op,
                    f"argument 't' ({value.dtype.name} {format_shape(value._shape)}) cannot be "
                    f"written into 'alias_input' ({x.dtype.name} {format_shape(x._shape)}): "
                    "it needs the input's dtype and shape",
                )
        self._outputs.append(value)
        self._output_aliases.append(into)
        self._output_orders.append(order)

    @_api
    def parallelize(self, t: Any, axis: Any, ptype: Any) -> None:
        """Parallelizes dim `axis` of `t` (negative counts from the end) with `ptype`.

        `ParallelType.mesh_x` splits dim `axis` of `t` over its mesh (`t.set_device_mesh`), as
        `t.axis(axis).parallelize(ParallelType.mesh_x)` does.

        `ParallelType.Stream` computes the op that produces `t` (all its results) slice by slice
        along `axis`, the slices spread over CUDA streams (`fusion.stream_axis` on that op; see
        `transforms/lower_stream_parallel.py`). Stream-parallel ops whose axes map through
        their producer-consumer relation share one loop over streams; an op between them that
        is not stream-parallel splits the loop. `ParallelType.Serial` removes the mark.
        """
        op = "fd.parallelize"
        tensor = self.ops._tensor(op, "t", t)
        if not isinstance(ptype, ParallelType):
            _fail(op, f"argument 'ptype' must be a ParallelType, got {ptype!r}")
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
            _fail(op, f"argument 'axis' must be an int, got {axis!r}")
        dim = self.ops._dims(op, axis, tensor.ndim, "axis")
        if ptype is ParallelType.mesh_x:  # nvFuser's spelling of tv.axis(i).parallelize(...)
            tensor.axis(dim[0]).parallelize(ptype)
            return
        producer = tensor._value.owner
        if not isinstance(producer, Operation):
            _fail(
                op,
                f"argument 't' is the fusion input %{tensor.name}; parallelize a tensor that an "
                "op produces",
            )
        if ptype is ParallelType.Serial:
            producer.attributes.pop(STREAM_AXIS, None)
            return
        try:
            stream_operand_axes(producer, dim[0])
        except VerifyException as e:
            _fail(op, f"argument 'axis' cannot be stream-parallel for %{tensor.name}: {e}")
        producer.attributes[STREAM_AXIS] = IntegerAttr(dim[0], i64)

    @property
    def inputs(self) -> list[Tensor | Scalar]:
        """The inputs in definition order."""
        return list(self._inputs)

    @property
    def outputs(self) -> list[Tensor]:
        """The outputs a run returns, in the order they were added (not those written into an
        input: `add_output`'s `alias_input`)."""
        return [t for t, i in zip(self._outputs, self._output_aliases, strict=True) if i < 0]

    @property
    def fusion(self) -> FusionOp:
        """The verified `fusion.fusion` op."""
        self._check_done("fusion")
        assert self._fusion is not None
        return self._fusion

    @property
    def module(self) -> ModuleOp:
        """The module holding the fusion."""
        self._check_done("module")
        assert self._module is not None
        return self._module

    def fusion_ir(self) -> str:
        """The module as fusion-dialect text; `fuser-opt` parses it back unchanged."""
        self._check_done("fusion_ir()")
        return op_text(self.module)

    def reference(self, inputs: Sequence[object], compute_dtype: Any = None) -> list[Any]:
        """Evaluates the fusion with numpy (`fuser.runtime.reference`): arrays in, arrays out;
        an output added with `alias_input` is written into that (numpy) input instead, as
        `execute` writes it.

        `compute_dtype` (np.float64 or DataType.Double) holds f32 values in float64, for a
        more precise oracle.

        Raises InputError when `inputs` do not match the fusion's signature.
        """
        self._check_done("reference()")
        from fuser.runtime.dtypes import numpy_dtype
        from fuser.runtime.reference import evaluate

        if isinstance(compute_dtype, DataType):
            dtype = _check_dtype("fd.reference", "compute_dtype", compute_dtype)
            assert dtype is not None
            compute_dtype = numpy_dtype(dtype.element_type)
        if self._cpu_inputs:
            inputs = self._host_values(inputs)
        outputs = evaluate(self.fusion, inputs, compute_dtype=compute_dtype)
        if any(i >= 0 for i in self._output_aliases):
            return self._write_aliases(inputs, outputs)
        return outputs

    def _write_aliases(self, inputs: Sequence[Any], outputs: list[Any]) -> list[Any]:
        """The reference's side of `alias_input`, as a run on numpy arrays: each aliased output
        written into its input and not returned (`runtime.frontends.write_aliases`)."""
        from fuser.runtime.frontends import write_aliases

        compiler = self._fusion_compiler()
        first = compiler.layout.tensors[0]
        return write_aliases(inputs, outputs, compiler.aliases, compiler.layout.names, first)

    def _host_values(self, inputs: Sequence[Any]) -> list[Any]:
        """`inputs` with each CPU scalar tensor input (`is_cpu=True`) read as its number."""
        from fuser.runtime.inputs import check_input_sequence

        values = list(check_input_sequence(inputs))
        for i in self._cpu_inputs:
            if i < len(values):  # a short list: the runtime names what is missing
                values[i] = _cpu_scalar_value(values[i], i)
        return values

    def _fusion_compiler(self) -> FusionCompiler:
        """The definition's one compiler, made on first use (under a lock: two threads whose
        first calls meet must not each make one and count or compile apart)."""
        if self._compiler is None:
            if self._sharded:
                raise DefinitionError(
                    f"fusion '{self.name}' places its tensors on devices (set_device_mesh): it "
                    "runs as each process's rank program, through fd.execute; "
                    "fd.execute(profile=True), fd.compile and the other views of one GPU's "
                    "compiled fusion do not apply to it"
                )
            from fuser.compiler import FusionCompiler

            with _COMPILER_LOCK:
                if self._compiler is None:
                    self._compiler = FusionCompiler(
                        self.fusion, streams=self.streams, welford=self.welford
                    )
        return self._compiler

    def execute(self, inputs: Sequence[Any], device: Any = None, **options: Any) -> list[Any]:
        """Runs the fusion on the GPU, compiling on first use per input signature.

        Inputs: numpy arrays (copied to the device, outputs copied back as numpy), or CUDA arrays
        (torch, cupy, `fuser.DeviceArray`, anything with `__cuda_array_interface__` or
        `__dlpack__`), used in place; outputs come back as the same kind as the inputs. An
        output that is an input through reshapes, slices and permutes comes back as a view of
        that input (no kernel; nvFuser's aliasing): it shares the input's memory.

        nvFuser's keywords are taken: `device` (an ordinal, `"cuda:N"` or a torch device; "cuda"
        is the current device) must be the device of the torch inputs (the only kind that says
        its device cheaply; the runtime refuses inputs on two devices); `profile=True` times
        each kernel of the call for `fd.profile()` (`fuser.profiler`); the debugging switches
        (`print_repro`, `save_repro_inputs`, `capture_debug_output`,
        `override_user_schedule`) are accepted off and rejected by name when on; nvFuser's
        `_enable_options`/`_disable_options` (lists of nvFuser's internal switches, such as
        "fuse_matmul") are accepted and have no effect; any other keyword is an InputError
        naming it. Without keywords the check costs one test.
        """
        if (device is not None or options) and _check_execute_options(inputs, device, options):
            return self._execute_profiled(inputs)
        if self._cpu_inputs:
            inputs = self._host_values(inputs)
        compiler = self._compiler  # not @_api: this is the hot path
        if compiler is None:
            if self._sharded:  # (never given a compiler: `_fusion_compiler` refuses it one)
                return self._execute_sharded(inputs)
            compiler = self._fusion_compiler()
        return compiler.execute(inputs)

    def _execute_sharded(self, inputs: Sequence[Any]) -> list[Any]:
        """`execute` of a fusion placed on devices (`Tensor.set_device_mesh`): this process's
        rank program (`fuser-shard`) on its pieces of the inputs (`multidevice.shard_tensor`),
        returning its pieces of the outputs."""
        if self._multidevice is None:
            from fuser.compiler import FusionCompiler
            from fuser.multidevice import Communicator, rank_executor
            from fuser.runtime.multidevice import DeviceRunner

            comm = Communicator.instance()
            runner = DeviceRunner(
                lambda f: FusionCompiler(f, streams=self.streams, welford=self.welford)
            )
            self._multidevice = rank_executor(
                self.fusion,
                comm.backend,
                runner,
                cuda_tensors=comm.backend is not None,  # NCCL takes torch's CUDA tensors only
            )
        return self._multidevice.run(inputs)

    def _execute_profiled(self, inputs: Sequence[Any]) -> list[Any]:
        """`execute(inputs, profile=True)`: the run, its profile kept for `profile()`."""
        if self._cpu_inputs:
            inputs = self._host_values(inputs)
        outputs, self._profile = self._fusion_compiler().profile(inputs)
        return outputs

    def profile(self) -> FusionProfile:
        """What the last `execute(inputs, profile=True)` measured (nvFuser's `fd.profile()`):
        per kernel its scheduler, launch, registers, time, bytes, GB/s and % of the device's
        copy bandwidth, and the same for the whole call (`fuser.profiler.FusionProfile`;
        `print(fd.profile())` prints a table)."""
        if self._profile is None:
            raise DefinitionError(
                "fd.profile: nothing was profiled yet; run fd.execute(inputs, profile=True) first"
            )
        return self._profile

    def compile(self, inputs: Sequence[Any], arch: str | int | None = None) -> CompiledFusion:
        """Compiles the kernels for inputs like `inputs` (numpy arrays do; no GPU is needed when
        `arch`, e.g. "sm_90" or 90, is given) and lists them: name, scheduler, CUDA, cubin size,
        launch configuration."""
        if self._cpu_inputs:
            inputs = self._host_values(inputs)
        return self._fusion_compiler().compile(inputs, arch)

    def last_cuda_code(self, intrinsic_code: bool = False) -> str:
        """The CUDA source of the kernels of the last `execute` or `compile`: the kernels and
        their `#include` lines, or with `intrinsic_code` (nvFuser's name) the text of fuser's
        own headers in place of their includes, each once, before the first kernel that
        includes it (CUDA's headers stay includes)."""
        source = self._fusion_compiler().last_cuda_code()
        if intrinsic_code is not False:
            if intrinsic_code is not True:
                _fail(
                    "fd.last_cuda_code",
                    f"argument 'intrinsic_code' must be True or False, got {intrinsic_code!r}",
                )
            from fuser.runtime.compiled_kernel import inline_fuser_headers

            source = inline_fuser_headers(source)
        return source

    def validate(
        self,
        inputs: Sequence[Any],
        reference: Sequence[Any] | None = None,
        *,
        atol: float | None = None,
        rtol: float | None = None,
        **execute_options: Any,
    ) -> None:
        """Runs the fusion and checks every output against `reference` (arrays of any kind
        `execute` returns), by default the reference interpreter computing in float64. The
        tolerances are by output dtype (`fuser.validation.TOLERANCES`), each replaced where
        `atol` or `rtol` is given; integers and bools must be equal. Raises ValidationError
        naming the first output that differs, how many elements do, and where.
        `execute_options` go to `execute` (nvFuser's keywords)."""
        import numpy as np

        from fuser.validation import compare, host_arrays

        op = f"fd.validate @{self.name}"
        for name, tol in (("atol", atol), ("rtol", rtol)):
            if tol is not None and (not isinstance(tol, numbers.Real) or isinstance(tol, bool)):
                raise InputError(f"{op}: {name} must be a number, got {tol!r}")
        if reference is not None and (
            not isinstance(reference, list | tuple) or len(reference) != len(self.outputs)
        ):
            raise InputError(
                f"{op}: reference must be a list of {len(self.outputs)} array(s), one per "
                f"output, got {type(reference).__name__}"
                + (f" of {len(reference)}" if isinstance(reference, list | tuple) else "")
            )
        aliased = [i for i in self._output_aliases if i >= 0]
        before = None
        if reference is None and aliased:  # copies: a run writes into the aliased inputs
            before = [np.array(h) if isinstance(h, np.ndarray) else h for h in host_arrays(inputs)]
        outputs = self.execute(inputs, **execute_options)
        if reference is None:
            hosts = host_arrays(inputs) if before is None else before
            expected = self.reference(hosts, compute_dtype=np.float64)
            # an aliased input holds its output now: checked against the reference's
            expected += [hosts[i] for i in aliased]
            outputs = [*outputs, *(inputs[i] for i in aliased)]
        else:
            expected = host_arrays(reference)
        for i, (got, want) in enumerate(zip(host_arrays(outputs), expected, strict=True)):
            what = (
                f"output #{i}"
                if i < len(self.outputs)
                else f"input #{aliased[i - len(self.outputs)]} (written by alias_input)"
            )
            problem = compare(np.asarray(got), np.asarray(want), what, rtol, atol)
            if problem is not None:
                raise ValidationError(f"fd.validate: @{self.name}: {problem}")

    def last_segments(self) -> list[SegmentSummary]:
        """The segments of the last `execute` or `compile`, in launch order: each one's
        scheduler and kernel name (one entry for a fusion that runs as one kernel)."""
        return self._fusion_compiler().last_segments()

    def host_ir(self) -> str:
        """The host program of the last `execute` or `compile` as `host` dialect text."""
        return self._fusion_compiler().host_ir()

    def cache_info(self) -> dict[str, int]:
        """The per-signature compile cache: `hits` and `misses` of `execute`,
        `heuristic_reuses` (new signatures served by kernels compiled for another one, their
        heuristics unchanged), `signatures`, `kernels` compiled and host `programs` built."""
        return self._fusion_compiler().cache_info()

    def python_definition(self) -> str:
        """The definition as Python that re-runs to the same fusion (nvFuser's printed
        definitions; see `fuser.python_definition`): `exec` it and its `fd` has this IR."""
        self._check_done("python_definition()")
        defaults = inspect.signature(FusionDefinition.__init__).parameters
        options = [
            (k, getattr(self, k))
            for k, p in defaults.items()
            if p.kind == inspect.Parameter.KEYWORD_ONLY and getattr(self, k) != p.default
        ]
        return definition_text(self.name, options, self._calls)

    def __repr__(self) -> str:
        """The Python definition once the `with` block has ended; before, name and state."""
        if self._state == _State.DONE:
            with contextlib.suppress(DefinitionError):
                return self.python_definition()
        return f"FusionDefinition({self.name!r}, {self._state.name.lower()})"


_CURRENT_DEVICE = -1
"""`_device_ordinal` of "cuda" without an index: the current device, whichever it is."""


def _cpu_scalar_value(x: object, position: int) -> object:
    """The number a CPU scalar tensor input (`is_cpu=True`) holds: a 0-d CPU torch tensor or
    numpy array (or a number); InputError naming the input otherwise."""
    if isinstance(x, numbers.Number):
        return x
    what = f"input #{position} (a CPU scalar tensor, is_cpu=True)"
    shape, item = getattr(x, "shape", None), getattr(x, "item", None)
    if shape is None or item is None:
        raise InputError(f"{what} must be a 0-d CPU tensor or a number, got {type(x).__name__}")
    if len(shape):
        raise InputError(f"{what} must be 0-d, got shape {list(shape)}")
    device = getattr(x, "device", "cpu")
    if getattr(device, "type", device) != "cpu":
        raise InputError(f"{what} must be on the CPU, got one on {device}")
    return item()


def _device_ordinal(device: Any) -> int | None:
    """The CUDA ordinal `device` names (an int, "cuda:N" or a torch device; `_CURRENT_DEVICE`
    for "cuda"), or None for anything else."""
    if isinstance(device, bool):
        return None
    if isinstance(device, numbers.Integral):
        ordinal = int(device)
        return ordinal if ordinal >= 0 else None
    text = str(device)
    if text == "cuda":
        return _CURRENT_DEVICE
    prefix, _, number = text.partition(":")
    return int(number) if prefix == "cuda" and number.isdigit() else None


_EXECUTE_SWITCHES = frozenset(
    (
        "print_repro",
        "save_repro_inputs",
        "capture_debug_output",
        "override_user_schedule",
    )
)
"""nvFuser's debugging switches of `execute`: accepted off."""

_EXECUTE_OPTION_LISTS = frozenset(("_enable_options", "_disable_options"))
"""nvFuser's option lists of `execute`: lists of its internal switches, accepted, no effect."""

_ORDINALS: dict[Any, int | None] = {}
"""The CUDA ordinal of each `device` argument seen (Thunder passes one with every call)."""


def _check_execute_options(inputs: Sequence[Any], device: Any, options: dict[str, Any]) -> bool:
    """`fd.execute`'s nvFuser keywords: InputError for an unknown keyword, a `profile` that is
    not a bool, a debugging switch fuser does not have, option lists that are not lists of
    names, or a device the torch inputs are not on (the first one tells: the runtime refuses
    inputs on two devices). Returns whether the call is profiled."""
    op = "fd.execute"
    profile = options.get("profile", False)
    if not isinstance(profile, bool):
        raise InputError(f"{op}: profile must be True or False, got {profile!r}")
    for name, value in options.items():
        if name == "profile":
            continue
        if name in _EXECUTE_OPTION_LISTS:
            if isinstance(value, list | tuple) and all(type(v) is str for v in value):
                continue
            raise InputError(f"{op}: {name} must be a list of option names, got {value!r}")
        if name not in _EXECUTE_SWITCHES:
            known = ", ".join(sorted(_EXECUTE_SWITCHES | _EXECUTE_OPTION_LISTS | {"profile"}))
            raise InputError(
                f"{op} got an unknown keyword argument {name!r}; it takes inputs, device, {known}"
            )
        if value is not False:
            raise InputError(
                f"{op}: {name} is not supported by fuser yet (FUSER_DUMP shows each stage)"
            )
    if device is None:
        return profile
    key = (type(device), device)  # False == 0 and 1.0 == 1 as dict keys: the type tells them apart
    try:
        ordinal = _ORDINALS[key]
    except (KeyError, TypeError):
        ordinal = _device_ordinal(device)
        if ordinal is not None:
            with contextlib.suppress(TypeError):  # an unhashable device is looked at each call
                _ORDINALS[key] = ordinal
    if ordinal is None:
        raise InputError(
            f"{op}: device must be a CUDA device (an ordinal or 'cuda:N'), got {device!r}"
        )
    if ordinal == _CURRENT_DEVICE:
        return profile
    for i, x in enumerate(inputs if isinstance(inputs, list | tuple) else ()):
        get = getattr(x, "get_device", None)
        if get is not None:
            where = get()
            if isinstance(where, int) and where >= 0 and where != ordinal:
                raise InputError(f"{op}: device is cuda:{ordinal} but input {i} is on cuda:{where}")
            return profile
    return profile
