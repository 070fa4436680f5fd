"""The inner-outer kernel's walk over a chunk of rows (`walk_rows`): each block sums the rows
of its chunk into per-thread accumulators of the partial sums (`Sums`), and with `prefetch`
copies the next row's reads into shared memory while it works on this one (`Prefetch`).

The persistent template gives the work on one row (`persistent.emit_row`); this module is what
walking many rows adds to it: where the accumulators live (registers, or the launch's dynamic
shared memory: `dynamic_arrays`, whose bytes the launch gives), and the asynchronous copies
(`kernel.copy_async`, two buffers taking turns) that keep each SM's memory busy while a block
reduces a row. `inner_outer` decides which (see its module docstring).
"""

from __future__ import annotations

from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.kernel_builder import Index, KernelBuilder, comment, named
from fuser.transforms.schedulers.persistent import (
    Arrays,
    PersistentParams,
    Row,
    emit_row,
)
from fuser.transforms.schedulers.reduction_layout import NONE, AccessPlan, Layout
from fuser.transforms.schedulers.reduction_parts import Chunk, KernelParts, Slots
from fuser.transforms.schedulers.reduction_structure import Key, Structure
from fuser.transforms.schedulers.scalar_lowering import constant


def walk_rows(parts: KernelParts, p: PersistentParams) -> None:
    """The inner-outer kernel's body: block g walks the rows of chunk g of each partial sum,
    one at a time (short rows: `blockDim.y` at a time, a row per `threadIdx.y`),
    adding each row's values into per-thread accumulators (the same columns every row), and
    stores them as row g of the partial sums at the end (short rows: summed across
    `threadIdx.y` first). With `prefetch`, the reads that do not depend on the row are loaded
    once before the walk, and each row's reads while the row before it is worked on. Sums in
    shared memory and prefetching walk one row a block (`inner_outer._analyze` gives them only
    rows of `SHORT_ROW_THREADS` threads or more)."""
    kb, structure = parts.kb, parts.structure
    tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
    bx = kb.geometry(kernel.BlockIdOp, kernel.Dimension.X)
    bdy = p.block[1]
    assert bdy == 1 or not (p.shared_sums or p.prefetch), "shared sums walk one row a block"
    splits = structure.partials[0].split_count
    assert all(op.split_count == splits for op in structure.partials)
    v = p.layout.vector_width
    rows = parts.kept_extent
    per_chunk = named(kb.div(kb.add(rows, splits - 1), splits), "chunk_rows")
    first = named(kb.mul(bx, per_chunk), "first_row")
    last = arith.MinSIOp(kb.value(kb.add(first, per_chunk)), kb.value(rows)).result
    last.name_hint = "last_row"
    sums = {key: Sums(kb, p, key) for key in structure.partial_keys()}
    ty = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.Y) if bdy > 1 else 0
    row_end = None if bdy == 1 else last  # short rows: the last rows of the chunk masked
    ahead = Prefetch(parts, p, first, last) if p.prefetch else None
    with kb.loop(first, last, bdy, name="row" if bdy == 1 else "rows") as at:
        row = kb.add(at, ty)
        loaded = {} if ahead is None else ahead.advance(row)
        emit_row(parts, p, row, sums, row_end, loaded)
    if ahead is not None:  # the copies started for the row after the last (they copy nothing)
        kernel.CopyAsyncWaitOp(0)
    if bdy > 1:
        comment("sum the accumulators across threadIdx.y")
        for acc in sums.values():
            with kb.unrolled(p.slots, "s") as s:
                total = acc.load(s)
                total = kernel.BlockReduceOp(kernel.ReduceKind.SUM, total, kernel.Dimension.Y)
                acc.store(s, total.result)
    length = parts.reduced_extent
    outputs = dict(structure.partial_outputs)
    keys = dict(zip(structure.partials, structure.partial_keys(), strict=True))
    first_row_thread = (
        None if bdy == 1 else kb.cmp("eq", kb.geometry(kernel.ThreadIdOp, kernel.Dimension.Y), 0)
    )
    with kb.if_(first_row_thread):
        local = {op: sums[keys[op]].registers() for op in outputs.values()}
        for o, op in outputs.items():
            comment(f"store output #{o} (partial sums of chunk blockIdx.x)")
            row_offset = [kb.mul(bx, kb.stride(parts.kb.outputs[o], 0))]
            with kb.unrolled(p.chunks, "c") as c:
                column = kb.add(kb.mul(tx, v), kb.mul(c, p.block[0] * v))
                valid = named(kb.cmp("slt", named(column, "col"), length), "valid")
                chunk = Chunk(bx, column, v, True, valid)
                parts.store_full_slots(o, chunk, local[op], kb.mul(c, v), row_offset)


def sums_type(p: PersistentParams, t: Attribute) -> kernel.ArrayType:
    """The array of a block's partial sums of one value of type `t` in shared memory (the
    launch's dynamic shared memory: they may take more than the 48 KiB of static): one element
    per slot per thread."""
    return kernel.ArrayType(p.slots * p.block[0] * p.block[1], t, kernel.MemorySpace.DYNAMIC)


class Sums:
    """A thread's running partial sums of one value, one per slot: a register array, or (with
    `shared_sums`) an array in shared memory holding every thread's (`sums_type`), slot s of
    thread t at `s * threads + t`: a thread only touches its own, so no barrier orders them,
    and a warp's accesses to one slot are consecutive words."""

    def __init__(self, kb: KernelBuilder, p: PersistentParams, key: Key) -> None:
        self.kb, self.slots = kb, p.slots
        t = fu.element_type(key[0].type)
        name = f"{key[0].name_hint or 'value'}_sums"
        self.threads = p.block[0] * p.block[1]
        self.thread: Index | None = None
        if not p.shared_sums:
            self.array = kernel.AllocOp(
                kernel.ArrayType(p.slots, t, kernel.MemorySpace.LOCAL), True
            ).result
            self.array.name_hint = name
            return
        self.array = kernel.AllocOp(sums_type(p, t)).result
        self.array.name_hint = name
        self.thread = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)  # (one row a block)
        with kb.unrolled(p.slots, "s") as s:
            self.store(s, constant(0, t))

    def _index(self, s: Index) -> SSAValue:
        kb = self.kb
        if self.thread is None:
            return kb.value(s)
        return kb.value(kb.add(kb.mul(s, self.threads), self.thread))

    def load(self, s: Index) -> SSAValue:
        return kernel.ArrayLoadOp(self.array, self._index(s)).result

    def store(self, s: Index, value: SSAValue) -> None:
        kernel.ArrayStoreOp(value, self.array, self._index(s))

    def registers(self) -> SSAValue:
        """The thread's sums in a register array (one element per slot)."""
        if self.thread is None:
            return self.array
        t = self.array.type.element_type
        array = kernel.AllocOp(kernel.ArrayType(self.slots, t, kernel.MemorySpace.LOCAL)).result
        array.name_hint = f"{self.array.name_hint}_regs"
        kb = self.kb
        with kb.unrolled(self.slots, "s") as s:
            kernel.ArrayStoreOp(self.load(s), array, kb.value(s))
        return array


def staged_reads(layout: Layout) -> list[AccessPlan]:
    """The reads a prefetching kernel stages in shared memory: those per element of each row."""
    return [plan for plan in layout.reads if plan.kept != NONE and plan.reduced != NONE]


def can_stage(structure: Structure, layout: Layout) -> bool:
    """Whether each staged read moves in copies of 4, 8 or 16 bytes (vectors of the layout's
    width)."""
    v = layout.vector_width
    return all(
        plan.vector
        and v * kernel.byte_size(fu.element_type(structure.fusion.inputs[plan.param].type))
        in kernel.ASYNC_COPY_BYTES
        for plan in staged_reads(layout)
    )


def dynamic_arrays(structure: Structure, p: PersistentParams) -> list[kernel.ArrayType]:
    """The kernel's arrays in dynamic shared memory, in the order it declares them: the
    partial sums (with `shared_sums`), then the two buffers of each staged read (with
    `prefetch`): chunk c of thread t of buffer b at vector `(b * chunks + c) * threads + t`."""
    arrays: list[kernel.ArrayType] = []
    if p.shared_sums:
        arrays += [sums_type(p, fu.element_type(op.result.type)) for op in structure.partials]
    if p.prefetch:
        arrays += stage_types(structure, p)
    return arrays


def stage_types(structure: Structure, p: PersistentParams) -> list[kernel.ArrayType]:
    """The two buffers of each staged read, one array per read (see `dynamic_arrays`)."""
    threads = p.block[0] * p.block[1]
    return [
        kernel.ArrayType(
            2 * p.slots * threads,
            fu.element_type(structure.fusion.inputs[plan.param].type),
            kernel.MemorySpace.DYNAMIC,
        )
        for plan in staged_reads(p.layout)
    ]


class Prefetch:
    """The loads of a block walking rows, a row ahead (`prefetch`): the reads the same for every
    row are loaded once, before the walk; each row's per-element reads are copied into shared
    memory (`staged_reads`, two buffers taking turns) and its per-row values loaded into
    registers while the row before it is worked on. A thread copies only the chunks it later
    reads, so no barrier is needed: it waits for its own copies. One row a block (`walk_rows`)."""

    def __init__(
        self, parts: KernelParts, p: PersistentParams, first: Index, last: SSAValue
    ) -> None:
        kb = self.kb = parts.kb
        self.parts, self.p, self.last = parts, p, last
        reads = p.layout.reads
        self.staged = staged_reads(p.layout)
        self.scalars = [plan for plan in reads if plan.kept != NONE and plan.reduced == NONE]
        fixed = [plan for plan in reads if plan.kept == NONE]
        self.fixed: Arrays = {}
        if fixed:
            comment("load the reads the same for every row")
            whole = Row(parts, p, first, None, fixed)
            self.fixed = {(plan.param, plan.map): whole.load(plan) for plan in fixed}
        self.buffers = [kernel.AllocOp(t).result for t in stage_types(parts.structure, p)]
        for plan, array in zip(self.staged, self.buffers, strict=True):
            array.name_hint = f"{parts.params[plan.param].name_hint}_stage"
        self.thread = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
        comment("start loading the first row")
        self.pending = self._issue(first, self._buffer(first, 0))

    def _buffer(self, row: Index, ahead: int) -> Index:
        """The buffer of the row `ahead` rows after `row`: rows alternate."""
        return named(self.kb.rem(self.kb.add(row, ahead), 2), "buffer")

    def _vector(self, buffer: Index, c: Index) -> SSAValue:
        """The element index of the thread's chunk c in a buffer."""
        kb, p = self.kb, self.p
        slot = kb.add(kb.mul(buffer, p.chunks), c)
        return kb.value(
            kb.mul(kb.add(kb.mul(slot, p.block[0]), self.thread), p.layout.vector_width)
        )

    def _issue(self, row: Index, buffer: Index, into: Arrays | None = None) -> Arrays:
        """Starts the loads of `row` (none past the chunk's last row): its staged reads into
        `buffer`, its per-row values into registers (`into`, or new arrays); commits the
        copies."""
        kb, parts, p = self.kb, self.parts, self.p
        named(row, "next_row")
        ok = named(kb.cmp("slt", row, self.last), "next_ok")
        access = Row(parts, p, row, ok, [*self.staged, *self.scalars])
        v = p.layout.vector_width
        for plan, array in zip(self.staged, self.buffers, strict=True):
            tensor = parts.params[plan.param]
            with kb.unrolled(p.chunks, "c") as c:
                chunk = access.chunk_at(c)
                valid = chunk.valid
                assert valid is not None
                offset = parts.chunk_offset(plan, chunk, 0, access.kept[id(plan)])
                offset = arith.SelectOp(valid, offset, kb.value(0)).result
                kernel.CopyAsyncOp(tensor, offset, array, self._vector(buffer, c), v, valid)
        kernel.CopyAsyncCommitOp()
        into = into or {}
        loads: Arrays = {}
        for plan in self.scalars:
            key = (plan.param, plan.map)
            loads[key] = access.load(plan, into[key][0] if key in into else None)
        return loads

    def advance(self, row: Index) -> Arrays:
        """In the walk's iteration for `row`: starts the next row's loads and returns this
        row's reads, landed."""
        kb, p = self.kb, self.p
        comment("this row's reads; start loading the next row")
        buffer = self._buffer(row, 0)
        loaded = dict(self.fixed)
        for key, (array, varies) in self.pending.items():
            loaded[key] = (_copy(kb, array), varies)
        self._issue(kb.add(row, 1), self._buffer(row, 1), self.pending)
        kernel.CopyAsyncWaitOp(1)
        slots = Slots(kb, p.chunks, p.layout.vector_width, lambda c: None)
        for plan, array in zip(self.staged, self.buffers, strict=True):
            t = array.type.element_type
            local = slots.array(t, f"{self.parts.params[plan.param].name_hint}_buf")
            v = p.layout.vector_width
            with kb.unrolled(p.chunks, "c") as c:
                vec = kernel.ArrayLoadOp(array, self._vector(buffer, c), VectorType(t, [v])).result
                kernel.ArrayStoreOp(vec, local, kb.value(kb.mul(c, v)))
            loaded[plan.param, plan.map] = (local, True)
        return loaded


def _copy(kb: KernelBuilder, array: SSAValue) -> SSAValue:
    """A new local array holding `array`'s elements."""
    t = cast(kernel.ArrayType, array.type)
    size = t.size.data
    copy = kernel.AllocOp(kernel.ArrayType(size, t.element_type, kernel.MemorySpace.LOCAL)).result
    copy.name_hint = f"{array.name_hint or 'array'}_row"
    with kb.unrolled(size, "s") as s:
        kernel.ArrayStoreOp(kernel.ArrayLoadOp(array, kb.value(s)).result, copy, kb.value(s))
    return copy
