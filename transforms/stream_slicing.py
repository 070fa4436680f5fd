"""Slicing a stream-parallel fusion: one slice at a time, and the serial loop over the slices.

An op carrying `fusion.stream_axis = a` (`fd.parallelize(t, axis=a, ptype=ParallelType.Stream)`
in Python) is computed slice by slice along axis `a` of its results (nvFuser's
`ParallelType::Stream`). The segmenter and the host lowering share what this module defines:

- `slice_fusion` checks that a fusion slices consistently (every tensor has one stream axis, or
  is read whole by every slice, which is the case exactly when the stream axes map through the
  producer-consumer relation) and builds its one-slice fusion (`StreamSlicing`: the stream axis
  dropped from every sliced tensor, property by property; `slice_info` gives the slice's
  metadata, whose pointer alignment is the one every slice has). `fuser-segment` asks the
  schedulers about one slice of a stream-parallel group; `fuser-lower-host` schedules it.
- `build_slice_loop` makes the serial `host.for` over the stream axis, marked `STREAM_LOOP`, that
  takes `host.alias_select`s of the sliced inputs and results at the induction variable and
  launches the slice kernel on them. The program is correct as it is, on one stream;
  `lower-stream-parallel` (`transforms.lower_stream_parallel`) spreads the marked loops over
  streams.

`fusion.stream_axis` on a tensor that a segment stores must be its outermost axis (or follow only
static extent-1 dims): kernels write contiguous outputs, and only such slices are contiguous.
Inputs may be sliced along any axis (kernels take strides).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from fuser.dialects import fusion as fu
from fuser.dialects import host, kernel
from fuser.errors import CompilationError
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta

STREAM_LOOP = "fuser.stream_parallel"
"""The unit attribute marking a `host.for` whose iterations may run on different streams."""


class StreamSliceError(CompilationError, DiagnosticException):
    """A stream-parallel fusion or segment that cannot be computed slice by slice."""


# --------------------------------------------------------------------------------------------
# A stream-parallel fusion, one slice at a time
# --------------------------------------------------------------------------------------------


def has_stream_parallel_ops(ops: Sequence[Operation] | fu.FusionOp) -> bool:
    """Whether any op (of the fusion, nested ones included) carries `fusion.stream_axis`."""
    if isinstance(ops, fu.FusionOp):
        ops = list(ops.body.walk())
    return any(fu.STREAM_AXIS in op.attributes for op in ops)


@dataclass(frozen=True)
class StreamSlicing:
    """A fusion whose ops run slice by slice: the fusion, one slice of it, and the axis each
    input (None: read whole by every slice) and output is sliced along."""

    whole: fu.FusionOp
    sliced: fu.FusionOp
    """The fusion on one slice: what a scheduler sees and a kernel computes."""
    input_axes: tuple[int | None, ...]
    output_axes: tuple[int, ...]

    def slice_info(self, info: FusionInfo) -> FusionInfo:
        """The metadata of one slice's inputs, given the whole fusion's `info`: the stream axis
        dropped from shape and strides, and the pointer alignment every slice has (that of the
        base and of the step between slices, as the host evaluator computes it)."""
        metas: list[TensorMeta | None] = []
        for arg, meta, axis in zip(self.whole.inputs, info.inputs, self.input_axes, strict=True):
            if meta is None or axis is None:
                metas.append(meta)
                continue
            step = meta.strides[axis] * kernel.byte_size(fu.element_type(arg.type))
            low = step & 15
            alignment = min(meta.alignment, 16 if low == 0 else low & -low)
            metas.append(TensorMeta(_drop(meta.shape, axis), _drop(meta.strides, axis), alignment))
        return FusionInfo(tuple(metas), info.device)

    def slice_shapes(self, shapes: Sequence[tuple[int, ...]]) -> tuple[tuple[int, ...], ...]:
        """The shapes of one slice of the outputs, given the whole outputs' `shapes`."""
        return tuple(_drop(s, a) for s, a in zip(shapes, self.output_axes, strict=True))


def _drop(values: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return values[:axis] + values[axis + 1 :]


def _drop_axis(t: Attribute, axis: int | None) -> Attribute:
    if axis is None or not isinstance(t, TensorType):
        return t
    return TensorType(t.element_type, _drop(tuple(t.get_shape()), axis))


def _label(v: SSAValue) -> str:
    return f"%{v.name_hint}" if v.name_hint else "a value"


def _op_label(op: Operation) -> str:
    hint = op.results[0].name_hint if op.results else None
    return f"'{op.name}'" + (f" %{hint}" if hint else "")


def _wanted_axes(v: SSAValue, op_axis: dict[Operation, int | None]) -> list[int | None]:
    """The axis each user of `v` slices it along (None: read whole); `fusion.dim` users and the
    fusion's output are not counted."""
    wanted: list[int | None] = []
    for use in v.uses:
        user = use.operation
        if isinstance(user, fu.DimOp | fu.OutputOp):
            continue
        axis = op_axis.get(user)
        wanted.append(None if axis is None else fu.stream_operand_axes(user, axis)[use.index])
    return wanted


def slice_fusion(fusion: fu.FusionOp) -> StreamSlicing | None:
    """How `fusion` runs slice by slice, or None when none of its ops is stream-parallel.

    Each op carrying `fusion.stream_axis` is sliced along it; an op without it takes the axis
    its users slice its results along (a forwarded chain), or is computed whole in every slice
    when they read it whole. Raises StreamSliceError (with the reason) when a tensor would be
    sliced along two axes, sliced and read whole, when an output is not stream-parallel or its
    slices are not contiguous, or when a slice needs the extent of the stream axis.
    """
    block = fusion.body.block
    ops = [op for op in block.ops if not isinstance(op, fu.OutputOp)]
    if not has_stream_parallel_ops(ops):
        return None
    name = f"@{fusion.sym_name.data}"
    op_axis: dict[Operation, int | None] = {}
    axis_of: dict[SSAValue, int | None] = {}
    try:
        for op in reversed(ops):  # users before producers
            if not any(isinstance(r.type, TensorType) for r in op.results):
                continue
            wanted = [w for r in op.results for w in _wanted_axes(r, op_axis)]
            marked = fu.stream_axis(op)
            if marked is not None:
                if any(w != marked for w in wanted):
                    raise StreamSliceError(
                        f"{name}: {_op_label(op)} is stream-parallel along axis {marked}, but "
                        f"a user {_reads(wanted, marked)}"
                    )
                axis = marked
            else:
                if len(set(wanted)) > 1:
                    raise StreamSliceError(
                        f"{name}: users of {_op_label(op)} slice it along different axes "
                        f"({_axes_text(wanted)})"
                    )
                axis = wanted[0] if wanted else None
                if axis is not None:
                    fu.stream_operand_axes(op, axis)
            op_axis[op] = axis
            for r in op.results:
                axis_of[r] = axis
        for arg in block.args:
            if isinstance(arg.type, TensorType):
                wanted = _wanted_axes(arg, op_axis)
                if len(set(wanted)) > 1:
                    raise StreamSliceError(
                        f"{name}: input {_label(arg)} is sliced along different axes "
                        f"({_axes_text(wanted)})"
                    )
                axis_of[arg] = wanted[0] if wanted else None
    except VerifyException as e:
        raise StreamSliceError(f"{name}: {e}") from None
    _check_related(name, ops, op_axis, axis_of)
    output_axes: list[int] = []
    for k, v in enumerate(fusion.output_op.values):
        axis = axis_of.get(v)
        if axis is None:
            raise StreamSliceError(
                f"{name}: output #{k} ({_label(v)}) is not stream-parallel, but other ops are"
            )
        shape = fu.shape_of(v.type) or ()
        if any(e != 1 for e in shape[:axis]):
            raise StreamSliceError(
                f"{name}: output #{k} ({_label(v)}) is stream-parallel along axis {axis}, not its "
                "outermost: its slices would not be contiguous, and kernels write contiguous "
                "tensors"
            )
        output_axes.append(axis)
    sliced = _build_slice(fusion, ops, op_axis, axis_of)
    input_axes = tuple(axis_of.get(a) for a in block.args)
    return StreamSlicing(fusion, sliced, input_axes, tuple(output_axes))


def _check_related(
    name: str,
    ops: Sequence[Operation],
    op_axis: dict[Operation, int | None],
    axis_of: dict[SSAValue, int | None],
) -> None:
    """Every sliced tensor's stream axis must be tied to the others through the ops (an op's
    sliced operands and results have one extent along their stream axes), so that one loop
    covers all of them: the stream axes map through the producer-consumer relation."""
    parent: dict[SSAValue, SSAValue] = {}

    def find(v: SSAValue) -> SSAValue:
        while parent.get(v, v) is not v:
            v = parent[v]
        return v

    for op in ops:
        axis = op_axis.get(op)
        if axis is None:
            continue
        tied = [*op.results]
        tied += [
            o
            for o, a in zip(op.operands, fu.stream_operand_axes(op, axis), strict=True)
            if a is not None
        ]
        for v in tied[1:]:
            parent[find(v)] = find(tied[0])
    roots = {find(v) for v, a in axis_of.items() if a is not None}
    if len(roots) > 1:
        labels = ", ".join(sorted(_label(r) for r in roots))
        raise StreamSliceError(
            f"{name}: the stream axes of {labels} are not related by the ops between them "
            "(they may differ in extent): they cannot share one loop"
        )


def _reads(wanted: Sequence[int | None], axis: int) -> str:
    other = next(w for w in wanted if w != axis)
    return "reads it whole" if other is None else f"slices it along axis {other}"


def _axes_text(wanted: Sequence[int | None]) -> str:
    return ", ".join("whole" if w is None else str(w) for w in dict.fromkeys(wanted))


def _build_slice(
    fusion: fu.FusionOp,
    ops: Sequence[Operation],
    op_axis: dict[Operation, int | None],
    axis_of: dict[SSAValue, int | None],
) -> fu.FusionOp:
    """The fusion on one slice (see `slice_fusion`)."""
    block = fusion.body.block
    new_block = Block(arg_types=[_drop_axis(a.type, axis_of.get(a)) for a in block.args])
    mapping: dict[SSAValue, SSAValue] = {}
    for old_arg, new_arg in zip(block.args, new_block.args, strict=True):
        mapping[old_arg] = new_arg
        new_arg.name_hint = old_arg.name_hint
    stream_extents: set[SSAValue] = set()  # `fusion.dim`s of a stream axis: not in a slice
    name = f"@{fusion.sym_name.data}"

    def mapped(op: Operation, values: Sequence[SSAValue]) -> list[SSAValue]:
        for v in values:
            if v in stream_extents:
                raise StreamSliceError(
                    f"{name}: {_op_label(op)} reads the extent of the stream axis ({_label(v)}), "
                    "which one slice does not have"
                )
        return [mapping[v] for v in values]

    for op in ops:
        new: Operation
        if isinstance(op, fu.DimOp):
            axis = axis_of.get(op.input)
            k = op.axis.value.data
            if axis == k:
                stream_extents.add(op.result)
                continue
            new = fu.DimOp(mapping[op.input], k if axis is None or k < axis else k - 1)
        elif op_axis.get(op) is None:  # scalar ops, and tensor ops every slice computes whole
            mapped(op, op.operands)
            new = op.clone(mapping)
        else:
            axis = op_axis[op]
            assert axis is not None
            new = _sliced_op(op, axis, mapped)
        for old_r, new_r in zip(op.results, new.results, strict=True):
            mapping[old_r] = new_r
            new_r.name_hint = old_r.name_hint
        new_block.add_op(new)
    outputs = [mapping[v] for v in fusion.output_op.values]
    new_block.add_op(fu.OutputOp(outputs))  # a slice writes no input (the program does)
    for op in reversed(list(new_block.ops)):  # extents only a dropped dim needed
        if isinstance(op, fu.DimOp | fu.ConstantOp) and not op.results[0].uses:
            new_block.erase_op(op)
    sliced = fu.FusionOp(
        f"{fusion.sym_name.data}_slice",
        [a.type for a in new_block.args],
        [v.type for v in outputs],
        Region(new_block),
    )
    try:
        sliced.verify()
    except VerifyException as e:  # a bug here, never the user's
        raise AssertionError(f"the slice of {name} does not verify: {e}") from e
    return sliced


def _sliced_op(
    op: Operation, axis: int, mapped: Callable[[Operation, Sequence[SSAValue]], list[SSAValue]]
) -> Operation:
    """`op` on one slice: results without `axis`, operands and properties to match."""
    operand_axes = fu.stream_operand_axes(op, axis)
    properties = dict(op.properties)
    operands: list[SSAValue] = list(op.operands)
    if isinstance(op, fu.BroadcastInDimOp):
        kept = [v for v, d in zip(op.sizes, op.sized_dims(), strict=True) if d != axis]
        dims = [d - (d > axis) for d in op.dims if d != axis]
        properties["broadcast_dims"] = DenseArrayBase.from_list(i64, dims)
        operands = [op.input, *kept]
    elif isinstance(op, fu.ReductionOp | fu.WelfordOp | fu.VarMeanOp):
        j = operand_axes[0]
        assert j is not None
        reduced = [a - (a > j) for a in op.axes.get_values()]
        properties["axes"] = DenseArrayBase.from_list(i64, reduced)
    elif isinstance(op, fu.ScanOp | fu.TopkOp | fu.ArgsortOp):
        properties["dim"] = IntegerAttr(op.axis - (op.axis > axis), i64)
    attributes = {k: v for k, v in op.attributes.items() if k != fu.STREAM_AXIS}
    return type(op).create(
        operands=mapped(op, operands),
        result_types=[_drop_axis(r.type, axis) for r in op.results],
        properties=properties,
        attributes=attributes,
    )


# --------------------------------------------------------------------------------------------
# The serial loop the host lowering makes
# --------------------------------------------------------------------------------------------


def build_slice_loop(
    slicing: StreamSlicing,
    extent: SSAValue,
    zero: SSAValue,
    one: SSAValue,
    ins: Sequence[SSAValue],
    outs: Sequence[SSAValue],
    launch: Callable[[list[SSAValue], list[SSAValue]], Sequence[Operation]],
) -> host.ForOp:
    """`host.for %i = zero to extent step one` marked `fuser.stream_parallel`, whose body takes
    the slices at `%i` of the sliced `ins` (the segment's arguments, in order) and `outs` (its
    results, allocated whole) and ends with `launch(slices of ins, slices of outs)`."""
    loop = host.ForOp(zero, extent, one)
    loop.attributes[STREAM_LOOP] = UnitAttr()
    body = loop.body.block
    index = loop.induction_var
    index.name_hint = "i"

    def view(v: SSAValue, axis: int | None) -> SSAValue:
        if axis is None or not isinstance(v.type, TensorType):
            return v
        select = host.AliasSelectOp(v, index, axis)
        if v.name_hint:
            select.result.name_hint = f"{v.name_hint}_i"
        body.add_op(select)
        return select.result

    sliced_ins = [view(v, a) for v, a in zip(ins, slicing.input_axes, strict=True)]
    sliced_outs = [view(v, a) for v, a in zip(outs, slicing.output_axes, strict=True)]
    for op in launch(sliced_ins, sliced_outs):
        body.add_op(op)
    body.add_op(host.YieldOp())
    return loop
