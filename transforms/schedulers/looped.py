"""The looped (multi-pass) inner scheduler: normalizations whose rows are too long to stay on
chip, read once per stage of reductions instead of once.

The persistent scheduler keeps a row in registers between its reductions; past 1024 threads x 32
elements (a softmax over a 50k vocabulary in f32, a layer norm over 100k columns) it refuses the
row, and the fusion used to fall apart into a kernel per reduction stage plus a pointwise kernel,
each writing its intermediates to global memory. This template keeps the whole fusion in one
kernel and walks each row once per *pass* (nvFuser's non-persistent "multiple passes" inner
normalization):

- pass q streams the row in tiles of `blockDim.x * unroll * vector_width` elements (the reduction
  scheduler's inner loop: `unroll` predicated vector loads per thread in flight, their slots
  reduced as a tree and merged into loop-carried states), computing every per-element value
  stage q's reductions need from the inputs again, with the row values of the earlier stages
  (a max, a sum) at hand;
- after the loop the states are combined across the block (`kernel.block_reduce`), giving stage
  q's results for the row;
- a last pass computes and stores the full-shape outputs; the reduced outputs are stored once per
  row after it.

The template is taken where a later pass reads an input an earlier pass read (otherwise a kernel
per pass moves the same bytes over the whole GPU). A stage of one `max(a)` followed by a stage of
one `sum(exp(a - max))` (softmax's and logsumexp's normalizer) is one pass: the sum is kept
relative to the running max and rescaled as it grows (`online_sums`). So softmax reads its row
twice (max and sum of exp; output) and writes it once, and logsumexp once. The second read is
served by L2: each block walks rows `gridDim.x` apart, and the grid holds at most as many blocks
as keep the rows in flight within half of L2 (at least one per SM, 1024 threads per SM). A kernel
that reads each row once takes `ONE_PASS_BLOCKS` smaller blocks per SM instead. Welford reductions
(`var_mean` of a long row) merge their per-tile states with Chan's formula, as in the reduction
scheduler, and across the block by sums shifted by the first thread's mean (`_combine`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

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
from fuser.transforms.schedulers.iteration_space import Needs
from fuser.transforms.schedulers.kernel_builder import comment, named
from fuser.transforms.schedulers.reduction import (
    Arrays,
    OnlineSum,
    StreamPass,
    flatten_states,
    reduction_type,
    stream_chunks,
    unflatten_states,
)
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
    combine_welford,
    cooperate,
    cooperate_kind,
    finish_online_sum,
    identity_state,
    is_welford,
    rescale,
    thread_zero_shift,
)
from fuser.transforms.schedulers.reduction_structure import (
    Key,
    Structure,
    reduction_input,
    row_level,
    structure_of,
    whole_rows_error,
)
from fuser.transforms.schedulers.scalar_lowering import is_float

THREADS_PER_SM = kernel.MAX_THREADS_PER_BLOCK
"""Threads per SM the grid aims at: one block of 1024, or two of 512 where two blocks' rows fit
the L2 budget, or ONE_PASS_BLOCKS blocks where the row is read once."""
ONE_PASS_BLOCKS = 4
"""Blocks per SM where the kernel reads each row in one pass (a logsumexp, a cross-entropy's
normalizer): no later pass rereads the row from L2, so more, smaller blocks per SM keep loads in
flight while a block combines its row across threads and stores it (an H200, [4096, 50257]
f32 logsumexp: 0.307 ms with one block of 1024 threads per SM, 0.226 ms with four of 256)."""
BYTES_IN_FLIGHT = 64
"""Bytes each thread loads per tile and input (four 16-byte vectors)."""
MAX_UNROLL = 16
"""Chunks per thread and tile at most (scalar loads of misaligned rows reach it)."""


@dataclass(frozen=True)
class LoopedParams(Params):
    """The looped template's parameters: `block` is (threads per row, 1, 1)."""

    layout: Layout
    unroll: int
    """Chunks of `layout.vector_width` elements each thread loads per tile."""
    blocks: int
    """The most blocks of the grid (each walks rows `gridDim.x` apart)."""


@dataclass(frozen=True)
class _Sizes:
    """Threads per row, chunks per thread and tile, and the grid's most blocks."""

    bdx: int
    unroll: int
    blocks: int


Accepted = tuple[Structure, Problem, _Sizes]
Analysis = Accepted | str


def _streamed_bytes(structure: Structure, layout: Layout) -> list[int]:
    """Bytes per element of each read that walks the row."""
    inputs = structure.fusion.inputs
    return [
        kernel.byte_size(cast(TensorType, inputs[p.param].type).element_type)
        for p in layout.reads
        if p.reduced != NONE
    ]


def _sizes(structure: Structure, problem: Problem, info: FusionInfo) -> _Sizes:
    """One block of 1024 threads per SM, or two of 512 where two blocks' rows fit half of L2,
    or ONE_PASS_BLOCKS where each row is read once; BYTES_IN_FLIGHT per thread and input per
    tile; fewer threads for rows of few tiles."""
    layout = problem.layout
    v = layout.vector_width
    sms = info.device.sm_count
    streamed = _streamed_bytes(structure, layout) or [4]
    row_bytes = max(1, problem.reduced * sum(streamed))
    if len(_streaming_passes(structure)) == 1:
        resident = ONE_PASS_BLOCKS
    else:
        resident = max(1, min(2, info.device.l2_bytes // (2 * row_bytes * sms)))
    unroll = max(1, min(MAX_UNROLL, BYTES_IN_FLIGHT // (v * max(streamed))))
    # short rows take fewer threads: two tiles per thread at least
    tiles = ceil_div(ceil_div(problem.reduced, v), unroll)
    bdx = max(32, min(THREADS_PER_SM // resident, pow2_ceil(ceil_div(tiles, 2))))
    return _Sizes(bdx, unroll, sms * resident)


def analyze(fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
    """The structure, layout and sizes of `fusion` for `info`, or why the template does not
    take it (once per (fusion, info) under an open analysis cache)."""
    return memoized("looped", (fusion, info), lambda: _analyze(fusion, info))


def _analyze(fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
    structure = structure_of(fusion)
    if (error := whole_rows_error(structure)) is not None:
        return error
    problem = plan_layout(structure, info)
    if isinstance(problem, str):
        return problem
    if not problem.layout.inner:
        return (
            "the reduced dims are not the fastest-varying dims of the input: the looped "
            "template walks rows along the fastest dim"
        )
    if not _rereads(structure, problem.layout):
        return (
            "no input is read by two passes over the row: a kernel per pass moves the same "
            "bytes, each over the whole GPU"
        )
    return structure, problem, _sizes(structure, problem, info)


def online_sums(structure: Structure) -> dict[int, OnlineSum]:
    """Stage q -> the `sum` of stage q + 1 that pass q computes online: a stage holding a
    `max(a)` (beside any other reductions, maxima too), followed by a stage of one
    `sum(exp(a - broadcast(max(a))))` (softmax's and logsumexp's normalizer). The sum is then
    kept relative to the running max and rescaled when it grows (`reduction_parts.online_sum`):
    one pass over the row for both."""
    found: dict[int, OnlineSum] = {}
    stages = structure.stages
    for q in range(len(stages) - 1):
        if len(stages[q + 1]) != 1 or q - 1 in found:
            continue
        total = stages[q + 1][0]
        if not isinstance(total, fu.SumOp) or not is_float(reduction_type(total)):
            continue
        exp = reduction_input(total).owner
        sub = exp.operands[0].owner if isinstance(exp, fu.ExpOp) else None
        if not isinstance(sub, fu.SubOp):
            continue
        broadcast = sub.operands[1].owner
        top = broadcast.operands[0].owner if isinstance(broadcast, fu.BroadcastInDimOp) else None
        if (
            isinstance(top, fu.MaxOp)
            and top in stages[q]
            and sub.operands[0] is reduction_input(top)
            and reduction_type(top) == reduction_type(total)
        ):
            found[q] = OnlineSum(top, total)
    return found


def _streaming_passes(
    structure: Structure,
) -> list[tuple[list[Operation], Needs, OnlineSum | None]]:
    """The passes the kernel makes over each row: a stage's reductions (with the next stage's
    sum where it is computed online) and the needs of its per-element values, then the
    full-shape outputs' pass if any."""
    online = online_sums(structure)
    passes: list[tuple[list[Operation], Needs, OnlineSum | None]] = []
    for q, needs in enumerate(_passes(structure)):
        if q - 1 in online:
            continue  # computed online in the pass before
        ops = structure.stages[q] if q < len(structure.stages) else []
        passes.append((ops, needs, online.get(q)))
    return passes


def _passes(structure: Structure) -> list[Needs]:
    """The per-element needs of each pass: a stage's, then the full-shape outputs' if any."""
    return structure.phases if structure.full_outputs else structure.phases[:-1]


def _rereads(structure: Structure, layout: Layout) -> bool:
    """Whether a later pass reads an input that an earlier pass read: the looped template pays
    there, its later reads served by L2 where separate kernels would write and read an
    intermediate through DRAM."""
    inputs = structure.fusion.inputs
    for plan in layout.reads:
        if plan.reduced == NONE:
            continue
        key = inputs[plan.param]
        if sum(1 for needs in _passes(structure) if plan.map in needs.get(key, [])) > 1:
            return True
    return False


class LoopedScheduler(AnalyzedScheduler[Accepted]):
    """Inner normalizations over rows too long for registers: a pass over the row per stage."""

    name = "looped"

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
        return analyze(fusion, info)

    def key_of(self, fusion: fu.FusionOp, info: FusionInfo, analysis: Accepted) -> Hashable:
        """The layout (per `layout_class`) and the sizes (the row length and L2 classes)."""
        return (analysis[1].layout, analysis[2])

    def refusal_key(self, fusion: fu.FusionOp, info: FusionInfo, reason: str) -> Hashable:
        return refusal_key(structure_of(fusion), info, reason)

    def params_of(self, fusion: fu.FusionOp, info: FusionInfo, analysis: Accepted) -> LoopedParams:
        _, problem, sizes = analysis
        return LoopedParams(
            block=(sizes.bdx, 1, 1),
            layout=problem.layout,
            unroll=sizes.unroll,
            blocks=sizes.blocks,
        )

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(LoopedParams, params)
        rows = kept_points(structure_of(fusion), p.layout, info)
        grid = (max(1, min(rows, p.blocks)), 1, 1)
        check_grid(fusion, self.name, grid)
        return LaunchConfig(grid, p.block)

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        p = cast(LoopedParams, params)
        structure = structure_of(fusion)
        assert structure.error is None, structure.error
        parts = KernelParts(structure, p.layout, kernel_name, p.block[0])
        with parts.kb.build():
            _emit(parts, p)
        return parts.kb.func


def _combine(parts: KernelParts, op: Operation, state: State, threads: int) -> State:
    """The state over the row's `threads` threads. Welford states combine by sums
    (`combine_welford`) shifted by the first thread's mean: a row of a large mean and a small
    spread keeps its mean to about an ulp (pairwise Chan merges, `kernel.block_welford`, lost
    3 ulps of a mean of 1e4 over 16384 f32: y of layer norm off by 5e-3)."""
    if not is_welford(op) or threads == 1:
        return cooperate(op, state, kernel.Dimension.X, threads)
    kb = parts.kb
    first = kb.cmp("eq", kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X), 0)
    shift = thread_zero_shift(state[0], first, kernel.Dimension.X, threads)
    count = parts.reduced_count(state[0].type)
    return combine_welford(state, count, kernel.Dimension.X, threads, shift)


def _emit(parts: KernelParts, p: LoopedParams) -> None:
    """Block b walks rows b, b + gridDim.x, ...; each row is one pass per stage of reductions
    and a last pass for the full-shape outputs (see the module docstring)."""
    kb, structure, layout = parts.kb, parts.structure, p.layout
    bdx, v, unroll = p.block[0], layout.vector_width, p.unroll
    tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
    bx = kb.geometry(kernel.BlockIdOp, kernel.Dimension.X)
    grid = kb.geometry(kernel.GridDimOp, kernel.Dimension.X)
    rows, length = parts.kept_extent, parts.reduced_extent
    start = named(kb.mul(tx, v), "start")
    passes = _streaming_passes(structure)
    with kb.loop(bx, rows, grid, name="row") as row:
        row_chunk = Chunk(row, 0, 1, True, None)
        kept = {id(plan): parts.kept_offsets(plan, row_chunk) for plan in parts.streamed_plans()}
        invariant: Arrays = {}
        for plan in layout.reads:
            if plan.reduced == NONE:
                comment("load (once per row)")
                invariant[plan.param, plan.map] = (
                    parts.load(plan, row_chunk, kept[id(plan)]),
                    False,
                )
        read_row = parts.reader(invariant, 0)
        env_row: dict[Key, SSAValue] = {}
        last = len(passes) - 1
        for q, (ops, needs, total) in enumerate(passes):
            comment(f"pass {q} over the row")
            parts.compute(row_level(needs, structure.axes), env_row, read_row)
            stream = StreamPass(
                ops, needs, dict(env_row), q == last and bool(structure.full_outputs), total
            )
            states0 = [identity_state(op, reduction_type(op)) for op in ops]
            if total is not None:
                states0.append(identity_state(total.sum_op, reduction_type(total.sum_op)))
            for s in states0:
                for value in s:
                    value.name_hint = "acc"

            def body(
                k: SSAValue,
                carried: Sequence[SSAValue],
                stream: StreamPass = stream,
                states0: list[State] = states0,
            ) -> list[SSAValue]:
                states = [[s] for s in unflatten_states(list(carried), states0)]
                chunks: list[Chunk] = []
                for u in range(unroll):
                    col = kb.add(k, u * bdx * v)
                    valid = named(kb.cmp("slt", named(col, "col"), length), "valid")
                    chunks.append(Chunk(row, col, v, True, valid))
                new = stream_chunks(parts, chunks, invariant, kept, states, stream)
                return flatten_states([s[0] for s in new])

            final = carried_loop(
                kb, start, length, bdx * v * unroll, flatten_states(states0), body, "col"
            )
            states = unflatten_states(list(final), states0)
            for op, state in zip(ops, states[: len(ops)], strict=True):
                comment(f"combine {op.name} across the row's threads")
                env_row.update(parts.results(op, _combine(parts, op, state, bdx)))
            if total is not None:
                comment("combine the sum of exp(a - max) across the row's threads")
                r = ops.index(total.max_op)
                top = total.max_op.results[0]
                row_max = env_row[top, structure.result_maps[top]]
                rescaled = rescale(states[-1][0], states[r][0], row_max)
                summed = cooperate_kind(kernel.ReduceKind.SUM, rescaled, kernel.Dimension.X, bdx)
                env_row.update(parts.results(total.sum_op, (finish_online_sum(summed, row_max),)))
        if structure.reduced_outputs:
            comment("epilogue")
            parts.compute(structure.reduced_needs, env_row, read_row)
            with kb.if_(kb.cmp("eq", tx, 0)):
                parts.store_reduced(env_row, row)
