"""Concrete shapes of every value of a fusion, from the shapes of its inputs.

Schedulers size their loops and the runtime sizes its outputs with this; it walks the fusion once
and never touches data. Index values (`fusion.dim`) evaluate to their extents.

A new shape of a seen fusion asks for its value shapes several times (the output shapes, each
scheduler's layout, the launch), and most of a walk is reading the ops' operands and properties
through xDSL. Under an open analysis cache (`analyses.cached_analyses`) the walk is therefore
compiled once per fusion into `_ShapeSteps`, plain tuples of value numbers and the static facts
of each op; a step that finds shapes that do not fit hands the fusion to the op-by-op walk,
which raises the `ShapeMismatch` naming the op, so results and messages are those of the walk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects.views import ReshapeError, reshape_extents, slice_extents
from fuser.transforms.schedulers.analyses import active, memoized


class ShapeMismatch(ValueError):
    """Input shapes that the fusion cannot combine (names the op)."""


ValueShape = tuple[int, ...] | int | None
"""What `value_shapes` maps a value to: a tensor's shape, a `fusion.dim`'s extent, or None."""

ShapeEnv = dict[SSAValue, ValueShape]


def value_shapes(fusion: fu.FusionOp, input_shapes: Sequence[tuple[int, ...] | None]) -> ShapeEnv:
    """Maps each value to its shape (tensors), its extent (`fusion.dim`) or None (scalars)."""
    if active() is not None:
        steps = memoized("shape_steps", fusion, lambda: _ShapeSteps(fusion))
        env = steps.run(input_shapes)
        if env is not None:
            return env
    return _walk(fusion, input_shapes)


def _walk(fusion: fu.FusionOp, input_shapes: Sequence[tuple[int, ...] | None]) -> ShapeEnv:
    """`value_shapes` op by op (raises the ShapeMismatch naming the op)."""
    env: ShapeEnv = {}
    for arg, shape in zip(fusion.inputs, input_shapes, strict=True):
        env[arg] = None if shape is None else tuple(shape)
    for op in fusion.body.block.ops:
        if isinstance(op, fu.OutputOp):
            break
        for result, shape in zip(op.results, _op_shapes(op, env), strict=True):
            env[result] = shape
    return env


def _tensor_shape(env: ShapeEnv, value: SSAValue) -> tuple[int, ...] | None:
    """The shape of `value` if it is a tensor, else None."""
    shape = env[value]
    return shape if isinstance(shape, tuple) else None


def _shape(env: ShapeEnv, tensor: SSAValue) -> tuple[int, ...]:
    """The shape of a value of tensor type."""
    return cast(tuple[int, ...], env[tensor])  # a tensor's entry is its shape, by construction


def _extent(env: ShapeEnv, index: SSAValue) -> int:
    """The extent a value of index type (a `fusion.dim`) stands for."""
    return cast(int, env[index])  # an index value's entry is its extent, by construction


def _op_shapes(op: Operation, env: ShapeEnv) -> list[ValueShape]:
    if isinstance(op, fu.DimOp):
        return [_shape(env, op.input)[op.axis.value.data]]
    if isinstance(op, fu.ConstantOp):
        return [None]
    if isinstance(op, fu.BroadcastInDimOp):
        return [_broadcast_shape(op, env)]
    if isinstance(op, fu.RandomOp):
        sized = dict(zip(op.sized_dims(), (_extent(env, s) for s in op.sizes), strict=True))
        static = fu.shape_of(op.result.type) or ()
        return [tuple(sized.get(d, e) for d, e in enumerate(static))]
    if isinstance(op, fu.ReductionOp):
        shape = _shape(env, op.input)
        return [fu.reduced_shape(shape, op.reduction_axes, op.keepdim is not None)]
    if isinstance(op, fu.TopkOp):
        shape = _shape(env, op.input)
        if op.count > shape[op.axis]:
            raise ShapeMismatch(
                f"'{op.name}' k ({op.count}) is more than the extent {shape[op.axis]} of dim "
                f"{op.axis}"
            )
        result = tuple(fu.topk_shape(shape, op.axis, op.count))
        return [result, result]
    if isinstance(op, fu.WelfordOp):
        shape = fu.reduced_shape(_shape(env, op.input), tuple(op.axes.get_values()), False)
        return [shape, shape, shape]
    if isinstance(op, fu.VarMeanOp):
        axes = tuple(op.axes.get_values())
        shape = fu.reduced_shape(_shape(env, op.input), axes, op.keepdim is not None)
        return [shape, shape]
    if isinstance(op, fu.PartialSumOp):
        return [fu.partial_sum_shape(_shape(env, op.input), op.axis, op.split_count)]
    if isinstance(op, fu.RenumberOp):
        return [op.result_extents(_shape(env, op.input))]
    if isinstance(op, fu.ReshapeOp):
        try:
            source = _shape(env, op.input)
            return [reshape_extents(op.target(source), source)]
        except ReshapeError as e:
            raise ShapeMismatch(f"'{op.name}' {e}") from None
    if isinstance(op, fu.SliceOp):
        return [slice_extents(*op.bounds(), _shape(env, op.input))]
    if isinstance(op, fu.ResizeOp):
        shapes = [_shape(env, o) for o in op.operands if isinstance(env[o], tuple)]
        try:
            return [op.result_extents(shapes)]
        except ValueError as e:
            raise ShapeMismatch(f"'{op.name}' {e}") from None
    if isinstance(op, fu.TakeAlongAxisOp):
        index = _shape(env, op.index)
        problem = fu.take_mismatch(_shape(env, op.input), index, op.axis)
        if problem is not None:
            raise ShapeMismatch(f"'{op.name}' {problem}")
        return [index]
    if isinstance(op, fu.ScatterOp):
        shape, src = _shape(env, op.input), _tensor_shape(env, op.src)
        problem = fu.scatter_mismatch(shape, _shape(env, op.index), src, op.axis)
        if problem is not None:
            raise ShapeMismatch(f"'{op.name}' {problem}")
        return [shape]
    if isinstance(op, fu.TakeOp):
        shape, index = _shape(env, op.input), _tensor_shape(env, op.index) or ()
        problem = fu.take_from_empty(shape, index, op.axis)
        if problem is not None:
            raise ShapeMismatch(f"'{op.name}' {problem}")
        return [fu.taken_shape(shape, index, op.axis)]
    if isinstance(op, fu.IotaOp):
        length = _extent(env, op.length) if op.length is not None else op.result.type.get_shape()[0]
        if length < 0:
            raise ShapeMismatch(f"'{op.name}' length is {length} (< 0)")
        return [(length,)]
    if isinstance(op, fu.MatmulOp):
        a, b = _shape(env, op.lhs), _shape(env, op.rhs)
        if a[-1] != b[-2] or a[:-2] != b[:-2]:
            raise ShapeMismatch(f"'{op.name}' cannot multiply shapes {list(a)} and {list(b)}")
        full = (*a[:-2], a[-2], b[-1])
        return [full if op.split_count is None else (op.split_count, *full)]
    # Pointwise: every tensor operand has one shape.
    shapes = [s for s in (_tensor_shape(env, o) for o in op.operands) if s is not None]
    if any(s != shapes[0] for s in shapes[1:]):
        raise ShapeMismatch(
            f"'{op.name}' operands have shapes {', '.join(str(list(s)) for s in shapes)}"
        )
    return [shapes[0] if shapes else None]


def _broadcast_shape(op: fu.BroadcastInDimOp, env: ShapeEnv) -> tuple[int, ...]:
    in_shape = _tensor_shape(env, op.input) or ()
    out_type = fu.shape_of(op.result.type) or ()
    sized = dict(zip(op.sized_dims(), (_extent(env, s) for s in op.sizes), strict=True))
    source = {d: in_shape[i] for i, d in enumerate(op.dims)}
    shape: list[int] = []
    for d, static in enumerate(out_type):
        if d in sized:
            extent = sized[d]
        elif static != DYNAMIC_INDEX:
            extent = static
        else:
            extent = source[d]
        if d in source and source[d] not in (1, extent):
            raise ShapeMismatch(
                f"'{op.name}' cannot broadcast extent {source[d]} to {extent} in dim {d}"
            )
        shape.append(extent)
    return tuple(shape)


_DIM, _NONE, _BROADCAST, _REDUCE, _SAME, _OTHER = range(6)


class _ShapeSteps:
    """`value_shapes` of one fusion as steps over numbered values (see the module docstring):
    each op's operands, properties and static result extents are read from the IR once."""

    def __init__(self, fusion: fu.FusionOp) -> None:
        self.fusion = fusion
        self.values: list[SSAValue] = list(fusion.inputs)
        self.n_inputs = len(self.values)
        number = {v: i for i, v in enumerate(self.values)}
        self.steps: list[tuple[int, tuple[int, ...], Any, Operation]] = []
        for op in fusion.body.block.ops:
            if isinstance(op, fu.OutputOp):
                break
            operands = tuple(number[o] for o in op.operands)
            data: Any = None
            if isinstance(op, fu.DimOp):
                kind, data = _DIM, op.axis.value.data
            elif isinstance(op, fu.ConstantOp):
                kind = _NONE
            elif isinstance(op, fu.BroadcastInDimOp | fu.RandomOp):
                out_type = fu.shape_of(op.result.type) or ()
                sized = dict(zip(op.sized_dims(), (number[s] for s in op.sizes), strict=True))
                dims = op.dims if isinstance(op, fu.BroadcastInDimOp) else ()
                source = {d: i for i, d in enumerate(dims)}  # (a random op fills its shape)
                kind, data = _BROADCAST, (tuple(out_type), sized, source)
            elif isinstance(op, fu.ReductionOp):
                kind = _REDUCE
                data = (op.reduction_axes, op.keepdim is not None, 1)
            elif isinstance(op, fu.WelfordOp):
                kind, data = _REDUCE, (tuple(op.axes.get_values()), False, 3)
            elif isinstance(op, fu.VarMeanOp):
                kind = _REDUCE
                data = (tuple(op.axes.get_values()), op.keepdim is not None, 2)
            elif (
                isinstance(
                    op,
                    fu.MatmulOp
                    | fu.PartialSumOp
                    | fu.RenumberOp
                    | fu.ReshapeOp
                    | fu.IotaOp
                    | fu.SliceOp
                    | fu.ResizeOp
                    | fu.TakeAlongAxisOp
                    | fu.ScatterOp
                    | fu.TakeOp,
                )
                or len(op.results) != 1
            ):
                kind = _OTHER
            else:
                kind = _SAME
            for r in op.results:
                number[r] = len(self.values)
                self.values.append(r)
            self.steps.append((kind, operands, data, op))

    def run(self, input_shapes: Sequence[tuple[int, ...] | None]) -> ShapeEnv | None:
        """The shapes, or None where shapes do not fit (the walk then names the op)."""
        if len(input_shapes) != self.n_inputs:
            return None
        shapes: list[Any] = [None if s is None else tuple(s) for s in input_shapes]
        for kind, operands, data, op in self.steps:
            if kind == _SAME:
                shape: tuple[int, ...] | None = None
                for o in operands:
                    s: ValueShape = shapes[o]
                    if isinstance(s, tuple):
                        if shape is None:
                            shape = s
                        elif s != shape:
                            return None
                shapes.append(shape)
            elif kind == _DIM:
                shapes.append(shapes[operands[0]][data])
            elif kind == _BROADCAST:
                in_shape = cast(tuple[int, ...], shapes[operands[0]] or ())  # None: a scalar
                out_type: tuple[int, ...]
                sized: dict[int, int]  # dim -> number of the value of its extent
                source: dict[int, int]  # dim -> the input's axis
                out_type, sized, source = data
                out: list[int] = []
                for d, static in enumerate(out_type):
                    extent: int
                    if d in sized:
                        extent = shapes[sized[d]]
                    elif static != DYNAMIC_INDEX:
                        extent = static
                    else:
                        extent = in_shape[source[d]]
                    if d in source and in_shape[source[d]] not in (1, extent):
                        return None
                    out.append(extent)
                shapes.append(tuple(out))
            elif kind == _REDUCE:
                axes, keep, n = data
                shape = fu.reduced_shape(shapes[operands[0]], axes, keep)
                shapes.extend([shape] * n)
            elif kind == _NONE:
                shapes.append(None)
            else:
                env = dict(zip(self.values, shapes, strict=False))
                try:
                    shapes.extend(_op_shapes(op, env))
                except ShapeMismatch:
                    return None
        return dict(zip(self.values, shapes, strict=True))
