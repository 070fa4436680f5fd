"""The kernel pieces the reduction and persistent templates are made of.

**Kernel pieces.** `KernelParts` wraps a `KernelBuilder` with the group extents and offsets of
a plan, predicated loads into local arrays (a chunk of `width` slots: all valid or none, as the
extents divide by the vector width), the per-thread partial state of each reduction kind over
masked slots, merging states, the warp/block combine, the final values of each reduction's
results, and the stores of reduced and full-shape outputs.

Welford: a thread reduces its slots by two passes over registers (count, mean, sum of squared
deviations from that mean), and states merge with Chan et al.'s formula in-thread (the quotients
of counts are fast `afn` divisions); across threads, two sums (`combine_welford`): of n mean,
giving the mean, then of each thread's M2 moved to that mean. A persistent kernel, whose row
stays in registers, takes two plain passes over its slots instead (`two_pass_welford`). Data
with a large mean and a small spread keeps its accuracy, as no sum of squares is ever formed.
The count is the float number of elements; the `count` result is the exact `Rn`; the mean of
zero elements is NaN, as in the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import cast

from xdsl.builder import ImplicitBuilder
from xdsl.dialects import arith, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import AnyFloat, TensorType, VectorType
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.iteration_space import DimMap, Needs
from fuser.transforms.schedulers.kernel_builder import (
    Index,
    KernelBuilder,
    comment,
    compute_element,
    value_name,
)
from fuser.transforms.schedulers.reduction_layout import DENSE, NONE, UNIT, AccessPlan, Layout
from fuser.transforms.schedulers.reduction_structure import (
    Key,
    Structure,
    natural_map,
    reduction_input,
)
from fuser.transforms.schedulers.scalar_lowering import constant, is_float, lower_pointwise

# --------------------------------------------------------------------------------------------
# Kernel pieces
# --------------------------------------------------------------------------------------------

State = tuple[SSAValue, ...]
"""A reduction's running value: (value,) for sum/max/min/prod, (mean, m2, count) for Welford."""

_KINDS: dict[type[Operation], kernel.ReduceKind] = {
    fu.SumOp: kernel.ReduceKind.SUM,
    fu.PartialSumOp: kernel.ReduceKind.SUM,
    fu.MaxOp: kernel.ReduceKind.MAX,
    fu.MinOp: kernel.ReduceKind.MIN,
    fu.ProdOp: kernel.ReduceKind.PROD,
}


def is_welford(op: Operation) -> bool:
    return isinstance(op, fu.WelfordOp | fu.VarMeanOp)


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def neutral(kind: kernel.ReduceKind, t: Attribute) -> SSAValue:
    """The identity of a combining function in the scalar type `t`."""
    return constant(fu.reduction_identity(kind.value, t), t)


def combine(kind: kernel.ReduceKind, a: SSAValue, b: SSAValue) -> SSAValue:
    """`a (+) b` for a combining function (max/min propagate NaN, like the reference)."""
    f = _is_float(a.type)
    if kind == kernel.ReduceKind.SUM:
        return (arith.AddfOp if f else arith.AddiOp)(a, b).result
    if kind == kernel.ReduceKind.PROD:
        return (arith.MulfOp if f else arith.MuliOp)(a, b).result
    if kind == kernel.ReduceKind.MAX:
        return (arith.MaximumfOp if f else arith.MaxSIOp)(a, b).result
    return (arith.MinimumfOp if f else arith.MinSIOp)(a, b).result


def tree(values: Sequence[SSAValue], op: Callable[[SSAValue, SSAValue], SSAValue]) -> SSAValue:
    """Combines values pairwise (a balanced tree: independent operations for the GPU)."""
    level = list(values)
    while len(level) > 1:
        nxt = [op(level[k], level[k + 1]) for k in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


COUNT_DIVISION = arith.FastMathFlagsAttr([FastMathFlag.APPROX_FUNC])
"""The flags of a division by a Welford count (an exact float integer, at least 1): the fast
`__fdividef` (2 ulp), as the quotient only weighs a mean (a merge) or is one (a chunk's)."""


def _select(valid: SSAValue | None, value: SSAValue, otherwise: SSAValue) -> SSAValue:
    return value if valid is None else arith.SelectOp(valid, value, otherwise).result


Groups = Sequence[tuple[SSAValue | None, Sequence[SSAValue]]]
"""Slots in groups that are all valid or all invalid: (i1 validity or None for always, values)."""


def partial_state(op: Operation, groups: Groups) -> State:
    """A reduction's state over the valid slots of `groups` (invalid ones give the identity)."""
    t = groups[0][1][0].type
    if is_welford(op):
        zero = constant(0.0, t)
        count = tree(
            [_select(valid, constant(float(len(vs)), t), zero) for valid, vs in groups],
            lambda a, b: arith.AddfOp(a, b).result,
        )
        total = tree([_select(valid, tree(vs, _addf), zero) for valid, vs in groups], _addf)
        mean = arith.DivfOp(
            total, arith.MaximumfOp(count, constant(1.0, t)), flags=COUNT_DIVISION
        ).result
        m2_parts: list[SSAValue] = []
        for valid, vs in groups:
            squares: list[SSAValue] = []
            for v in vs:
                d = arith.SubfOp(v, mean).result
                squares.append(arith.MulfOp(d, d).result)
            m2_parts.append(_select(valid, tree(squares, _addf), zero))
        return (mean, tree(m2_parts, _addf), count)
    kind = _KINDS[type(op)]
    identity = neutral(kind, t)

    def comb(a: SSAValue, b: SSAValue) -> SSAValue:
        return combine(kind, a, b)

    return (tree([_select(valid, tree(vs, comb), identity) for valid, vs in groups], comb),)


def _addf(a: SSAValue, b: SSAValue) -> SSAValue:
    return arith.AddfOp(a, b).result


def _both_neg_inf(a: SSAValue, b: SSAValue) -> SSAValue:
    inf = constant(-math.inf, a.type)
    return arith.AndIOp(
        arith.CmpfOp(a, inf, "oeq").result, arith.CmpfOp(b, inf, "oeq").result
    ).result


def rescale(value: SSAValue, old_max: SSAValue, new_max: SSAValue) -> SSAValue:
    """`value` (a sum of exp(a - old_max)) relative to `new_max >= old_max`: times
    exp(old_max - new_max), or unchanged where both maxima are -inf (no finite value yet)."""
    factor = xmath.ExpOp(arith.SubfOp(old_max, new_max).result).result
    factor = arith.SelectOp(
        _both_neg_inf(old_max, new_max), constant(1.0, value.type), factor
    ).result
    return arith.MulfOp(value, factor).result


def online_sum(
    old_max: SSAValue,
    new_max: SSAValue,
    old_sum: SSAValue,
    groups: Sequence[tuple[SSAValue | None, Sequence[SSAValue]]],
) -> SSAValue:
    """The running sum of exp(a - max) after a tile (Milakov and Gimelshein's online
    normalizer): the old sum rescaled to the new max, plus exp(a - new_max) of the tile's valid
    values. A value of -inf while the max is -inf counts 1, so that a row of -inf only ends
    with a positive sum (made NaN, the reference's exp(-inf - -inf), by `finish_online_sum`),
    and a later finite max rescales it to 0."""
    t = old_sum.type
    zero = constant(0.0, t)
    tile: list[SSAValue] = []
    for valid, values in groups:
        terms: list[SSAValue] = []
        for a in values:
            e = xmath.ExpOp(arith.SubfOp(a, new_max).result).result
            terms.append(arith.SelectOp(_both_neg_inf(a, new_max), constant(1.0, t), e).result)
        tile.append(_select(valid, tree(terms, _addf), zero))
    return _addf(rescale(old_sum, old_max, new_max), tree(tile, _addf))


def finish_online_sum(total: SSAValue, row_max: SSAValue) -> SSAValue:
    """The sum of exp(a - max) as the reference computes it: NaN where the max is -inf and
    the row is not empty (every term exp(-inf - -inf))."""
    t = total.type
    empty_max = arith.CmpfOp(row_max, constant(-math.inf, t), "oeq").result
    counted = arith.CmpfOp(total, constant(0.0, t), "ogt").result
    nan = constant(math.nan, t)
    return arith.SelectOp(arith.AndIOp(empty_max, counted).result, nan, total).result


def identity_state(op: Operation, t: Attribute) -> State:
    if is_welford(op):
        return (constant(0.0, t), constant(0.0, t), constant(0.0, t))
    return (neutral(_KINDS[type(op)], t),)


def merge_states(op: Operation, a: State, b: State) -> State:
    """Combines two states (Chan et al.'s formula for Welford; empty states stay empty)."""
    if not is_welford(op):
        return (combine(_KINDS[type(op)], a[0], b[0]),)
    mean_a, m2_a, n_a = a
    mean_b, m2_b, n_b = b
    t = mean_a.type
    n = arith.AddfOp(n_a, n_b).result
    delta = arith.SubfOp(mean_b, mean_a).result
    w_b = arith.DivfOp(n_b, arith.MaximumfOp(n, constant(1.0, t)), flags=COUNT_DIVISION).result
    mean = arith.AddfOp(mean_a, arith.MulfOp(delta, w_b)).result
    # an infinite mean stays infinite (inf - inf would make it NaN): as torch, a row holding
    # +inf has mean +inf, one holding both infinities NaN
    largest = arith.MaximumfOp(xmath.AbsFOp(mean_a).result, xmath.AbsFOp(mean_b).result).result
    infinite = arith.CmpfOp(largest, constant(float("inf"), t), "oeq").result
    mean = arith.SelectOp(infinite, arith.AddfOp(mean_a, mean_b).result, mean).result
    cross = arith.MulfOp(arith.MulfOp(arith.MulfOp(delta, delta), n_a), w_b).result
    m2 = arith.AddfOp(arith.AddfOp(m2_a, m2_b), cross).result
    return (mean, m2, n)


def cooperate(
    op: Operation,
    state: State,
    along: kernel.Dimension,
    threads: int,
    count: SSAValue | None = None,
) -> State:
    """Combines the state across the `threads` threads along `along` (a warp op when they are
    exactly the warp's 32 lanes along x, nothing for one thread). A Welford state needs
    `count`, the number of elements over all the threads (see `combine_welford`)."""
    if threads == 1:
        return state
    if is_welford(op):
        assert count is not None
        return combine_welford(state, count, along, threads)
    return (cooperate_kind(_KINDS[type(op)], state[0], along, threads),)


def combine_welford(
    state: State,
    count: SSAValue,
    along: kernel.Dimension,
    threads: int,
    shift: SSAValue | None = None,
) -> State:
    """The Welford state over `threads` threads' states (mean_t, m2_t, n_t) by two plain sums
    rather than Chan's pairwise merge at each step of a tree: the mean is the sum of n_t mean_t
    over `count`, then M2 the sum of m2_t + n_t (mean_t - mean)^2 (each thread's M2 moved to
    the common mean, an exact identity; every term is non-negative). Two sum reductions of one
    value each cost far less than a reduction of three values with a division at every step.

    With a `shift` k (the same for every thread, finite), the first sum is of n_t (mean_t - k)
    and the mean k plus it over `count`: for data of a large mean and a small spread the terms
    are small and the mean keeps its last digits (`thread_zero_shift`)."""
    mean_t, m2_t, n_t = state
    t = mean_t.type
    centered = mean_t if shift is None else arith.SubfOp(mean_t, shift).result
    weighted = arith.MulfOp(n_t, centered).result
    total = cooperate_kind(kernel.ReduceKind.SUM, weighted, along, threads)
    mean = arith.DivfOp(total, arith.MaximumfOp(count, constant(1.0, t))).result
    if shift is not None:
        mean = arith.AddfOp(shift, mean).result
    d = arith.SubfOp(mean_t, mean).result
    moved = arith.AddfOp(m2_t, arith.MulfOp(arith.MulfOp(n_t, d), d)).result
    m2 = cooperate_kind(kernel.ReduceKind.SUM, moved, along, threads)
    return (mean, m2, count)


def thread_zero_shift(
    mean_t: SSAValue, first: SSAValue, along: kernel.Dimension, threads: int
) -> SSAValue:
    """The mean of the first thread along `along` (`first`: whether this thread is it), to
    every thread, where it is finite, else 0: a shift for `combine_welford` (a sum with one
    term is exact)."""
    t = mean_t.type
    mine = arith.SelectOp(first, mean_t, constant(0.0, t)).result
    k = cooperate_kind(kernel.ReduceKind.SUM, mine, along, threads)
    finite = arith.CmpfOp(xmath.AbsFOp(k).result, constant(float("inf"), t), "olt").result
    return arith.SelectOp(finite, k, constant(0.0, t)).result


def cooperate_kind(
    kind: kernel.ReduceKind, value: SSAValue, along: kernel.Dimension, threads: int
) -> SSAValue:
    """Combines one value with `kind` across the `threads` threads along `along`."""
    if threads == 1:
        return value
    if along == kernel.Dimension.X and threads == 32:
        return kernel.WarpReduceOp(kind, value).result
    return kernel.BlockReduceOp(kind, value, along).result


@dataclass
class Slots:
    """A thread's element slots in register arrays: `chunks` chunks of `width` adjacent slots
    (slot s is element s % width of chunk s // width), each chunk all valid or none (`valid(c)`:
    an i1 for chunk c, or None for always).

    Code over the slots is a loop marked for full unrolling (`#pragma unroll`) that indexes
    local arrays by its induction variable: unrolled, every index is a constant and the arrays
    live in registers, as if each slot were its own scalar, while the IR holds one copy of the
    loop body rather than one per slot.
    """

    kb: KernelBuilder
    chunks: int
    width: int
    valid: Callable[[Index], SSAValue | None]

    @property
    def count(self) -> int:
        """The number of slots."""
        return self.chunks * self.width

    def loop(self, trip_count: int, name: str) -> AbstractContextManager[Index]:
        """A fully unrolled loop from 0 to `trip_count` (`KernelBuilder.unrolled`)."""
        return self.kb.unrolled(trip_count, name)

    def array(
        self, t: Attribute, name: str, size: int | None = None, zeroed: bool = False
    ) -> SSAValue:
        """A local array of `size` (default: one per slot) elements of type `t`, all zero if
        `zeroed`."""
        size = self.count if size is None else size
        array = kernel.AllocOp(kernel.ArrayType(size, t, kernel.MemorySpace.LOCAL), zeroed).result
        array.name_hint = name
        return array

    def tree(
        self,
        t: Attribute,
        value_at: Callable[[Index], SSAValue],
        comb: Callable[[SSAValue, SSAValue], SSAValue],
        identity: SSAValue,
    ) -> SSAValue:
        """`comb` over the valid slots' `value_at(s)`: the same balanced tree as `tree` over
        each chunk's slots, the chunk's result where it is valid and `identity` where not, then
        over the chunks. A tree is a scratch array halved level by level, one loop a level; a
        chunk's slots are computed and combined before the next chunk's (as few values live
        at once as in straight-line code)."""
        kb = self.kb
        partials = self.array(t, "partial", self.chunks)
        with self.loop(self.chunks, "c") as c:
            lane = self.array(t, "lane", self.width)
            with self.loop(self.width, "j") as j:
                s = kb.add(kb.mul(c, self.width), j)
                kernel.ArrayStoreOp(value_at(s), lane, kb.value(j))
            _halve(kb, lane, self.width, comb, self.loop)
            value = kernel.ArrayLoadOp(lane, kb.value(0)).result
            kernel.ArrayStoreOp(_select(self.valid(c), value, identity), partials, kb.value(c))
        _halve(kb, partials, self.chunks, comb, self.loop)
        return kernel.ArrayLoadOp(partials, kb.value(0)).result


def _halve(
    kb: KernelBuilder,
    array: SSAValue,
    size: int,
    comb: Callable[[SSAValue, SSAValue], SSAValue],
    loop: Callable[[int, str], AbstractContextManager[Index]],
) -> None:
    """Combines the first `size` elements of `array` into element 0 as `tree` does: pairs of
    neighbours level by level (an odd last element moves up unchanged)."""
    m = size
    while m > 1:
        with loop(m // 2, "k") as k:
            a = kernel.ArrayLoadOp(array, kb.value(kb.mul(k, 2))).result
            b = kernel.ArrayLoadOp(array, kb.value(kb.add(kb.mul(k, 2), 1))).result
            kernel.ArrayStoreOp(comb(a, b), array, kb.value(k))
        if m % 2:
            last = kernel.ArrayLoadOp(array, kb.value(m - 1)).result
            kernel.ArrayStoreOp(last, array, kb.value(m // 2))
        m = (m + 1) // 2


def slot_state(op: Operation, slots: Slots, value_at: Callable[[Index], SSAValue]) -> State:
    """The state of a sum, max or min over the valid slots (`value_at(s)`: slot s's input)."""
    kind = _KINDS[type(op)]
    t = fu.element_type(reduction_input(op).type)
    return (slots.tree(t, value_at, lambda a, b: combine(kind, a, b), neutral(kind, t)),)


def two_pass_welford(
    slots: Slots,
    value_at: Callable[[Index], SSAValue],
    count: SSAValue,
    along: kernel.Dimension,
    threads: int,
    finalize: Callable[[SSAValue], SSAValue] = lambda mean: mean,
) -> State:
    """The Welford state of values held in registers across `threads` threads, in two passes:
    the mean of the valid slots (a sum over the threads, divided by `count`, the number of
    valid slots over all the threads), then the sum of squared deviations from that mean (a
    second sum). No division per element or per combine, and exact centering: the persistent
    kernels use it, as their rows stay in registers between the passes. The deviations are
    taken from `finalize(mean)` (`KernelParts.final_mean`), the mean result itself, so that
    `x - mean` computed again later (layer norm) is the same expression and is computed once."""
    t = count.type
    zero = constant(0.0, t)
    local = slots.tree(t, value_at, _addf, zero)
    total = cooperate_kind(kernel.ReduceKind.SUM, local, along, threads)
    mean = finalize(arith.DivfOp(total, arith.MaximumfOp(count, constant(1.0, t))).result)

    def square(s: Index) -> SSAValue:
        d = arith.SubfOp(value_at(s), mean).result
        return arith.MulfOp(d, d).result

    m2 = cooperate_kind(kernel.ReduceKind.SUM, slots.tree(t, square, _addf, zero), along, threads)
    return (mean, m2, count)


def carried_loop(
    kb: KernelBuilder,
    lower: Index,
    upper: Index,
    step: Index,
    inits: Sequence[SSAValue],
    body: Callable[[SSAValue, Sequence[SSAValue]], Sequence[SSAValue]],
    iv_name: str = "i",
) -> Sequence[SSAValue]:
    """An `scf.for` carrying `inits`; `body(iv, carried)` returns the next values. Returns the
    final values."""
    block = Block(arg_types=[kb.index_type, *(v.type for v in inits)])
    block.args[0].name_hint = iv_name
    loop = scf.ForOp(kb.value(lower), kb.value(upper), kb.value(step), list(inits), block)
    for arg, init in zip(block.args[1:], inits, strict=True):
        arg.name_hint = init.name_hint
    with ImplicitBuilder(block):
        nxt = body(block.args[0], block.args[1:])
        scf.YieldOp(*nxt)
    return loop.results


@dataclass
class Chunk:
    """`width` slots, all valid or none: slot j is (kept + j, reduced) when the slots walk the
    kept group, else (kept, reduced + j)."""

    kept: Index
    reduced: Index
    width: int
    along_reduced: bool
    valid: SSAValue | None

    def slot(self, kb: KernelBuilder, j: int) -> tuple[Index, Index]:
        if self.along_reduced:
            return self.kept, kb.add(self.reduced, j)
        return kb.add(self.kept, j), self.reduced


def vector_pieces(width: int, t: Attribute) -> list[tuple[int, int]]:
    """The (first element, count) of each vector access that moves `width` consecutive
    elements of type `t`: one, or pieces of `kernel.MAX_VECTOR_BYTES` where they are wider (an
    f32 output stored from a chunk of 8 bf16 slots: two of 4)."""
    n = max(1, min(width, kernel.MAX_VECTOR_BYTES // kernel.byte_size(t)))
    return [(j, n) for j in range(0, width, n)]


class KernelParts:
    """The kernel of a layout under construction: extents, offsets, loads, stores."""

    def __init__(
        self,
        structure: Structure,
        layout: Layout,
        name: str,
        threads: int,
    ) -> None:
        self.structure = structure
        self.layout = layout
        fusion = structure.fusion
        index_type = fu.I32 if layout.index_bits == 32 else fu.I64
        self.kb = KernelBuilder(fusion, name, index_type, threads)
        self.params: list[SSAValue] = [*self.kb.inputs, *self.kb.outputs]
        n_in = len(fusion.inputs)
        self.output_plans: dict[int, AccessPlan] = {p.param - n_in: p for p in layout.outputs}
        self._final_means: set[SSAValue] = set()

    def streamed_plans(self) -> list[AccessPlan]:
        """The plans addressed per element: every read and the full-shape outputs."""
        full = [self.output_plans[o] for o, _ in self.structure.full_outputs]
        return [*self.layout.reads, *full]

    # --- extents and offsets -----------------------------------------------------------------

    def extent(self, d: int) -> Index:
        p, a = self.layout.extents[d]
        return a if p < 0 else self.kb.size(self.params[p], a)

    def group_extent(self, dims: Sequence[int]) -> Index:
        extents = [self.extent(d) for d in dims]
        if all(isinstance(e, int) for e in extents):
            return math.prod(cast(list[int], extents))

        def make() -> SSAValue:
            total: Index = 1
            for e in extents:
                total = self.kb.mul(total, e)
            return self.kb.value(total)

        return self.kb.hoist(("group", tuple(dims)), make)

    @property
    def kept_extent(self) -> Index:
        return self.group_extent(self.layout.kept_dims)

    @property
    def reduced_extent(self) -> Index:
        return self.group_extent(self.layout.reduced_dims)

    def _stride(self, plan: AccessPlan, j: int) -> Index:
        return self.kb.stride(self.params[plan.param], j)

    def group_offset(self, plan: AccessPlan, kept: bool, index: Index) -> Index:
        """The part of `plan`'s offset that the group index `index` contributes."""
        group = self.layout.kept_dims if kept else self.layout.reduced_dims
        mode = plan.kept if kept else plan.reduced
        if mode == NONE:
            return 0
        walks = [(group.index(d), j) for j, d in enumerate(plan.dims) if d in group]
        if mode in (UNIT, DENSE):
            j_last = max(walks)[1]
            return self.kb.mul(index, 1 if mode == UNIT else self._stride(plan, j_last))
        indices = self.kb.delinearize(index, [self.extent(d) for d in group])
        return self.kb.offset([(indices[g], self._stride(plan, j)) for g, j in walks])

    # --- loads -------------------------------------------------------------------------------

    def element_type(self, plan: AccessPlan) -> Attribute:
        t = self.params[plan.param].type
        assert isinstance(t, kernel.TensorParamType)
        return t.element_type

    def varies(self, plan: AccessPlan, along_reduced: bool) -> bool:
        """Whether slots along a group read different elements of `plan`."""
        return (plan.reduced if along_reduced else plan.kept) != NONE

    def kept_offsets(self, plan: AccessPlan, chunk: Chunk) -> list[Index]:
        """The kept part of `plan`'s offset at each slot of `chunk` (computed here: call it
        where the values may be used by every later load and store of the chunk's slots)."""
        # one vector access needs the first slot's only; vector pieces, each piece's first
        one = plan.vector and len(vector_pieces(chunk.width, self.element_type(plan))) == 1
        vector = one and self.varies(plan, chunk.along_reduced)
        count = 1 if chunk.along_reduced or vector or plan.kept == NONE else chunk.width
        return [self.group_offset(plan, True, chunk.slot(self.kb, j)[0]) for j in range(count)]

    def load(
        self,
        plan: AccessPlan,
        chunk: Chunk,
        kept: Sequence[Index] | None = None,
        into: SSAValue | None = None,
    ) -> SSAValue:
        """A local array holding `plan`'s elements at the chunk's slots (one element when they
        all read the same one), loaded if the chunk is valid, zeros otherwise; `into` if given
        (of that size), else a new one."""
        kb = self.kb
        t = self.element_type(plan)
        varies = self.varies(plan, chunk.along_reduced)
        count = chunk.width if varies else 1
        if into is None:
            array = kernel.AllocOp(kernel.ArrayType(count, t, kernel.MemorySpace.LOCAL)).result
            array.name_hint = f"{self.params[plan.param].name_hint}_buf"
        else:
            array = into
        for j in range(count):
            kernel.ArrayStoreOp(constant(0, t), array, kb.value(j))
        self._load_chunk(plan, chunk, kept, array, 0, count, plan.vector and varies)
        return array

    def load_slots(
        self,
        plan: AccessPlan,
        slots: Slots,
        chunk_at: Callable[[Index], Chunk],
        kept: Sequence[Index],
    ) -> SSAValue:
        """A local array of one element of `plan` per slot (the chunks walk the reduced group,
        `chunk_at(c)` is chunk c), each chunk loaded if it is valid, zeros otherwise."""
        t = self.element_type(plan)
        array = slots.array(t, f"{self.params[plan.param].name_hint}_buf", zeroed=True)
        width = slots.width
        with slots.loop(slots.chunks, "c") as c:
            chunk = chunk_at(c)
            base = self.kb.mul(c, width)
            self._load_chunk(plan, chunk, kept, array, base, width, plan.vector)
        return array

    def _load_chunk(
        self,
        plan: AccessPlan,
        chunk: Chunk,
        kept: Sequence[Index] | None,
        array: SSAValue,
        base: Index,
        count: int,
        vector: bool,
    ) -> None:
        """Loads `count` elements of `plan` at the chunk's slots (in vector pieces if `vector`
        and `count` > 1) into `array` from index `base`, if the chunk is valid."""
        kb = self.kb
        t = self.element_type(plan)
        vector = vector and count > 1
        pieces = vector_pieces(count, t) if vector else [(j, 1) for j in range(count)]
        offsets = [self.chunk_offset(plan, chunk, j, kept) for j, _ in pieces]
        tensor = self.params[plan.param]
        with kb.if_(chunk.valid):
            for (j, n), off in zip(pieces, offsets, strict=True):
                loaded = kernel.LoadOp(tensor, off, VectorType(t, [n]) if n > 1 else None).result
                kernel.ArrayStoreOp(loaded, array, kb.value(kb.add(base, j)))

    @staticmethod
    def element(array: SSAValue, varies: bool, j: Index, kb: KernelBuilder) -> SSAValue:
        return kernel.ArrayLoadOp(array, kb.value(j if varies else 0)).result

    def reader(
        self, arrays: dict[tuple[int, DimMap], tuple[SSAValue, bool]], j: Index
    ) -> Callable[[SSAValue, DimMap], SSAValue]:
        """`compute_element`'s `read` for slot j: a scalar parameter, or the slot's element
        of the array loaded for (input, map)."""
        fusion_block = self.structure.fusion.body.block

        def read(value: SSAValue, m: DimMap) -> SSAValue:
            if not (isinstance(value, BlockArgument) and value.owner is fusion_block):
                raise AssertionError(f"{value_name(value)} was not computed before its use")
            i = value.index
            if not isinstance(value.type, TensorType):
                return self.kb.inputs[i]
            array, varies = arrays[i, m]
            return self.element(array, varies, j, self.kb)

        return read

    def compute(
        self,
        needs: Needs,
        env: dict[Key, SSAValue],
        read: Callable[[SSAValue, DimMap], SSAValue],
        lower: Callable[[Operation, Sequence[SSAValue]], SSAValue] = lower_pointwise,
    ) -> dict[Key, SSAValue]:
        """`compute_element` over the fusion's pointwise ops, also reading needed inputs that
        no op consumes (an input that is itself a reduction's input or an output)."""
        compute_element(self.structure.pointwise, needs, read, env, lower)
        for value, maps in needs.items():
            for m in maps:
                if (value, m) not in env and isinstance(value, BlockArgument):
                    env[value, m] = read(value, m)
        return env

    # --- reductions ----------------------------------------------------------------------

    def reduced_count(self, t: Attribute) -> SSAValue:
        """The number of elements each reduction combines per kept point (Rn), a float of
        type `t`."""
        rn = self.reduced_extent
        if isinstance(rn, int):
            return constant(float(rn), t)
        assert is_float(t), f"a reduced count of type {t}"
        return arith.SIToFPOp(self.kb.value(rn), t).result

    def final_mean(self, avg: SSAValue) -> SSAValue:
        """The mean result from a Welford state's mean: NaN where the reduction has no
        elements (a select, unless the extent is a static positive number); the same value
        again for a value it returned."""
        if avg in self._final_means:
            return avg
        rn = self.reduced_extent
        mean = avg
        if not (isinstance(rn, int) and rn > 0):
            empty = self.kb.cmp("eq", rn, 0)
            mean = arith.SelectOp(empty, constant(math.nan, avg.type), avg).result
        self._final_means.add(mean)
        return mean

    def results(self, op: Operation, state: State) -> dict[Key, SSAValue]:
        """The scalars of `op`'s results at a kept point from its final state."""
        kb = self.kb
        rank = self.structure.rank
        if not is_welford(op):
            result = op.results[0]
            return {(result, natural_map(op, result, rank)): _named(state[0], result)}
        avg, m2, _ = state
        t = avg.type
        rn = self.reduced_extent
        mean = self.final_mean(avg)
        values: list[SSAValue]
        if isinstance(op, fu.WelfordOp):
            if isinstance(rn, int):
                count = constant(rn, fu.I64)
            else:
                count = rn if rn.type == fu.I64 else arith.ExtSIOp(rn, fu.I64).result
            values = [mean, m2, count]
        else:
            assert isinstance(op, fu.VarMeanOp)
            correction = op.correction.value.data
            if isinstance(rn, int):
                divisor = constant(float(max(rn - correction, 0)), t)
            else:
                dof = arith.MaxSIOp(kb.value(kb.add(rn, -correction)), kb.value(0)).result
                assert is_float(t), f"a var_mean state of type {t}"
                divisor = arith.SIToFPOp(dof, t).result
            values = [arith.DivfOp(m2, divisor).result, mean]
        return {
            (r, natural_map(op, r, rank)): _named(v, r)
            for r, v in zip(op.results, values, strict=True)
        }

    # --- stores ----------------------------------------------------------------------------

    def store_reduced(self, env: dict[Key, SSAValue], kept: Index, split: Index = 0) -> None:
        """Stores every reduced-shape output at the kept point `kept` (call under a branch that
        selects one thread per point); a row split's partial sums at chunk `split` of it (their
        last dim, contiguous)."""
        outputs = self.structure.fusion.output_op.values
        for o, m in self.structure.reduced_outputs:
            plan = self.output_plans[o]
            comment(f"store output #{o}")
            offset = self.kb.add(self.group_offset(plan, True, kept), split)
            kernel.StoreOp(env[outputs[o], m], self.kb.outputs[o], self.kb.value(offset))

    def store_reduced_slots(self, envs: Sequence[dict[Key, SSAValue]], kept: Index) -> None:
        """Stores every reduced-shape output at the kept points `kept + j`, from `envs[j]`
        (one vector store where the output is contiguous along them)."""
        kb = self.kb
        outputs = self.structure.fusion.output_op.values
        for o, m in self.structure.reduced_outputs:
            plan = self.output_plans[o]
            values = [env[outputs[o], m] for env in envs]
            comment(f"store output #{o}")
            if plan.vector and len(values) > 1:
                t = self.element_type(plan)
                array = kernel.AllocOp(kernel.ArrayType(len(values), t, kernel.MemorySpace.LOCAL))
                array.result.name_hint = f"{self.kb.outputs[o].name_hint}_buf"
                for j, v in enumerate(values):
                    kernel.ArrayStoreOp(v, array.result, kb.value(j))
                for j, n in vector_pieces(len(values), t):
                    vec = kernel.ArrayLoadOp(array.result, kb.value(j), VectorType(t, [n])).result
                    offset = kb.value(self.group_offset(plan, True, kb.add(kept, j)))
                    kernel.StoreOp(vec, kb.outputs[o], offset)
                continue
            for j, v in enumerate(values):
                offset = kb.value(self.group_offset(plan, True, kb.add(kept, j)))
                kernel.StoreOp(v, kb.outputs[o], offset)

    def store_full(
        self, o: int, chunk: Chunk, values: Sequence[SSAValue], kept: Sequence[Index] | None = None
    ) -> None:
        """Stores full-shape output #o at the chunk's slots (if the chunk is valid)."""
        kb = self.kb
        plan = self.output_plans[o]
        tensor = self.kb.outputs[o]
        comment(f"store output #{o}")
        if plan.vector and chunk.width > 1:  # gathered into a local array, stored as vectors
            t = self.element_type(plan)
            array = kernel.AllocOp(kernel.ArrayType(chunk.width, t, kernel.MemorySpace.LOCAL))
            array.result.name_hint = f"{tensor.name_hint}_buf"
            for j, v in enumerate(values):
                kernel.ArrayStoreOp(v, array.result, kb.value(j))
            self.store_full_slots(o, chunk, array.result, 0, kept)
            return
        offsets = [self.chunk_offset(plan, chunk, j, kept) for j in range(len(values))]
        with kb.if_(chunk.valid):
            for v, off in zip(values, offsets, strict=True):
                kernel.StoreOp(v, tensor, off)

    def store_full_slots(
        self,
        o: int,
        chunk: Chunk,
        array: SSAValue,
        base: Index,
        kept: Sequence[Index] | None = None,
    ) -> None:
        """Stores full-shape output #o at the chunk's slots (if the chunk is valid) from the
        chunk's elements of the local array `array`, from index `base` (one vector where the
        output is contiguous along them); `kept` as `chunk_offset` takes it."""
        kb = self.kb
        plan = self.output_plans[o]
        tensor = kb.outputs[o]
        width = chunk.width
        if plan.vector and width > 1:
            t = self.element_type(plan)
            pieces = vector_pieces(width, t)
            vecs = [
                kernel.ArrayLoadOp(array, kb.value(kb.add(base, j)), VectorType(t, [n])).result
                for j, n in pieces
            ]
            offsets = [self.chunk_offset(plan, chunk, j, kept) for j, _ in pieces]
            with kb.if_(chunk.valid):
                for vec, offset in zip(vecs, offsets, strict=True):
                    kernel.StoreOp(vec, tensor, offset)
            return
        values = [kernel.ArrayLoadOp(array, kb.value(kb.add(base, j))).result for j in range(width)]
        offsets = [self.chunk_offset(plan, chunk, j, kept) for j in range(width)]
        with kb.if_(chunk.valid):
            for v, off in zip(values, offsets, strict=True):
                kernel.StoreOp(v, tensor, off)

    def chunk_offset(
        self, plan: AccessPlan, chunk: Chunk, j: int, kept: Sequence[Index] | None = None
    ) -> SSAValue:
        """The offset of `plan` at slot j of `chunk`; `kept` holds the kept parts
        (`kept_offsets`) when they are already computed."""
        k, r = chunk.slot(self.kb, j)
        if kept is None:
            off_k = self.group_offset(plan, True, k)
        else:
            off_k = kept[j] if len(kept) > 1 else kept[0]
        return self.kb.value(self.kb.add(off_k, self.group_offset(plan, False, r)))


def _named(value: SSAValue, like: SSAValue) -> SSAValue:
    """`value`, named after the fusion value `like` unless it has a name."""
    if value.name_hint is None and like.name_hint is not None:
        value.name_hint = like.name_hint
    return value
