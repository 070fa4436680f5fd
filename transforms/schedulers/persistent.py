"""The inner persistent (normalization) scheduler: each row is read once and stays in registers
while every reduction over it completes, then the outputs are written from registers.

It takes fusions with reductions over the innermost dims (the inner layout of
`reduction_layout`) whose rows fit in registers, typically those with persistent buffers, which
the reduction scheduler rejects: softmax (a sum of `exp(x - max(x))` after the max, then a
division by the sum), layer norm (`var_mean`, then normalize with weight and bias), RMS norm
(a sum of squares, then a scale).

The kernel: a row per `threadIdx.y` (several rows per block for short rows), `blockDim.x`
threads along it, each owning `chunks` chunks of `vector_width` adjacent elements (thread x's
chunk c starts at element `(c * blockDim.x + x) * vector_width`, so a warp's chunk c is one
coalesced access); a thread holds `chunks * vector_width` element *slots*. The code over the
slots is loops over them, marked for full unrolling (`#pragma unroll`), that index local arrays
of one element per slot (`reduction_parts.Slots`): nvcc unrolls them, every index becomes a
constant and the arrays registers, so the row stays in registers, while the IR holds one copy
of each loop body (its size does not grow with the slots). Per phase:

1. load the reads the phase needs first (a loop over the chunks: predicated 16-byte vector
   loads into a zeroed local array; chunks past the row end read nothing);
2. compute the phase's per-element values in one loop over the slots; values that depend on
   the row only (a reduction result, `rsqrt(var + eps)`) are computed once before it, and a
   division by one is a product with its reciprocal (`_RowLowering`). A value a later phase
   uses, or the stage reduces or stores, is written to an array of its own (`_slot_phases`);
3. for a reduction stage: reduce the stage's inputs over the thread's valid slots (invalid slots
   give the identity: 0 for sum, -inf for max) and combine across the row's threads with
   `kernel.block_reduce` (`kernel.warp_reduce` when a warp holds the row). A Welford reduction
   (`var_mean`) takes two passes over the registers instead: a sum gives the mean, then a sum
   of squared deviations from it (`two_pass_welford`).

After the last stage the epilogue computes the reduced outputs (stored by thread 0 of the row),
and the last phase computes and stores the full-shape outputs, as vectors where they are
contiguous.

`heuristics` gives each thread TARGET_CHUNKS chunks (16-byte loads in flight) where the
registers a slot needs across phases (values live from one phase into a later one) allow; a row
that fits in one warp takes one warp (its reductions are shuffles, no barrier), and short rows
share blocks of BLOCK_THREADS threads. A row longer than 1024 threads can hold is rejected with
its size, e.g. "row of 100000 f32 elements does not fit in registers".
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from xdsl.builder import Builder, ImplicitBuilder
from xdsl.dialects import arith
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint

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
from fuser.transforms.schedulers.iteration_space import DimMap, Needs, operand_maps
from fuser.transforms.schedulers.kernel_builder import (
    Index,
    comment,
    compute_element,
    named,
)
from fuser.transforms.schedulers.reduction_layout import (
    NONE,
    AccessPlan,
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
    Slots,
    cooperate,
    is_welford,
    slot_state,
    two_pass_welford,
)
from fuser.transforms.schedulers.reduction_structure import (
    Key,
    Structure,
    element_level,
    full_output_keys,
    reduction_input,
    row_level,
    structure_of,
    whole_rows_error,
)
from fuser.transforms.schedulers.scalar_lowering import constant, is_float, lower_pointwise

MAX_THREADS = kernel.MAX_THREADS_PER_BLOCK
REGISTER_BUDGET = 40
"""32-bit registers per thread for the slots' persistent values."""
MAX_SLOTS = 32
"""Element slots per thread at most."""
TARGET_CHUNKS = 4
"""Chunks (vector loads of up to 16 bytes) per thread the heuristics aim at: on an H200, 4 beat
2 and 8 for rows of 1024 to 8192 f32 and bf16 elements (benchmarks/RESULTS.md, run 2)."""
BLOCK_THREADS = 128
"""Threads per block the heuristics aim at for short rows (several rows per block): small
blocks, as the rows of a block wait for each other at its barriers."""
WARP = 32


@dataclass(frozen=True)
class PersistentParams(Params):
    """The persistent template's parameters: `block` is (threads per row, rows per block, 1)."""

    layout: Layout
    chunks: int
    """Chunks of `layout.vector_width` elements each thread holds."""
    prefetch: bool = False
    """Whether a block walking rows starts loading the next row's reads before working on
    this one (see `Sizing`)."""
    shared_sums: bool = False
    """Whether a block walking rows keeps its partial sums in shared memory (see `Sizing`)."""

    @property
    def slots(self) -> int:
        """Elements of the row each thread holds."""
        return self.chunks * self.layout.vector_width


@dataclass(frozen=True)
class Sizing:
    """How a row is spread over threads and held: `bdx` threads per row, each holding `chunks`
    chunks of `vector_width` elements.

    For a block walking rows (the inner-outer kernel): `prefetch` starts copying the next
    row's per-element reads into shared memory (`kernel.copy_async`, double-buffered) before
    working on this one, so that the row's memory traffic overlaps the work on the one before;
    `shared_sums` keeps the partial sums in shared memory, each thread's at its own places,
    out of the registers."""

    bdx: int
    chunks: int
    prefetch: bool = False
    shared_sums: bool = False


def size_row(
    structure: Structure,
    problem: Problem,
    budget: int = REGISTER_BUDGET,
    shared_sums: bool = False,
) -> Sizing | str:
    """Threads per row and chunks per thread, with `budget` registers per thread for the
    slots' values (the partial sums' too unless `shared_sums`), or why the row does not fit."""
    v = problem.layout.vector_width
    regs = structure.slot_registers(not shared_sums)
    max_chunks = max(1, min(MAX_SLOTS, budget // regs) // v)
    total = ceil_div(problem.reduced, v)
    if ceil_div(total, MAX_THREADS) > max_chunks:
        t = fu.type_name(fu.element_type(structure.space_value.type))
        return (
            f"row of {problem.reduced} {t} elements does not fit in registers: at most "
            f"{MAX_THREADS * max_chunks * v} ({MAX_THREADS} threads x {max_chunks * v} "
            f"elements of {regs} register(s) each)"
        )
    target = max(1, min(max_chunks, TARGET_CHUNKS))
    bdx = max(1, ceil_div(total, target))
    if bdx > WARP and total <= WARP * max_chunks:
        # a warp holds the row: its reductions are warp shuffles, with no shared memory or
        # barrier, and a block holds several rows
        return Sizing(WARP, ceil_div(total, WARP), shared_sums=shared_sums)
    if bdx > MAX_THREADS:
        bdx = ceil_div(total, ceil_div(total, MAX_THREADS))
    bdx = min(MAX_THREADS, ceil_div(bdx, 32) * 32) if bdx > 32 else pow2_ceil(bdx)
    return Sizing(bdx, max(1, ceil_div(total, bdx)), shared_sums=shared_sums)


def row_params(problem: Problem, sizing: Sizing, rows_per_block: int) -> PersistentParams:
    """The template's parameters for a layout and row sizing."""
    return PersistentParams(
        block=(sizing.bdx, rows_per_block, 1),
        layout=problem.layout,
        chunks=sizing.chunks,
        prefetch=sizing.prefetch,
        shared_sums=sizing.shared_sums,
    )


Accepted = tuple[Structure, Problem, Sizing]
"""A template's analysis of a fusion it takes: its structure, layout and row sizing."""
Analysis = Accepted | str
"""A template's analysis of a fusion for an info, or why it does not take the fusion."""


def analyze(fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
    """The structure, layout and sizing of `fusion` for `info`, or why the template does not
    take it (once per (fusion, info) under an open analysis cache)."""
    return memoized("persistent", (fusion, info), lambda: _analyze(fusion, info))


def _analyze(fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
    return analyze_rows(structure_of(fusion), info)


def analyze_rows(
    structure: Structure,
    info: FusionInfo,
    budget: int = REGISTER_BUDGET,
    shared_sums: bool = False,
) -> Analysis:
    """The layout and row sizing (`budget` registers per thread for the slots, the partial
    sums' too unless `shared_sums`: see `Sizing`) of a structure for `info`, or why the
    template does not take it: rows along the fastest dim that fit."""
    if (error := whole_rows_error(structure)) is not None:
        return error
    problem = plan_layout(structure, info)
    if isinstance(problem, str):
        return problem
    if not problem.layout.inner:
        return (
            "the reduced dims are not the fastest-varying dims of the input: the persistent "
            "template keeps rows along the fastest dim"
        )
    sizing = size_row(structure, problem, budget, shared_sums)
    if isinstance(sizing, str):
        return sizing
    return structure, problem, sizing


def _rows_per_block(sizing: Sizing, problem: Problem, info: FusionInfo) -> int:
    """Rows per block: BLOCK_THREADS threads, halved while the grid would fill fewer than two
    waves of one block per SM."""
    bdy = max(1, BLOCK_THREADS // sizing.bdx)
    while bdy > 1 and ceil_div(problem.kept, bdy) < 2 * info.device.sm_count:
        bdy //= 2
    return bdy


class PersistentScheduler(AnalyzedScheduler[Accepted]):
    """Inner normalizations (softmax, layer norm, RMS norm): one read, rows in registers.

    The inner-outer scheduler (`inner_outer`) is this template with partial sums over rows: it
    overrides `structure`, `analysis`, `rows_per_block`, `launch_config` and `emit_body`."""

    name = "persistent"

    def structure(self, fusion: fu.FusionOp) -> Structure:
        return structure_of(fusion)

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
        return analyze(fusion, info)

    def rows_per_block(self, sizing: Sizing, problem: Problem, info: FusionInfo) -> int:
        return _rows_per_block(sizing, problem, info)

    def key_of(self, fusion: fu.FusionOp, info: FusionInfo, analysis: Accepted) -> Hashable:
        """The layout (per `layout_class`), the row's sizing (threads per row and chunks per
        thread: the row length class; where the sums and the next row live) and the rows per
        block (the waves class)."""
        _, problem, sizing = analysis
        return (problem.layout, sizing, self.rows_per_block(sizing, problem, info))

    def refusal_key(self, fusion: fu.FusionOp, info: FusionInfo, reason: str) -> Hashable:
        return refusal_key(self.structure(fusion), info, reason)

    def params_of(
        self, fusion: fu.FusionOp, info: FusionInfo, analysis: Accepted
    ) -> PersistentParams:
        _, problem, sizing = analysis
        return row_params(problem, sizing, self.rows_per_block(sizing, problem, info))

    def contenders(self, params: Params) -> tuple[str, ...]:
        """A row that fills a block of 1024 threads runs one block per SM, its loads exposed
        while the block reduces: the looped kernel (more, smaller blocks streaming the row
        from L2) may be faster, and is timed against it (softmax or logsumexp over 32k bf16:
        61% of copy persistent, 80% for torch.compile)."""
        p = cast(PersistentParams, params)
        return ("looped",) if self.name == "persistent" and p.block[0] >= MAX_THREADS else ()

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(PersistentParams, params)
        rows = kept_points(structure_of(fusion), p.layout, info)
        blocks = ceil_div(rows, p.block[1])
        grid = (max(1, blocks), 1, 1)
        check_grid(fusion, "persistent", grid)
        return LaunchConfig(grid, p.block)

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        p = cast(PersistentParams, params)
        structure = self.structure(fusion)
        assert structure.error is None, structure.error
        parts = KernelParts(structure, p.layout, kernel_name, p.block[0] * p.block[1])
        with parts.kb.build():
            self.emit_body(parts, p)
        return parts.kb.func

    def emit_body(self, parts: KernelParts, p: PersistentParams) -> None:
        """The kernel's body: a row per `threadIdx.y` of each block (`emit_rows`)."""
        emit_rows(parts, p)


class Accumulators(Protocol):
    """A thread's running sums of one value, one per slot (`emit_row` adds a row's values)."""

    def load(self, s: Index) -> SSAValue: ...

    def store(self, s: Index, value: SSAValue) -> None: ...


Arrays = dict[tuple[int, DimMap], tuple[SSAValue, bool]]


class _RowLowering:
    """The lowering of per-element ops with a value the same for the whole row (a reduction
    result such as softmax's sum): `x / r` multiplies by `1 / r`, computed once per row at its
    first use, before the slot loop being built (`anchor`). One multiplication per element
    instead of a division (on an H200, softmax of [32768, 1024] bf16 went from 76% to 83% of
    copy bandwidth), within 1.5 ulp of the correctly rounded quotient, and the same at zeros,
    infinities and NaN, except where the reciprocal of a subnormal divisor overflows.
    """

    def __init__(self, env_row: dict[Key, SSAValue]) -> None:
        self.env_row = env_row
        self.derived: dict[tuple[str, SSAValue], SSAValue] = {}
        self.anchor: Operation | None = None
        """The slot loop under construction: row values are computed before it."""

    def _row_value(self, value: SSAValue) -> bool:
        return any(value is v for v in self.env_row.values())

    def _once(self, kind: str, value: SSAValue, make: Callable[[], SSAValue]) -> SSAValue:
        if (kind, value) not in self.derived:
            if self.anchor is None:
                derived = make()
            else:
                with ImplicitBuilder(Builder(InsertPoint.before(self.anchor))):
                    derived = make()
            derived.name_hint = f"{kind}_{value.name_hint or 'row'}"
            self.derived[kind, value] = derived
        return self.derived[kind, value]

    def lower(self, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
        if isinstance(op, fu.DivOp) and is_float(operands[1].type):
            divisor = operands[1]
            if self._row_value(divisor):
                inverse = self._once(
                    "inv",
                    divisor,
                    lambda: arith.DivfOp(constant(1.0, divisor.type), divisor).result,
                )
                return arith.MulfOp(operands[0], inverse).result
        return lower_pointwise(op, operands)


def _loop_op(index: Index) -> Operation | None:
    """The loop whose induction variable `index` is (None for a constant: no loop)."""
    if isinstance(index, BlockArgument):
        return index.owner.parent_op()
    return None


def _is_input(structure: Structure, value: SSAValue) -> bool:
    return isinstance(value, BlockArgument) and value.owner is structure.fusion.body.block


@dataclass(frozen=True)
class _SlotPhase:
    """What a phase's loop over the slots does with per-slot values."""

    computes: Needs
    """The values it computes (those no earlier phase did; inputs are read where used)."""
    uses: list[Key]
    """Values of earlier phases it uses, read from their arrays."""
    keep: list[Key]
    """Values it computes that a reduction after it, a later phase or a store needs: written
    to an array of one element per slot."""


def _slot_phases(structure: Structure, in_slots: Callable[[Key], bool]) -> list[_SlotPhase]:
    """The per-slot work of each phase: each value is computed once, in the first phase that
    needs it, and kept (in registers) for the later phases whose ops take it. A value a phase
    reduces or stores that no slot loop computes and that is not an input loaded per slot
    (`in_slots`): a row value where the reduced extent is 1, is copied into an array too."""
    phases = [element_level(needs, structure.axes) for needs in structure.phases]
    last = len(phases) - 1
    computed: dict[Key, int] = {}
    computes: list[Needs] = []
    uses: list[list[Key]] = []
    for q, needs in enumerate(phases):
        todo: Needs = {}
        for value, maps in needs.items():
            fresh = [m for m in maps if (value, m) not in computed]
            if fresh and not _is_input(structure, value):
                todo[value] = fresh
                for m in fresh:
                    computed[value, m] = q
        used: list[Key] = []

        def use(key: Key, q: int = q, used: list[Key] = used) -> None:
            if computed.get(key, q) < q and key not in used:
                used.append(key)

        for value, maps in todo.items():
            op = value.owner
            assert isinstance(op, Operation)
            for m in maps:
                for operand, om in zip(op.operands, operand_maps(op, m), strict=True):
                    if om is not None:
                        use((operand, om))
        for key in _roots(structure, q, q == last):
            use(key)
        computes.append(todo)
        uses.append(used)
    result: list[_SlotPhase] = []
    copied: set[Key] = set()
    for p in range(len(phases)):
        later = {k for q in range(p + 1, len(phases)) for k in uses[q]}
        roots = _roots(structure, p, p == last)
        keep = [
            (value, m)
            for value, maps in computes[p].items()
            for m in maps
            if (value, m) in later or (value, m) in roots
        ]
        for key in roots:
            if key not in computed and key not in copied and not in_slots(key):
                keep.append(key)
                copied.add(key)
        result.append(_SlotPhase(computes[p], uses[p], keep))
    return result


def _roots(structure: Structure, phase: int, last: bool) -> list[Key]:
    """The per-slot values a phase hands on: its stage's reduction inputs, and the full-shape
    outputs after the last phase."""
    stage = structure.stages[phase] if phase < len(structure.stages) else []
    roots = [(reduction_input(op), structure.input_maps[op]) for op in stage]
    if last:
        roots.extend(key for _, key in full_output_keys(structure))
        roots.extend(structure.partial_keys())
    return roots


class Row:
    """One row of a kernel (`ok`: whether it exists; None, always): its chunks of slots, the
    kept part of each access's offset (computed here: where every later load and store of the
    row may use it) and the loads of its reads."""

    def __init__(
        self,
        parts: KernelParts,
        p: PersistentParams,
        row: Index,
        ok: SSAValue | None,
        plans: Sequence[AccessPlan],
    ) -> None:
        kb = self.kb = parts.kb
        self.parts, self.row = parts, row
        self.bdx, self.width = p.block[0], p.layout.vector_width
        length = parts.reduced_extent
        if ok is None:
            self.end = length
        else:
            self.end = arith.SelectOp(ok, kb.value(length), kb.value(0)).result
            self.end.name_hint = "end"
        self.chunk = Chunk(row, 0, 1, True, ok)
        self.kept = {id(plan): parts.kept_offsets(plan, self.chunk) for plan in plans}
        tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
        self.first = kb.mul(tx, self.width)
        self.slots = Slots(kb, p.chunks, self.width, lambda c: self.chunk_at(c).valid)

    def chunk_at(self, c: Index) -> Chunk:
        """Chunk c of the thread: its slots start at column `first + c * blockDim.x * v`."""
        kb = self.kb
        column = kb.add(self.first, kb.mul(c, self.bdx * self.width))
        valid = named(kb.cmp("slt", named(column, "col"), self.end), "valid")
        return Chunk(self.row, column, self.width, True, valid)

    def load(self, plan: AccessPlan, into: SSAValue | None = None) -> tuple[SSAValue, bool]:
        """The row's elements of a read (one per slot, or one for the row where it does not
        vary along the row) and whether they vary along the slots; into `into` if given."""
        kept = self.kept[id(plan)]
        if plan.reduced == NONE:
            return self.parts.load(plan, self.chunk, kept, into), False
        assert into is None, "a row's per-element reads load into new arrays"
        return self.parts.load_slots(plan, self.slots, self.chunk_at, kept), True


def emit_rows(parts: KernelParts, p: PersistentParams) -> None:
    """The kernel body: a row per `threadIdx.y` of each block (the inner-outer kernel walks
    chunks of rows instead: `row_walk.walk_rows`)."""
    kb = parts.kb
    assert not parts.structure.partials, "partial sums over rows: row_walk.walk_rows"
    kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)  # declared first, as in every kernel
    row: Index = kb.mul(kb.geometry(kernel.BlockIdOp, kernel.Dimension.X), p.block[1])
    if p.block[1] > 1:
        row = kb.add(row, kb.geometry(kernel.ThreadIdOp, kernel.Dimension.Y))
    emit_row(parts, p, row, {})


def emit_row(
    parts: KernelParts,
    p: PersistentParams,
    row: Index,
    sums: Mapping[Key, Accumulators],
    row_end: Index | None = None,
    loaded: Arrays | None = None,
) -> None:
    """One row's loads, phases, reductions and stores; the values of the partial sums' inputs
    are added into `sums` (a thread's accumulators, one per slot, for each). A row past `row_end`
    (default: the row count) loads nothing, stores nothing and, when given, adds nothing.
    `loaded` holds reads already loaded for the row (by (input, map)): they are not loaded
    again."""
    kb, structure, layout = parts.kb, parts.structure, p.layout
    loaded = loaded or {}
    rows = parts.kept_extent
    named(row, "row")
    row_ok = named(kb.cmp("slt", row, rows if row_end is None else row_end), "row_ok")
    # offsets for the reads still to load and for the full-shape outputs
    to_load = [q for q in parts.streamed_plans() if (q.param, q.map) not in loaded]
    access = Row(parts, p, row, row_ok, to_load)
    tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
    bdx = p.block[0]
    chunk_at, slots = access.chunk_at, access.slots
    arrays: Arrays = dict(loaded)
    for plan in layout.reads:
        if plan.reduced == NONE and (plan.param, plan.map) not in arrays:
            comment("load (once per row)")
            arrays[plan.param, plan.map] = access.load(plan)
    invariant: Arrays = {k: a for k, a in arrays.items() if not a[1]}
    env_row: dict[Key, SSAValue] = {}
    read_row = parts.reader(invariant, 0)
    fusion_inputs = structure.fusion.inputs
    axes = structure.axes
    lowering = _RowLowering(env_row)
    full = full_output_keys(structure)
    plans = _slot_phases(
        structure,
        lambda key: any(
            (fusion_inputs[r.param], r.map) == key and r.reduced != NONE for r in layout.reads
        ),
    )
    # per-slot values kept in a register array from the phase computing them to later ones
    kept_values: dict[Key, SSAValue] = {}

    def slot_array(key: Key) -> tuple[SSAValue, bool]:
        """The array holding `key` per slot (its input's loaded array, or its kept array) and
        whether it varies along the slots."""
        if key in kept_values or not _is_input(structure, key[0]):
            return kept_values[key], True
        return arrays[cast(BlockArgument, key[0]).index, key[1]]

    def value_at(key: Key) -> Callable[[Index], SSAValue]:
        """Slot s's value of `key`."""
        array, varies = slot_array(key)
        return lambda s: parts.element(array, varies, s, kb)

    for phase, (needs, plan) in enumerate(zip(structure.phases, plans, strict=True)):
        # 1. the reads this phase needs first
        for read in layout.reads:
            if read.reduced == NONE or (read.param, read.map) in arrays:
                continue
            key = (fusion_inputs[read.param], read.map)
            if structure.first_phase(key) != phase:
                continue
            comment(f"load {key[0].name_hint or f'input #{read.param}'}")
            arrays[read.param, read.map] = access.load(read)
        # 2. the phase's values: per row once, then per slot (one loop over the slots)
        parts.compute(row_level(needs, axes), env_row, read_row)
        for key in plan.keep:
            name = f"{key[0].name_hint or 'value'}_slots"
            kept_values[key] = slots.array(fu.element_type(key[0].type), name)
        with slots.loop(slots.count, "s") as s:
            lowering.anchor = _loop_op(s)
            env = dict(env_row)
            for key in plan.uses:
                env[key] = kernel.ArrayLoadOp(kept_values[key], kb.value(s)).result
                env[key].name_hint = key[0].name_hint
            compute_element(
                structure.pointwise, plan.computes, parts.reader(arrays, s), env, lowering.lower
            )
            read_slot = parts.reader(arrays, s)
            for key in plan.keep:
                value = env[key] if key in env else read_slot(*key)
                kernel.ArrayStoreOp(value, kept_values[key], kb.value(s))
        lowering.anchor = None
        # 3. the stage's reductions
        if phase < len(structure.stages):
            for op in structure.stages[phase]:
                key = (reduction_input(op), structure.input_maps[op])
                comment(f"reduce {op.name} {key[0].name_hint or ''}".rstrip())
                if is_welford(op):
                    count = parts.reduced_count(fu.element_type(key[0].type))
                    state = two_pass_welford(
                        slots, value_at(key), count, kernel.Dimension.X, bdx, parts.final_mean
                    )
                else:
                    state = cooperate(
                        op, slot_state(op, slots, value_at(key)), kernel.Dimension.X, bdx
                    )
                env_row.update(parts.results(op, state))
    # the partial sums' inputs (computed in the last phase), added per slot
    for key, acc in sums.items():
        comment(f"add {key[0].name_hint or 'value'} into its partial sums")
        value = value_at(key)
        with slots.loop(slots.count, "s") as s:
            total = acc.load(s)
            add = arith.AddfOp if is_float(total.type) else arith.AddiOp
            term = value(s)
            if row_end is not None:  # a row past the chunk's end adds nothing
                term = arith.SelectOp(row_ok, term, constant(0, total.type)).result
            acc.store(s, add(total, term).result)
    # the full-shape outputs (computed in the last phase)
    for o, key in full:
        output = parts.output_plans[o]
        comment(f"store output #{o}")
        array, _ = slot_array(key)
        with slots.loop(slots.chunks, "c") as c:
            parts.store_full_slots(
                o, chunk_at(c), array, kb.mul(c, layout.vector_width), access.kept[id(output)]
            )
    # the reduced outputs
    if structure.reduced_outputs:
        comment("epilogue")
        parts.compute(structure.reduced_needs, env_row, read_row)
        head = kb.cmp("eq", tx, 0) if bdx > 1 else None
        with kb.if_(kb.all_of([c for c in (head, row_ok) if c is not None])):
            parts.store_reduced(env_row, row)
