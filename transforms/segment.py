"""`fuser-segment`: splits each fusion into segments, each one kernel that a scheduler accepts.

A fusion that no single kernel can hold (a reduction feeding a broadcast of another shape, an
explicit `fusion.segment_set`) becomes a sequence of `fusion.segment` ops in topological order,
each naming the scheduler that accepted it; the fusion's body then holds only segments and its
`fusion.output`. This is nvFuser's `SegmentCandidateFinder` on our IR
(`csrc/fusion_segmenter.cpp`):

1. **Whole fusion.** If the fusion holds no `segment_set` and a scheduler accepts it (in
   `SCHEDULERS` priority order; asked about the segment it would be: live ops, used inputs), it
   is one segment.
2. **Initial groups.** Otherwise every op is a group of its own, except constants and scalar
   arithmetic (cloned into every segment that uses them), `fusion.dim` (recomputed in every
   segment, see below) and *forwarded* unary chains (recomputed in every consumer segment).
3. **Level merge** (Herrmann et al., SIAM J. Sci. Comput. 2019). Groups get topological levels;
   a producer and a consumer whose levels differ by at most one are merge candidates. Candidates
   are tried largest first, by the bytes of the tensors between them (from the concrete shapes):
   the merge that keeps the largest intermediate on chip wins; ties go to lower levels, then to
   block order. The first accepted merge is taken and the levels recomputed, until no candidate
   merges.
4. **Final merge.** Every remaining producer/consumer pair (levels further apart), producers in
   topological order, consumers largest edge first, until none merges.
5. **Sibling merges.** A group holding a `partial_sum` merges with a sibling that shares an
   input, then the groups that read its results merge with each other (below).
6. **Schedulers.** Each final group is asked about again as exactly the segment it becomes; it
   names the first scheduler that accepts it. An op that no scheduler accepts even alone (a
   batched matmul of more than 65535 batches) is a `SegmentationError`.

A merge of groups A and B is taken only if (a) the union spans no `segment_set`: a group may
hold a `segment_set` only as the producer of one of its own outputs, never together with a
consumer of it; (b) the group graph stays acyclic: no path from A to B (or B to A) through a
third group; (c) a scheduler accepts the union as a fusion of its own (`accepts` on the union
with the inputs' `FusionInfo`: real metadata for fusion inputs, contiguous tensors of the
concrete shapes for intermediates), or, when `should_merge` is given, `should_merge(a, b)`.
Only producer/consumer pairs merge; siblings that merely share an input stay apart, except a
group holding a `partial_sum` (`split-reductions`): after the final merge it merges with a
sibling that reads one of its inputs where a scheduler takes the union (the `inner_outer` one,
so that layer norm's dw and db partial sums share the read of dy with dx); then the groups that
read the results of one such group (the sums that finish its partials) merge with each other
where a scheduler takes the union (one finishing kernel for layer norm's dw and db).

**Forwarded unary chains.** A unary op (`neg`, `exp`, ..., `gelu`, `cast`, `set`, `permute`,
`squeeze`; not `segment_set`, not `broadcast_in_dim`) whose operand is a fusion input, or the
result of a forwarded op that has no other use, is *forwarded*, unless its result is a fusion
output or is read by a `segment_set` or a `matmul` (whose kernel reads its operands as they are
in memory). Forwarded ops form no group: each segment that reads the chain's value recomputes
the chain from the fusion input, so, e.g., an f32 copy of a bf16 input is never materialized
between two segments (nvFuser's `forwardInputs`).

**Stream-parallel ops** (`fusion.stream_axis`, see `lower_stream_parallel`) are never
forwarded, and a group holding one merges only with groups of stream-parallel ops whose stream
axes map (`slice_fusion` of the union succeeds); the schedulers are asked about one slice of
such a union, and `segment_calls` gives a stream-parallel segment's slice.

**Scalars and extents.** Segments yield tensors only. Constants and scalar ops are cloned into
each segment that uses them; scalar fusion inputs become segment inputs. Every `fusion.dim` is
first rewritten to take a fusion input of the same extent (extents are equal when the typing
rules make them so: pointwise operands and result, kept dims of a reduction, `broadcast_in_dim`'s
carried dims and `sizes`, the dims `permute` and `squeeze` renumber, matmul's M/N/K/batch dims,
`fusion.dim` itself, static extents).
Inside a segment, an extent is recomputed by `fusion.dim` from the tensor it names when the
segment has it, else from any tensor input of the segment with that extent, else the fusion
input it names (the tensor it names, where no fusion input has the extent) is passed to the
segment as one more input, read only for its extent (schedulers
read only the inputs the outputs need, so the kernel takes its pointer and never loads it).
Segments therefore never take `index` arguments, and `segment_as_fusion` of a segment is a
`fusion.fusion` that the schedulers accept as it is.

**Reshapes, slices and iotas** stay between segments: no group holds them, and a segment takes one
as an input (a reshape or slice is a view of the tensor it reshapes or slices, an iota a constant
the host program computes, after the tensor whose extent its length is). `_copy_for_views` first
copies what a view cannot give: an input no strides can view in the new shape, and an output that
is a view of a segment's result and would share memory with another output, or of an iota, or
would be a slice (holding the memory of the whole tensor sliced).

**Returned views of inputs.** An output that is a fusion input seen through reshapes, slices and
permutes (`input_view_chain`; a permute there read by nothing else), whose reshapes the input's
strides can give, and where no `alias_input` writes it or into its input
(`returned_view_chains`), is returned as a view of the input, as nvFuser aliases it: no kernel
computes it, and those ops (`input_views`, the permutes too) stay between segments for the host
program to take as views (`host.reshape`, `host.slice`, `host.permute`). A fusion of such
outputs only has no segment at all.

A `segment_set` that ends a segment becomes a `fusion.set` inside it: the segment op is the
boundary now. Dead ops are erased first.

With `should_merge` (or `fuser-segment{merge=<rule>}`, see `segment_rules`), no scheduler is
queried at all (not even for the whole fusion), every segment names the scheduler `""`, and the
Welford translation is off, as in nvFuser when `custom_should_merge_groups` is set.

**Welford translation** (`translate_welford`). Once the segments are final (the whole fusion,
when one kernel holds it), each segment holding a `welford` or `var_mean` is asked about as a
fusion of its own (`translate_welford.decide`): if the persistent scheduler accepts its two-pass
form (sum, divide, subtract, square, sum), and `AUTO_TRANSLATE` wants it, the segment's
Welford ops are rewritten so and the segment names the persistent scheduler; otherwise (a row
too long for registers, a reduction over outer dims: a grid reduction) it keeps the one-pass
Welford. The log says which and why; a translated segment also carries the reason as its
`fuser.welford` attribute. Segment boundaries never change. `welford=always` translates every
Welford op before segmenting, `welford=never` none.

The log (`FUSER_DUMP=segmenter_log`) has a line for the whole-fusion attempt, the forwarded
chains, the initial groups, each candidate merge (the scheduler that accepted it, or every
scheduler's reason, or why it was refused before asking) and the resulting segments.

Options of the pass:
- `shapes`, `arch`, `sm_count`: as `fuser-schedule` (the concrete shapes of the tensor inputs).
  `shapes` may be omitted for static shapes, or with a `merge` rule (merges are then ordered by
  block order only).
- `merge`: the name of a merge rule in `segment_rules.MERGE_RULES` (`none`,
  `standalone-host-ops`); empty (the default) asks the schedulers.
- `welford`: `auto` (the default), `always` or `never`: the Welford translation (above).
Fusions that already hold `fusion.segment` ops are left as they are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, ModuleOp, StringAttr, TensorType, i64
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.dialects.kernel import byte_size
from fuser.dialects.views import (
    ReshapeError,
    permute_view,
    reshape_view,
    slice_view,
    view_alignment,
)
from fuser.errors import CompilationError
from fuser.transforms.schedule import (
    RECORDED_SHAPES,
    ScheduleOptionError,
    device_options,
    format_shapes,
    fusion_info,
    recorded_shapes,
    renamed_option_error,
)
from fuser.transforms.schedulers import SCHEDULERS
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.info import (
    DEFAULT_ARCH,
    DEFAULT_SM_COUNT,
    FusionInfo,
    TensorMeta,
)
from fuser.transforms.schedulers.shapes import ShapeMismatch, value_shapes
from fuser.transforms.segment_rules import GroupView, MergePredicate, merge_rule
from fuser.transforms.stream_slicing import StreamSliceError, StreamSlicing, slice_fusion
from fuser.transforms.translate_welford import (
    Decision,
    check_mode,
    decide,
    translate_region,
    welford_ops,
)

__all__ = [
    "GroupView",
    "MergePredicate",
    "SegmentCall",
    "SegmentFusionPass",
    "SegmentOptionError",
    "SegmentationError",
    "SegmentedFusion",
    "segment_as_fusion",
    "segment_calls",
    "segment_fusion",
]


class SegmentOptionError(DiagnosticException):
    """A `fuser-segment` option that is malformed or does not fit the module."""


class SegmentationError(CompilationError, DiagnosticException):
    """A fusion that cannot be segmented: an op that no scheduler accepts even on its own."""


# --------------------------------------------------------------------------------------------
# Results and the public helpers on segments
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentedFusion:
    """What `segment_fusion` did: the rewritten fusion, its segments and the log."""

    fusion: fu.FusionOp
    segments: tuple[fu.SegmentOp, ...]
    """In topological (= block) order."""
    log: tuple[str, ...]
    custom_merge: bool
    """A `should_merge` predicate chose the segments: no scheduler was asked, the segments name
    the scheduler "" and the Welford translation is off."""

    @property
    def schedulers(self) -> tuple[str, ...]:
        """The scheduler each segment names, in order."""
        return tuple(s.scheduler.data for s in self.segments)


@dataclass(frozen=True)
class SegmentCall:
    """One segment of a segmented fusion, ready to schedule: its standalone fusion, the metadata
    of its inputs for one call, and the shapes of its outputs. For a stream-parallel segment
    these are those of one slice, and `stream` says how the segment is sliced."""

    segment: fu.SegmentOp
    fusion: fu.FusionOp
    info: FusionInfo
    output_shapes: tuple[tuple[int, ...], ...]
    stream: StreamSlicing | None = None


def segment_as_fusion(segment: fu.SegmentOp, name: str) -> fu.FusionOp:
    """The segment's body as a standalone, verified `fusion.fusion @name`: inputs are the block
    arguments, outputs the yielded values (a `segment_set` in it becomes a `set`). This is what
    a scheduler is asked about and what gets scheduled."""
    for i, arg in enumerate(segment.body.block.args):
        if not isinstance(arg.type, TensorType) and arg.type not in fu.ELEMENT_TYPES:
            raise SegmentationError(
                f"segment_as_fusion: input #{i} of the segment has type {arg.type}; a segment "
                "whose extents come from its tensor inputs (as fuser-segment makes them) is "
                "needed"
            )
    region = segment.body.clone()
    block = region.block
    for op in list(block.ops):
        if isinstance(op, fu.SegmentSetOp):
            copy = fu.SetOp(op.input)
            block.insert_op_before(copy, op)
            copy.result.name_hint = op.result.name_hint
            op.result.replace_all_uses_with(copy.result)
            block.erase_op(op)
    terminator = block.last_op
    assert isinstance(terminator, fu.YieldOp)
    values = list(terminator.values)
    block.insert_op_before(fu.OutputOp(values), terminator)
    block.erase_op(terminator)
    fusion = fu.FusionOp(name, [a.type for a in block.args], [v.type for v in values], region)
    fusion.verify()
    return fusion


def segment_calls(fusion: fu.FusionOp, info: FusionInfo) -> list[SegmentCall]:
    """For a segmented fusion and the metadata of its inputs: each segment's standalone fusion
    (`<fusion>_s<k>`), `FusionInfo` (fusion inputs keep their metadata, segment results are
    contiguous, 16-byte aligned tensors) and output shapes, in order. While an analysis cache is
    open (the compiler's program keeps one: its segmented fusion is final), they are computed
    once per `info`, on standalone segments cloned and verified once."""
    return list(memoized("segment_calls", (fusion, info), lambda: _segment_calls(fusion, info)))


def _segment_calls(fusion: fu.FusionOp, info: FusionInfo) -> tuple[SegmentCall, ...]:
    metas: dict[SSAValue, TensorMeta | None] = dict(zip(fusion.inputs, info.inputs, strict=True))
    calls: list[SegmentCall] = []
    for standalone in _standalone_segments(fusion):
        for a in standalone.args:
            if a not in metas:  # a view (of an input, a segment's result, a view) or an iota
                _view_metas(a, metas)
        segment, seg_fusion, stream = standalone.segment, standalone.fusion, standalone.stream
        seg_info = FusionInfo(tuple(metas[a] for a in standalone.args), info.device)
        env = value_shapes(seg_fusion, seg_info.input_shapes)
        shapes = tuple(_tuple_shape(env[v]) for v in seg_fusion.output_op.values)
        for result, shape in zip(standalone.outputs, shapes, strict=True):
            metas[result] = TensorMeta.contiguous(shape)
        if stream is not None:  # scheduled on one slice
            seg_fusion, seg_info = stream.sliced, stream.slice_info(seg_info)
            shapes = stream.slice_shapes(shapes)
        calls.append(SegmentCall(segment, seg_fusion, seg_info, shapes, stream))
    for chain in returned_view_chains(fusion):  # a view of an input: its strides must give it
        if chain[0].results[0] not in metas:
            _view_metas(chain[0].results[0], metas)
    return tuple(calls)


class NotAViewError(SegmentationError):
    """A `fusion.reshape` between segments whose operand no strides can view in its shape
    for these inputs (a program segmented for other strides, which copied none)."""


def view_meta(
    op: fu.ReshapeOp | fu.SliceOp | fu.PermuteOp, source: TensorMeta
) -> TensorMeta | None:
    """The metadata of `op`'s result as a view of an operand with `source`'s, or None where
    strides cannot give it (a reshape; a slice or permute always can). Raises ReshapeError
    where a reshape's element counts differ."""
    if isinstance(op, fu.PermuteOp):
        shape, strides = permute_view(op.source_dims, source.shape, source.strides)
        return TensorMeta(shape, strides, source.alignment)
    if isinstance(op, fu.SliceOp):
        shape, strides, offset = slice_view(*op.bounds(), source.shape, source.strides)
        offset_bytes = offset * byte_size(fu.element_type(op.input.type))
        return TensorMeta(shape, strides, view_alignment(source.alignment, offset_bytes))
    shape, strides = reshape_view(op.target(source.shape), source.shape, source.strides)
    return None if strides is None else TensorMeta(shape, strides, source.alignment)


def _view_metas(view: SSAValue, metas: dict[SSAValue, TensorMeta | None]) -> None:
    """Adds the metadata of the view `view` (a reshape's, slice's or returned permute's result,
    and the views it is taken of) to `metas`, which holds that of the tensor they view (an
    iota's is contiguous). Raises NotAViewError where strides cannot give a reshape."""
    op = view.owner
    if isinstance(op, fu.IotaOp):  # the host's contiguous constant
        metas[view] = TensorMeta.contiguous((_iota_length(op, metas),))
        return
    assert isinstance(op, INPUT_VIEW_OPS), "a view's operand is an input, segment or view"
    source = op.input
    if source not in metas:
        _view_metas(source, metas)
    meta = metas[source]
    assert meta is not None
    try:
        result = view_meta(op, meta)
    except ReshapeError as e:
        raise ShapeMismatch(f"'{op.name}' {e}") from None
    if result is None:
        raise NotAViewError(
            f"'{op.name}' of a {list(meta.shape)} tensor with strides {list(meta.strides)}: no "
            "strides give it in its new shape"
        )
    metas[view] = result


def _sliced(v: SSAValue) -> bool:
    """Whether a slice is among the views `v` is taken through."""
    while isinstance(v, OpResult) and isinstance(v.op, fu.VIEW_OPS):
        if isinstance(v.op, fu.SliceOp):
            return True
        v = v.op.input
    return False


def _iota_length(op: fu.IotaOp, metas: dict[SSAValue, TensorMeta | None]) -> int:
    """The extent of an iota between segments: static, or that of the `fusion.dim` it takes
    (of a tensor whose metadata `metas` holds or can view)."""
    dim = op.length_dim()
    if dim is None:
        return op.result.type.get_shape()[0]
    if dim.input not in metas:
        _view_metas(dim.input, metas)
    meta = metas[dim.input]
    assert meta is not None
    return meta.shape[dim.axis.value.data]


class _Standalone(NamedTuple):
    """A segment as a fusion of its own (and its slicing), with the segment's operands and
    results read from the IR once."""

    segment: fu.SegmentOp
    fusion: fu.FusionOp
    stream: StreamSlicing | None
    args: tuple[SSAValue, ...] = ()
    outputs: tuple[SSAValue, ...] = ()


def _standalone_segments(fusion: fu.FusionOp) -> tuple[_Standalone, ...]:
    """Each segment of a segmented fusion as a verified fusion of its own, and how it is
    sliced: they depend on the IR alone, so under an open analysis cache (whose caller vouches
    that `fusion` is not rewritten) they are cloned and verified once, and every new shape is
    scheduled on the same standalone fusions (and their kept analyses)."""

    def build() -> tuple[_Standalone, ...]:
        found: list[_Standalone] = []
        segments = (s for s in fusion.body.block.ops if isinstance(s, fu.SegmentOp))
        for k, segment in enumerate(segments):
            seg_fusion = segment_as_fusion(segment, f"{fusion.sym_name.data}_s{k}")
            found.append(
                _Standalone(
                    segment,
                    seg_fusion,
                    slice_fusion(seg_fusion),
                    tuple(segment.args),
                    tuple(segment.outputs),
                )
            )
        return tuple(found)

    return memoized("standalone_segments", fusion, build)


def _tuple_shape(shape: tuple[int, ...] | int | None) -> tuple[int, ...]:
    assert isinstance(shape, tuple)
    return shape


# --------------------------------------------------------------------------------------------
# Analysis: op kinds, equal extents
# --------------------------------------------------------------------------------------------

_FORWARDABLE = (fu.UnaryOp, fu.UnaryTestOp, fu.GeluOp, fu.CastOp, fu.SetOp, fu.RenumberOp)
"""Unary ops a chain from a fusion input may consist of (SegmentSetOp is not a SetOp): a
permute or squeeze of an input is read through by each segment that uses it."""

_Key = tuple[object, int]


class Extents:
    """Union-find over extents: (tensor value, axis), (index value, -1) and ("static", n).
    Two extents are in one class when the typing rules make them equal (see the module
    docstring), given the fusion's inputs and its ops."""

    def __init__(self, inputs: Sequence[SSAValue], ops: Sequence[Operation]):
        self.parent: dict[_Key, _Key] = {}
        for arg in inputs:
            self._static(arg)
        for op in ops:
            for r in op.results:
                self._static(r)
            self._relate(op)

    def find(self, k: _Key) -> _Key:
        root = k
        while (p := self.parent.get(root, root)) != root:
            root = p
        while (p := self.parent.get(k, k)) != root:
            self.parent[k] = root
            k = p
        return root

    def union(self, a: _Key, b: _Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb

    def _static(self, v: SSAValue) -> None:
        if isinstance(v.type, TensorType):
            for axis, e in enumerate(v.type.get_shape()):
                if e != DYNAMIC_INDEX:
                    self.union((v, axis), ("static", e))

    def _relate(self, op: Operation) -> None:
        if isinstance(op, fu.DimOp):
            self.union((op.result, -1), (op.input, op.axis.value.data))
        elif isinstance(op, fu.RandomOp):
            for size, d in zip(op.sizes, op.sized_dims(), strict=True):
                self.union((size, -1), (op.result, d))
        elif isinstance(op, fu.BroadcastInDimOp):
            sized = op.sized_dims()
            for size, d in zip(op.sizes, sized, strict=True):
                self.union((size, -1), (op.result, d))
            in_shape = fu.shape_of(op.input.type) or ()
            out_shape = fu.shape_of(op.result.type) or ()
            for i, d in enumerate(op.dims):
                # A dynamic operand dim may be 1 at run time under a static result dim.
                if in_shape[i] != 1 and out_shape[d] == DYNAMIC_INDEX and d not in sized:
                    self.union((op.input, i), (op.result, d))
        elif isinstance(op, fu.ReductionOp | fu.VarMeanOp | fu.WelfordOp):
            axes = tuple(op.axes.get_values())
            keep = getattr(op, "keepdim", None) is not None
            rank = len(fu.shape_of(op.input.type) or ())
            kept = [i for i in range(rank) if i not in axes]
            for r in op.results:
                for j, i in enumerate(kept):
                    self.union((op.input, i), (r, i if keep else j))
        elif isinstance(op, fu.TopkOp):  # the k along its dim is static
            for axis in range(len(fu.shape_of(op.input.type) or ())):
                if axis != op.axis:
                    self.union((op.input, axis), (op.values, axis))
                    self.union((op.input, axis), (op.indices, axis))
        elif isinstance(op, fu.RenumberOp):
            for i, j in enumerate(op.source_dims):
                self.union((op.input, j), (op.result, i))
        elif isinstance(op, fu.ReshapeOp):
            for d in op.kept_dims:  # the operand's extent; others are static or inferred
                self.union((op.input, d), (op.result, d))
        elif isinstance(op, fu.VIEW_OPS):
            pass  # a slice's extents follow from its bounds
        elif isinstance(op, fu.ResizeOp):
            for operand, offsets in op.placements():  # resized dims are static
                for axis in range(len(fu.shape_of(operand.type) or ())):
                    if axis not in offsets:
                        self.union((operand, axis), (op.result, axis))
        elif isinstance(op, fu.IotaOp):
            if op.length is not None:
                self.union((op.length, -1), (op.result, 0))
        elif isinstance(op, fu.TakeOp):
            d, r = op.axis, op.index_rank
            for axis in range(len(fu.shape_of(op.input.type) or ())):
                if axis != d:
                    self.union((op.input, axis), (op.result, axis if axis < d else axis - 1 + r))
            for k in range(r):
                self.union((op.index, k), (op.result, d + k))
        elif isinstance(op, fu.TakeAlongAxisOp):
            for axis in range(len(fu.shape_of(op.index.type) or ())):
                self.union((op.index, axis), (op.result, axis))
                if axis != op.axis:
                    self.union((op.input, axis), (op.result, axis))
        elif isinstance(op, fu.PartialSumOp):
            rank = len(fu.shape_of(op.input.type) or ())
            for i in range(rank):
                if i != op.axis:
                    self.union((op.input, i), (op.result, i))
        elif isinstance(op, fu.MatmulOp):
            rank = len(fu.shape_of(op.lhs.type) or ())
            at = 0 if op.split_count is None else 1  # a split-K partial leads with the splits
            for d in range(rank - 2):
                self.union((op.lhs, d), (op.result, d + at))
                self.union((op.rhs, d), (op.result, d + at))
            self.union((op.lhs, rank - 2), (op.result, rank - 2 + at))
            self.union((op.rhs, rank - 1), (op.result, rank - 1 + at))
            self.union((op.lhs, rank - 1), (op.rhs, rank - 2))
        else:  # pointwise: tensor operands have the result's shape at run time
            for r in op.results:
                if not isinstance(r.type, TensorType):
                    continue
                for o in op.operands:
                    if isinstance(o.type, TensorType):
                        for axis in range(o.type.get_num_dims()):
                            self.union((o, axis), (r, axis))

    def same(self, a: _Key, b: _Key) -> bool:
        """Whether extents `a` and `b` are equal by the typing rules."""
        return self.find(a) == self.find(b)

    def find_axis(self, key: _Key, tensors: Iterable[SSAValue]) -> tuple[SSAValue, int] | None:
        """The first (tensor, axis) among `tensors` whose extent equals `key`'s, or None."""
        root = self.find(key)
        for t in tensors:
            if isinstance(t.type, TensorType):
                for axis in range(t.type.get_num_dims()):
                    if self.find((t, axis)) == root:
                        return t, axis
        return None


INPUT_VIEW_OPS = (*fu.VIEW_OPS, fu.PermuteOp)
"""Ops through which a fusion output may be a view of a fusion input (returned as one)."""


def input_view_chain(v: SSAValue) -> list[Operation] | None:
    """The reshapes, slices and permutes (output first) through which `v` is a view of a
    fusion input, each permute's result read by the next of them (or the output) only; None
    where `v` is no such view. The program returns such an output as a view of the input (as
    nvFuser aliases it), where the reshapes can view the input's strides."""
    chain: list[Operation] = []
    while isinstance(v, OpResult) and isinstance(v.op, INPUT_VIEW_OPS):
        if isinstance(v.op, fu.PermuteOp) and any(
            u.operation is not chain[-1] if chain else not isinstance(u.operation, fu.OutputOp)
            for u in v.uses
        ):
            return None  # also read by a kernel, which reads through the permute
        chain.append(v.op)
        v = v.op.input
    return chain if chain and isinstance(v, BlockArgument) else None


def returned_view_chains(
    fusion: fu.FusionOp, info: FusionInfo | None = None
) -> list[list[Operation]]:
    """The `input_view_chain` of each output returned as a view of a fusion input: one that no
    `alias_input` writes into an input (written back, it must be a tensor of its own), of an
    input that no output is written into (the view would show the values written after the
    run), and, for `info`, whose reshapes the input's strides give."""
    output = fusion.output_op
    aliases = output.alias_inputs()
    written = {v for v, i in zip(output.values, aliases, strict=True) if i is not None}
    targets = {i for i in aliases if i is not None}
    chains: list[list[Operation]] = []
    for v in dict.fromkeys(output.values):
        chain = input_view_chain(v) if v not in written else None
        if chain is None:
            continue
        root = chain[-1].operands[0]
        assert isinstance(root, BlockArgument)
        if root.index in targets:
            continue
        if info is not None:
            metas: dict[SSAValue, TensorMeta | None] = {root: info.inputs[root.index]}
            try:
                _view_metas(v, metas)
            except (NotAViewError, ShapeMismatch):
                continue  # copied (a reshape no strides give), or segmenting names the op
        chains.append(chain)
    return chains


def returned_view_outputs(fusion: fu.FusionOp, info: FusionInfo) -> frozenset[int]:
    """The positions of the outputs of (unsegmented) `fusion` returned as views for `info`:
    a program is reused for another signature only where they are the same."""
    heads = {chain[0].results[0] for chain in returned_view_chains(fusion, info)}
    return frozenset(i for i, v in enumerate(fusion.output_op.values) if v in heads)


def view_root(v: SSAValue) -> SSAValue:
    """The tensor `v` is a view of through reshapes and slices (`v` itself if it is no
    view's)."""
    while isinstance(v, OpResult) and isinstance(v.op, fu.VIEW_OPS):
        v = v.op.input
    return v


def tensor_sources(v: SSAValue) -> list[SSAValue]:
    """The tensors a segment reading `v` depends on: the one `v` views (`view_root`), and, for
    an iota, the tensor whose extent its length is (which must be computed first)."""
    root = view_root(v)
    sources = [root]
    if isinstance(root, OpResult) and isinstance(root.op, fu.IotaOp):
        dim = root.op.length_dim()
        if dim is not None:
            sources += tensor_sources(dim.input)
    return sources


def _read_tensors(op: Operation) -> list[SSAValue]:
    """The operands of `op`, with the tensor a `fusion.dim` operand takes its extent from in
    place of that extent (a segment reads that tensor for it, see `_Segmenter._plan`)."""
    return [
        o.op.input if isinstance(o, OpResult) and isinstance(o.op, fu.DimOp) else o
        for o in op.operands
    ]


def _erase_dead_ops(block: Block) -> None:
    """Erases ops none of whose results is used (every fusion op is pure), last first."""
    for op in reversed(list(block.ops)):
        if op.results and all(not r.uses for r in op.results):
            block.erase_op(op)


def _value_key(index: dict[Operation, int], v: SSAValue) -> tuple[int, int, int]:
    """Orders values: fusion inputs by position, then op results by block order."""
    if isinstance(v, BlockArgument):
        return (0, v.index, 0)
    assert isinstance(v, OpResult)
    return (1, index[v.op], v.index)


def _op_label(op: Operation) -> str:
    """`sum %r` (the op without its dialect, and its first result's name)."""
    name = op.name.removeprefix("fusion.")
    hint = op.results[0].name_hint if op.results else None
    return f"{name} %{hint}" if hint else name


def _byte_size(v: SSAValue, shapes: dict[SSAValue, tuple[int, ...] | int | None] | None) -> int:
    if shapes is None or not isinstance(v.type, TensorType):
        return 0
    shape = shapes.get(v)
    if not isinstance(shape, tuple):
        return 0
    return math.prod(shape) * kernel.byte_size(v.type.element_type)


# --------------------------------------------------------------------------------------------
# Groups and the segmenter
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Group:
    """A set of ops that becomes one segment (identity-compared)."""

    id: int
    ops: frozenset[Operation]
    first: int
    """The block position of its first op (orders groups deterministically)."""


@dataclass
class _Plan:
    """How a set of ops becomes a segment body: what to clone, in block order, and its inputs."""

    ops: list[Operation]
    dims: dict[Operation, tuple[SSAValue, int]]
    """`fusion.dim` ops recomputed from another tensor input of the segment (tensor, axis)."""
    inputs: list[SSAValue]


@dataclass
class _Layout:
    """The final segments: groups in topological order, each one's plan and outputs (the
    fusion's outputs first, in their order, then the intermediates others read)."""

    order: list[_Group]
    plans: dict[_Group, _Plan]
    outputs: dict[_Group, list[SSAValue]]


_Edges = dict[_Group, dict[_Group, list[SSAValue]]]


_Pair = tuple[_Group, _Group]


def _holds_partial_sum(g: _Group) -> bool:
    return any(isinstance(op, fu.PartialSumOp) for op in g.ops)


class _Segmenter:
    """The state of one `segment_fusion` call."""

    def __init__(
        self,
        fusion: fu.FusionOp,
        info: FusionInfo | None,
        should_merge: MergePredicate | None,
        log: list[str],
        welford: str = "auto",
    ):
        self.welford = welford
        self.welford_decisions: dict[_Group, Decision] = {}
        """The Welford translation decided for each segment with Welford ops (`welford=auto`)."""
        self.fusion = fusion
        self.name = fusion.sym_name.data
        self.info = info
        self.should_merge = should_merge
        self.log = log
        self.block = fusion.body.block
        self.input_views = frozenset(
            op for chain in returned_view_chains(fusion, info) for op in chain
        )
        """The ops of the outputs returned as views of fusion inputs (see `_copy_for_views`)."""
        self._copy_for_views()
        body = [op for op in self.block.ops if not isinstance(op, fu.OutputOp)]
        self.extents = Extents(fusion.inputs, body)
        self._canonicalize_dims(body)
        _erase_dead_ops(self.block)
        self.ops = [op for op in self.block.ops if not isinstance(op, fu.OutputOp)]
        self.index = {op: i for i, op in enumerate(self.ops)}
        self.outputs = list(fusion.output_op.values)
        self.forwarded = self._find_forwarded()
        self.compute = [op for op in self.ops if self._is_compute(op)]
        self.shapes: dict[SSAValue, tuple[int, ...] | int | None] | None = None
        if info is not None:
            try:
                self.shapes = value_shapes(fusion, info.input_shapes)
            except ShapeMismatch as e:
                raise SegmentationError(f"fusion @{self.name}: {e}") from e
        self.groups: list[_Group] = []
        self.group_of: dict[Operation, _Group] = {}
        self.next_id = 0
        self.verdicts: dict[frozenset[Operation], str | None] = {}
        self.cycles: set[str] = set()

    # --- reshapes --------------------------------------------------------------------------

    def _copy_for_views(self) -> None:
        """Inserts the copies (`fusion.set`) that let every `fusion.reshape` be a view between
        segments: of a fusion input (or a view of one) that no strides can view in the new
        shape for `info` (one copy per tensor copied), and after a reshape that a fusion
        output is, where the view would share memory with an input or another output (an
        output is a tensor of its own). An output that is an iota (or a view of one) is
        copied too: the host program's iota is a constant that every call shares; and one that
        is a slice (or a view of one): it would hold the memory of the whole tensor sliced.

        An output that is a view of a fusion input (`input_view_chain`), whose reshapes can view
        the input's strides for `info`, is not copied: the program returns a view of the input
        (nvFuser's aliasing). Its ops (`input_views`, permutes too) stay between segments."""
        copies: dict[SSAValue, SSAValue] = {}
        for op in list(self.block.ops):
            if (
                isinstance(op, fu.ReshapeOp)
                and op not in self.input_views
                and not self._viewable(op)
            ):
                source = op.input
                if source not in copies:
                    copy = fu.SetOp(source)
                    self.block.insert_op_before(copy, op)
                    copy.result.name_hint = f"{source.name_hint or 'x'}_copy"
                    copies[source] = copy.result
                op.operands = (copies[source],)
        output = self.fusion.output_op
        roots: set[SSAValue] = set(output.operands)
        for i, v in enumerate(output.operands):
            if isinstance(v, OpResult) and v.op in self.input_views:
                continue
            root = view_root(v)
            is_iota = isinstance(root, OpResult) and isinstance(root.op, fu.IotaOp)
            if root is v and not is_iota:
                continue
            if isinstance(root, BlockArgument) or root in roots or is_iota or _sliced(v):
                copy = fu.SetOp(v)
                self.block.insert_op_before(copy, output)
                copy.result.name_hint = f"{v.name_hint or 'out'}_copy"
                output.operands = (*output.operands[:i], copy.result, *output.operands[i + 1 :])
            else:
                roots.add(root)

    def _viewable(self, op: fu.ReshapeOp) -> bool:
        """Whether `op`'s operand can be viewed in its shape for `info`: the views from a fusion
        input (by its strides) or from a contiguous segment result or iota, checked in block
        order (a slice between may leave strides no reshape can merge)."""
        root = view_root(op.input)
        if self.info is None:
            return True
        if isinstance(root, BlockArgument):
            meta = self.info.inputs[root.index]
        else:
            try:  # (before the copies: the shapes of what is here already)
                shape = value_shapes(self.fusion, self.info.input_shapes)[root]
            except ShapeMismatch:
                return True  # segmenting names the op
            assert isinstance(shape, tuple)
            meta = TensorMeta.contiguous(shape)
        metas: dict[SSAValue, TensorMeta | None] = {root: meta}
        try:
            _view_metas(op.result, metas)
        except NotAViewError:
            return False
        except ShapeMismatch:
            return True  # value_shapes names the op
        return True

    # --- classification ------------------------------------------------------------------

    def _canonicalize_dims(self, body: Sequence[Operation]) -> None:
        """Points every `fusion.dim` at a fusion input of the same extent, where one has it,
        else at a view of a fusion input defined before it (a reshape or slice: no kernel
        computes it), so that no segment result is materialized only for its extent."""
        views: list[SSAValue] = []
        for op in body:
            if isinstance(op, fu.VIEW_OPS) and isinstance(view_root(op.results[0]), BlockArgument):
                views.append(op.results[0])
            if isinstance(op, fu.DimOp) and not isinstance(op.input, BlockArgument):
                key = (op.result, -1)
                found = self.extents.find_axis(key, self.fusion.inputs)
                if found is None and op.input not in views:
                    found = self.extents.find_axis(key, views)
                if found is not None:
                    op.operands = (found[0],)
                    op.axis = IntegerAttr(found[1], i64)

    def _is_compute(self, op: Operation) -> bool:
        """An op that forms a group: one with a tensor result that is not forwarded (nor a
        reshape, an iota or a returned view of an input: those stay between segments)."""
        return (
            op not in self.forwarded
            and op not in self.input_views
            and not isinstance(op, (fu.DimOp, fu.IotaOp, *fu.VIEW_OPS))
            and any(isinstance(r.type, TensorType) for r in op.results)
        )

    def _find_forwarded(self) -> set[Operation]:
        outputs = set(self.outputs)
        forwarded: set[Operation] = set()
        for op in self.ops:
            if not isinstance(op, _FORWARDABLE) or not isinstance(op.input.type, TensorType):
                continue
            if fu.stream_axis(op) is not None:  # the user asked for its (sliced) result
                continue
            source = op.input
            fed = isinstance(source, BlockArgument) or (
                isinstance(source, OpResult) and source.op in forwarded and source.has_one_use()
            )
            result = op.results[0]
            # a segment_set or matmul reads it as a tensor (a matmul kernel takes no prologue),
            # a reshape views it between segments
            materialized = any(
                isinstance(u.operation, (fu.SegmentSetOp, fu.MatmulOp, *fu.VIEW_OPS))
                for u in result.uses
            )
            if fed and result not in outputs and not materialized:
                forwarded.add(op)
        return forwarded

    def _kind(self, op: Operation) -> str:
        if op in self.input_views:
            return "view"
        if op in self.forwarded:
            return "forwarded"
        if isinstance(op, fu.DimOp):
            return "dim"
        if isinstance(op, (fu.IotaOp, *fu.VIEW_OPS)):
            return "view"  # a tensor between segments that no segment computes
        if not any(isinstance(r.type, TensorType) for r in op.results):
            return "scalar"
        return "compute"

    # --- plans and bodies ------------------------------------------------------------------

    def _plan(self, members: frozenset[Operation]) -> _Plan:
        """What a segment of the compute ops `members` clones and takes as inputs."""
        cloned: set[Operation] = set(members)
        inputs: set[SSAValue] = set()
        dims: list[Operation] = []

        def need(v: SSAValue) -> None:
            if isinstance(v, BlockArgument):
                inputs.add(v)
                return
            assert isinstance(v, OpResult)
            op = v.op
            if op in cloned:
                return
            kind = self._kind(op)
            if kind in ("compute", "view"):
                inputs.add(v)
            elif kind == "dim":
                if op not in dims:
                    dims.append(op)
            else:
                cloned.add(op)
                for o in op.operands:
                    need(o)

        for op in sorted(members, key=self.index.__getitem__):
            for o in op.operands:
                need(o)
        recomputed: dict[Operation, tuple[SSAValue, int]] = {}
        tensor_inputs = sorted(inputs, key=lambda v: _value_key(self.index, v))
        for d in sorted(dims, key=self.index.__getitem__):
            assert isinstance(d, fu.DimOp)
            x = d.input
            available = x in inputs or (isinstance(x, OpResult) and x.op in cloned)
            if not available:
                found = self.extents.find_axis((d.result, -1), tensor_inputs)
                if found is not None:
                    recomputed[d] = found
                else:
                    need(x)
            cloned.add(d)
        ops = sorted(cloned, key=self.index.__getitem__)
        return _Plan(ops, recomputed, sorted(inputs, key=lambda v: _value_key(self.index, v)))

    def _build_body(
        self, plan: _Plan, outputs: Sequence[SSAValue], terminator: type[fu.OutputOp | fu.YieldOp]
    ) -> Block:
        """A block whose arguments are the plan's inputs, with the plan's ops cloned into it."""
        block = Block(arg_types=[v.type for v in plan.inputs])
        mapping: dict[SSAValue, SSAValue] = {}
        for arg, v in zip(block.args, plan.inputs, strict=True):
            mapping[v] = arg
            arg.name_hint = v.name_hint
        for op in plan.ops:
            new: Operation
            if op in plan.dims:
                assert isinstance(op, fu.DimOp)
                source, axis = plan.dims[op]
                new = fu.DimOp(mapping[source], axis)
                mapping[op.result] = new.result
            elif isinstance(op, fu.SegmentSetOp):
                new = fu.SetOp(mapping[op.input])
                mapping[op.result] = new.result
            else:
                assert all(o in mapping for o in op.operands), f"unmapped operand of {op.name}"
                new = op.clone(mapping)
            for old_r, new_r in zip(op.results, new.results, strict=True):
                new_r.name_hint = old_r.name_hint
            block.add_op(new)
        block.add_op(terminator([mapping[v] for v in outputs]))
        return block

    def _check_outputs(self, members: frozenset[Operation]) -> list[SSAValue]:
        """The results of `members` used by other compute ops or the fusion's outputs, in the
        order `_layout` gives a final segment's (the fusion's outputs first, in their order):
        a scheduler's verdict may depend on it (the pointwise scheduler's reference output)."""
        outputs = set(self.outputs)
        used: list[SSAValue] = []
        for op in sorted(members, key=self.index.__getitem__):
            for r in op.results:
                if r in outputs or any(self._read_outside(u.operation, members) for u in r.uses):
                    used.append(r)
        first = [v for v in dict.fromkeys(self.outputs) if v in used]
        return first + [r for r in used if r not in first]

    def _read_outside(self, user: Operation, members: frozenset[Operation]) -> bool:
        """Whether `user` reads a value outside the segment of `members`: a compute op or a
        view of another segment, or the `fusion.dim` an iota between segments takes its length
        from."""
        if user in members or user not in self.index:
            return False
        if isinstance(user, fu.DimOp):
            return any(isinstance(u.operation, fu.IotaOp) for u in user.result.uses)
        return self._kind(user) in ("compute", "view")

    def _candidate(self, members: frozenset[Operation]) -> tuple[fu.FusionOp, FusionInfo]:
        """The union of `members` as a fusion of its own, with the metadata of its inputs."""
        plan = self._plan(members)
        fusion = self._as_fusion(plan, self._check_outputs(members), "candidate")
        return fusion, self._info_for(plan.inputs)

    def _as_fusion(self, plan: _Plan, outs: Sequence[SSAValue], role: str) -> fu.FusionOp:
        """The ops of `plan` yielding `outs` as a fusion of its own (`@<name>_<role>`)."""
        body = self._build_body(plan, outs, fu.OutputOp)
        types = [v.type for v in plan.inputs], [v.type for v in outs]
        return fu.FusionOp(f"{self.name}_{role}", *types, Region(body))

    def _info_for(self, inputs: Sequence[SSAValue]) -> FusionInfo:
        assert self.info is not None and self.shapes is not None
        metas: list[TensorMeta | None] = []
        for v in inputs:
            if not isinstance(v.type, TensorType):
                metas.append(None)
            elif isinstance(v, BlockArgument):
                metas.append(self.info.inputs[v.index])
            elif view_root(v) is not v:
                metas.append(self._view_meta(v))
            else:
                shape = self.shapes[v]
                assert isinstance(shape, tuple)
                metas.append(TensorMeta.contiguous(shape))
        return FusionInfo(tuple(metas), self.info.device)

    def _view_meta(self, view: SSAValue) -> TensorMeta:
        """The metadata of a reshape's result: a view of an input's, or of a contiguous
        segment result (`_copy_for_views` copied the inputs no strides can view)."""
        assert self.info is not None and self.shapes is not None
        root = view_root(view)
        if isinstance(root, BlockArgument):
            meta = self.info.inputs[root.index]
        else:
            shape = self.shapes[root]
            assert isinstance(shape, tuple)
            meta = TensorMeta.contiguous(shape)
        metas: dict[SSAValue, TensorMeta | None] = {root: meta}
        _view_metas(view, metas)
        result = metas[view]
        assert result is not None
        return result

    def _ask_schedulers(self, fusion: fu.FusionOp, info: FusionInfo) -> tuple[str | None, str]:
        """The first scheduler that accepts, or None and every scheduler's reason. A
        stream-parallel fusion is asked about as one slice."""
        try:
            stream = slice_fusion(fusion)
        except StreamSliceError as e:
            return None, f"rejected: {e}"
        if stream is not None:
            fusion, info = stream.sliced, stream.slice_info(info)
        reasons: list[str] = []
        for scheduler in SCHEDULERS:
            verdict = scheduler.accepts(fusion, info)
            if verdict:
                return scheduler.name, f"accepted by {scheduler.name}"
            reasons.append(f"{scheduler.name}: {verdict.reason}")
        return None, "rejected: " + "; ".join(reasons)

    # --- the group graph -------------------------------------------------------------------

    def _new_group(self, ops: frozenset[Operation]) -> _Group:
        group = _Group(self.next_id, ops, min(self.index[op] for op in ops))
        self.next_id += 1
        self.groups.append(group)
        for op in ops:
            self.group_of[op] = group
        return group

    def label(self, g: _Group) -> str:
        ops = sorted(g.ops, key=self.index.__getitem__)
        return f"g{g.id}{{{', '.join(_op_label(op) for op in ops)}}}"

    def _edges(self) -> _Edges:
        """Producer -> consumer -> the tensors between them (in block order; a reshape of the
        producer's result that the consumer reads, where there is one)."""
        edges: _Edges = {g: {} for g in self.groups}
        for g in self.groups:
            for op in sorted(g.ops, key=self.index.__getitem__):
                for o in _read_tensors(op):
                    # a view of another group's result is an edge too, as is the result an
                    # iota's length is the extent of
                    for root in tensor_sources(o):
                        if isinstance(root, OpResult) and root.op in self.group_of:
                            p = self.group_of[root.op]
                            if p is not g and o not in (values := edges[p].setdefault(g, [])):
                                values.append(o)
        return edges

    def _topological(self, edges: _Edges) -> list[_Group]:
        """Groups in topological order, earliest first op first among the ready ones."""
        indegree = {g: 0 for g in self.groups}
        for consumers in edges.values():
            for c in consumers:
                indegree[c] += 1
        ready = sorted((g for g, n in indegree.items() if n == 0), key=lambda g: g.first)
        order: list[_Group] = []
        while ready:
            g = ready.pop(0)
            order.append(g)
            for c in edges[g]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    ready.append(c)
            ready.sort(key=lambda g: g.first)
        if len(order) != len(self.groups):
            raise SegmentationError(f"fusion @{self.name}: the segments depend on each other")
        return order

    def _levels(self, edges: _Edges) -> dict[_Group, int]:
        levels: dict[_Group, int] = {}
        order = self._topological(edges)
        for g in order:
            levels.setdefault(g, 0)
            for c in edges[g]:
                levels[c] = max(levels.get(c, 0), levels[g] + 1)
        return levels

    def _edge_bytes(self, values: Sequence[SSAValue]) -> int:
        return sum(_byte_size(v, self.shapes) for v in values)

    def _path_through(self, edges: _Edges, a: _Group, b: _Group) -> _Group | None:
        """A group on a path from `a` to `b` other than the direct edge, or None."""
        stack = [c for c in edges[a] if c is not b]
        seen = set(stack)
        while stack:
            g = stack.pop()
            if b in edges[g]:
                return g
            for c in edges[g]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return None

    def _spanned_segment_set(self, members: frozenset[Operation]) -> Operation | None:
        for op in sorted(members, key=self.index.__getitem__):
            if isinstance(op, fu.SegmentSetOp) and any(
                u.operation in members for u in op.result.uses
            ):
                return op
        return None

    def _view(self, g: _Group) -> GroupView:
        plan = self._plan(g.ops)
        return GroupView(
            tuple(sorted(g.ops, key=self.index.__getitem__)),
            tuple(plan.inputs),
            tuple(self._check_outputs(g.ops)),
        )

    def _try_merge(self, a: _Group, b: _Group, edges: _Edges, phase: str) -> str | None:
        """The scheduler ("" for a predicate) that takes the union of `a` and `b`, or None."""
        members = a.ops | b.ops
        if members in self.verdicts and self.verdicts[members] is None:
            return None  # refused before (and logged then)
        what = f"{phase} {self.label(a)} + {self.label(b)}"
        for x, y in ((a, b), (b, a)):
            through = self._path_through(edges, x, y)
            if through is not None:  # not cached: a later merge may change the path
                message = f"{what}: refused: cycle through {self.label(through)}"
                if message not in self.cycles:
                    self.cycles.add(message)
                    self.log.append(message)
                return None
        if members in self.verdicts:  # each union is judged (and logged) once
            return self.verdicts[members]
        verdict: str | None
        spanned = self._spanned_segment_set(members)
        viewed = self._viewed_inside(members)
        if viewed is not None:
            verdict = None
            self.log.append(
                f"{what}: refused: {_op_label(viewed)} would lie inside (kernels read a reshape "
                "or slice as a view between segments, and an iota made before them)"
            )
        elif spanned is not None:
            verdict = None
            self.log.append(
                f"{what}: refused: the union would span {_op_label(spanned)} (its result is "
                "used inside)"
            )
        elif (refusal := self._stream_refusal(members)) is not None:
            verdict = None
            self.log.append(f"{what}: refused: {refusal}")
        elif self.should_merge is not None:
            verdict = "" if self.should_merge(self._view(a), self._view(b)) else None
            self.log.append(f"{what}: {'accepted' if verdict == '' else 'refused'} by should_merge")
        else:
            verdict, message = self._ask_schedulers(*self._candidate(members))
            self.log.append(f"{what}: {message}")
        self.verdicts[members] = verdict
        return verdict

    def _viewed_inside(self, members: frozenset[Operation]) -> Operation | None:
        """A reshape or slice that one of `members` reads and that views the result of another
        one, or an iota whose length is the extent of one, or None: such a union would be a
        kernel indexing through the view, or reading an iota the program makes after it."""
        for op in sorted(members, key=self.index.__getitem__):
            for o in _read_tensors(op):
                for source in tensor_sources(o):
                    if source is not o and isinstance(source, OpResult) and source.op in members:
                        return cast(Operation, o.owner)
        return None

    def _stream_refusal(self, members: frozenset[Operation]) -> str | None:
        """Why `members` may not be one segment as far as streams go, or None: stream-parallel
        ops share a segment only with stream-parallel ops whose axes map (`slice_fusion`)."""
        marked = sum(1 for op in members if fu.stream_axis(op) is not None)
        if marked == 0:
            return None
        if marked < len(members):
            return "it mixes stream-parallel and other ops"
        candidate = self._as_fusion(self._plan(members), self._check_outputs(members), "candidate")
        try:
            slice_fusion(candidate)
        except StreamSliceError as e:
            return str(e)
        return None

    def _merge(self, a: _Group, b: _Group) -> None:
        self.groups = [g for g in self.groups if g is not a and g is not b]
        self._new_group(a.ops | b.ops)

    # --- the phases ------------------------------------------------------------------------

    def run(self) -> tuple[_Layout, dict[_Group, str]]:
        """The final segments' layout and the scheduler of each."""
        if not self.compute:
            self.log.append(f"fusion @{self.name}: no ops to segment")
            return self._layout([]), {}
        segment_sets = [op for op in self.compute if isinstance(op, fu.SegmentSetOp)]
        if self.should_merge is not None:
            self.log.append("whole fusion: not tried: a should_merge predicate is set")
        elif segment_sets:
            self.log.append(f"whole fusion: not tried: it holds {_op_label(segment_sets[0])}")
        elif (refusal := self._stream_refusal(frozenset(self.compute))) is not None:
            self.log.append(f"whole fusion: not tried: {refusal}")
        elif (viewed := self._viewed_inside(frozenset(self.compute))) is not None:
            self.log.append(f"whole fusion: not tried: {_op_label(viewed)} views a result")
        else:
            # the whole fusion as its one segment would be (live ops, used inputs)
            whole = self._new_group(frozenset(self.compute))
            layout = self._layout([whole])
            scheduler, message = self._ask_schedulers(*self._segment_fusion(layout, whole))
            self.log.append(f"whole fusion: {message}")
            if scheduler is not None:
                return layout, self._translate_welfords(layout, {whole: scheduler})
            self.groups, self.group_of, self.next_id = [], {}, 0
        if self.forwarded:
            ops = sorted(self.forwarded, key=self.index.__getitem__)
            self.log.append(
                "forwarded (recomputed in each consumer segment): "
                + ", ".join(_op_label(op) for op in ops)
            )
        for op in self.compute:
            self._new_group(frozenset((op,)))
        self.log.append("initial groups: " + " ".join(self.label(g) for g in self.groups))
        self._level_merge()
        self._final_merge()
        self._partial_sum_merge()
        self._finish_merge()
        layout = self._layout(self.groups)
        return layout, self._translate_welfords(layout, self._name_schedulers(layout))

    def _level_merge(self) -> None:
        while True:
            edges = self._edges()
            levels = self._levels(edges)
            candidates = [
                (self._edge_bytes(values), p, c)
                for p, consumers in edges.items()
                for c, values in consumers.items()
                if abs(levels[c] - levels[p]) <= 1
            ]
            candidates.sort(key=lambda t: (-t[0], levels[t[1]], t[1].first, t[2].first))
            for _, p, c in candidates:
                if self._try_merge(p, c, edges, "merge") is not None:
                    self._merge(p, c)
                    break
            else:
                return

    def _final_merge(self) -> None:
        while True:
            edges = self._edges()
            merged = False
            for p in self._topological(edges):
                consumers = sorted(
                    edges[p].items(), key=lambda kv: (-self._edge_bytes(kv[1]), kv[0].first)
                )
                for c, _ in consumers:
                    if self._try_merge(p, c, edges, "final merge") is not None:
                        self._merge(p, c)
                        merged = True
                        break
                if merged:
                    break
            if not merged:
                return

    def _sibling_merges(
        self, phase: str, pairs: Callable[[_Edges, list[_Group]], list[_Pair]]
    ) -> None:
        """Merges the first pair of `pairs(edges, order)` a scheduler takes, again and again,
        until none merges (sibling groups: no edge between the two of a pair)."""
        while True:
            edges = self._edges()
            for a, b in pairs(edges, self._topological(edges)):
                if self._try_merge(a, b, edges, phase) is not None:
                    self._merge(a, b)
                    break
            else:
                return

    def _partial_sum_merge(self) -> None:
        """Each group holding a `partial_sum` merges with a sibling that reads one of its
        inputs (no edge between the two), where a scheduler takes the union: the column sums
        `split-reductions` split beside row sums then share one read of the rows."""

        def pairs(edges: _Edges, order: list[_Group]) -> list[_Pair]:
            return [
                (b, a)
                for a in order
                if _holds_partial_sum(a)
                for b in order
                if b is not a
                and b not in edges[a]
                and a not in edges[b]
                and set(self._plan(a.ops).inputs) & set(self._plan(b.ops).inputs)
            ]

        self._sibling_merges("partial sum merge", pairs)

    def _finish_merge(self) -> None:
        """Any two groups that read results of one group holding a `partial_sum` (no edge
        between them) merge where a scheduler takes the union: so the sums that finish layer
        norm's dw and db partials run as one kernel."""

        def pairs(edges: _Edges, order: list[_Group]) -> list[_Pair]:
            return [
                (b, c)
                for a in order
                if _holds_partial_sum(a)
                for b in order
                if b in edges[a]
                for c in order
                if c in edges[a] and b.first < c.first and c not in edges[b] and b not in edges[c]
            ]

        self._sibling_merges("finish merge", pairs)

    def _name_schedulers(self, layout: _Layout) -> dict[_Group, str]:
        """The scheduler of each final segment, asked again on the exact segment ("" for all
        with a predicate)."""
        names: dict[_Group, str] = {}
        for g in layout.order:
            if self.should_merge is not None:
                names[g] = ""
                continue
            scheduler, message = self._ask_schedulers(*self._segment_fusion(layout, g))
            if scheduler is None:
                raise SegmentationError(
                    f"fusion @{self.name}: no scheduler accepts segment {self.label(g)}: "
                    + message.removeprefix("rejected: ")
                )
            names[g] = scheduler
        return names

    def _translate_welfords(self, layout: _Layout, names: dict[_Group, str]) -> dict[_Group, str]:
        """With `welford=auto`, decides for each final segment holding a Welford op whether it
        becomes two passes (then its scheduler is the persistent one), and logs why."""
        if self.welford != "auto" or self.should_merge is not None:
            return names
        for g in layout.order:
            if not any(isinstance(op, fu.WelfordOp | fu.VarMeanOp) for op in g.ops):
                continue
            decision = decide(*self._segment_fusion(layout, g))
            self.log.append(f"welford {self.label(g)}: {decision}")
            self.welford_decisions[g] = decision
            if decision.translate:
                names[g] = "persistent"
        return names

    # --- the final layout and the rewrite ---------------------------------------------------

    def _layout(self, groups: Sequence[_Group]) -> _Layout:
        """The exact plans and outputs of `groups` as the final segments, and their order."""
        plans = {g: self._plan(g.ops) for g in groups}
        needed = set(self.outputs)
        for plan in plans.values():
            needed.update(plan.inputs)
        needed.update([s for v in list(needed) for s in tensor_sources(v)])  # viewed, or sizing
        producer: dict[SSAValue, _Group] = {}
        outputs: dict[_Group, list[SSAValue]] = {}
        for g in groups:
            outs = [r for op in sorted(g.ops, key=self.index.__getitem__) for r in op.results]
            # the fusion's outputs first, in their order, then the intermediates
            fusion_outs = [v for v in dict.fromkeys(self.outputs) if v in outs]
            outputs[g] = fusion_outs + [r for r in outs if r in needed and r not in fusion_outs]
            for r in outs:
                producer[r] = g
        deps = {
            g: {producer[s] for v in plans[g].inputs for s in tensor_sources(v) if s in producer}
            - {g}
            for g in groups
        }
        order: list[_Group] = []
        done: set[_Group] = set()
        while len(order) < len(groups):
            ready = [g for g in groups if g not in done and deps[g] <= done]
            if not ready:  # only through an extent that no fusion input carries
                raise SegmentationError(f"fusion @{self.name}: the segments depend on each other")
            g = min(ready, key=lambda g: g.first)
            done.add(g)
            order.append(g)
        return _Layout(order, plans, outputs)

    def _segment_fusion(self, layout: _Layout, g: _Group) -> tuple[fu.FusionOp, FusionInfo]:
        """Group `g` of `layout` as the fusion its segment will be, with its inputs' metadata."""
        plan = layout.plans[g]
        return self._as_fusion(plan, layout.outputs[g], "segment"), self._info_for(plan.inputs)

    def rewrite(self, layout: _Layout, schedulers: dict[_Group, str]) -> list[fu.SegmentOp]:
        """Replaces the body with one `fusion.segment` per group, in the layout's order."""
        outer: dict[SSAValue, SSAValue] = {}
        terminator = self.fusion.output_op

        def view(v: SSAValue) -> SSAValue:
            """`v` in the new body: a reshape, slice or returned permute is recreated there,
            after its operand, and an iota with the extent it takes."""
            if isinstance(v, BlockArgument) or v in outer:
                return outer.get(v, v)
            op = v.owner
            new: Operation
            if isinstance(op, fu.IotaOp):
                length: SSAValue | None = None
                if (dim := op.length_dim()) is not None:
                    new_dim = fu.DimOp(view(dim.input), dim.axis.value.data)
                    self.block.insert_op_before(new_dim, terminator)
                    new_dim.result.name_hint = dim.result.name_hint
                    length = new_dim.result
                start, step = op.values()
                new = fu.IotaOp(start, step, op.result.type, length)
            elif isinstance(op, fu.ReshapeOp):
                new = fu.ReshapeOp(view(op.input), op.result.type.get_shape(), op.kept_dims)
            elif isinstance(op, fu.SliceOp):
                new = fu.SliceOp(view(op.input), *op.bounds(), op.result.type)
            elif isinstance(op, fu.PermuteOp) and op in self.input_views:
                new = fu.PermuteOp(view(op.input), op.source_dims)
            else:
                return outer[v]  # a segment's result
            self.block.insert_op_before(new, terminator)
            new.results[0].name_hint = v.name_hint
            outer[v] = new.results[0]
            return new.results[0]

        segments: list[fu.SegmentOp] = []
        for g in layout.order:
            plan, outs = layout.plans[g], layout.outputs[g]
            body = Region(self._build_body(plan, outs, fu.YieldOp))
            decision = self.welford_decisions.get(g)
            if decision is not None and not decision.translate:
                decision = None
            if decision is not None:
                translate_region(body)
            args = [view(v) for v in plan.inputs]
            segment = fu.SegmentOp(schedulers[g], args, [v.type for v in outs], body)
            if decision is not None:  # why its Welford ops are two passes
                segment.attributes["fuser.welford"] = StringAttr(str(decision))
            self.block.insert_op_before(segment, terminator)
            for old, new in zip(outs, segment.outputs, strict=True):
                outer[old] = new
                new.name_hint = old.name_hint
            segments.append(segment)
        terminator.operands = tuple(view(v) for v in terminator.operands)
        for op in reversed(self.ops):
            self.block.erase_op(op)
        return segments


def segment_fusion(
    fusion: fu.FusionOp,
    info: FusionInfo | None,
    *,
    should_merge: MergePredicate | None = None,
    log: list[str] | None = None,
    welford: str = "auto",
) -> SegmentedFusion:
    """Rewrites `fusion` in place into `fusion.segment` ops (see the module docstring).

    `info` gives the metadata of the inputs (the concrete shapes the schedulers decide on); it
    may be None only with `should_merge`, which then replaces every scheduler query. `log`, if
    given, receives the segmenter's log lines as they are written. `welford` (`auto`, `always`,
    `never`) is the Welford translation (off with `should_merge`). Raises SegmentationError when
    an op is accepted by no scheduler even alone; the fusion is then left as it was except for
    dead ops and the rewritten `fusion.dim` operands.
    """
    if any(isinstance(op, fu.SegmentOp) for op in fusion.body.block.ops):
        raise SegmentationError(f"fusion @{fusion.sym_name.data} is already segmented")
    if info is None and should_merge is None:
        raise ValueError("segment_fusion needs a FusionInfo unless should_merge is given")
    lines: list[str] = [] if log is None else log
    lines.append(f"segmenter: fusion @{fusion.sym_name.data}")
    check_mode(welford, "fuser-segment")
    if welford_ops(fusion.body):
        if should_merge is not None:
            lines.append("welford: not translated: a should_merge predicate is set")
        elif welford == "always":
            count = translate_region(fusion.body)
            lines.append(f"welford=always: {count} op(s) translated before segmenting")
        elif welford == "never":
            lines.append("welford=never: not translated")
    segmenter = _Segmenter(fusion, info, should_merge, lines, welford)
    layout, schedulers = segmenter.run()
    segments = tuple(segmenter.rewrite(layout, schedulers))
    labels = [f'"{schedulers[g]}" {segmenter.label(g)}' for g in layout.order]
    lines.append("segments: " + (", ".join(labels) or "none"))
    try:
        fusion.verify()
    except VerifyException as e:  # a bug of the segmenter, never a user's mistake
        raise AssertionError(
            f"segmented fusion @{fusion.sym_name.data} does not verify: {e}"
        ) from e
    return SegmentedFusion(fusion, segments, tuple(lines), should_merge is not None)


# --------------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentFusionPass(ModulePass):
    """Segments every `fusion.fusion` of a module (see the module docstring)."""

    name = "fuser-segment"

    shapes: str = ""
    merge: str = ""
    arch: str = DEFAULT_ARCH
    sm_count: int = DEFAULT_SM_COUNT
    welford: str = "auto"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_mode(self.welford, self.name)
        predicate = merge_rule(self.merge, self.name, SegmentOptionError)
        shapes, device = device_options(
            self.name, self.shapes, self.arch, self.sm_count, SegmentOptionError
        )
        for fusion in [f for f in op.walk() if isinstance(f, fu.FusionOp)]:
            if any(isinstance(s, fu.SegmentOp) for s in fusion.body.block.ops):
                continue
            given = shapes
            if given is None:
                given = recorded_shapes(fusion, self.name, SegmentOptionError)
            info: FusionInfo | None
            try:
                info = fusion_info(fusion, given, device)
            except ScheduleOptionError as e:
                # A merge rule can segment without shapes, but not against shapes given (the
                # option, or a record on the fusion) that do not fit it.
                if predicate is None or given is not None:
                    raise renamed_option_error(e, self.name, SegmentOptionError) from None
                info = None
            segment_fusion(fusion, info, should_merge=predicate, welford=self.welford)
            # so that fuser-lower-host needs no `shapes` of its own (info is None only without)
            if given is not None and info is not None:
                fusion.attributes[RECORDED_SHAPES] = StringAttr(format_shapes(info))
