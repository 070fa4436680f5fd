"""`fuser-plan-memory`: a program's intermediates laid out in one workspace, by their lifetimes.

A lowered `host.program` allocates each intermediate right before the launch that writes it and
deallocates it after its last reader (`fuser-lower-host`). Run as written, a call would make a
pool allocation and a free per intermediate. This pass plans them instead, as nvFuser's host IR
makes allocation a pass of its own: in a program that runs on one stream, every top-level
`host.allocate` that is not returned and that one top-level `host.deallocate` frees later is
*planned*:

- its size in bytes is computed from its extents at the start of the planned region (the
  `host.dim`s and `arith` that its sizes come from are cloned there), rounded up to
  `WORKSPACE_ALIGNMENT`;
- buffers are placed first-fit in allocation order: each at the lowest offset (0, or the end of
  a buffer placed before it) where it overlaps none of the buffers whose lifetimes (from
  `host.allocate` to `host.deallocate`) overlap its own, so it reuses the bytes of buffers freed
  before it was allocated. With symbolic sizes the comparisons are `arith` ops (`cmpi`,
  `select`, `minui`), folded to constants where the shapes are static;
- one `host.workspace` of the largest end is taken before the first planned allocation, each
  planned `host.allocate` becomes a `host.workspace_view` at its offset, its `host.deallocate`
  goes away, and one `host.release` follows the last of them.

Offsets and sizes are `index` values of the program: the evaluator folds them per signature,
like every other extent. Programs with stream ops are left as they are (their buffers' lifetimes
depend on the streams' order). `plan_memory(program)` runs the pass on one program.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from fuser.dialects import host, kernel

WORKSPACE_ALIGNMENT = 256
"""Bytes every buffer of a workspace starts at a multiple of (as the CUDA allocators align)."""


@dataclass
class _Buffer:
    alloc: host.AllocateOp
    free: host.DeallocateOp
    start: int
    end: int
    nbytes: SSAValue | None = None
    offset: SSAValue | None = None
    end_value: SSAValue | None = None


class _Builder:
    """Creates index arithmetic before one op of the program's block, folding what is constant
    (static shapes give a plan of constants)."""

    def __init__(self, block: Block, before: Operation) -> None:
        self.block = block
        self.before = before
        self.constants: dict[int, SSAValue] = {}
        self.known: dict[SSAValue, int] = {}
        self.positive: set[SSAValue] = set()  # sizes and the ends of buffers: never 0
        self.sizes: dict[tuple[tuple[SSAValue, ...], int], SSAValue] = {}
        self.created: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.block.insert_op_before(op, self.before)
        self.created.append(op)
        return op.results[0]

    def erase_unused(self) -> None:
        """Drop what was made and not used (candidates that folded away)."""
        for op in reversed(self.created):
            if all(not r.uses for r in op.results):
                Rewriter.erase_op(op)

    def constant(self, n: int, boolean: bool = False) -> SSAValue:
        key = -1 - n if boolean else n  # i1 constants apart from index ones
        value = self.constants.get(key)
        if value is None:
            attr = IntegerAttr(n, IntegerType(1)) if boolean else IntegerAttr(n, IndexType())
            value = self.constants[key] = self.add(arith.ConstantOp(attr))
            self.known[value] = n
        return value

    def binary(
        self,
        make: Callable[[SSAValue, SSAValue], Operation],
        fold: Callable[[int, int], int],
        a: SSAValue,
        b: SSAValue,
        boolean: bool = False,
    ) -> SSAValue:
        """`make(a, b)`, or the constant `fold(a, b)` when both are known."""
        if a in self.known and b in self.known:
            return self.constant(fold(self.known[a], self.known[b]), boolean)
        return self.add(make(a, b))

    def addi(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if self.known.get(a) == 0:
            return b
        if self.known.get(b) == 0:
            return a
        result = self.binary(arith.AddiOp, operator.add, a, b)
        if a in self.positive or b in self.positive:
            self.positive.add(result)
        return result

    def maximum(self, values: list[SSAValue]) -> SSAValue:
        values = list(dict.fromkeys(values))  # each value once
        result = self.constant(0) if not values else values[0]
        for v in values[1:]:
            result = self.binary(arith.MaxUIOp, max, result, v)
        return result

    def minimum(self, values: list[SSAValue]) -> SSAValue:
        values = list(dict.fromkeys(values))
        result = values[0]
        for v in values[1:]:
            result = self.binary(arith.MinUIOp, min, result, v)
        return result

    def compare(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        folds = {"ule": operator.le, "uge": operator.ge}
        if a is b:
            return self.constant(1, boolean=True)
        low, high = (a, b) if predicate == "uge" else (b, a)  # is `low` >= `high`?
        if self.known.get(low) == 0 and high in self.positive:
            return self.constant(0, boolean=True)

        def make(x: SSAValue, y: SSAValue) -> Operation:
            return arith.CmpiOp(x, y, predicate)

        return self.binary(make, lambda x, y: int(folds[predicate](x, y)), a, b, boolean=True)

    def both(self, a: SSAValue, b: SSAValue) -> SSAValue:
        for x, y in ((a, b), (b, a)):
            if x in self.known:
                return y if self.known[x] else x
        return self.add(arith.AndIOp(a, b))

    def either(self, a: SSAValue, b: SSAValue) -> SSAValue:
        for x, y in ((a, b), (b, a)):
            if x in self.known:
                return x if self.known[x] else y
        return self.add(arith.OrIOp(a, b))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        if a is b:
            return a
        if cond in self.known:
            return a if self.known[cond] else b
        return self.add(arith.SelectOp(cond, a, b))

    def available(self, value: SSAValue) -> SSAValue | None:
        """`value` where the builder inserts: itself when defined before, else a clone of the
        `host.dim`/`arith` ops it comes from; None when it comes from anything else."""
        owner = value.owner
        if isinstance(owner, Block):
            return value
        value_attr = owner.value if isinstance(owner, arith.ConstantOp) else None
        if isinstance(value_attr, IntegerAttr) and isinstance(value_attr.type, IndexType):
            return self.constant(value_attr.value.data)
        here = self.block.get_operation_index(self.before)
        if owner.parent_block() is self.block and self.block.get_operation_index(owner) < here:
            return value
        if isinstance(owner, host.DimOp) and isinstance(owner.input.owner, Block):
            return self.add(host.DimOp(owner.input, owner.axis.value.data))
        if owner.name.startswith("arith.") and not owner.regions and len(owner.results) == 1:
            operands = [self.available(o) for o in owner.operands]
            if any(o is None for o in operands):
                return None
            clone = owner.clone()
            for i, o in enumerate(operands):
                assert o is not None
                clone.operands[i] = o
            return self.add(clone)
        return None

    def nbytes(self, alloc: host.AllocateOp) -> SSAValue | None:
        """The aligned byte size of an allocation, or None when its extents are not available."""
        t = alloc.result.type
        assert isinstance(t, TensorType)
        static = math.prod(d for d in t.get_shape() if d != DYNAMIC_INDEX)
        static *= kernel.byte_size(t.element_type)
        key = (tuple(alloc.dynamic_sizes), static)
        if key in self.sizes:
            return self.sizes[key]
        size = None
        for operand in alloc.dynamic_sizes:
            extent = self.available(operand)
            if extent is None:
                return None
            size = extent if size is None else self.binary(arith.MuliOp, operator.mul, size, extent)
        if size is None:
            nbytes = self.constant(_aligned(max(static, 1)))
        else:
            size = self.binary(arith.MuliOp, operator.mul, size, self.constant(static))
            size = self.maximum([size, self.constant(1)])
            align = self.constant(WORKSPACE_ALIGNMENT)
            rounded = self.addi(size, self.constant(WORKSPACE_ALIGNMENT - 1))
            blocks = self.binary(arith.DivUIOp, operator.floordiv, rounded, align)
            nbytes = self.binary(arith.MuliOp, operator.mul, blocks, align)
        self.sizes[key] = nbytes
        self.positive.add(nbytes)
        return nbytes

    def end(self, buffer: _Buffer) -> SSAValue:
        """Where a placed buffer ends (its offset plus its size)."""
        if buffer.end_value is None:
            assert buffer.offset is not None and buffer.nbytes is not None
            buffer.end_value = self.addi(buffer.offset, buffer.nbytes)
        return buffer.end_value

    def lowest_fit(self, size: SSAValue, live: list[_Buffer]) -> SSAValue:
        """The lowest offset where `size` bytes overlap none of the `live` buffers: the lowest
        of 0 and their ends that fits (the highest end always does), as arith on symbolic
        sizes, constants for static ones."""
        if not live:
            return self.constant(0)
        candidates = [self.constant(0), *(self.end(p) for p in live)]
        unfit = self.maximum([self.end(p) for p in live])  # fits: nothing live above it
        fitting: list[SSAValue] = []
        for c in dict.fromkeys(candidates):
            top = self.addi(c, size)
            ok = self.constant(1, boolean=True)
            for p in live:
                assert p.offset is not None
                clear = self.either(
                    self.compare("ule", top, p.offset), self.compare("uge", c, self.end(p))
                )
                ok = self.both(ok, clear)
            fitting.append(self.select(ok, c, unfit))
        return self.minimum(fitting)


def _aligned(n: int) -> int:
    return -(-n // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT


def _uses_streams(program: host.ProgramOp) -> bool:
    return any(
        isinstance(op, host.SetCurrentStreamOp | host.StreamOp | host.SynchronizeOp)
        or (isinstance(op, host.LaunchOp) and op.stream is not None)
        for op in program.body.walk()
    )


def _candidates(program: host.ProgramOp) -> list[_Buffer]:
    block = program.body.block
    ret = block.last_op
    assert isinstance(ret, host.ReturnOp)
    returned = set(ret.values)
    buffers: list[_Buffer] = []
    for op in block.ops:
        if not isinstance(op, host.AllocateOp) or op.result in returned:
            continue
        frees = [u.operation for u in op.result.uses if isinstance(u.operation, host.DeallocateOp)]
        if len(frees) != 1 or frees[0].parent_block() is not block:
            continue
        free = frees[0]
        assert isinstance(free, host.DeallocateOp)
        start, end = block.get_operation_index(op), block.get_operation_index(free)
        if end > start:
            buffers.append(_Buffer(op, free, start, end))
    return buffers


def plan_memory(program: host.ProgramOp) -> int:
    """Lay out the program's plannable intermediates in one workspace (see the module
    docstring); returns how many were planned."""
    if _uses_streams(program):
        return 0
    buffers = _candidates(program)
    if not buffers:
        return 0
    block = program.body.block
    builder = _Builder(block, buffers[0].alloc)
    planned: list[_Buffer] = []
    for b in buffers:
        b.nbytes = builder.nbytes(b.alloc)
        if b.nbytes is not None:
            planned.append(b)
            name = b.alloc.result.name_hint
            if name and not b.nbytes.name_hint:
                b.nbytes.name_hint = f"{name}_bytes"
    if not planned:
        return 0
    for i, b in enumerate(planned):
        assert b.nbytes is not None
        overlapping = [p for p in planned[:i] if p.start <= b.end and b.start <= p.end]
        b.offset = builder.lowest_fit(b.nbytes, overlapping)
        if b.alloc.result.name_hint and not b.offset.name_hint:
            b.offset.name_hint = f"{b.alloc.result.name_hint}_at"
    total = builder.maximum([builder.end(b) for b in planned])
    total.name_hint = total.name_hint or "workspace_bytes"
    workspace = host.WorkspaceOp(total)
    workspace.result.name_hint = "workspace"
    block.insert_op_before(workspace, builder.before)
    for b in planned:
        assert b.offset is not None
        t = b.alloc.result.type
        assert isinstance(t, TensorType)
        view = host.WorkspaceViewOp(workspace.result, b.offset, t, list(b.alloc.dynamic_sizes))
        view.result.name_hint = b.alloc.result.name_hint
        Rewriter.replace_op(b.alloc, view)
    last = max(planned, key=lambda b: b.end).free
    Rewriter.insert_op(host.ReleaseOp(workspace.result), InsertPoint.after(last))
    for b in planned:
        Rewriter.erase_op(b.free)
    builder.erase_unused()
    return len(planned)


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Plans the intermediates of every `host.program` of a module (see the module
    docstring)."""

    name = "fuser-plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in [p for p in op.walk() if isinstance(p, host.ProgramOp)]:
            plan_memory(program)
