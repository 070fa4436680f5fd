"""The reduction scheduler: fusions whose reductions stream over their input once.

It takes fusions with one or more reductions (`sum`, `max`, `min`, `welford`, `var_mean`) of one
shape over the same axes, a pointwise prologue feeding them, an epilogue on the reduced values,
and outputs of the full shape computed before the reductions; not fusions with persistent buffers
(a reduction result used with per-element values, or a reduction of another's result: the
persistent scheduler takes those). `reduction_layout` normalizes the problem to inner [I, Rn] or
outer [Rn, I]; each element is read once, in one of two kernels:

- **inner** (the reduced dims are the fastest): a row of Rn elements per `threadIdx.y`, with
  `blockDim.x` threads striding over it. Each loop iteration issues `unroll` predicated vector
  loads (`vector_width` elements, 16 bytes at most) per thread before computing anything, so
  several loads are in flight; their slots reduce as a tree into a per-thread partial that merges
  into the loop-carried state. Then `kernel.block_reduce` along x (a warp reduction when a row has
  exactly 32 threads; two sums for a Welford state, see `reduction_parts.combine_welford`)
  combines a row's threads, and the epilogue and stores run once per row.
  Short rows take fewer threads and several rows per block (`blockDim.y`).
- **outer** (a kept dim is the fastest): threads along the kept columns, each owning
  `vector_width` adjacent columns (vector loads along a row), accumulating down the rows; the
  rows are split across `blockDim.y`, combined by `kernel.block_reduce` along y, and each thread
  loads OUTER_UNROLL rows per loop iteration. Blocks tile the columns, 8 threads (128 bytes of
  a row) wide when that gives twice as many blocks as SMs.

Reductions over dims that do not merge into two groups (a reduction over {0, 2} of a 3-D tensor,
a permuted input) take the same kernels with `general` accesses: group indices are delinearized
into dims and each element is addressed by its strides (correct, slower, scalar loads).

**Row split.** A fusion whose reductions are `partial_sum`s over the fastest dim (which
`split-reductions` writes for a few long rows) takes the inner kernel with a second grid dim:
block (x, s) sums run s, `[s * chunk, (s + 1) * chunk)` with `chunk = ceil(Rn / splits)`, of its
rows and stores it at `[row, s]`; the runs' sums are another kernel's work (in the IR). The
vector width divides the chunk too, so no vector straddles two runs.

Not done: finishing a split inside the kernel (a grid reduction over a global work buffer and a
semaphore, as nvFuser does): a kernel's parameters are only the fusion's inputs and outputs.
A few columns over many rows take the inner-outer kernel (`split-reductions`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import arith
from xdsl.ir import Attribute, Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.base import (
    AnalyzedScheduler,
    LaunchConfig,
    Params,
    check_grid,
)
from fuser.transforms.schedulers.info import FusionInfo
from fuser.transforms.schedulers.iteration_space import DimMap, Needs
from fuser.transforms.schedulers.kernel_builder import Index, comment, named
from fuser.transforms.schedulers.reduction_layout import (
    NONE,
    Layout,
    Problem,
    ceil_div,
    kept_points,
    plan_layout,
    pow2_ceil,
    refusal_key,
)
from fuser.transforms.schedulers.reduction_parts import (
    Chunk,
    KernelParts,
    State,
    carried_loop,
    cooperate,
    identity_state,
    merge_states,
    online_sum,
    partial_state,
)
from fuser.transforms.schedulers.reduction_structure import (
    Key,
    Structure,
    full_output_keys,
    reduction_input,
    structure_of,
)

MAX_ELEMENTS_IN_FLIGHT = 64
"""Cap on elements loaded per thread per loop iteration (unroll x width x reads)."""
BLOCK_THREADS = 256
"""The block size the inner kernel aims at when rows are short (several rows per block)."""
OUTER_BLOCK_THREADS = 128
OUTER_UNROLL = 16
"""Rows each thread of the outer kernel loads per loop iteration: many loads in flight from
small blocks (on an H200, sum(0) of [16384, 16384] f32 ran at 94-98% of copy bandwidth with
(8, 16) threads and 16 rows or (8, 32) and 8, 88-90% with (16, 32) and 4;
benchmarks/RESULTS.md, runs 2 and 3)."""
MAX_THREADS = kernel.MAX_THREADS_PER_BLOCK


@dataclass(frozen=True)
class ReductionParams(Params):
    """The reduction template's parameters: `block` is (threads along the vectorized group,
    threads along the other group, 1): (per row, rows) for inner, (columns, rows) for outer."""

    layout: Layout
    unroll: int
    """Chunks of `vector_width` elements each thread loads per loop iteration."""


Accepted = tuple[Structure, Problem]
"""The reduction template's analysis of a fusion it takes: its structure and layout."""
Analysis = Accepted | str


def analyze(fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
    """The structure and layout of `fusion` for `info`, or why the template does not take it
    (once per (fusion, info) under an open analysis cache)."""
    return memoized("reduction", (fusion, info), lambda: _analyze(fusion, info))


def _analyze(fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
    """The fusion's structure and problem for `info`, or why the reduction template cannot
    take it."""
    structure = structure_of(fusion)
    if structure.error is not None:
        return structure.error
    if structure.persistent_reason is not None:
        return f"it has persistent buffers: {structure.persistent_reason}"
    problem = plan_layout(structure, info)
    if isinstance(problem, str):
        return problem
    return structure, problem


def _chunk_reads(layout: Layout) -> int:
    """Reads loaded per chunk: those that depend on the group the loop walks."""
    return max(1, sum(1 for p in layout.reads if p.reduced != NONE))


def _unroll(layout: Layout, chunks: int, most: int = 4) -> int:
    cap = max(1, MAX_ELEMENTS_IN_FLIGHT // (layout.vector_width * _chunk_reads(layout)))
    return next(u for u in (16, 8, 4, 2, 1) if u == 1 or (u <= min(cap, most) and u <= chunks))


def _sizes(problem: Problem, info: FusionInfo, splits: int = 1) -> tuple[int, int, int]:
    """Threads along the vectorized group and the other, and the unroll, for `problem` (its
    rows split into `splits` runs, each a row of its own to the kernel)."""
    layout = problem.layout
    sms = info.device.sm_count
    v = layout.vector_width
    if layout.inner:
        chunks = ceil_div(ceil_div(problem.reduced, splits), v)
        unroll = _unroll(layout, chunks)
        iterations = ceil_div(chunks, unroll)
        rows = problem.kept * splits
        # Threads per row: enough for two loop iterations each, at most 512 (1024 when
        # there are too few rows to fill the GPU).
        limit = 512 if rows >= 2 * sms else MAX_THREADS
        bdx = min(limit, pow2_ceil(ceil_div(iterations, 2)))
        bdy = max(1, BLOCK_THREADS // bdx)
        while bdy > 1 and ceil_div(rows, bdy) < 2 * sms:
            bdy //= 2
        return bdx, bdy, unroll
    columns = ceil_div(problem.kept, v)
    bdx = min(32, pow2_ceil(columns))
    # narrow blocks (8 threads: 128-byte row segments) so that more of them fill the GPU
    while bdx > 8 and ceil_div(columns, bdx) < 2 * sms:
        bdx //= 2
    unroll = _unroll(layout, problem.reduced, OUTER_UNROLL)
    # few columns: the whole block goes down the rows (no grid reduction, see above)
    threads = OUTER_BLOCK_THREADS if ceil_div(columns, bdx) >= sms else MAX_THREADS
    bdy = min(max(1, threads // bdx), pow2_ceil(ceil_div(problem.reduced, unroll)))
    # few rows: wider blocks rather than tiny ones, while the grid still fills the GPU
    while bdx * bdy < OUTER_BLOCK_THREADS and ceil_div(columns, 2 * bdx) >= 2 * sms:
        bdx *= 2
    return bdx, bdy, unroll


class ReductionScheduler(AnalyzedScheduler[Accepted]):
    """Reductions without persistent buffers, as one streaming kernel (inner or outer)."""

    name = "reduction"

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
        return analyze(fusion, info)

    def key_of(self, fusion: fu.FusionOp, info: FusionInfo, analysis: Accepted) -> Hashable:
        """The layout (per `layout_class`) and the block and unroll its sizes give (inner: the
        row length and rows per block classes; outer: the column and row classes)."""
        structure, problem = analysis
        return (problem.layout, *_sizes(problem, info, structure.row_splits))

    def refusal_key(self, fusion: fu.FusionOp, info: FusionInfo, reason: str) -> Hashable:
        return refusal_key(structure_of(fusion), info, reason)

    def params_of(
        self, fusion: fu.FusionOp, info: FusionInfo, analysis: Accepted
    ) -> ReductionParams:
        structure, problem = analysis
        bdx, bdy, unroll = _sizes(problem, info, structure.row_splits)
        return ReductionParams(block=(bdx, bdy, 1), layout=problem.layout, unroll=unroll)

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(ReductionParams, params)
        structure = structure_of(fusion)
        kept = kept_points(structure, p.layout, info)
        bdx, bdy, _ = p.block
        if p.layout.inner:
            blocks = ceil_div(kept, bdy)
        else:
            blocks = ceil_div(ceil_div(kept, p.layout.vector_width), bdx)
        grid = (max(1, blocks), structure.row_splits, 1)
        check_grid(fusion, "reduction", grid)
        return LaunchConfig(grid, p.block)

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        p = cast(ReductionParams, params)
        structure = structure_of(fusion)
        assert structure.error is None, structure.error
        parts = KernelParts(structure, p.layout, kernel_name, p.block[0] * p.block[1])
        with parts.kb.build():
            if p.layout.inner:
                _emit_inner(parts, p)
            else:
                _emit_outer(parts, p)
        return parts.kb.func


# --------------------------------------------------------------------------------------------
# The kernels
# --------------------------------------------------------------------------------------------


def reduction_type(op: Operation) -> Attribute:
    return fu.element_type(reduction_input(op).type)


def flatten_states(states: list[State]) -> list[SSAValue]:
    return [v for s in states for v in s]


def unflatten_states(values: list[SSAValue], like: list[State]) -> list[State]:
    result: list[State] = []
    k = 0
    for s in like:
        result.append(tuple(values[k : k + len(s)]))
        k += len(s)
    return result


Arrays = dict[tuple[int, DimMap], tuple[SSAValue, bool]]


@dataclass(frozen=True)
class OnlineSum:
    """A `sum(exp(a - max(a)))` computed in the same pass as its `max(a)`: kept relative to the
    running max and rescaled as it grows (`online_sum`)."""

    max_op: Operation
    sum_op: Operation


@dataclass(frozen=True)
class StreamPass:
    """What one streaming pass over a row computes per element: the inputs of the reductions
    `ops` (from `needs`, the pass's per-element values, given the row's values `env_row`:
    reduction results of earlier passes and what is computed from them), and, if `store_full`,
    the full-shape outputs, stored as they are computed."""

    ops: Sequence[Operation]
    needs: Needs
    env_row: dict[Key, SSAValue]
    store_full: bool
    online: OnlineSum | None = None
    """A sum computed online beside its max, one of `ops`: its state comes after theirs."""


def stream_chunks(
    parts: KernelParts,
    chunks: list[Chunk],
    invariant: Arrays,
    kept: dict[int, list[Index]],
    states: list[list[State]],
    stream: StreamPass,
) -> list[list[State]]:
    """Loads the chunks, computes the pass's values at every slot, stores full-shape outputs
    (if the pass stores them) and merges each slot's reduction inputs into `states[r][s]`, the
    state of the pass's reduction r for slot s of a chunk (one state per chunk for inner, one
    per slot for outer); returns the new states."""
    structure = parts.structure
    element_plans = [p for p in parts.layout.reads if p.reduced != NONE]
    loaded: list[Arrays] = []
    for chunk in chunks:
        comment("load")
        arrays: Arrays = dict(invariant)
        for plan in element_plans:
            array = parts.load(plan, chunk, kept[id(plan)])
            arrays[plan.param, plan.map] = (array, parts.varies(plan, chunk.along_reduced))
        loaded.append(arrays)
    # values[c][j][r]: the input of reduction r at slot j of chunk c
    values: list[list[list[SSAValue]]] = []
    full = full_output_keys(structure) if stream.store_full else []
    for c, chunk in enumerate(chunks):
        row: list[list[SSAValue]] = []
        full_values: list[list[SSAValue]] = [[] for _ in full]
        for j in range(chunk.width):
            read = parts.reader(loaded[c], j)
            env: dict[Key, SSAValue] = parts.compute(stream.needs, dict(stream.env_row), read)
            row.append([env[reduction_input(op), structure.input_maps[op]] for op in stream.ops])
            if full:
                parts.compute(structure.full_needs, env, read)
                for f, (_, key) in enumerate(full):
                    full_values[f].append(env[key])
        values.append(row)
        for f, (o, _) in enumerate(full):
            plan = parts.output_plans[o]
            parts.store_full(o, chunk, full_values[f], kept[id(plan)])
    new: list[list[State]] = []
    along_reduced = chunks[0].along_reduced
    for r, op in enumerate(stream.ops):
        comment(f"reduce {op.name} {reduction_input(op).name_hint or ''}".rstrip())
        if along_reduced:
            groups = [
                (chunk.valid, [values[c][j][r] for j in range(chunk.width)])
                for c, chunk in enumerate(chunks)
            ]
            new.append([merge_states(op, states[r][0], partial_state(op, groups))])
        else:
            slots = chunks[0].width
            new.append(
                [
                    merge_states(
                        op,
                        states[r][j],
                        partial_state(
                            op, [(chunk.valid, [values[c][j][r]]) for c, chunk in enumerate(chunks)]
                        ),
                    )
                    for j in range(slots)
                ]
            )
    if stream.online is not None:
        r = list(stream.ops).index(stream.online.max_op)
        terms = [
            (chunk.valid, [values[c][j][r] for j in range(chunk.width)])
            for c, chunk in enumerate(chunks)
        ]
        total = online_sum(states[r][0][0], new[r][0][0], states[-1][0][0], terms)
        new.append([(total,)])
    return new


def _emit_inner(parts: KernelParts, p: ReductionParams) -> None:
    """A row per `threadIdx.y`, `blockDim.x` threads along it (see the module docstring)."""
    kb, structure, layout = parts.kb, parts.structure, p.layout
    bdx, bdy, _ = p.block
    v, unroll = layout.vector_width, p.unroll
    tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
    bx = kb.geometry(kernel.BlockIdOp, kernel.Dimension.X)
    row: Index = kb.mul(bx, bdy)
    if bdy > 1:
        row = kb.add(row, kb.geometry(kernel.ThreadIdOp, kernel.Dimension.Y))
    rows, length = parts.kept_extent, parts.reduced_extent
    named(row, "row")
    row_ok = named(kb.cmp("slt", row, rows), "row_ok")
    splits = structure.row_splits
    begin: Index = 0
    split: Index = 0
    if splits > 1:  # block (x, s) sums run s of its rows: [s * chunk, (s + 1) * chunk)
        split = kb.geometry(kernel.BlockIdOp, kernel.Dimension.Y)
        chunk = named(kb.div(kb.add(length, splits - 1), splits), "chunk")
        begin = named(kb.mul(split, chunk), "begin")
        stop = kb.value(kb.add(begin, chunk))
        length = arith.MinSIOp(kb.value(length), stop).result
    end = arith.SelectOp(row_ok, kb.value(length), kb.value(0)).result
    end.name_hint = "end"
    # The kept part of every offset, once per row.
    kept: dict[int, list[Index]] = {}
    row_chunk = Chunk(row, 0, 1, True, row_ok)
    for plan in parts.streamed_plans():
        kept[id(plan)] = parts.kept_offsets(plan, row_chunk)
    invariant: Arrays = {}
    for plan in layout.reads:
        if plan.reduced == NONE:
            comment("load (once per row)")
            invariant[plan.param, plan.map] = (parts.load(plan, row_chunk, kept[id(plan)]), False)
    states0 = [identity_state(op, reduction_type(op)) for op in structure.reductions]
    for s in states0:
        for value in s:
            value.name_hint = "acc"

    def body(k: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        states = [[s] for s in unflatten_states(list(carried), states0)]
        chunks: list[Chunk] = []
        for u in range(unroll):
            col = kb.add(k, u * bdx * v)
            valid = named(kb.cmp("slt", named(col, "col"), end), "valid")
            chunks.append(Chunk(row, col, v, True, valid))
        stream = StreamPass(structure.reductions, structure.stage_needs[0], {}, True)
        new = stream_chunks(parts, chunks, invariant, kept, states, stream)
        return flatten_states([s[0] for s in new])

    start = kb.add(begin, kb.mul(tx, v))
    final = carried_loop(kb, start, end, bdx * v * unroll, flatten_states(states0), body, "col")
    states = unflatten_states(list(final), states0)
    env: dict[Key, SSAValue] = {}
    for op, state in zip(structure.reductions, states, strict=True):
        comment(f"combine {op.name} across the row's threads")
        count = parts.reduced_count(state[0].type) if len(state) == 3 and bdx > 1 else None
        env.update(parts.results(op, cooperate(op, state, kernel.Dimension.X, bdx, count)))
    if structure.reduced_needs:
        comment("epilogue")
    parts.compute(structure.reduced_needs, env, parts.reader(invariant, 0))
    first = kb.cmp("eq", tx, 0) if bdx > 1 else None
    with kb.if_(kb.all_of([c for c in (first, row_ok) if c is not None])):
        parts.store_reduced(env, row, split)


def _emit_outer(parts: KernelParts, p: ReductionParams) -> None:
    """`vector_width` columns per thread, rows split across `threadIdx.y` (see the module
    docstring)."""
    kb, structure, layout = parts.kb, parts.structure, p.layout
    bdx, bdy, _ = p.block
    v, unroll = layout.vector_width, p.unroll
    tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
    ty = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.Y) if bdy > 1 else 0
    bx = kb.geometry(kernel.BlockIdOp, kernel.Dimension.X)
    column = kb.mul(kb.add(kb.mul(bx, bdx), tx), v)
    columns, length = parts.kept_extent, parts.reduced_extent
    named(column, "column")
    column_ok = named(kb.cmp("slt", column, columns), "column_ok")
    end = arith.SelectOp(column_ok, kb.value(length), kb.value(0)).result
    end.name_hint = "end"
    column_chunk = Chunk(column, 0, v, False, column_ok)
    kept: dict[int, list[Index]] = {}
    for plan in parts.streamed_plans():
        kept[id(plan)] = parts.kept_offsets(plan, column_chunk)
    invariant: Arrays = {}
    for plan in layout.reads:
        if plan.reduced == NONE:
            comment("load (once per column)")
            array = parts.load(plan, column_chunk, kept[id(plan)])
            invariant[plan.param, plan.map] = (array, parts.varies(plan, False))
    states0 = [
        [identity_state(op, reduction_type(op)) for _ in range(v)] for op in structure.reductions
    ]
    for per_op in states0:
        for s in per_op:
            for value in s:
                value.name_hint = "acc"
    flat0 = [s for per_op in states0 for s in per_op]

    def body(k: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        flat = unflatten_states(list(carried), flat0)
        states = [flat[r * v : (r + 1) * v] for r in range(len(structure.reductions))]
        chunks: list[Chunk] = []
        for u in range(unroll):
            r = kb.add(k, u * bdy)
            valid = named(kb.cmp("slt", named(r, "row"), end), "valid")
            chunks.append(Chunk(column, r, v, False, valid))
        stream = StreamPass(structure.reductions, structure.stage_needs[0], {}, True)
        new = stream_chunks(parts, chunks, invariant, kept, states, stream)
        return flatten_states([s for per_op in new for s in per_op])

    final = carried_loop(kb, ty, end, bdy * unroll, flatten_states(flat0), body, "row")
    flat = unflatten_states(list(final), flat0)
    first = kb.cmp("eq", ty, 0) if bdy > 1 else None
    envs: list[dict[Key, SSAValue]] = []
    for j in range(v):
        env: dict[Key, SSAValue] = {}
        for r, op in enumerate(structure.reductions):
            comment(f"combine {op.name} across the column's threads")
            state = flat[r * v + j]
            count = parts.reduced_count(state[0].type) if len(state) == 3 and bdy > 1 else None
            state = cooperate(op, state, kernel.Dimension.Y, bdy, count)
            env.update(parts.results(op, state))
        parts.compute(structure.reduced_needs, env, parts.reader(invariant, j))
        envs.append(env)
    # the kept extent divides by the vector width: one check covers the v columns
    with kb.if_(kb.all_of([c for c in (first, column_ok) if c is not None])):
        parts.store_reduced_slots(envs, column)
