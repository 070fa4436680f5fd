"""`fuser-lower-host`: a segmented fusion becomes a `host.program` and a `kernel.func` per segment.

Each `fusion.segment` is scheduled as a fusion of its own (`segment_as_fusion`, through
`segment_calls`, which also gives its inputs' metadata: fusion inputs keep theirs, intermediates
are contiguous and 16-byte aligned) with `schedule_fusion`, honouring the scheduler the segment
names. A fusion without `fusion.segment` ops is lowered as one segment. The program then:

- takes the fusion's inputs and returns its outputs (`host.return`), an output that is a view of
  an input (the segmenter's returned views) as that view (`host.reshape`, `host.slice`,
  `host.permute` of the argument);
- computes every extent it needs with `host.dim` on its arguments (each dynamic extent of an
  intermediate or output follows from an input extent through the typing rules: pointwise
  operands, kept dims of reductions, `broadcast_in_dim` sizes, matmul dims);
- `host.allocate`s each segment's results right before its launch, intermediates and outputs
  alike (contiguous), launches the segments in topological order (`host.grid` of the kernel on
  its inputs, then `host.launch` with the kernel's symbol, that grid, block and dynamic shared
  memory; `ins` then `outs` in the kernel's parameter order), and `host.deallocate`s each
  intermediate right after its last use.

**Stream-parallel segments** (`fusion.stream_axis`, see `lower_stream_parallel`) are scheduled
on one slice; their results are allocated whole, and a `host.for` over the stream axis, marked
`fuser.stream_parallel`, launches the slice kernel on `host.alias_select` slices at each index.
The program runs correctly as it is (on one stream); `lower-stream-parallel` spreads the marked
loops over streams.

**A program is shape-generic within its heuristics**: its kernels' heuristics (block, shared
memory, vector widths) are those of the input metadata of the lowering (recorded as
`fuser.shapes` on the program), but its allocations and grids follow from the extents of each
call (`host.dim`, `host.grid`), so a program whose heuristics still hold for another signature
runs it unchanged.

`lower_fusion(fusion, info)` returns a `HostLowering` (the program, the kernels and, per
segment, its standalone fusion, scheduler, heuristics and launch); `lower_to_host` returns just
the program and kernels. The pass replaces each `fusion.fusion` of the module by its program
(same symbol) followed by its kernels (`@<fusion>_s<k>_<scheduler>`), so
`-p 'fuser-segment{shapes=...},fuser-lower-host{shapes=...}'` gives one module that
`-t cuda` prints. Options: `shapes`, `arch`, `sm_count`, as `fuser-schedule`; without `shapes`
the pass reads the `fuser.shapes` string attribute of the fusion (same syntax), which
`fuser-segment{shapes=...}` records, else the static shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from fuser.dialects import fusion as fu
from fuser.dialects import host, kernel
from fuser.dialects.views import END, reshape_extents, slice_extents
from fuser.transforms.schedule import (
    RECORDED_SHAPES,
    ScheduledKernel,
    ScheduleOptionError,
    device_options,
    format_launch,
    format_shapes,
    pass_fusion_info,
    recorded_shapes,
    schedule_fusion,
)
from fuser.transforms.schedulers import get_scheduler
from fuser.transforms.schedulers.analyses import analysis_scope
from fuser.transforms.schedulers.base import (
    LaunchConfig,
    Params,
    Scheduler,
    SchedulingError,
    cached_heuristics,
)
from fuser.transforms.schedulers.info import DEFAULT_ARCH, DEFAULT_SM_COUNT, FusionInfo
from fuser.transforms.schedulers.shapes import ShapeMismatch, value_shapes
from fuser.transforms.segment import returned_view_chains, segment_calls, view_root
from fuser.transforms.stream_slicing import StreamSlicing, build_slice_loop, slice_fusion

__all__ = [
    "HostLowering",
    "LowerToHostPass",
    "LoweredSegment",
    "format_shapes",
    "lower_fusion",
    "lower_to_host",
    "segment_pieces",
]


@dataclass(frozen=True)
class LoweredSegment:
    """One segment as lowered: its standalone fusion and the kernel scheduled from it."""

    index: int
    label: str
    """The scheduler the `fusion.segment` names ("" when a merge rule chose the segment, and
    for a fusion lowered whole)."""
    fusion: fu.FusionOp
    """The segment as a fusion of its own: its inputs and outputs are the kernel's parameters."""
    info: FusionInfo
    output_shapes: tuple[tuple[int, ...], ...]
    scheduler: Scheduler
    params: Params
    func: kernel.FuncOp
    launch: LaunchConfig

    @property
    def kernel_name(self) -> str:
        return self.func.sym_name.data


@dataclass(frozen=True)
class HostLowering:
    """A fusion lowered for one input signature: the program, the kernels, the segments."""

    program: host.ProgramOp
    segments: tuple[LoweredSegment, ...]

    @property
    def kernels(self) -> list[kernel.FuncOp]:
        return [s.func for s in self.segments]


@dataclass(frozen=True)
class _Piece:
    """A segment to lower: its standalone fusion, the outer values its inputs and outputs are."""

    label: str
    fusion: fu.FusionOp
    info: FusionInfo
    output_shapes: tuple[tuple[int, ...], ...]
    args: tuple[SSAValue, ...]
    results: tuple[SSAValue, ...]
    stream: StreamSlicing | None = None
    """How a stream-parallel segment is sliced (`fusion`, `info`, `output_shapes` are then
    those of one slice)."""


def segment_pieces(fusion: fu.FusionOp, info: FusionInfo, scheduler: str = "") -> list[_Piece]:
    """The segments of `fusion` for `info`, in order (the whole fusion when it has none, with
    `scheduler` as its scheduler when given, unless it is sliced for streams: its slices are
    scheduled as segments are)."""
    if any(isinstance(op, fu.SegmentOp) for op in fusion.body.block.ops):
        return [
            _Piece(
                c.segment.scheduler.data,
                c.fusion,
                c.info,
                c.output_shapes,
                tuple(c.segment.args),
                tuple(c.segment.outputs),
                c.stream,
            )
            for c in segment_calls(fusion, info)
        ]
    viewed = {op for chain in returned_view_chains(fusion, info) for op in chain}
    body = [op for op in fusion.body.block.ops if not isinstance(op, fu.OutputOp)]
    body = [op for op in body if op not in viewed]
    if not any(isinstance(r.type, TensorType) for op in body for r in op.results):
        return []  # the outputs are inputs or views of inputs: nothing to compute
    whole = fusion.clone()
    whole.sym_name = StringAttr(f"{fusion.sym_name.data}_s0")
    env = value_shapes(whole, info.input_shapes)
    shapes = tuple(_shape(env[v]) for v in whole.output_op.values)
    outputs = tuple(fusion.output_op.values)
    stream = slice_fusion(whole)
    if stream is not None:
        sliced = (stream.sliced, stream.slice_info(info), stream.slice_shapes(shapes))
        return [_Piece("", *sliced, tuple(fusion.inputs), outputs, stream)]
    return [_Piece(scheduler, whole, info, shapes, tuple(fusion.inputs), outputs)]


def _shape(shape: tuple[int, ...] | int | None) -> tuple[int, ...]:
    assert isinstance(shape, tuple)
    return shape


def _schedule(piece: _Piece, name: str) -> ScheduledKernel:
    """Schedules a segment as `<name>_<scheduler>`: with the scheduler the segment names, or the
    first that accepts it when it names none."""
    if not piece.label:
        scheduled = schedule_fusion(piece.fusion, piece.info)
        scheduled.func.sym_name = StringAttr(f"{name}_{scheduled.scheduler.name}")
        return scheduled
    scheduler = get_scheduler(piece.label)
    with analysis_scope():  # accepts' analysis serves heuristics, emit and the launch
        verdict = scheduler.accepts(piece.fusion, piece.info)
        if not verdict:
            raise SchedulingError(
                f"segment @{piece.fusion.sym_name.data} names scheduler '{piece.label}', which "
                f"rejects it: {verdict.reason}"
            )
        params = cached_heuristics(scheduler, piece.fusion, piece.info)
        func = scheduler.emit(piece.fusion, params, f"{name}_{scheduler.name}")
        launch = scheduler.launch_config(piece.fusion, params, piece.info)
    func.attributes["fuser.scheduler"] = StringAttr(scheduler.name)
    func.attributes["fuser.params"] = StringAttr(repr(params))
    func.attributes["fuser.launch"] = StringAttr(format_launch(launch))
    return ScheduledKernel(scheduler, params, func, launch)


# --------------------------------------------------------------------------------------------
# Extents as the program computes them


@dataclass(frozen=True)
class _InputDim:
    """The extent of dim `axis` of program argument `arg`."""

    arg: int
    axis: int


@dataclass(frozen=True)
class _ViewDim:
    """The extent of dim `axis` of the reshape or slice whose result is the fusion value `view`,
    as `arith` on the operand's extents (which `fuser-plan-memory` can clone, unlike a
    `host.dim` of the view): for a reshape the extent it infers (the operand's element count
    over the static extents), for a slice the count its bounds leave of the operand's extent."""

    view: SSAValue
    axis: int


_Extent = int | _InputDim | _ViewDim
_Shape = tuple[_Extent, ...]


def _symbolic_shapes(
    fusion: fu.FusionOp, inputs: Sequence[_Shape | None]
) -> dict[SSAValue, _Shape | _Extent | None]:
    """Each tensor's extents (and each index value's) in terms of the program's arguments:
    `value_shapes` on symbols (see the module docstring)."""
    env: dict[SSAValue, _Shape | _Extent | None] = dict(zip(fusion.inputs, inputs, strict=True))

    def tensor(v: SSAValue) -> _Shape:
        shape = env[v]
        assert isinstance(shape, tuple)
        return shape

    for op in fusion.body.block.ops:
        if isinstance(op, fu.OutputOp):
            break
        if isinstance(op, fu.DimOp):
            env[op.result] = tensor(op.input)[op.axis.value.data]
            continue
        if isinstance(op, fu.ConstantOp):
            env[op.result] = None
            continue
        results: list[_Shape | None]
        if isinstance(op, fu.RandomOp):
            sized = dict(zip(op.sized_dims(), op.sizes, strict=True))
            random_shape: list[_Extent] = []
            for d, static in enumerate(fu.shape_of(op.result.type) or ()):
                extent = env[sized[d]] if d in sized else static
                assert isinstance(extent, int | _InputDim | _ViewDim)
                random_shape.append(extent)
            results = [tuple(random_shape)]
        elif isinstance(op, fu.BroadcastInDimOp):
            operand = tensor(op.input) if isinstance(op.input.type, TensorType) else ()
            source = dict(zip(op.dims, operand, strict=True))
            sized = dict(zip(op.sized_dims(), op.sizes, strict=True))
            out: list[_Extent] = []
            for d, static in enumerate(fu.shape_of(op.result.type) or ()):
                if d in sized:
                    extent = env[sized[d]]
                    assert isinstance(extent, int | _InputDim | _ViewDim)
                    out.append(extent)
                elif static != DYNAMIC_INDEX:
                    out.append(static)
                else:
                    out.append(source[d])
            results = [tuple(out)]
        elif isinstance(op, fu.ReductionOp | fu.WelfordOp | fu.VarMeanOp):
            shape = tensor(op.input)
            axes = set(op.axes.get_values())
            keep = getattr(op, "keepdim", None) is not None
            reduced = tuple(
                1 if i in axes else e for i, e in enumerate(shape) if keep or i not in axes
            )
            results = [reduced] * len(op.results)
        elif isinstance(op, fu.PartialSumOp):
            results = [fu.partial_sum_shape(tensor(op.input), op.axis, op.split_count)]
        elif isinstance(op, fu.RenumberOp):
            results = [op.result_extents(tensor(op.input))]
        elif isinstance(op, fu.ResizeOp):  # resized dims are static: the type gives them below
            results = [tensor(op.operands[0])]
        elif isinstance(op, fu.TakeOp):
            index = tensor(op.index) if isinstance(op.index.type, TensorType) else ()
            results = [fu.taken_shape(tensor(op.input), index, op.axis)]
        elif isinstance(op, fu.TakeAlongAxisOp):
            results = [tensor(op.index)]
        elif isinstance(op, fu.TopkOp):
            shape = tensor(op.input)
            results = [(*shape[: op.axis], op.count, *shape[op.axis + 1 :])] * 2
        elif isinstance(op, fu.MatmulOp):
            a, b = tensor(op.lhs), tensor(op.rhs)
            full = (*a[:-2], a[-2], b[-1])
            results = [full if op.split_count is None else (op.split_count, *full)]
        else:  # pointwise: operands and result share their extents
            shapes = [tensor(o) for o in op.operands if isinstance(o.type, TensorType)]
            if not shapes:
                results = [None] * len(op.results)
            else:
                dims: list[_Extent] = []
                for extents in zip(*shapes, strict=True):
                    static = [e for e in extents if isinstance(e, int)]
                    dims.append(static[0] if static else extents[0])
                results = [tuple(dims)] * len(op.results)
        for r, shape in zip(op.results, results, strict=True):
            if shape is not None and isinstance(r.type, TensorType):
                statics = r.type.get_shape()
                shape = tuple(
                    s if s != DYNAMIC_INDEX else e for s, e in zip(statics, shape, strict=True)
                )
            env[r] = shape if isinstance(r.type, TensorType) else None
    return env


class _ProgramBuilder:
    """Builds the ops of a `host.program` at the end of its block."""

    def __init__(self, fusion: fu.FusionOp, info: FusionInfo) -> None:
        self.fusion = fusion
        self.info = info
        types = [a.type for a in fusion.inputs]
        outputs = [v.type for v in fusion.output_op.values]
        self.program = host.ProgramOp(fusion.sym_name.data, types, outputs)
        self.block: Block = self.program.body.block
        for a, b in zip(fusion.inputs, self.block.args, strict=True):
            b.name_hint = a.name_hint
        self.values: dict[SSAValue, SSAValue] = dict(
            zip(fusion.inputs, self.block.args, strict=True)
        )
        self.dims: dict[_InputDim | _ViewDim, SSAValue] = {}
        self.constants: dict[int, SSAValue] = {}
        self.allocated: set[SSAValue] = set()
        self.syms: dict[SSAValue, _Shape] = {}
        """The extents of each tensor of the fusion that the program holds."""
        for i, arg in enumerate(fusion.inputs):
            if isinstance(arg.type, TensorType):
                self.syms[arg] = tuple(
                    e if e != DYNAMIC_INDEX else _InputDim(i, axis)
                    for axis, e in enumerate(arg.type.get_shape())
                )

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def index(self, extent: _Extent) -> SSAValue:
        """An `index` value holding the extent: `host.dim` of an argument or a constant."""
        if isinstance(extent, int):
            value = self.constants.get(extent)
            if value is None:
                const = arith.ConstantOp(IntegerAttr(extent, IndexType()))
                const.result.name_hint = f"c{extent}"
                value = self.constants[extent] = self.add(const).results[0]
            return value
        value = self.dims.get(extent)
        if value is None:
            if isinstance(extent, _ViewDim):
                value = self.dims[extent] = self._inferred(extent)
                return value
            arg = self.block.args[extent.arg]
            op = host.DimOp(arg, extent.axis)
            if arg.name_hint:
                op.result.name_hint = f"{arg.name_hint}_d{extent.axis}"
            value = self.dims[extent] = self.add(op).results[0]
        return value

    def _inferred(self, extent: _ViewDim) -> SSAValue:
        op = extent.view.owner
        if isinstance(op, fu.SliceOp):
            value = self._sliced_extent(op, extent.axis)
        else:
            assert isinstance(op, fu.ReshapeOp)
            value = self._reshaped_extent(op)
        if extent.view.name_hint and value.name_hint is None:  # not an extent taken as it is
            value.name_hint = f"{extent.view.name_hint}_d{extent.axis}"
        return value

    def _sliced_extent(self, op: fu.SliceOp, axis: int) -> SSAValue:
        """`len(range(n)[start:stop:step])` for the operand's extent n, as `views.slice_range`
        reads the bounds."""
        start, stop, step = (bounds[axis] for bounds in op.bounds())
        n = self.index(self.syms[op.input][axis])
        zero = self.index(0)

        def clamp(i: int) -> SSAValue:
            if i == 0:
                return zero
            if i == END:
                return n
            if i >= 0:
                return self.add(arith.MinSIOp(self.index(i), n)).results[0]
            shifted = self.add(arith.AddiOp(n, self.index(i))).results[0]
            return self.add(arith.MaxSIOp(shifted, zero)).results[0]

        first = clamp(start)
        last = clamp(stop)
        span = last  # from 0: not negative
        if start != 0:
            span = self.add(arith.SubiOp(last, first)).results[0]
            span = self.add(arith.MaxSIOp(span, zero)).results[0]
        if step == 1:
            return span
        return self.add(arith.CeilDivSIOp(span, self.index(step))).results[0]

    def _reshaped_extent(self, op: fu.ReshapeOp) -> SSAValue:
        """The one `?` of a reshape's result that is inferred: the operand's elements outside
        the kept dims over the result's static extents."""
        kept = op.kept_dims
        syms = [e for d, e in enumerate(self.syms[op.input]) if d not in kept]
        factors = [self.index(e) for e in syms if e != 1]
        numel = factors[0] if factors else self.index(1)
        for f in factors[1:]:
            numel = self.add(arith.MuliOp(numel, f)).results[0]
        shape = op.result.type.get_shape()
        known = math.prod(e for d, e in enumerate(shape) if e != DYNAMIC_INDEX and d not in kept)
        return self.add(arith.DivUIOp(numel, self.index(known))).results[0]

    def value(self, v: SSAValue) -> SSAValue:
        """The program's value for the fusion's tensor `v`; a `fusion.reshape`, `fusion.slice`,
        `fusion.permute` (of a returned view) or `fusion.iota` between segments becomes its
        `host` twin here, at its first use."""
        found = self.values.get(v)
        if found is not None:
            return found
        op = v.owner
        if isinstance(op, fu.IotaOp):
            return self._iota(v, op)
        if isinstance(op, fu.PermuteOp):
            permuted = host.PermuteOp(self.value(op.input), op.source_dims)
            permuted.result.name_hint = v.name_hint
            self.values[v] = self.add(permuted).results[0]
            self.syms[v] = tuple(self.syms[op.input][d] for d in op.source_dims)
            return self.values[v]
        assert isinstance(op, fu.VIEW_OPS), f"{v} has no value in the program yet"
        result_type = op.result.type
        view: Operation
        if isinstance(op, fu.SliceOp):
            view = host.SliceOp(self.value(op.input), *op.bounds(), result_type)
        else:
            view = host.ReshapeOp(self.value(op.input), result_type, op.kept_dims)
        view.result.name_hint = v.name_hint
        self.values[v] = self.add(view).results[0]
        kept = op.kept_dims if isinstance(op, fu.ReshapeOp) else ()
        self.syms[v] = tuple(
            self.syms[op.input][axis]
            if axis in kept
            else e
            if e != DYNAMIC_INDEX
            else _ViewDim(v, axis)
            for axis, e in enumerate(result_type.get_shape())
        )
        return self.values[v]

    def _iota(self, v: SSAValue, op: fu.IotaOp) -> SSAValue:
        """A `fusion.iota` between segments as a `host.iota`, at its first use."""
        t = op.result.type
        extent: _Extent = t.get_shape()[0]
        length: SSAValue | None = None
        if (dim := op.length_dim()) is not None:
            self.value(dim.input)
            extent = self.syms[dim.input][dim.axis.value.data]
            length = self.index(extent)
        start, step = op.values()
        iota = host.IotaOp(start, step, t, length)
        iota.result.name_hint = v.name_hint
        self.values[v] = self.add(iota).results[0]
        self.syms[v] = (extent,)
        return self.values[v]

    def allocate(self, value: SSAValue, extents: _Shape) -> SSAValue:
        """A `host.allocate` for the outer tensor `value` with these extents."""
        t = value.type
        assert isinstance(t, TensorType)
        sizes = [
            self.index(e)
            for e, static in zip(extents, t.get_shape(), strict=True)
            if static == DYNAMIC_INDEX
        ]
        op = host.AllocateOp(t, sizes)
        op.result.name_hint = value.name_hint
        result = self.values[value] = self.add(op).results[0]
        self.allocated.add(value)
        return result

    def numeric(self, extent: _Extent) -> int:
        if isinstance(extent, int):
            return extent
        if isinstance(extent, _ViewDim):
            op = extent.view.owner
            assert isinstance(op, fu.VIEW_OPS)
            source = tuple(self.numeric(e) for e in self.syms[op.input])
            if isinstance(op, fu.SliceOp):
                return slice_extents(*op.bounds(), source)[extent.axis]
            return reshape_extents(op.target(source), source)[extent.axis]
        meta = self.info.inputs[extent.arg]
        assert meta is not None
        return meta.shape[extent.axis]


def _launcher(
    func: kernel.FuncOp, launch: LaunchConfig
) -> Callable[[Sequence[SSAValue], Sequence[SSAValue]], list[Operation]]:
    """Makes the launch of `func` on given arguments: a `host.grid` computing its grid from
    them (the kernel's launch rule, per call), then the `host.launch` with that grid and the
    configuration's block and dynamic shared memory."""

    def make(ins: Sequence[SSAValue], outs: Sequence[SSAValue]) -> list[Operation]:
        name = func.sym_name.data
        grid = host.GridOp(name, ins)
        for value, axis in zip(grid.grid, "xyz", strict=True):
            value.name_hint = f"grid_{axis}"
        launch_op = host.LaunchOp(name, grid.grid, launch.block, ins, outs, launch.shared_bytes)
        return [grid, launch_op]

    return make


def replace_by_lowering(fusion: fu.FusionOp, lowering: HostLowering) -> None:
    """Put the program (same symbol) and then the kernels of `lowering` where `fusion` was."""
    Rewriter.insert_op(lowering.program, InsertPoint.before(fusion))
    for func in reversed(lowering.kernels):
        Rewriter.insert_op(func, InsertPoint.after(lowering.program))
    Rewriter.erase_op(fusion)


def lower_fusion(
    fusion: fu.FusionOp, info: FusionInfo, kernel_prefix: str | None = None, scheduler: str = ""
) -> HostLowering:
    """Lowers a (segmented) fusion for the input metadata `info` (see the module docstring).
    An unsegmented fusion runs on `scheduler` where given (a multi-kernel variant), else on
    the first scheduler that accepts it.

    Kernels are named `<kernel_prefix>_s<k>_<scheduler>` (the prefix defaults to the fusion's
    name). The fusion is left unchanged. Raises SchedulingError when a segment's scheduler
    rejects it (or, for an unsegmented fusion, when no scheduler accepts the whole fusion).
    """
    prefix = kernel_prefix or fusion.sym_name.data
    pieces = segment_pieces(fusion, info, scheduler)
    b = _ProgramBuilder(fusion, info)
    syms = b.syms
    # a tensor that reshapes view lives while they do; one an output views is not freed
    outputs = {view_root(v) for v in fusion.output_op.values}
    last_use: dict[SSAValue, int] = {}
    for k, piece in enumerate(pieces):
        for v in piece.args:
            last_use[view_root(v)] = k
    lowered: list[LoweredSegment] = []
    for k, piece in enumerate(pieces):
        scheduled = _schedule(piece, f"{prefix}_s{k}")
        stream = piece.stream
        whole = piece.fusion if stream is None else stream.whole
        ins = [b.value(v) for v in piece.args]
        env = _symbolic_shapes(whole, [syms.get(v) for v in piece.args])
        results: list[SSAValue] = []
        axes = (None,) * len(piece.results) if stream is None else stream.output_axes
        for outer, inner, shape, axis in zip(
            piece.results, whole.output_op.values, piece.output_shapes, axes, strict=True
        ):
            symbolic = env[inner]
            assert isinstance(symbolic, tuple)
            numeric = tuple(b.numeric(e) for e in symbolic)
            if (numeric if axis is None else numeric[:axis] + numeric[axis + 1 :]) != shape:
                raise AssertionError(
                    f"lowering @{fusion.sym_name.data}: extents {symbolic} of a result of "
                    f"segment #{k} do not evaluate to its shape {list(shape)}"
                )
            syms[outer] = symbolic
            results.append(b.allocate(outer, symbolic))
        func, launch = scheduled.func, scheduled.launch
        launch_op = _launcher(func, launch)
        if stream is None:
            for op in launch_op(ins, results):
                b.add(op)
        else:  # slice by slice: a serial loop that lower-stream-parallel spreads over streams
            extent = b.index(syms[piece.results[0]][stream.output_axes[0]])
            zero, one = b.index(0), b.index(1)
            b.add(build_slice_loop(stream, extent, zero, one, ins, results, launch_op))
        # intermediates whose last reader this was, and results nothing reads
        roots = [view_root(v) for v in piece.args]
        done = [v for v in roots if last_use[v] == k and v in b.allocated]
        done += [v for v in piece.results if v not in last_use]
        for v in dict.fromkeys(done):
            if v not in outputs:
                b.add(host.DeallocateOp(b.values[v]))
        lowered.append(
            LoweredSegment(
                k,
                piece.label,
                piece.fusion,
                piece.info,
                piece.output_shapes,
                scheduled.scheduler,
                scheduled.params,
                func,
                launch,
            )
        )
    b.add(host.ReturnOp([b.value(v) for v in fusion.output_op.values]))
    b.program.attributes[RECORDED_SHAPES] = StringAttr(format_shapes(info))
    b.program.verify()
    return HostLowering(b.program, tuple(lowered))


def lower_to_host(
    module_or_fusion: ModuleOp | fu.FusionOp, info: FusionInfo, kernel_prefix: str | None = None
) -> tuple[host.ProgramOp, list[kernel.FuncOp]]:
    """The program and kernels of the one fusion of a module (or of a fusion), for `info`."""
    if isinstance(module_or_fusion, ModuleOp):
        fusions = [op for op in module_or_fusion.walk() if isinstance(op, fu.FusionOp)]
        if len(fusions) != 1:
            raise ValueError(f"lower_to_host: the module holds {len(fusions)} fusions, not one")
        fusion = fusions[0]
    else:
        fusion = module_or_fusion
    lowering = lower_fusion(fusion, info, kernel_prefix)
    return lowering.program, lowering.kernels


# --------------------------------------------------------------------------------------------
# The pass


@dataclass(frozen=True)
class LowerToHostPass(ModulePass):
    """Replaces every `fusion.fusion` by its host program and kernels (see the module
    docstring)."""

    name = "fuser-lower-host"

    shapes: str = ""
    arch: str = DEFAULT_ARCH
    sm_count: int = DEFAULT_SM_COUNT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        shapes, device = device_options(
            self.name, self.shapes, self.arch, self.sm_count, ScheduleOptionError
        )
        for fusion in [f for f in op.walk() if isinstance(f, fu.FusionOp)]:
            given = shapes
            if given is None:
                given = recorded_shapes(fusion, self.name, ScheduleOptionError)
            info = pass_fusion_info(self.name, fusion, given, device, ScheduleOptionError)
            try:
                lowering = lower_fusion(fusion, info)
            except ShapeMismatch as e:
                raise ScheduleOptionError(
                    f"{self.name}: the input shapes do not fit fusion @{fusion.sym_name.data}: {e}"
                ) from None
            replace_by_lowering(fusion, lowering)
