"""The normalized problem a fusion with reductions takes for concrete input shapes, shared by
the reduction and persistent schedulers (the analysis of the fusion is `reduction_structure`).

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
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import cast

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import active, memoized
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.schedulers.iteration_space import DimMap, unshifted
from fuser.transforms.schedulers.kernel_builder import op_label, value_name
from fuser.transforms.schedulers.reduction_structure import (
    INT32_MAX,
    Structure,
    reduction_input,
)
from fuser.transforms.schedulers.shapes import ShapeMismatch, value_shapes

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
    inputs, order, input_reach = memoized(
        "inputs_class", (info, statics), lambda: _inputs_class(info, statics)
    )
    space = cast(tuple[int, ...], env[structure.space_value])
    outputs = [cast(tuple[int, ...], env[v]) for v in fusion.output_op.values]
    output_strides = tuple(
        tuple(math.gcd(c, CLASS_DIVISOR) for c in TensorMeta.contiguous(shape).strides)
        for shape in outputs
    )
    reach = 4 * max([math.prod(space), input_reach, *(math.prod(s) for s in outputs), 1])
    return (inputs, output_strides, order, reach > INT32_MAX), space


def _inputs_class(
    info: FusionInfo, statics: frozenset[int]
) -> tuple[tuple[Hashable, ...], tuple[int, ...], int]:
    """The inputs' part of `_shape_class` (the same for a fusion and its two-pass copy, which
    share their inputs): each input's extents, strides and alignment class, the order of their
    sizes, and the largest element offset they reach."""
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
    return tuple(inputs), order, max(spans, default=0)


def _along_class(structure: Structure, space: tuple[int, ...], inner: bool) -> Hashable:
    """The divisibility class of the extent of the group the vectors run along (and of a row
    split's chunks)."""
    along = structure.axes if inner else structure.kept_axes
    size = math.prod(space[d] for d in along)
    if structure.row_splits == 1:
        return math.gcd(size, CLASS_DIVISOR)
    return math.gcd(size, CLASS_DIVISOR), math.gcd(
        ceil_div(size, structure.row_splits), CLASS_DIVISOR
    )


def _plan_layout(structure: Structure, info: FusionInfo, max_vector_width: int) -> Problem | str:
    fusion = structure.fusion
    try:
        env = value_shapes(fusion, info.input_shapes)
    except ShapeMismatch as e:
        return str(e)
    space = cast(tuple[int, ...], env[structure.space_value])
    for op in [*structure.reductions, *structure.partials]:
        shape = env[reduction_input(op)]
        if shape != space:
            return (
                f"{op_label(op)} reduces a {list(cast(tuple[int, ...], shape))} tensor, "
                f"{value_name(structure.space_value)} is a {list(space)} tensor"
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
        for j, (d, e) in enumerate(zip(unshifted(m), shape, strict=True)):
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

    # Partial sums: [splits, H] outputs; row g is written by the block that sums chunk g, so
    # their dim 0 is indexed by the chunk (by the kernel), not by a group of the space.
    partials_raw: list[tuple[int, DimMap, DimMap, tuple[int, ...], int, int, int]] = []
    for o, op in structure.partial_outputs:
        shape = cast(tuple[int, ...], env[op.result])
        el = kernel.byte_size(fu.element_type(op.result.type))
        dims = (None, 1 if 1 in groups else None)
        strides = TensorMeta.contiguous(shape).strides
        partials_raw.append((n_in + o, dims, dims, strides, 16, el, math.prod(shape)))

    # Extents: a static extent, else a parameter that has the dim at its full extent.
    in_type = cast(TensorType, structure.space_value.type)
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
    splits = structure.row_splits
    if splits > 1 and not inner:
        return (
            f"a row split over {splits} blocks needs the reduced dim fastest in "
            f"{value_name(structure.space_value)}: each block sums a run of a row"
        )
    # a row split's chunks start at multiples of the chunk: vectors must not straddle them
    chunk = ceil_div(size_along, splits)

    def plans(
        accesses: list[tuple[int, DimMap, DimMap, tuple[int, ...], int, int, int]], width: int
    ) -> list[AccessPlan]:
        result: list[AccessPlan] = []
        for p, m, dims, strides, alignment, el, _ in accesses:
            kept = _mode(dims, strides, kept_dims, space)
            red = _mode(dims, strides, reduced_dims, space)
            mode_along = red if inner else kept
            others = [strides[j] for j, d in enumerate(dims) if d is not None and d not in along]
            # an access wider than a vector moves in vector pieces (`vector_pieces`)
            piece = min(width * el, kernel.MAX_VECTOR_BYTES)
            vector = (
                width > 1
                and mode_along == UNIT
                and all(s % width == 0 for s in others)
                and alignment % piece == 0
            )
            result.append(AccessPlan(p, m, dims, kept, red, vector))
        return result

    width = 1
    if main is not None:
        w = min(max_vector_width, kernel.MAX_VECTOR_BYTES // element_bytes)
        while w > 1:
            if size_along % w == 0 and chunk % w == 0 and any(pl.vector for pl in plans([main], w)):
                width = w
                break
            w //= 2
    kept = math.prod(space[d] for d in kept_dims)
    reduced = math.prod(space[d] for d in reduced_dims)
    spans = [_span(m) for m in info.inputs if m is not None]
    # offsets of masked-off points may overshoot the tensors: keep a margin of 4x
    reach = 4 * max([kept * reduced, *spans, *(a[6] for a in [*outputs_raw, *partials_raw]), 1])
    layout = Layout(
        inner=inner,
        kept_dims=kept_dims,
        reduced_dims=reduced_dims,
        extents=tuple(extents),
        reads=tuple(plans(raw, width)),
        outputs=tuple(plans([*outputs_raw, *partials_raw], width)),
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
    return cast(tuple[int, ...], env[structure.space_value])


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
