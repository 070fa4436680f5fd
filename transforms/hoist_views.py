"""`fuser-hoist-views`: moves each `fusion.reshape` and `fusion.slice` above the pointwise ops
it follows, to the fusion's inputs, so that it costs no kernel boundary.

Kernels never index through a reshape: the segmenter leaves one between segments, where the
host program takes it as a view (`host.reshape`). A reshape of a pointwise result would so
split the pointwise chain before it from the ops after it. But a pointwise op commutes with a
reshape of its result, `reshape(f(a, b)) == f(reshape(a), reshape(b))`, when every tensor
operand has the result's shape. This pass applies that rewrite wherever the chain above the
reshape reaches only fusion inputs through such ops (each used once: a shared one would be
computed twice), so the reshapes end on the inputs, as views that the one kernel reads. A chain
that meets anything else (a broadcast, a reduction, a matmul) stays as it is: reshaping there
would materialize what a kernel computes on the fly. Given the inputs' metadata (the pipeline
passes the signature's), it moves no reshape to an input that strides cannot view in the new
shape: that input would be copied, where the chain's own result can always be viewed. Nor does
it move one past an op with a stream axis (which names a dim of its shape). It also folds a
reshape of a reshape into one, and erases a reshape to the operand's own type.

A slice moves the same way: `slice(f(a, b)) == f(slice(a), slice(b))` for such an op,
`slice(permute(x)) == permute(slice'(x))` with the bounds renumbered (likewise `squeeze`), and
`slice(broadcast(y)) == broadcast(slice'(y))` with the bounds of `y`'s carried dims (a broadcast
with no run-time `sizes`, and none of `y`'s dynamic dims made static, which may be 1 at run time:
a dim it expands takes the slice's static extent). A
slice is a view of any strides, so every input can take it; it moves only where the chain
reaches inputs, for the reason above. Unlike a reshape's, a slice's chain is cloned where other
ops read it too (`q = cast(permute(x))` read whole and as two halves): the clone computes only
the slice, from views of the same inputs, so the one kernel reads nothing twice from memory
where a kept boundary would write `q` and read it back. A reshape and a slice do not commute
with each other: a chain of both on an input is a chain of views.

nvFuser instead indexes through reshapes and slices inside its kernels (splits and merges of
iteration domains, resized domains); this pass covers the transformer regions' common case, a
view of an input or of a pointwise chain of inputs (q of a fused qkv projection, the halves of
a rotary embedding), without that machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from fuser.dialects import fusion as fu
from fuser.dialects.views import END, ReshapeError, reshape_view
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta


def _commutes(op: Operation) -> bool:
    """A pointwise op each tensor operand of which has its result's static shape (and no
    stream axis: that names a dim of this shape)."""
    if not isinstance(op, fu.ELEMENTWISE_OPS) or fu.stream_axis(op) is not None:
        return False
    shape = fu.shape_of(op.results[0].type)
    return all(fu.shape_of(o.type) == shape for o in op.operands if isinstance(o.type, TensorType))


def _reaches_inputs(
    v: SSAValue, viewable: Callable[[BlockArgument], bool], kept: Sequence[int] = ()
) -> bool:
    """Whether the reshape of `v` (keeping dims `kept`) can move up to fusion inputs, each
    `viewable` in the new shape, through commuting ops used once each (and reshapes that keep
    those dims too: `_folds`)."""
    if isinstance(v, BlockArgument):
        return viewable(v)
    if not isinstance(v, OpResult) or not v.has_one_use():
        return False
    op = v.op
    if isinstance(op, fu.ReshapeOp):
        return _folds(kept, op) and _reaches_inputs(op.input, viewable, kept)
    return _commutes(op) and all(
        _reaches_inputs(o, viewable, kept) for o in op.operands if isinstance(o.type, TensorType)
    )


def _folds(kept: Sequence[int], inner: fu.ReshapeOp) -> bool:
    """Whether a reshape keeping dims `kept` of `inner`'s result is one reshape of `inner`'s
    operand, keeping the same dims: each kept dim is `inner`'s operand's too."""
    return set(kept) <= set(inner.kept_dims)


def _slice_reaches_inputs(v: SSAValue, seen: dict[SSAValue, bool] | None = None) -> bool:
    """Whether a slice of `v` can move up to fusion inputs (or views of them) through
    commuting and renumbering ops (each cloned where others read it too); `seen` holds the
    answers for values already walked (a shared operand is walked once)."""
    seen = {} if seen is None else seen
    if v not in seen:
        seen[v] = False  # (a block has no cycles: this is never read before it is set)
        if isinstance(v, BlockArgument):
            seen[v] = True
        elif isinstance(v, OpResult):
            op = v.op
            if isinstance(op, fu.VIEW_OPS):
                seen[v] = _slice_reaches_inputs(op.input, seen)
            elif isinstance(op, fu.RenumberOp):
                seen[v] = fu.stream_axis(op) is None and _slice_reaches_inputs(op.input, seen)
            elif isinstance(op, fu.BroadcastInDimOp):
                seen[v] = (
                    _sliceable_broadcast(op)
                    and fu.stream_axis(op) is None
                    and (
                        not isinstance(op.input.type, TensorType)
                        or _slice_reaches_inputs(op.input, seen)
                    )
                )
            else:
                seen[v] = _commutes(op) and all(
                    _slice_reaches_inputs(o, seen)
                    for o in op.operands
                    if isinstance(o.type, TensorType)
                )
    return seen[v]


def _slice_of(
    value: SSAValue, bounds: tuple[Sequence[int], Sequence[int], Sequence[int]], before: Operation
) -> fu.SliceOp | None:
    """A slice of `value` with these bounds that is in the block before `before`, or None:
    slicing one operand twice the same way (`y * sigmoid(y)`) makes one view, not two."""
    block = before.parent_block()
    for use in value.uses:
        other = use.operation
        if (
            isinstance(other, fu.SliceOp)
            and other.bounds() == tuple(tuple(b) for b in bounds)
            and other.parent_block() is block
            and block is not None
            and block.get_operation_index(other) < block.get_operation_index(before)
        ):
            return other
    return None


def _rebuilt(
    producer: Operation, operands: Sequence[SSAValue], shape: Sequence[int], name: str | None
) -> Operation:
    """`producer` on new operands, its result (named `name`) in `shape`."""
    element = fu.element_type(producer.results[0].type)
    rebuilt = type(producer).create(
        operands=operands,
        result_types=[TensorType(element, shape)],
        properties=dict(producer.properties),
        attributes=dict(producer.attributes),
    )
    rebuilt.results[0].name_hint = name
    return rebuilt


@dataclass
class HoistReshape(RewritePattern):
    """One step: a reshape of a commuting op's result becomes the op on reshaped operands; a
    reshape of a reshape, one reshape; a reshape to its operand's type, the operand. With
    `inputs` (the fusion inputs' metadata), a chain is moved only to inputs that strides can
    view in the new shape: one that needs a copy would cost a kernel the reshape of the
    chain's (contiguous) result does not."""

    inputs: Sequence[TensorMeta | None] | None = None

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fu.ReshapeOp, rewriter: PatternRewriter, /):
        source = op.input
        if source.type == op.result.type:
            rewriter.replace(op, [], [source])
            return
        if not isinstance(source, OpResult) or not source.has_one_use():
            return
        producer = source.op
        target, kept = op.result.type.get_shape(), op.kept_dims
        if isinstance(producer, fu.ReshapeOp):
            if not _folds(kept, producer):
                return
            folded = fu.ReshapeOp(producer.input, target, kept)
            rewriter.replace(op, [folded], [folded.result])
            rewriter.erase(producer)
            return
        if not _reaches_inputs(source, lambda arg: self._viewable(arg, target, kept), kept):
            return
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        for o in producer.operands:  # (of the result's shape: the kept dims are theirs too)
            if isinstance(o.type, TensorType):
                reshaped = fu.ReshapeOp(o, target, kept)
                reshaped.result.name_hint = o.name_hint
                new_ops.append(reshaped)
                operands.append(reshaped.result)
            else:
                operands.append(o)
        moved = _rebuilt(producer, operands, target, op.result.name_hint)
        new_ops.append(moved)
        rewriter.replace(op, new_ops, [moved.results[0]])
        rewriter.erase(producer)  # its one use was the reshape

    def _viewable(self, arg: BlockArgument, target: Sequence[int], kept: Sequence[int]) -> bool:
        meta = None if self.inputs is None else self.inputs[arg.index]
        if meta is None:
            return True
        try:
            shape = fu.reshape_target(target, meta.shape, kept)
            return reshape_view(shape, meta.shape, meta.strides)[1] is not None
        except ReshapeError:
            return True  # the shapes' check names the op


class HoistSlice(RewritePattern):
    """One step: a slice of a commuting op's result becomes the op on sliced operands; a slice
    of a permute or squeeze, the renumbering of a slice of its operand (the bounds moved to
    the operand's dims, a squeezed dim whole), where the chain reaches fusion inputs. An op
    that others read too is cloned, not moved: the chain then runs on the slice beside the
    whole, from the same inputs, in the same kernel."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fu.SliceOp, rewriter: PatternRewriter, /):
        source = op.input
        if not isinstance(source, OpResult) or isinstance(source.op, fu.VIEW_OPS):
            return
        if not _slice_reaches_inputs(source):
            return
        producer = source.op
        starts, stops, steps = op.bounds()
        if isinstance(producer, fu.RenumberOp):
            rank = len(fu.shape_of(producer.input.type) or ())
            bounds = [(0, END, 1)] * rank  # a squeezed dim, of extent 1, whole
            for i, d in enumerate(producer.source_dims):
                bounds[d] = (starts[i], stops[i], steps[i])
            firsts, lasts, strides = zip(*bounds, strict=True)
            inner = fu.SliceOp(producer.input, firsts, lasts, strides)
            inner.result.name_hint = producer.input.name_hint
            shape = op.result.type.get_shape()
            renumbered = _rebuilt(producer, [inner.result], shape, op.result.name_hint)
            rewriter.replace(op, [inner, renumbered], [renumbered.results[0]])
            if not producer.results[0].uses:
                rewriter.erase(producer)
            return
        if isinstance(producer, fu.BroadcastInDimOp):
            rewriter.replace(op, *_sliced_broadcast(producer, op))
            if not producer.results[0].uses:
                rewriter.erase(producer)
            return
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        made: dict[SSAValue, SSAValue] = {}  # an operand read twice is sliced once
        for o in producer.operands:
            if not isinstance(o.type, TensorType):
                operands.append(o)
                continue
            if o not in made:
                existing = _slice_of(o, (starts, stops, steps), op)
                if existing is not None:
                    made[o] = existing.result
                else:
                    sliced = fu.SliceOp(o, starts, stops, steps)
                    sliced.result.name_hint = o.name_hint
                    new_ops.append(sliced)
                    made[o] = sliced.result
            operands.append(made[o])
        moved = _rebuilt(producer, operands, op.result.type.get_shape(), op.result.name_hint)
        new_ops.append(moved)
        rewriter.replace(op, new_ops, [moved.results[0]])
        if not producer.results[0].uses:
            rewriter.erase(producer)


def _sliceable_broadcast(op: fu.BroadcastInDimOp) -> bool:
    """Whether a slice moves through `op`: it has no run-time `sizes`, and no operand dim of
    dynamic extent meets a static result dim (that one may be 1 at run time, broadcast, where
    the slice's bounds would cut it)."""
    operand = fu.shape_of(op.input.type) or ()
    result = fu.shape_of(op.result.type) or ()
    return not op.sizes and not any(
        e == DYNAMIC_INDEX and result[d] != DYNAMIC_INDEX
        for e, d in zip(operand, op.dims, strict=True)
    )


def _sliced_broadcast(
    producer: fu.BroadcastInDimOp, op: fu.SliceOp
) -> tuple[list[Operation], list[SSAValue]]:
    """`slice(broadcast(y))` as `broadcast(slice'(y))`: a carried dim of `y` takes the bounds of
    its result dim, one of extent 1 stays whole (it is expanded to the sliced extent)."""
    new_ops: list[Operation] = []
    source = producer.input
    shape = fu.shape_of(source.type)
    if shape is not None and shape:
        starts, stops, steps = op.bounds()
        bounds = [
            (0, END, 1) if e == 1 else (starts[d], stops[d], steps[d])
            for e, d in zip(shape, producer.dims, strict=True)
        ]
        if any(b != (0, END, 1) for b in bounds):
            firsts, lasts, strides = zip(*bounds, strict=True)
            sliced = fu.SliceOp(source, firsts, lasts, strides)
            sliced.result.name_hint = source.name_hint
            new_ops.append(sliced)
            source = sliced.result
    moved = _rebuilt(producer, [source], op.result.type.get_shape(), op.result.name_hint)
    new_ops.append(moved)
    return new_ops, [moved.results[0]]


def hoist_views(fusion: fu.FusionOp, info: FusionInfo | None = None) -> None:
    """Applies the pass to one fusion, in place (to inputs of any strides without `info`)."""
    # no dead-code elimination: the compiler planned split factors on every matmul, dead or not
    patterns: list[RewritePattern] = [
        HoistReshape(None if info is None else info.inputs),
        HoistSlice(),
    ]
    applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
    PatternRewriteWalker(applier).rewrite_region(fusion.body)


@dataclass(frozen=True)
class HoistViewsPass(ModulePass):
    """Moves reshapes and slices above pointwise chains to the fusion inputs (see the module
    docstring)."""

    name = "fuser-hoist-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fusion in [f for f in op.walk() if isinstance(f, fu.FusionOp)]:
            hoist_views(fusion)
