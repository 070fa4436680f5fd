"""`lower-stream-parallel`: stream-parallel segments run slice by slice, spread over CUDA streams.

An op carrying `fusion.stream_axis = a` (`fd.parallelize(t, axis=a, ptype=ParallelType.Stream)`
in Python) is computed slice by slice along axis `a` of its results, each slice on one stream of
a pool: nvFuser's `ParallelType::Stream` and its `StreamParallelType` host-IR pass. Three stages
carry it from the fusion to the streams, each visible in `fuser-opt`:

1. **Segmentation** (`fuser-segment`). Stream-parallel ops are segments of their own: a group
   that holds one merges only with groups that hold nothing but stream-parallel ops, and only
   when the union slices consistently (`slice_fusion`: every tensor of the union has one stream
   axis, or is read whole by every slice), which is the case exactly when the stream axes map
   through the producer-consumer relation; the schedulers are asked about one *slice* of the
   union. A stream-parallel op is never forwarded (recomputed in its consumers), since the user
   asked for its result; a forwarded unary chain feeding a stream-parallel segment is sliced
   along with it (its axis is inferred from its consumers).
2. **Host lowering** (`fuser-lower-host`). A stream-parallel segment is scheduled on its slice
   (`transforms.stream_slicing.slice_fusion`: the stream axis dropped from every sliced tensor,
   property by property; the slice's metadata from `StreamSlicing.slice_info`, whose pointer
   alignment is the one every slice has). Its results are allocated whole, then a serial `host.for`
   over the stream axis, marked `fuser.stream_parallel`, takes `host.alias_select`s of the sliced
   inputs and results at the induction variable and launches the slice kernel on them
   (`build_slice_loop`). This program is already correct, on one stream. The loop is made by the
   lowering rather than by this pass because the kernel inside it must be the slice's kernel, and
   the `host` dialect has no launch of a slice kernel on whole tensors.
3. **This pass** (`lower-stream-parallel{streams=N}`, default 4, on each `host.program`): every
   run of marked loops that follow each other, with only allocations, deallocations, extents and
   index arithmetic between them, is one *group*, as long as each next loop has the same bounds
   and reads what the earlier ones write only as slices at the same index along the same axis
   (the stream axes map); any other op between two marked loops (a launch that is not
   stream-parallel) splits them. A group becomes:

   ```
   <allocations of the group, hoisted>
   %caller = host.get_current_stream : !host.stream
   %cN = arith.constant N : index
   host.for %i = %c0 to %extent step %c1 {
     %slot = arith.remui %i, %cN : index
     %stream = host.stream %slot
     host.set_current_stream %stream
     host.synchronize %caller          // the slice waits for what the caller issued before
     <the alias_selects and launches of every loop of the group, slices shared>
     host.set_current_stream %caller
   }
   %used = arith.minui %extent, %cN : index
   host.for %j = %c0 to %used step %c1 {
     %joined = host.stream %j
     host.synchronize %joined          // the caller waits for every stream the loop used
   }
   <deallocations of the group>
   ```

   so an intermediate written and read inside one group needs no synchronization between its
   producer and consumer slices (they run in order on one stream), the program's results are
   ready on the caller's stream when it ends, and the host never blocks. The marks are removed.

`fusion.stream_axis` on a tensor that a segment stores must be its outermost axis (or follow only
static extent-1 dims): kernels write contiguous outputs, and only such slices are contiguous.
Inputs may be sliced along any axis (kernels take strides).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from fuser.dialects import host
from fuser.errors import CompilationError
from fuser.options import DEFAULT_STREAMS
from fuser.transforms.stream_slicing import STREAM_LOOP

__all__ = ["LowerStreamParallelPass", "StreamLoweringError", "lower_stream_parallel"]


class StreamLoweringError(CompilationError, DiagnosticException):
    """A marked loop, or a pass option, that `lower-stream-parallel` cannot lower."""


# --------------------------------------------------------------------------------------------
# The pass: marked loops become loops over streams
# --------------------------------------------------------------------------------------------


@dataclass
class _Accesses:
    """The tensors a loop body reads and writes: as slices at the induction variable (tensor ->
    axes), or whole."""

    sliced_reads: dict[SSAValue, set[int]] = field(default_factory=dict[SSAValue, set[int]])
    whole_reads: set[SSAValue] = field(default_factory=set[SSAValue])
    sliced_writes: dict[SSAValue, set[int]] = field(default_factory=dict[SSAValue, set[int]])
    whole_writes: set[SSAValue] = field(default_factory=set[SSAValue])
    understood: bool = True
    """Only alias_selects, launches and index arithmetic: what the merge rule reasons about."""

    def add(self, other: _Accesses) -> None:
        for mine, theirs in (
            (self.sliced_reads, other.sliced_reads),
            (self.sliced_writes, other.sliced_writes),
        ):
            for t, axes in theirs.items():
                mine.setdefault(t, set()).update(axes)
        self.whole_reads |= other.whole_reads
        self.whole_writes |= other.whole_writes
        self.understood &= other.understood

    @property
    def written(self) -> set[SSAValue]:
        return set(self.sliced_writes) | self.whole_writes

    @property
    def read(self) -> set[SSAValue]:
        return set(self.sliced_reads) | self.whole_reads


def _accesses(loop: host.ForOp) -> _Accesses:
    acc = _Accesses()
    index = loop.induction_var

    def record(v: SSAValue, sliced: dict[SSAValue, set[int]], whole: set[SSAValue]) -> None:
        if not isinstance(v.type, TensorType):
            return
        owner = v.owner
        if isinstance(owner, host.AliasSelectOp) and owner.parent_op() is loop:
            if owner.index is index:
                sliced.setdefault(owner.input, set()).add(owner.axis.value.data)
            else:
                whole.add(owner.input)
            return
        whole.add(v)

    for op in loop.body.block.ops:
        if isinstance(op, host.LaunchOp):
            for v in op.ins:
                record(v, acc.sliced_reads, acc.whole_reads)
            for v in op.outs:
                record(v, acc.sliced_writes, acc.whole_writes)
        elif not isinstance(
            op, host.AliasSelectOp | host.YieldOp | host.DimOp | host.GridOp
        ) and not (op.name.startswith("arith.") and not op.regions):
            acc.understood = False
    return acc


def _same_index(a: SSAValue, b: SSAValue) -> bool:
    if a is b:
        return True
    ca, cb = a.owner, b.owner
    return (
        isinstance(ca, arith.ConstantOp)
        and isinstance(cb, arith.ConstantOp)
        and ca.value == cb.value
    )


def _constant(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _movable(op: Operation) -> bool:
    """Ops that may sit between the loops of one group: moved before it (allocations, extents,
    index arithmetic) or after it (deallocations)."""
    if isinstance(op, host.AllocateOp | host.DeallocateOp | host.DimOp | host.GridOp):
        return True
    return op.name.startswith("arith.") and not op.regions


@dataclass
class _Group:
    """Marked loops that become one loop over streams, and the ops between them."""

    loops: list[host.ForOp]
    between: list[Operation]
    accesses: _Accesses

    def accepts(self, loop: host.ForOp, accesses: _Accesses) -> bool:
        """Whether `loop` joins the group: same bounds, and it reads what the group writes only
        as slices at the same index along the same axis (and writes nothing the group uses)."""
        first = self.loops[0]
        if not all(
            _same_index(a, b)
            for a, b in ((first.lb, loop.lb), (first.ub, loop.ub), (first.step, loop.step))
        ):
            return False
        mine = self.accesses
        if not (mine.understood and accesses.understood):
            return False
        if accesses.written & (mine.read | mine.written):
            return False
        for t in mine.written:
            if t in accesses.whole_reads:
                return False
            axes = accesses.sliced_reads.get(t)
            if axes is not None and (t in mine.whole_writes or axes != mine.sliced_writes[t]):
                return False
        return True


def _groups(block: Block) -> list[_Group]:
    groups: list[_Group] = []
    current: _Group | None = None
    pending: list[Operation] = []
    for op in block.ops:
        if isinstance(op, host.ForOp) and STREAM_LOOP in op.attributes:
            accesses = _accesses(op)
            if current is not None and current.accepts(op, accesses):
                current.loops.append(op)
                current.between += pending
                current.accesses.add(accesses)
            else:
                current = _Group([op], [], accesses)
                groups.append(current)
            pending = []
        elif current is not None and _movable(op):
            pending.append(op)
        else:
            current, pending = None, []
    return groups


def _index_constant(value: int, block: Block, before: Operation) -> SSAValue:
    const = arith.ConstantOp(IntegerAttr(value, IndexType()))
    const.result.name_hint = f"c{value}"
    block.insert_op_before(const, before)
    return const.result


def _lower_group(program: host.ProgramOp, group: _Group, streams: int) -> None:
    block = program.body.block
    loop = group.loops[0]
    if _constant(loop.lb) != 0 or _constant(loop.step) != 1:
        raise StreamLoweringError(
            f"lower-stream-parallel: a host.for marked {STREAM_LOOP} in "
            f"@{program.sym_name.data} must run from a constant 0 with step 1"
        )
    after: list[Operation] = []
    for op in group.between:
        op.detach()
        if isinstance(op, host.DeallocateOp):
            after.append(op)
        else:
            block.insert_op_before(op, loop)
    body = loop.body.block
    end = body.last_op
    assert isinstance(end, host.YieldOp)
    for other in group.loops[1:]:
        other.induction_var.replace_all_uses_with(loop.induction_var)
        for op in list(other.body.block.ops):
            if not isinstance(op, host.YieldOp):
                op.detach()
                body.insert_op_before(op, end)
        block.erase_op(other)
    # one slice per (tensor, axis): a slice a loop writes is the one the next one reads
    slices: dict[tuple[SSAValue, int], SSAValue] = {}
    for op in list(body.ops):
        if isinstance(op, host.AliasSelectOp) and op.index is loop.induction_var:
            key = (op.input, op.axis.value.data)
            if key in slices:
                op.result.replace_all_uses_with(slices[key])
                body.erase_op(op)
            else:
                slices[key] = op.result
    del loop.attributes[STREAM_LOOP]
    # the caller's stream, and the stream of each iteration
    caller = host.GetCurrentStreamOp()
    caller.result.name_hint = "caller"
    block.insert_op_before(caller, loop)
    count = _index_constant(streams, block, loop)
    first = body.first_op
    assert first is not None
    slot = arith.RemUIOp(loop.induction_var, count)
    slot.result.name_hint = "slot"
    stream = host.StreamOp(slot.result)
    stream.result.name_hint = "stream"
    for op in (
        slot,
        stream,
        host.SetCurrentStreamOp(stream.result),
        host.SynchronizeOp(caller.result),
    ):
        body.insert_op_before(op, first)
    body.insert_op_before(host.SetCurrentStreamOp(caller.result), end)
    # the caller's stream waits for every stream the loop used
    extent = _constant(loop.ub)
    anchor = loop.next_op
    assert anchor is not None  # the loop is never the program's last op (host.return is)
    if extent is not None:
        used = _index_constant(min(extent, streams), block, anchor)
    else:
        least = arith.MinUIOp(loop.ub, count)
        least.result.name_hint = "used"
        block.insert_op_before(least, anchor)
        used = least.result
    join = host.ForOp(loop.lb, used, loop.step)
    join.induction_var.name_hint = "j"
    joined = host.StreamOp(join.induction_var)
    joined.result.name_hint = "joined"
    join.body.block.add_ops([joined, host.SynchronizeOp(joined.result), host.YieldOp()])
    block.insert_op_before(join, anchor)
    for op in after:
        block.insert_op_before(op, anchor)


def lower_stream_parallel(program: host.ProgramOp, streams: int = DEFAULT_STREAMS) -> int:
    """Lowers the marked loops of `program` in place (see the module docstring); returns the
    number of loops over streams it made."""
    if streams < 1:
        raise StreamLoweringError(
            f"lower-stream-parallel: streams must be at least 1, got {streams}"
        )
    groups = _groups(program.body.block)
    for group in groups:
        _lower_group(program, group, streams)
    if groups:
        program.verify()
    return len(groups)


@dataclass(frozen=True)
class LowerStreamParallelPass(ModulePass):
    """Lowers the stream-parallel loops of every `host.program` (see the module docstring).

    `streams` is the number of streams the iterations are spread over (`host.stream` of
    `i mod streams`; the host evaluator's pool should have at least as many)."""

    name = "lower-stream-parallel"

    streams: int = DEFAULT_STREAMS

    def __post_init__(self) -> None:
        if self.streams < 1:
            raise StreamLoweringError(
                f"lower-stream-parallel: streams must be at least 1, got {self.streams}"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in [p for p in op.walk() if isinstance(p, host.ProgramOp)]:
            lower_stream_parallel(program, self.streams)
