"""What the reduction and persistent schedulers share: the analysis of a fusion with reductions,
the normalized problem its input shapes give, and the kernel pieces both templates are made of.

**Structure (types only).** A fusion the two templates take has one or more reductions (`sum`,
`max`, `min`, `welford`, `var_mean`) of the same input rank and axes: their inputs span the
*space*, the reduction input's shape. Every other op is pointwise. Each value is needed under
`DimMap`s onto the space (see `iteration_space`): a reduction's input under the identity map, a
reduction's result under its *natural map* (the kept dims), outputs of the reduced shape under the
natural map of a reduction, outputs of the full shape under the identity map. The phases of a
kernel follow: stage 0 (the reductions whose inputs need no reduction result), stage 1 (those
that need a stage 0 result, e.g. softmax's sum after its max), ..., the epilogue on reduced
values, and the full-shape outputs. A fusion has *persistent buffers* when a later stage or a
full-shape output uses per-element values together with a reduction result: then every row must
stay on chip until its reductions are done (the persistent scheduler); otherwise one streaming
pass reads each element once (the reduction scheduler).

**Layout (shapes).** `plan_layout` merges the space's dims into a kept group K and a reduced group
R (dims of extent 1 drop out: their index is 0), so the problem is `I` kept points times `Rn`
reduced elements. It is *inner* when the fastest-varying dim of the largest input is reduced
(threads along R, [I, Rn]) and *outer* otherwise (threads along K, [Rn, I]). Every tensor read
and output write gets an `AccessPlan`: for each group whether it does not depend on it (`none`),
walks it with stride 1 (`unit`) or one stride (`dense`: the dims chain like a contiguous tensor),
or needs the group index delinearized into dims (`general`, the correct slow path, e.g. a
reduction over dims {0, 2} of a 3-D tensor); and whether it moves `vector_width` consecutive
elements per 16-byte (at most) access. Dims a read broadcasts at run time (extent 1 against a
larger space extent) are dropped from its map. All of it is part of the parameters, so a kernel
is reused only for inputs that give the same plans. A new shape whose extents, strides and
alignments relate as those of a shape seen before (`layout_class`: a new row count, most new
hidden sizes) takes that shape's layout while an analysis cache is open.

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
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from itertools import pairwise
from typing import cast

from xdsl.builder import ImplicitBuilder
from xdsl.dialects import arith, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    IntegerType,
    TensorType,
    VectorType,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import active, memoized
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.schedulers.iteration_space import (
    DimMap,
    MappingError,
    Needs,
    body_ops,
    expand,
    identity_map,
    operand_maps,
)
from fuser.transforms.schedulers.kernel_builder import (
    Index,
    KernelBuilder,
    comment,
    compute_element,
    value_name,
)
from fuser.transforms.schedulers.scalar_lowering import (
    constant,
    is_float,
    is_pointwise,
    lower_pointwise,
)
from fuser.transforms.schedulers.shapes import ShapeMismatch, value_shapes

REDUCTION_OPS = (fu.ReductionOp, fu.WelfordOp, fu.VarMeanOp)
INT32_MAX = 2**31 - 1

Key = tuple[SSAValue, DimMap]
"""A value under a map: what `compute_element` keys its scalars by."""


def op_label(op: Operation) -> str:
    """`'fusion.sum' (%s)` for messages."""
    names = ", ".join(value_name(r) for r in op.results)
    return f"'{op.name}'" + (f" ({names})" if names else "")


def reduction_axes(op: Operation) -> tuple[int, ...]:
    assert isinstance(op, REDUCTION_OPS)
    return tuple(op.axes.get_values())


def reduction_input(op: Operation) -> SSAValue:
    assert isinstance(op, REDUCTION_OPS)
    return op.input


def natural_map(op: Operation, result: SSAValue, rank: int) -> DimMap:
    """How a reduction's result is indexed from the space: its dims are the kept dims (with
    `keepdim`, reduced dims stay as extent 1 and map to index 0)."""
    axes = reduction_axes(op)
    keepdim = getattr(op, "keepdim", None) is not None
    dims: list[int | None] = (
        [None if d in axes else d for d in range(rank)]
        if keepdim
        else [d for d in range(rank) if d not in axes]
    )
    t = cast(TensorType, result.type)
    return tuple(None if e == 1 else d for e, d in zip(t.get_shape(), dims, strict=True))


def reduced_map(t: Attribute, rank: int, axes: Sequence[int]) -> DimMap | None:
    """The map of an output of type `t` if it has the reduced shape (with or without the
    reduced dims kept as 1), else None."""
    if not isinstance(t, TensorType):
        return None
    shape = t.get_shape()
    kept = [d for d in range(rank) if d not in axes]
    if len(shape) == len(kept):
        return tuple(None if e == 1 else d for e, d in zip(shape, kept, strict=True))
    if len(shape) == rank and all(shape[d] == 1 for d in axes):
        return tuple(None if e == 1 or d in axes else d for d, e in enumerate(shape))
    return None


def _merge(into: Needs, more: Needs) -> None:
    for value, maps in more.items():
        known = into.setdefault(value, [])
        known.extend(m for m in maps if m not in known)


def has_dims(m: DimMap, dims: Sequence[int]) -> bool:
    return any(d in dims for d in m if d is not None)


# --------------------------------------------------------------------------------------------
# Structure: what the fusion computes, from its types
# --------------------------------------------------------------------------------------------


class Structure:
    """The reductions of a fusion, their stages, and the maps each phase needs values under."""

    def __init__(self, fusion: fu.FusionOp) -> None:
        self.fusion = fusion
        ops = body_ops(fusion)
        self.pointwise: list[Operation] = [op for op in ops if is_pointwise(op)]
        self.reductions: list[Operation] = [op for op in ops if isinstance(op, REDUCTION_OPS)]
        self.error: str | None = None
        self.persistent_reason: str | None = None
        for op in ops:
            if isinstance(op, fu.SegmentSetOp):
                self.error = f"{op_label(op)} marks a kernel boundary"
                return
            if not (is_pointwise(op) or isinstance(op, (fu.DimOp, *REDUCTION_OPS))):
                self.error = f"{op_label(op)} is not a pointwise op or a reduction"
                return
        if not self.reductions:
            self.error = "the fusion has no reduction"
            return
        first = self.reductions[0]
        self.axes = reduction_axes(first)
        in_type = cast(TensorType, reduction_input(first).type)
        self.rank = in_type.get_num_dims()
        self.kept_axes = tuple(d for d in range(self.rank) if d not in self.axes)
        for op in self.reductions[1:]:
            t = cast(TensorType, reduction_input(op).type)
            if reduction_axes(op) != self.axes or not fu.shapes_compatible(
                t.get_shape(), in_type.get_shape()
            ):
                self.error = (
                    f"{op_label(op)} reduces {fu.format_shape(t.get_shape())} over "
                    f"{list(reduction_axes(op))}, but {op_label(first)} reduces "
                    f"{fu.format_shape(in_type.get_shape())} over {list(self.axes)}: one kernel "
                    "takes reductions of one shape over the same axes"
                )
                return
        try:
            self._analyze()
        except MappingError as e:
            self.error = str(e)

    def _analyze(self) -> None:
        fusion, rank = self.fusion, self.rank
        self.result_maps: dict[SSAValue, DimMap] = {}
        self.owner: dict[SSAValue, Operation] = {}
        for op in self.reductions:
            for r in op.results:
                self.result_maps[r] = natural_map(op, r, rank)
                self.owner[r] = op
        self.input_maps: dict[Operation, DimMap] = {
            op: identity_map(cast(TensorType, reduction_input(op).type)) for op in self.reductions
        }
        # Stages: a reduction is one stage after the latest reduction its input needs.
        stage_of: dict[Operation, int] = {}
        self.reduction_needs: dict[Operation, Needs] = {}
        for op in self.reductions:
            needs = expand(self.pointwise, {reduction_input(op): [self.input_maps[op]]})
            self.reduction_needs[op] = needs
            deps = [self.owner[v] for v in needs if v in self.owner]
            stage_of[op] = 1 + max((stage_of[d] for d in deps), default=-1)
            if deps and self.persistent_reason is None:
                self.persistent_reason = (
                    f"{op_label(op)} needs the result of {op_label(deps[0])}: the row must "
                    "stay on chip between the two reductions"
                )
        count = 1 + max(stage_of.values())
        self.stages: list[list[Operation]] = [
            [op for op in self.reductions if stage_of[op] == s] for s in range(count)
        ]
        self.stage_needs: list[Needs] = []
        for stage in self.stages:
            merged: Needs = {}
            for op in stage:
                _merge(merged, self.reduction_needs[op])
            self.stage_needs.append(merged)
        # Outputs: of the reduced shape (the epilogue) or of the full shape.
        self.reduced_outputs: list[tuple[int, DimMap]] = []
        self.full_outputs: list[tuple[int, DimMap]] = []
        for i, value in enumerate(fusion.output_op.values):
            t = cast(TensorType, value.type)
            m = self.result_maps.get(value) or reduced_map(t, rank, self.axes)
            if m is not None:
                self.reduced_outputs.append((i, m))
            elif t.get_num_dims() == rank:
                self.full_outputs.append((i, identity_map(t)))
            else:
                raise MappingError(
                    f"output #{i} ({fu.format_shape(t.get_shape())}) has neither the reduced "
                    f"nor the full shape of the reduction of rank {rank} over {list(self.axes)}"
                )
        outputs = fusion.output_op.values
        self.reduced_needs = expand(
            self.pointwise, {outputs[i]: [m] for i, m in self.reduced_outputs}
        )
        self.full_needs = expand(self.pointwise, {outputs[i]: [m] for i, m in self.full_outputs})
        for value, maps in self.reduced_needs.items():
            if any(has_dims(m, self.axes) for m in maps):
                raise MappingError(
                    f"{value_name(value)} is needed per element by an output of the reduced shape"
                )
        for needs in (*self.stage_needs, self.reduced_needs, self.full_needs):
            for value, maps in needs.items():
                if value in self.result_maps and any(m != self.result_maps[value] for m in maps):
                    raise MappingError(
                        f"{value_name(value)}, a reduction result, is used in a way that does not "
                        "index it by the kept dims"
                    )
        if self.persistent_reason is None:
            for i, _ in self.full_outputs:
                used = [v for v in self.full_needs if v in self.owner]
                if used:
                    self.persistent_reason = (
                        f"output #{i} uses {op_label(self.owner[used[0]])} with per-element "
                        "values: the row must stay on chip until the reduction is done"
                    )
                    break

    # --- phases ---------------------------------------------------------------------------

    @property
    def phases(self) -> list[Needs]:
        """The per-element phases in order: each stage, then the full-shape outputs."""
        return [*self.stage_needs, self.full_needs]

    def all_needs(self) -> Needs:
        merged: Needs = {}
        for needs in (*self.phases, self.reduced_needs):
            _merge(merged, needs)
        return merged

    def reads(self) -> list[tuple[int, DimMap]]:
        """Each tensor input read, as (input index, map), inputs in order."""
        needs = self.all_needs()
        return [
            (i, m)
            for i, arg in enumerate(self.fusion.inputs)
            if isinstance(arg.type, TensorType)
            for m in needs.get(arg, [])
        ]

    def first_phase(self, key: Key) -> int | None:
        """The first per-element phase that needs `key` (None for the epilogue only)."""
        for p, needs in enumerate(self.phases):
            if key[1] in needs.get(key[0], []):
                return p
        return None

    def slot_registers(self) -> int:
        """32-bit registers per row element that stay live from the phase that computes them
        into a later phase that uses them (at least 1): the persistent buffers per element
        (once per structure under an open analysis cache: it depends on the types only)."""
        return memoized("slot_registers", self, self._slot_registers)

    def _slot_registers(self) -> int:
        defined: dict[Key, int] = {}
        last_use: dict[Key, int] = {}
        roots: list[list[Key]] = [
            [(reduction_input(op), self.input_maps[op]) for op in stage] for stage in self.stages
        ]
        outputs = self.fusion.output_op.values
        roots.append([(outputs[o], m) for o, m in self.full_outputs])
        for p, needs in enumerate(self.phases):
            used: list[Key] = list(roots[p])
            for op in self.pointwise:
                for result in op.results:
                    for m in needs.get(result, []):
                        if (result, m) in defined:
                            continue
                        defined[result, m] = p
                        used.extend(
                            (o, om)
                            for o, om in zip(op.operands, operand_maps(op, m), strict=True)
                            if om is not None
                        )
            for value, maps in needs.items():
                for m in maps:
                    defined.setdefault((value, m), p)  # inputs: loaded in their first phase
            for key in used:
                last_use[key] = max(last_use.get(key, p), p)
        worst = 0.0
        for boundary in range(len(self.phases) - 1):
            live = sum(
                kernel.byte_size(fu.element_type(v.type)) / 4
                for (v, m), p in defined.items()
                if has_dims(m, self.axes) and p <= boundary < last_use.get((v, m), p)
            )
            worst = max(worst, live)
        return max(1, math.ceil(worst))


# --------------------------------------------------------------------------------------------
# Layout: the normalized problem for concrete shapes
# --------------------------------------------------------------------------------------------

NONE, UNIT, DENSE, GENERAL = "none", "unit", "dense", "general"


@dataclass(frozen=True)
class AccessPlan:
    """How a kernel parameter is addressed from a point (kept index, reduced index)."""

    param: int
    """The kernel parameter: inputs, then outputs."""
    map: DimMap
    """The map the fusion needs the value under (a key of `compute_element`)."""
    dims: DimMap
    """The space dim each tensor dim walks, None where its index is 0 (extent 1 in the space,
    or broadcast at run time)."""
    kept: str
    """How the kept group indexes it: none, unit, dense or general."""
    reduced: str
    """How the reduced group indexes it."""
    vector: bool
    """Moves `vector_width` consecutive elements along the group the slots walk."""


@dataclass(frozen=True)
class Layout:
    """The normalized problem: groups, extents, accesses, vector width and index width."""

    inner: bool
    """Threads along the reduced group ([I, Rn]); else along the kept group ([Rn, I])."""
    kept_dims: tuple[int, ...]
    reduced_dims: tuple[int, ...]
    extents: tuple[tuple[int, int], ...]
    """Per space dim: (parameter, axis) whose run-time extent it is, or (-1, static extent)."""
    reads: tuple[AccessPlan, ...]
    outputs: tuple[AccessPlan, ...]
    vector_width: int
    index_bits: int


@dataclass(frozen=True)
class Problem:
    """What the heuristics size a layout's kernel with."""

    layout: Layout
    kept: int
    """I: the number of kept points."""
    reduced: int
    """Rn: the number of elements each reduction combines per kept point."""
    element_bytes: int
    """Bytes of the largest input's element (the one the vector width is chosen for)."""


def _mode(
    dims: DimMap, strides: Sequence[int], group: Sequence[int], extents: Sequence[int]
) -> str:
    mapped = sorted(((group.index(d), j) for j, d in enumerate(dims) if d in group))
    if not mapped:
        return NONE
    if [g for g, _ in mapped] != list(range(len(group))):
        return GENERAL
    for (_, j1), (g2, j2) in pairwise(mapped):
        if strides[j1] != strides[j2] * extents[group[g2]]:
            return GENERAL
    return UNIT if strides[mapped[-1][1]] == 1 else DENSE


def structure_of(fusion: fu.FusionOp) -> Structure:
    """`Structure(fusion)`, built once per fusion under an open analysis cache."""
    return memoized("structure", fusion, lambda: Structure(fusion))


def plan_layout(structure: Structure, info: FusionInfo, max_vector_width: int = 8) -> Problem | str:
    """The normalized problem of `structure` for `info`'s inputs, or why it has none (once per
    (structure, info) under an open analysis cache, and its layout once per `layout_class`)."""
    return memoized(
        "layout",
        (structure, info, max_vector_width),
        lambda: _classed_layout(structure, info, max_vector_width),
    )


def _classed_layout(structure: Structure, info: FusionInfo, max_vector_width: int) -> Problem | str:
    """`_plan_layout`, with the layout taken from an earlier shape of the same `layout_class`
    where the open analysis cache has one."""
    cache = active()
    found = None if cache is None else _shape_class(structure, info)
    if cache is None or found is None:
        return _plan_layout(structure, info, max_vector_width)
    shape_key, space = found
    inner = cache.lookup("layout_inner", (structure, shape_key))
    known = None
    if inner is not None:
        key = (shape_key, _along_class(structure, space, inner), max_vector_width)
        known = cache.lookup("layout_of_class", (structure, key))
    if known is None:
        problem = _plan_layout(structure, info, max_vector_width)
        if not isinstance(problem, str):  # (refusals are per shape: their messages name extents)
            inner = problem.layout.inner
            cache.put("layout_inner", (structure, shape_key), inner)
            key = (shape_key, _along_class(structure, space, inner), max_vector_width)
            cache.put("layout_of_class", (structure, key), (problem.layout, problem.element_bytes))
        return problem
    layout, element_bytes = known
    kept = math.prod(space[d] for d in layout.kept_dims)
    reduced = math.prod(space[d] for d in layout.reduced_dims)
    return Problem(layout, kept, reduced, element_bytes)


def static_extents(fusion: fu.FusionOp) -> frozenset[int]:
    """Every static extent of a tensor type in `fusion` (once per fusion under an open
    analysis cache)."""

    def compute() -> frozenset[int]:
        found: set[int] = set()
        values = [*fusion.inputs, *(r for op in fusion.body.walk() for r in op.results)]
        for v in values:
            if isinstance(v.type, TensorType):
                found.update(e for e in v.type.get_shape() if e != DYNAMIC_INDEX)
        return frozenset(found)

    return memoized("static_extents", fusion, compute)


CLASS_DIVISOR = 16
"""Strides and extent products enter a layout class as their greatest common divisor with this:
the layout's only divisibility tests are by the vector widths 2, 4 and 8."""


def layout_class(structure: Structure, info: FusionInfo) -> Hashable | None:
    """A key such that every `info` with the same key gets the same `Layout` (and element size)
    from `plan_layout`; None where the input shapes do not fit. Only for tests and logs:
    `plan_layout` finds the inner/outer choice of a class from its first layout."""
    found = _shape_class(structure, info)
    if found is None:
        return None
    shape_key, space = found
    problem = plan_layout(structure, info)
    if isinstance(problem, str):
        return None
    return (shape_key, _along_class(structure, space, problem.layout.inner))


def _shape_class(structure: Structure, info: FusionInfo) -> tuple[Hashable, tuple[int, ...]] | None:
    """The shape part of a `layout_class`, and the space shape (None where the shapes do not
    fit).

    A layout depends on the shapes only through: which extents are 0 or 1, which extents are
    equal (to each other or to a static extent of the fusion), the divisibility by 2, 4 and 8
    of the strides (those of contiguous inputs and outputs are products of their inner extents:
    a row count is never one of them) and of the extent of the vectorized group (added by
    `_along_class`), the order of the inputs' sizes (the largest input picks inner or outer),
    each input's pointer alignment, and whether 32-bit indices reach every element. So a new
    row count or hidden size of a layer norm usually has the class of one seen before. A
    strided (non-contiguous) input enters with its exact shape and strides.
    """
    fusion = structure.fusion
    try:
        env = value_shapes(fusion, info.input_shapes)
    except ShapeMismatch:
        return None
    statics = static_extents(fusion)
    first_of: dict[int, int] = {}
    inputs: list[Hashable] = []
    spans: list[int] = []
    numels: list[int] = []
    for meta in info.inputs:
        if meta is None:
            inputs.append(None)
            continue
        extents = tuple(
            e if e <= 1 or e in statics else -1 - first_of.setdefault(e, len(first_of))
            for e in meta.shape
        )
        contiguous = TensorMeta.contiguous(meta.shape).strides
        dense = all(
            e == 1 or s == c for e, s, c in zip(meta.shape, meta.strides, contiguous, strict=True)
        )
        if dense:
            strides: Hashable = tuple(math.gcd(c, CLASS_DIVISOR) for c in contiguous)
        else:
            strides = (meta.shape, meta.strides)
        inputs.append((extents, strides, meta.alignment))
        spans.append(_span(meta))
        numels.append(math.prod(meta.shape))
    order = tuple((a > b) - (a < b) for i, a in enumerate(numels) for b in numels[i + 1 :])
    space = cast(tuple[int, ...], env[reduction_input(structure.reductions[0])])
    outputs = [cast(tuple[int, ...], env[v]) for v in fusion.output_op.values]
    output_strides = tuple(
        tuple(math.gcd(c, CLASS_DIVISOR) for c in TensorMeta.contiguous(shape).strides)
        for shape in outputs
    )
    reach = 4 * max([math.prod(space), *spans, *(math.prod(s) for s in outputs), 1])
    return (tuple(inputs), output_strides, order, reach > INT32_MAX), space


def _along_class(structure: Structure, space: tuple[int, ...], inner: bool) -> int:
    """The divisibility class of the extent of the group the vectors run along."""
    along = structure.axes if inner else structure.kept_axes
    return math.gcd(math.prod(space[d] for d in along), CLASS_DIVISOR)


def _plan_layout(structure: Structure, info: FusionInfo, max_vector_width: int) -> Problem | str:
    fusion = structure.fusion
    try:
        env = value_shapes(fusion, info.input_shapes)
    except ShapeMismatch as e:
        return str(e)
    space = cast(tuple[int, ...], env[reduction_input(structure.reductions[0])])
    for op in structure.reductions[1:]:
        shape = env[reduction_input(op)]
        if shape != space:
            return (
                f"{op_label(op)} reduces a {list(cast(tuple[int, ...], shape))} tensor, "
                f"{op_label(structure.reductions[0])} a {list(space)} tensor"
            )
    kept_dims = tuple(d for d in structure.kept_axes if space[d] != 1)
    reduced_dims = tuple(d for d in structure.axes if space[d] != 1)
    groups = set(kept_dims) | set(reduced_dims)
    n_in = len(fusion.inputs)

    def effective(what: str, m: DimMap, shape: Sequence[int], output: bool = False) -> DimMap | str:
        """The space dims `m` walks at their full extent (None where the access broadcasts an
        extent 1), or why it cannot be indexed. An output broadcasts nowhere: each element is
        stored once, so an output of extent 1 where the space has 0 or several is refused."""
        dims: list[int | None] = []
        for j, (d, e) in enumerate(zip(m, shape, strict=True)):
            if d is not None and output and e != space[d]:
                return (
                    f"{what} has extent {e} in dim {j} where the reduced tensor {list(space)} "
                    f"has {space[d]}: a kernel stores each output element once"
                )
            if d is not None and e not in (1, space[d]):
                return (
                    f"{what} has extent {e} in dim {j}, which cannot be indexed by dim {d} "
                    f"(extent {space[d]}) of the reduced tensor {list(space)}"
                )
            dims.append(d if d in groups and e == space[d] else None)
        return tuple(dims)

    # (plan without modes, strides, alignment, element bytes, numel) of each access
    raw: list[tuple[int, DimMap, DimMap, tuple[int, ...], int, int, int]] = []
    for i, m in structure.reads():
        meta = cast(TensorMeta, info.inputs[i])
        dims = effective(f"input #{i}", m, meta.shape)
        if isinstance(dims, str):
            return dims
        el = kernel.byte_size(fu.element_type(fusion.inputs[i].type))
        raw.append((i, m, dims, meta.strides, meta.alignment, el, math.prod(meta.shape)))
    outputs_raw: list[tuple[int, DimMap, DimMap, tuple[int, ...], int, int, int]] = []
    reduced_outputs = {o for o, _ in structure.reduced_outputs}
    for o, m in [*structure.reduced_outputs, *structure.full_outputs]:
        value = fusion.output_op.values[o]
        shape = cast(tuple[int, ...], env[value])
        dims = effective(f"output #{o}", m, shape, output=True)
        if isinstance(dims, str):
            return dims
        # stored once per row (or per element): it must vary along every kept (and, for a full
        # output, reduced) dim, or rows would store it several times, or, with 0 rows, never
        walks = kept_dims if o in reduced_outputs else (*kept_dims, *reduced_dims)
        if missing := [d for d in walks if d not in m]:
            return (
                f"output #{o} does not vary along dim {missing[0]} (extent "
                f"{space[missing[0]]}) of the reduced tensor {list(space)}: a kernel stores "
                f"each output element once"
            )
        el = kernel.byte_size(fu.element_type(value.type))
        strides = TensorMeta.contiguous(shape).strides
        outputs_raw.append((n_in + o, m, dims, strides, 16, el, math.prod(shape)))

    # Extents: a static extent, else a parameter that has the dim at its full extent.
    in_type = cast(TensorType, reduction_input(structure.reductions[0]).type)
    extents: list[tuple[int, int]] = []
    for d in range(structure.rank):
        if d not in groups or in_type.get_shape()[d] != DYNAMIC_INDEX:
            extents.append((-1, space[d]))
            continue
        source = next(
            (
                (p, j)
                for p, _, dims, *_ in [*raw, *outputs_raw]
                for j, x in enumerate(dims)
                if x == d
            ),
            None,
        )
        if source is None:
            return f"no tensor parameter carries the extent of dim {d} of {list(space)}"
        extents.append(source)

    # Inner or outer: the fastest-varying dim of the largest input that walks the reduced dims.
    main = max(
        (a for a in raw if any(d in reduced_dims for d in a[2] if d is not None)),
        key=lambda a: a[6],
        default=None,
    )
    inner = True
    element_bytes = 4
    if main is not None:
        element_bytes = main[5]
        walked = [(abs(main[3][j]), -j, d) for j, d in enumerate(main[2]) if d is not None]
        if walked:
            inner = min(walked)[2] in reduced_dims
    along = reduced_dims if inner else kept_dims
    size_along = math.prod(space[d] for d in along)

    def plans(
        accesses: list[tuple[int, DimMap, DimMap, tuple[int, ...], int, int, int]], width: int
    ) -> list[AccessPlan]:
        result: list[AccessPlan] = []
        for p, m, dims, strides, alignment, el, _ in accesses:
            kept = _mode(dims, strides, kept_dims, space)
            red = _mode(dims, strides, reduced_dims, space)
            mode_along = red if inner else kept
            others = [strides[j] for j, d in enumerate(dims) if d is not None and d not in along]
            vector = (
                width > 1
                and mode_along == UNIT
                and width * el <= kernel.MAX_VECTOR_BYTES
                and all(s % width == 0 for s in others)
                and alignment % (width * el) == 0
            )
            result.append(AccessPlan(p, m, dims, kept, red, vector))
        return result

    width = 1
    if main is not None:
        w = min(max_vector_width, kernel.MAX_VECTOR_BYTES // element_bytes)
        while w > 1:
            if size_along % w == 0 and any(pl.vector for pl in plans([main], w)):
                width = w
                break
            w //= 2
    kept = math.prod(space[d] for d in kept_dims)
    reduced = math.prod(space[d] for d in reduced_dims)
    spans = [_span(m) for m in info.inputs if m is not None]
    # offsets of masked-off points may overshoot the tensors: keep a margin of 4x
    reach = 4 * max([kept * reduced, *spans, *(a[6] for a in outputs_raw), 1])
    layout = Layout(
        inner=inner,
        kept_dims=kept_dims,
        reduced_dims=reduced_dims,
        extents=tuple(extents),
        reads=tuple(plans(raw, width)),
        outputs=tuple(plans(outputs_raw, width)),
        vector_width=width,
        index_bits=64 if reach > INT32_MAX else 32,
    )
    return Problem(layout, kept, reduced, element_bytes)


def _span(meta: TensorMeta) -> int:
    """One past the largest element offset `meta` reaches (0 when empty)."""
    if 0 in meta.shape:
        return 0
    return 1 + sum((e - 1) * abs(s) for e, s in zip(meta.shape, meta.strides, strict=True))


def space_shape(structure: Structure, info: FusionInfo) -> tuple[int, ...]:
    """The run-time shape of the reductions' input."""
    env = value_shapes(structure.fusion, info.input_shapes)
    return cast(tuple[int, ...], env[reduction_input(structure.reductions[0])])


def kept_points(structure: Structure, layout: Layout, info: FusionInfo) -> int:
    """The kept points (rows, or columns) of `info` for a kernel of `layout`: from the problem
    the open analysis cache holds for `info` (what `accepts` computed) where it has this
    layout, else from the space shape."""
    if active() is not None:
        problem = plan_layout(structure, info)
        if not isinstance(problem, str) and problem.layout == layout:
            return problem.kept
    space = space_shape(structure, info)
    return math.prod(space[d] for d in layout.kept_dims)


def refusal_key(structure: Structure, info: FusionInfo, reason: str) -> Hashable:
    """The `heuristics_key` of a fusion a template refuses for `info`: the reason where the
    structure alone refuses (every shape is refused alike), else the exact `info`."""
    structural = [structure.error, structure.persistent_reason]
    if any(r is not None and reason.endswith(r) for r in structural):
        return ("refused", reason)
    return ("refused", info)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pow2_ceil(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


# --------------------------------------------------------------------------------------------
# Kernel pieces
# --------------------------------------------------------------------------------------------

State = tuple[SSAValue, ...]
"""A reduction's running value: (value,) for sum/max/min, (mean, m2, count) for Welford."""

_KINDS: dict[type[Operation], kernel.ReduceKind] = {
    fu.SumOp: kernel.ReduceKind.SUM,
    fu.MaxOp: kernel.ReduceKind.MAX,
    fu.MinOp: kernel.ReduceKind.MIN,
}


def is_welford(op: Operation) -> bool:
    return isinstance(op, fu.WelfordOp | fu.VarMeanOp)


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def neutral(kind: kernel.ReduceKind, t: Attribute) -> SSAValue:
    """The identity of a combining function in the scalar type `t`."""
    if kind == kernel.ReduceKind.SUM:
        return constant(0, t)
    high = kind == kernel.ReduceKind.MIN
    if _is_float(t):
        return constant(math.inf if high else -math.inf, t)
    bits = cast(IntegerType, t).width.data
    return constant((1 << (bits - 1)) - 1 if high else -(1 << (bits - 1)), t)


def combine(kind: kernel.ReduceKind, a: SSAValue, b: SSAValue) -> SSAValue:
    """`a (+) b` for a combining function (max/min propagate NaN, like the reference)."""
    f = _is_float(a.type)
    if kind == kernel.ReduceKind.SUM:
        return (arith.AddfOp if f else arith.AddiOp)(a, b).result
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


def combine_welford(state: State, count: SSAValue, along: kernel.Dimension, threads: int) -> State:
    """The Welford state over `threads` threads' states (mean_t, m2_t, n_t) by two plain sums
    rather than Chan's pairwise merge at each step of a tree: the mean is the sum of n_t mean_t
    over `count`, then M2 the sum of m2_t + n_t (mean_t - mean)^2 (each thread's M2 moved to
    the common mean, an exact identity; every term is non-negative). Two sum reductions of one
    value each cost far less than a reduction of three values with a division at every step."""
    mean_t, m2_t, n_t = state
    t = mean_t.type
    total = cooperate_kind(kernel.ReduceKind.SUM, arith.MulfOp(n_t, mean_t).result, along, threads)
    mean = arith.DivfOp(total, arith.MaximumfOp(count, constant(1.0, t))).result
    d = arith.SubfOp(mean_t, mean).result
    moved = arith.AddfOp(m2_t, arith.MulfOp(arith.MulfOp(n_t, d), d)).result
    m2 = cooperate_kind(kernel.ReduceKind.SUM, moved, along, threads)
    return (mean, m2, count)


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
        """A fully unrolled loop from 0 to `trip_count` (no loop, index 0, for one trip)."""
        if trip_count == 1:
            return nullcontext(0)
        return self.kb.loop(0, trip_count, unroll=True, name=name)

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
        vector = plan.vector and self.varies(plan, chunk.along_reduced)
        count = 1 if chunk.along_reduced or vector or plan.kept == NONE else chunk.width
        return [self.group_offset(plan, True, chunk.slot(self.kb, j)[0]) for j in range(count)]

    def load(
        self,
        plan: AccessPlan,
        chunk: Chunk,
        kept: Sequence[Index] | None = None,
    ) -> SSAValue:
        """A local array holding `plan`'s elements at the chunk's slots (one element when they
        all read the same one), loaded if the chunk is valid, zeros otherwise."""
        kb = self.kb
        t = self.element_type(plan)
        varies = self.varies(plan, chunk.along_reduced)
        count = chunk.width if varies else 1
        array = kernel.AllocOp(kernel.ArrayType(count, t, kernel.MemorySpace.LOCAL)).result
        array.name_hint = f"{self.params[plan.param].name_hint}_buf"
        for j in range(count):
            kernel.ArrayStoreOp(constant(0, t), array, kb.value(j))
        vector = plan.vector and varies and count > 1
        offsets = [self.chunk_offset(plan, chunk, j, kept) for j in range(1 if vector else count)]
        tensor = self.params[plan.param]
        with kb.if_(chunk.valid):
            if vector:
                v = kernel.LoadOp(tensor, offsets[0], VectorType(t, [count])).result
                kernel.ArrayStoreOp(v, array, kb.value(0))
            else:
                for j, off in enumerate(offsets):
                    kernel.ArrayStoreOp(kernel.LoadOp(tensor, off).result, array, kb.value(j))
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
        kb = self.kb
        t = self.element_type(plan)
        array = slots.array(t, f"{self.params[plan.param].name_hint}_buf", zeroed=True)
        tensor = self.params[plan.param]
        width = slots.width
        with slots.loop(slots.chunks, "c") as c:
            chunk = chunk_at(c)
            base = kb.mul(c, width)
            vector = plan.vector and width > 1
            offsets = [
                self.chunk_offset(plan, chunk, j, kept) for j in range(1 if vector else width)
            ]
            with kb.if_(chunk.valid):
                if vector:
                    loaded = kernel.LoadOp(tensor, offsets[0], VectorType(t, [width])).result
                    kernel.ArrayStoreOp(loaded, array, kb.value(base))
                else:
                    for j, off in enumerate(offsets):
                        loaded = kernel.LoadOp(tensor, off).result
                        kernel.ArrayStoreOp(loaded, array, kb.value(kb.add(base, j)))
        return array

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

    def store_reduced(self, env: dict[Key, SSAValue], kept: Index) -> None:
        """Stores every reduced-shape output at the kept point `kept` (call under a branch that
        selects one thread per point)."""
        outputs = self.structure.fusion.output_op.values
        for o, m in self.structure.reduced_outputs:
            plan = self.output_plans[o]
            comment(f"store output #{o}")
            offset = self.group_offset(plan, True, kept)
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
                vector = VectorType(t, [len(values)])
                vec = kernel.ArrayLoadOp(array.result, kb.value(0), vector).result
                offset = kb.value(self.group_offset(plan, True, kept))
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
        if plan.vector and chunk.width > 1:
            t = self.element_type(plan)
            array = kernel.AllocOp(kernel.ArrayType(chunk.width, t, kernel.MemorySpace.LOCAL))
            array.result.name_hint = f"{tensor.name_hint}_buf"
            for j, v in enumerate(values):
                kernel.ArrayStoreOp(v, array.result, kb.value(j))
            vec = kernel.ArrayLoadOp(array.result, kb.value(0), VectorType(t, [chunk.width])).result
            offset = self.chunk_offset(plan, chunk, 0, kept)
            with kb.if_(chunk.valid):
                kernel.StoreOp(vec, tensor, offset)
            return
        offsets = [self.chunk_offset(plan, chunk, j, kept) for j in range(len(values))]
        with kb.if_(chunk.valid):
            for v, off in zip(values, offsets, strict=True):
                kernel.StoreOp(v, tensor, off)

    def store_full_slots(
        self, o: int, chunk: Chunk, array: SSAValue, base: Index, kept: Sequence[Index]
    ) -> None:
        """Stores full-shape output #o at the chunk's slots (if the chunk is valid) from the
        chunk's elements of the local array `array`, from index `base` (one vector where the
        output is contiguous along them)."""
        kb = self.kb
        plan = self.output_plans[o]
        tensor = kb.outputs[o]
        width = chunk.width
        if plan.vector and width > 1:
            t = self.element_type(plan)
            vec = kernel.ArrayLoadOp(array, kb.value(base), VectorType(t, [width])).result
            offset = self.chunk_offset(plan, chunk, 0, kept)
            with kb.if_(chunk.valid):
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


def full_output_keys(structure: Structure) -> list[tuple[int, Key]]:
    outputs = structure.fusion.output_op.values
    return [(o, (outputs[o], m)) for o, m in structure.full_outputs]


def row_level(needs: Needs, axes: Sequence[int]) -> Needs:
    """The part of `needs` that does not vary along the reduced dims."""
    result: Needs = {}
    for value, maps in needs.items():
        kept = [m for m in maps if not has_dims(m, axes)]
        if kept:
            result[value] = kept
    return result


def element_level(needs: Needs, axes: Sequence[int]) -> Needs:
    """The part of `needs` that varies along the reduced dims."""
    result: Needs = {}
    for value, maps in needs.items():
        varying = [m for m in maps if has_dims(m, axes)]
        if varying:
            result[value] = varying
    return result
