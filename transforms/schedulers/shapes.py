"""Concrete shapes of every value of a fusion, from the shapes of its inputs.

Schedulers size their loops and the runtime sizes its outputs with this; it walks the fusion once
and never touches data. Index values (`fusion.dim`) evaluate to their extents.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from fuser.dialects import fusion as fu


class ShapeMismatch(ValueError):
    """Input shapes that the fusion cannot combine (names the op)."""


def value_shapes(
    fusion: fu.FusionOp, input_shapes: Sequence[tuple[int, ...] | None]
) -> dict[SSAValue, tuple[int, ...] | int | None]:
    """Maps each value to its shape (tensors), its extent (`fusion.dim`) or None (scalars)."""
    env: dict[SSAValue, tuple[int, ...] | int | None] = {}
    for arg, shape in zip(fusion.inputs, input_shapes, strict=True):
        env[arg] = None if shape is None else tuple(shape)
    for op in fusion.body.block.ops:
        if isinstance(op, fu.OutputOp):
            break
        for result, shape in zip(op.results, _op_shapes(op, env), strict=True):
            env[result] = shape
    return env


def _tensor_shape(env: dict, value: SSAValue) -> tuple[int, ...] | None:
    shape = env[value]
    return shape if isinstance(shape, tuple) else None


def _op_shapes(op, env: dict) -> list[tuple[int, ...] | int | None]:
    if isinstance(op, fu.DimOp):
        return [env[op.input][op.axis.value.data]]
    if isinstance(op, fu.ConstantOp):
        return [None]
    if isinstance(op, fu.BroadcastInDimOp):
        return [_broadcast_shape(op, env)]
    if isinstance(op, fu.ReductionOp):
        shape = env[op.input]
        return [fu.reduced_shape(shape, op.reduction_axes, op.keepdim is not None)]
    if isinstance(op, fu.WelfordOp):
        shape = fu.reduced_shape(env[op.input], tuple(op.axes.get_values()), False)
        return [shape, shape, shape]
    if isinstance(op, fu.VarMeanOp):
        shape = fu.reduced_shape(env[op.input], tuple(op.axes.get_values()), op.keepdim is not None)
        return [shape, shape]
    if isinstance(op, fu.MatmulOp):
        a, b = env[op.lhs], env[op.rhs]
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


def _broadcast_shape(op: fu.BroadcastInDimOp, env: dict) -> tuple[int, ...]:
    in_shape = _tensor_shape(env, op.input) or ()
    out_type = fu.shape_of(op.result.type) or ()
    sized = dict(zip(op.sized_dims(), (env[s] for s in op.sizes), strict=True))
    source = {d: in_shape[i] for i, d in enumerate(op.dims)}
    shape = []
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
