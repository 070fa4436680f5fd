"""The pointwise scheduler: one kernel for fusions of pointwise ops, casts, broadcasts,
permutes, squeezes, pads, cats and takes (each input read through the dim map of its path to
the output; under a pad or cat, shifted and predicated: nvFuser's resize scheduler; under a
take, at the index loaded first).

The kernel walks the iteration space of the largest output in vectors of `vector_width`
consecutive elements along the innermost dim; each thread handles `unroll` vectors, `block`
threads apart so that a warp's accesses are coalesced. It first issues every load of its vectors
into local arrays (so that many loads are in flight), then per vector computes the fusion one
element at a time from the arrays (`compute_element`) and stores the results as vectors. Inputs
broadcast along the innermost dim are read once per vector; outputs that do not span the whole
space (a value before a broadcast) are written by the points whose extra indices are 0. The last
block's tail is predicated. An input read under a `Shifted` map (an operand of a pad or cat) is
loaded where the point lies within it and is 0 elsewhere; the pad or cat selects per element
(`lower_resize`), so an operand's value outside its interval is never used. Two such reads at
disjoint intervals of one dim (a cat's operands) share an array that one `kernel.select_load`
fills from whichever holds the point (0 where neither does: `_paired_reads`). A vector of such
an input lies wholly within or outside it when the offset and extent along the innermost dim
divide by the width, which `_vector_width` requires. An input read under an `Indexed` map (a
take's operand) is loaded after the reads its index is computed from (`take_depth`), at the
computed index clamped into the dim (`taken_indices`); the index is the same along a vector
unless it follows the innermost dim, where vectors are one element.

The grid is 1-D over the flattened space (the offset of a contiguous tensor of the space's shape
is the flat index itself; others delinearize it and use their strides), or 2-D when rows are
long: `blockIdx.x` over tiles of the innermost dim, `blockIdx.y` over the outer dims. Indices are
i32 unless an extent or offset needs i64.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import cast, overload

from xdsl.dialects import arith
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType, VectorType
from xdsl.ir import Attribute, Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.base import (
    MAX_GRID,
    AnalyzedScheduler,
    LaunchConfig,
    Params,
    call_shapes,
    check_grid,
)
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.schedulers.iteration_space import (
    DimMap,
    Indexed,
    MappingError,
    Needs,
    Shifted,
    Space,
    body_ops,
    entry_dim,
    expand,
    indexed,
    indexed_dims,
    iteration_space,
    map_dims,
    shifted,
)
from fuser.transforms.schedulers.kernel_builder import (
    ElementPosition,
    Index,
    KernelBuilder,
    compute_element,
    drawn_in_its_own_space,
    named,
    op_label,
)
from fuser.transforms.schedulers.scalar_lowering import constant, is_pointwise

INT32_MAX = 2**31 - 1
UNROLLS = (4, 2, 1)
BLOCK_THREADS = 128
"""Small blocks, each thread with little work (MAX_ELEMENTS_IN_FLIGHT): on an H200, gelu(x + b)
over [8192, 8192] ran at 96% (f32) and 92% (bf16) of copy bandwidth with 128 threads of 8
elements each, at 95% and 88% with 512 threads x 16 (f32) and 256 x 32 (bf16)
(benchmarks/RESULTS.md, run 3)."""
MAX_ELEMENTS_IN_FLIGHT = 16
"""Cap on loaded elements per thread (unroll x width x reads), to bound registers."""


@dataclass(frozen=True)
class PointwiseParams(Params):
    """The pointwise template's parameters (`block` is `(threads, 1, 1)`)."""

    reference: int
    """The output whose shape is the iteration space."""
    vector_width: int
    """Consecutive innermost elements per load/store (1: scalar accesses)."""
    unroll: int
    """Vectors per thread."""
    index_bits: int
    """32 or 64: the width of index arithmetic."""
    grid_2d: bool
    """blockIdx.x over tiles of the innermost dim and blockIdx.y over the outer dims."""
    dense_reads: tuple[bool, ...]
    """Per read of an input (`Space.reads`): of a tensor laid out as a contiguous one of the
    space's shape and read as one (or a slice of one, shifted under a pad or cat), so its
    offset is the flat index (less the shift)."""
    dense_outputs: tuple[bool, ...]
    """Per output: of the space's shape (outputs are contiguous), offset = flat index."""

    @property
    def threads(self) -> int:
        return self.block[0]


@dataclass(frozen=True)
class PointwiseAnalysis:
    """What the heuristics know about a fusion and one set of input shapes."""

    reference: int
    space: Space
    extents: tuple[int, ...]
    output_shapes: tuple[tuple[int, ...], ...]


def analyze(fusion: fu.FusionOp, info: FusionInfo) -> PointwiseAnalysis | str:
    """Once per (fusion, info) under an open analysis cache."""
    return memoized("pointwise", (fusion, info), lambda: _analysis(fusion, info))


def _structure_problem(fusion: fu.FusionOp) -> str | None:
    """Why the fusion's ops alone keep it from this template, or None (once per fusion under
    an open analysis cache)."""
    return memoized("pointwise_structure", fusion, lambda: _ops_problem(fusion))


def _ops_problem(fusion: fu.FusionOp) -> str | None:
    for op in body_ops(fusion):
        if isinstance(op, fu.SegmentSetOp):
            return (
                f"{op_label(op)} marks a kernel boundary: a fusion with segment_set is not one "
                "kernel"
            )
        if isinstance(op, fu.ReductionOp | fu.WelfordOp | fu.VarMeanOp):
            return f"{op_label(op)} is a reduction"
        if isinstance(op, fu.MatmulOp):
            return f"{op_label(op)} is a matmul"
        if not (
            is_pointwise(op)
            or isinstance(op, (fu.DimOp, fu.ResizeOp, fu.RandomOp, *fu.INDEXING_OPS))
        ):
            return f"{op_label(op)} is not a pointwise op"
    return _random_problem(fusion)


def _random_problem(fusion: fu.FusionOp) -> str | None:
    """Why a random op's values cannot be computed where they are read, or None. A kernel
    computes element i of a `rand` from its index in the op's shape; a value computed from one
    that a `broadcast_in_dim` expands along a dynamic dim (which may be 1 at run time) or that
    a take reads at an index would need that index from elsewhere: the random op is then a
    kernel of its own, whose result the others read."""
    random: set[SSAValue] = set()
    for op in body_ops(fusion):
        operands = [o for o in op.operands if o in random]
        if isinstance(op, fu.RandomOp):
            random.update(op.results)
        elif operands:
            if isinstance(op, fu.BroadcastInDimOp) and DYNAMIC_INDEX in (
                fu.shape_of(op.input.type) or ()
            ):
                return f"{op_label(op)} expands random values along a dynamic dim"
            if isinstance(op, fu.INDEXING_OPS) and op.input in operands:
                return f"{op_label(op)} reads random values at an index"
            random.update(op.results)
    return None


def _analysis(fusion: fu.FusionOp, info: FusionInfo) -> PointwiseAnalysis | str:
    """The iteration space for `info`'s shapes, or why this template cannot handle them."""
    if (problem := _structure_problem(fusion)) is not None:
        return problem
    if not fusion.output_op.values:
        return "the fusion has no outputs"
    env = call_shapes(fusion, info)
    if isinstance(env, str):
        return env
    outputs = tuple(cast(tuple[int, ...], env[v]) for v in fusion.output_op.values)

    # the reference is the largest output; of equal ones (empty outputs, extent-1 dims) one of
    # highest rank, which the others are broadcasts of; of those, the first whose space takes
    # the fusion (a cat's result and its operand may be equal in shape: the operand's space
    # indexes both outputs as they are, the result's reads the operand shifted)
    def size(i: int) -> tuple[int, int]:
        return math.prod(outputs[i]), len(outputs[i])

    biggest = max(map(size, range(len(outputs))))
    problems: list[str] = []
    for reference in (i for i in range(len(outputs)) if size(i) == biggest):
        space = memoized("pointwise_space", (fusion, reference), partial(_space, fusion, reference))
        result = (
            space if isinstance(space, str) else _checked(fusion, info, outputs, reference, space)
        )
        if not isinstance(result, str):
            return result
        problems.append(result)
    return problems[0]


def _checked(
    fusion: fu.FusionOp,
    info: FusionInfo,
    outputs: tuple[tuple[int, ...], ...],
    reference: int,
    space: Space,
) -> PointwiseAnalysis | str:
    """The analysis with `reference`'s space (`outputs`: the outputs' run-time shapes), or why
    it cannot run the fusion: an output it would not index as it is, or an input or output of
    an extent it cannot index."""
    for o, m in enumerate(space.output_maps):
        if shifted(m) or indexed(m):
            return (
                f"output #{o} is read by a resize op (pad, cat) at an offset or by a take at an "
                "index: a kernel writes only outputs that the iteration space indexes as they are"
            )
    extents = outputs[reference]
    accesses = [
        (f"input #{i}", m, cast(TensorMeta, info.inputs[i]).shape) for i, m in space.reads(fusion)
    ]
    accesses += [(f"output #{o}", m, outputs[o]) for o, m in enumerate(space.output_maps)]
    for what, m, shape in accesses:
        for d, (e, s) in enumerate(zip(m, shape, strict=True)):
            if e is None or isinstance(e, Indexed):  # a take's index is clamped into the dim
                continue
            expected = e.extent if isinstance(e, Shifted) else extents[e]
            if s not in (1, expected):
                by = (
                    f"dim {e.dim} of the iteration space {list(extents)} less {e.offset} (a pad "
                    "or cat operand)"
                    if isinstance(e, Shifted)
                    else f"dim {e} of the iteration space {list(extents)}"
                )
                return (
                    f"{what} has extent {s} in dim {d}, which cannot be indexed by {by} (extent "
                    f"{expected})"
                )
    return PointwiseAnalysis(reference, space, extents, outputs)


def _space(fusion: fu.FusionOp, reference: int) -> Space | str:
    try:
        return iteration_space(fusion, reference)
    except MappingError as e:
        return str(e)


def _indexed_as_space(m: DimMap, ref_map: DimMap) -> bool:
    """Whether map `m` indexes each dim as the space's own dim there (or shifted along it)."""
    return len(m) == len(ref_map) and all(
        e == r or (isinstance(e, Shifted) and e.dim is not None and e.dim == r)
        for e, r in zip(m, ref_map, strict=True)
    )


def _dense(meta: TensorMeta, m: DimMap, ref_map: DimMap, ref_shape: tuple[int, ...]) -> bool:
    """Whether an input read with map `m` has the flat index of the space (less a shift) as its
    offset: each dim is indexed as the space's own (`_indexed_as_space`) with the space's
    extent, or shifted along it with the shifted operand's, and its strides are those of a
    contiguous tensor of the space's shape (an extent-1 dim's do not matter)."""
    if len(meta.shape) != len(ref_shape) or not _indexed_as_space(m, ref_map):
        return False
    expected = TensorMeta.contiguous(ref_shape).strides
    for d, (e, stride) in enumerate(zip(meta.shape, meta.strides, strict=True)):
        entry = m[d]
        if e != (entry.extent if isinstance(entry, Shifted) else ref_shape[d]):
            return False
        if e != 1 and stride != expected[d]:
            return False
    return True


def span(meta: TensorMeta) -> int:
    """One past the largest element offset `meta` reaches (0 when empty)."""
    if 0 in meta.shape:
        return 0
    return 1 + sum((e - 1) * abs(s) for e, s in zip(meta.shape, meta.strides, strict=True))


class PointwiseScheduler(AnalyzedScheduler[PointwiseAnalysis]):
    """Fusions of pointwise ops, casts and broadcasts, as one vectorized pointwise kernel."""

    name = "pointwise"

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> PointwiseAnalysis | str:
        return analyze(fusion, info)

    # --- heuristics ------------------------------------------------------------------------
    # The heuristics key is the parameters themselves: a handful of numbers and flags (vector
    # width, unroll, threads, 2-D grid, index width, dense accesses) that follow from the
    # shapes with little work once the iteration space is known.

    def refusal_key(self, fusion: fu.FusionOp, info: FusionInfo, reason: str) -> Hashable:
        structural = _structure_problem(fusion) is not None
        return ("refused", reason if structural else info)

    def params_of(
        self, fusion: fu.FusionOp, info: FusionInfo, analysis: PointwiseAnalysis
    ) -> PointwiseParams:
        extents = analysis.extents
        reads = analysis.space.reads(fusion)
        width = self._vector_width(fusion, info, analysis)
        numel = math.prod(extents)
        vectors = -(-numel // width)
        cap = max(1, MAX_ELEMENTS_IN_FLIGHT // (width * max(1, len(reads))))
        sms = info.device.sm_count
        unroll = next((u for u in UNROLLS if u <= cap and -(-vectors // (128 * u)) >= 2 * sms), 1)
        threads = BLOCK_THREADS
        rank = len(extents)
        inner_vectors = extents[-1] // width if rank else 0
        outer = numel // extents[-1] if rank and extents[-1] else 0
        grid_2d = rank >= 2 and 0 < outer <= MAX_GRID[1] and inner_vectors >= 128 * unroll
        if grid_2d:
            threads = min(threads, 1 << (inner_vectors // unroll).bit_length() - 1)
        reach = numel + threads * unroll * width
        spans = [span(m) for m in info.inputs if m is not None]
        index_bits = 64 if max([reach, *spans]) + width > INT32_MAX else 32
        ref_shape = analysis.output_shapes[analysis.reference]
        return PointwiseParams(
            block=(threads, 1, 1),
            reference=analysis.reference,
            vector_width=width,
            unroll=unroll,
            index_bits=index_bits,
            grid_2d=grid_2d,
            dense_reads=tuple(
                _dense(
                    cast(TensorMeta, info.inputs[i]),
                    m,
                    analysis.space.output_maps[analysis.reference],
                    ref_shape,
                )
                for i, m in reads
            ),
            dense_outputs=tuple(s == ref_shape for s in analysis.output_shapes),
        )

    @staticmethod
    def _vector_width(fusion: fu.FusionOp, info: FusionInfo, analysis: PointwiseAnalysis) -> int:
        """The widest vector every access along the innermost dim can use, or 1.

        Accesses that span the innermost dim need stride 1 there, that dim's full extent (not a
        run-time broadcast), other strides and the pointer aligned to the vector; the innermost
        extent must divide by the width. Broadcast accesses are read once per vector.
        """
        extents = analysis.extents
        if not extents:
            return 1
        inner = len(extents) - 1
        if any(inner in indexed_dims(m) for _, m in analysis.space.reads(fusion)):
            return 1  # a take's index changes along the vector: each element is its own load
        # (element bytes, strides, map, extents, pointer alignment) of accesses spanning `inner`
        spanning: list[tuple[int, tuple[int, ...], DimMap, tuple[int, ...], int]] = []
        for i, m in analysis.space.reads(fusion):
            meta = cast(TensorMeta, info.inputs[i])
            el = kernel.byte_size(fu.element_type(fusion.inputs[i].type))
            spanning.append((el, meta.strides, m, meta.shape, meta.alignment))
        for o, m in enumerate(analysis.space.output_maps):
            shape = analysis.output_shapes[o]
            el = kernel.byte_size(fu.element_type(fusion.output_op.values[o].type))
            spanning.append((el, TensorMeta.contiguous(shape).strides, m, shape, 16))
        spanning = [a for a in spanning if inner in map_dims(a[2])]
        if not spanning:
            return 1
        widest = min(
            max(kernel.VECTOR_WIDTHS), kernel.MAX_VECTOR_BYTES // max(a[0] for a in spanning)
        )
        for width in (w for w in sorted(kernel.VECTOR_WIDTHS, reverse=True) if w <= widest):
            if extents[inner] % width == 0 and all(
                _vectorizable(a, inner, extents[inner], width) for a in spanning
            ):
                return width
        return 1

    # --- launch ----------------------------------------------------------------------------

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(PointwiseParams, params)
        analysis = analyze(fusion, info)
        if isinstance(analysis, str):
            raise ValueError(analysis)
        extents = analysis.extents
        numel = math.prod(extents)
        tile = p.threads * p.unroll
        if p.grid_2d:
            grid = (-(-(extents[-1] // p.vector_width) // tile), numel // extents[-1], 1)
        else:
            grid = (max(1, -(-(numel // p.vector_width) // tile)), 1, 1)
        check_grid(fusion, "pointwise", grid)
        return LaunchConfig(grid, p.block)

    # --- the kernel ------------------------------------------------------------------------

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        p = cast(PointwiseParams, params)
        return _PointwiseKernel(fusion, p, kernel_name).build()


def _vectorizable(
    access: tuple[int, tuple[int, ...], DimMap, tuple[int, ...], int],
    inner: int,
    extent: int,
    width: int,
) -> bool:
    el, strides, m, shape, alignment = access
    d = next(j for j, x in enumerate(m) if entry_dim(x) == inner)
    # dims of extent 1 are read with index 0 (or stride 0): their strides do not matter
    others = [strides[e] for e, x in enumerate(m) if x is not None and e != d and shape[e] != 1]
    # a shifted read is valid for a whole vector or none of it
    placed = m[d]
    whole = not isinstance(placed, Shifted) or (
        placed.offset % width == 0 and placed.extent % width == 0
    )
    return (
        strides[d] == 1
        and shape[d] == (placed.extent if isinstance(placed, Shifted) else extent)
        and whole
        and all(s % width == 0 for s in others)
        and alignment % (width * el) == 0
    )


class _Sizes(Sequence[Index]):
    """The extents of the iteration space (the reference output's): a static extent of its
    type as an int (a division by it is one by a constant, a shift for a power of two), a
    dynamic one read from the output, hoisted on first use."""

    def __init__(self, kb: KernelBuilder, tensor: SSAValue, static: Sequence[int]) -> None:
        self.kb, self.tensor, self.static = kb, tensor, tuple(static)

    def __len__(self) -> int:
        return len(self.static)

    @overload
    def __getitem__(self, d: int) -> Index: ...

    @overload
    def __getitem__(self, d: slice) -> list[Index]: ...

    def __getitem__(self, d: int | slice) -> Index | list[Index]:
        if isinstance(d, slice):
            return [self[i] for i in range(len(self.static))[d]]
        axis = range(len(self.static))[d]
        if self.static[axis] != DYNAMIC_INDEX:
            return self.static[axis]
        return self.kb.size(self.tensor, axis)


class _Point:
    """The first element of vector `k` of a thread: its flat, innermost and outer indices.

    Indices are created on first use, at the insertion point of that use.
    """

    def __init__(self, kb: KernelBuilder, p: PointwiseParams, sizes: Sequence[Index], k: Index):
        self.kb, self.sizes = kb, sizes
        x, y = kernel.Dimension.X, kernel.Dimension.Y
        tid = kb.geometry(kernel.ThreadIdOp, x)
        bid = kb.geometry(kernel.BlockIdOp, x)
        tile = p.threads * p.unroll
        vector = named(kb.add(kb.mul(bid, tile), kb.add(kb.mul(k, p.threads), tid)), "vec")
        width = p.vector_width
        self._flat: Index | None = None
        self._inner: Index | None = None
        self._outer: Index | None = None
        if p.grid_2d:
            self._inner = named(kb.mul(vector, width), "inner")
            self._outer = kb.geometry(kernel.BlockIdOp, y)
            limit = kb.hoist(
                "row_vectors", lambda: named(kb.value(kb.div(sizes[-1], width)), "row_vectors")
            )
        else:
            self._flat = named(kb.mul(vector, width), "elem")
            limit = self._vectors(width)
        self.valid = kb.cmp("slt", vector, limit)
        self.valid.name_hint = "in_bounds"
        self._indices: list[Index] | None = None
        self._lowest = len(sizes)

    def _vectors(self, width: int) -> Index:
        """The number of vectors in the space (hoisted)."""
        kb, sizes = self.kb, self.sizes
        if not sizes:
            return 1

        def make() -> SSAValue:
            numel: Index = 1
            for s in sizes:
                numel = kb.mul(numel, s)
            return named(kb.value(kb.div(numel, width)), "vectors")

        return kb.hoist("vectors", make)

    @property
    def flat(self) -> Index:
        if self._flat is None:
            self._flat = named(
                self.kb.add(self.kb.mul(self.outer, self.sizes[-1]), self.inner), "elem"
            )
        return self._flat

    @property
    def inner(self) -> Index:
        if self._inner is None:
            self._inner = named(self.kb.rem(self.flat, self.sizes[-1]), "inner")
        return self._inner

    @property
    def outer(self) -> Index:
        if self._outer is None:
            self._outer = named(self.kb.div(self.flat, self.sizes[-1]), "outer")
        return self._outer

    def index(self, dim: int, lowest: int) -> Index:
        """The index along iteration dim `dim`; `lowest` is the lowest dim the caller needs
        (delinearization stops there)."""
        if dim == len(self.sizes) - 1:
            return self.inner
        if self._indices is None or lowest < self._lowest:
            indices = self.kb.delinearize(self.outer, self.sizes[:-1], lowest)
            self._indices = [named(x, f"i{d}") for d, x in enumerate(indices)]
            self._lowest = lowest
        return self._indices[dim]


class _PointwiseKernel:
    """The kernel of one fusion for one `PointwiseParams` (see the module docstring)."""

    def __init__(self, fusion: fu.FusionOp, p: PointwiseParams, name: str) -> None:
        self.fusion, self.p = fusion, p
        self.space = iteration_space(fusion, p.reference)
        self.kb = KernelBuilder(fusion, name, fu.I64 if p.index_bits == 64 else fu.I32, p.threads)
        self.rank = self.space.rank
        self.ref_map = self.space.output_maps[p.reference]
        ref_type = cast(TensorType, fusion.output_op.values[p.reference].type)
        self.sizes = _Sizes(self.kb, self.kb.outputs[p.reference], ref_type.get_shape())
        self.reads = self.space.reads(fusion)
        self.arrays: dict[tuple[int, DimMap], SSAValue] = {}
        self._index_needs: dict[Indexed, Needs] = {}
        self.ordered_reads = sorted(
            zip(self.reads, p.dense_reads, strict=True), key=lambda r: self.take_depth(r[0][1])
        )
        """The reads with their `dense_reads` flags, in load order (`take_depth`)."""
        self.out_arrays: list[SSAValue] = []
        self.resized_dims = sorted(
            {
                x
                for op in body_ops(fusion)
                if isinstance(op, fu.ResizeOp)
                for m in self.space.needs.get(op.result, [])
                for x in map_dims(m)
            }
        )
        """The iteration dims along which resize ops select (their indices are needed)."""
        self.random_maps = [
            m
            for op in body_ops(fusion)
            if isinstance(op, fu.RandomOp)
            for m in self.space.needs.get(op.result, [])
        ]
        """The maps random ops are drawn under (their elements' indices are needed)."""
        self.paired = self._paired_reads()
        """Shifted reads loaded together with a later one (`load`), to that one."""

    def width(self, m: DimMap) -> int:
        """Elements per vector of an access with map `m` (1 if it is broadcast innermost)."""
        return self.p.vector_width if self.rank and self.rank - 1 in map_dims(m) else 1

    def build(self) -> kernel.FuncOp:
        kb, p = self.kb, self.p
        with kb.build():
            partners = set(self.paired.values())
            for i, m in self.reads:
                if (i, m) in partners:
                    continue
                arg = self.fusion.inputs[i]
                el = fu.element_type(arg.type)
                array = kernel.AllocOp(
                    kernel.ArrayType(p.unroll * self.width(m), el, kernel.MemorySpace.LOCAL)
                ).result
                array.name_hint = f"{kb.inputs[i].name_hint}_buf"
                self.arrays[i, m] = array
            for first, second in self.paired.items():
                self.arrays[second] = self.arrays[first]
            if p.vector_width > 1:
                for o, value in enumerate(self.fusion.output_op.values):
                    el = fu.element_type(value.type)
                    array = kernel.AllocOp(
                        kernel.ArrayType(p.vector_width, el, kernel.MemorySpace.LOCAL)
                    ).result
                    array.name_hint = f"{kb.outputs[o].name_hint}_buf"
                    self.out_arrays.append(array)
            with self.each_vector() as k:
                point = _Point(kb, p, self.sizes, k)
                with kb.if_(point.valid):
                    self.load(point, k)
            with self.each_vector() as k:
                point = _Point(kb, p, self.sizes, k)
                with kb.if_(point.valid):
                    self.compute_and_store(point, k)
        return kb.func

    def each_vector(self):
        """A loop over the thread's `unroll` vectors (none when there is one)."""
        return self.kb.unrolled(self.p.unroll, "k")

    def offset(
        self,
        point: _Point,
        tensor: SSAValue,
        m: DimMap,
        dense: bool,
        static: Sequence[int],
        taken: Mapping[Indexed, Index] | None = None,
    ) -> Index:
        """The element offset of `point` in `tensor`, accessed with map `m` (at the take
        indices `taken`); `dense`: the tensor is laid out as the space (`dense_reads`,
        `dense_outputs`)."""
        kb = self.kb
        if dense and _indexed_as_space(m, self.ref_map):
            # the flat index, less each shift times the space's stride along it
            shift: Index = 0
            for d, e in enumerate(m):
                if isinstance(e, Shifted):
                    stride: Index = 1
                    for size in self.sizes[d + 1 :]:
                        stride = kb.mul(stride, size)
                    shift = kb.add(shift, kb.mul(e.offset, stride))
            return (
                point.flat
                if shift == 0
                else named(kb.add(point.flat, kb.mul(shift, -1)), f"{tensor.name_hint}_off")
            )
        lowest = min(map_dims(m), default=0)
        offset = kb.access_offset(tensor, m, static, lambda x: point.index(x, lowest), taken=taken)
        return named(offset, f"{tensor.name_hint}_off")

    def _paired_reads(self) -> dict[tuple[int, DimMap], tuple[int, DimMap]]:
        """Shifted reads that one `kernel.select_load` loads, first to second: two reads of one
        element type and vector width, each shifted along the same iteration dim only, at
        disjoint intervals of it (the operands of a cat, such as RoPE's two halves). Where one
        holds the point the other does not, so one load at the selected place fills the array
        they then share; two predicated loads would each issue an instruction."""

        def interval(m: DimMap) -> tuple[int, int, int] | None:
            shifts = [e for e in m if isinstance(e, Shifted)]
            if len(shifts) != 1 or indexed(m):
                return None
            e = shifts[0]
            return None if e.dim is None else (e.dim, e.offset, e.offset + e.extent)

        def key(read: tuple[int, DimMap]) -> tuple[Attribute, int]:
            i, m = read
            return fu.element_type(self.fusion.inputs[i].type), self.width(m)

        paired: dict[tuple[int, DimMap], tuple[int, DimMap]] = {}
        reads = [read for read, _ in self.ordered_reads]
        for n, first in enumerate(reads):
            a = interval(first[1])
            if a is None or first in paired or first in paired.values():
                continue
            for second in reads[n + 1 :]:
                b = interval(second[1])
                if (
                    b is not None
                    and second not in paired.values()
                    and b[0] == a[0]
                    and (a[2] <= b[1] or b[2] <= a[1])
                    and key(first) == key(second)
                ):
                    paired[first] = second
                    break
        return paired

    def _covers(self, first: DimMap, second: DimMap) -> bool:
        """Whether two paired reads' intervals cover their dim (of static extent)."""
        (a,) = (e for e in first if isinstance(e, Shifted))
        (b,) = (e for e in second if isinstance(e, Shifted))
        assert a.dim is not None
        extent = self.sizes.static[a.dim]
        if extent == DYNAMIC_INDEX:
            return False
        lo, hi = sorted([(a.offset, a.offset + a.extent), (b.offset, b.offset + b.extent)])
        return lo[0] <= 0 and lo[1] >= hi[0] and hi[1] >= extent

    def load(self, point: _Point, k: Index) -> None:
        """Loads the thread's vector `k` of each input. An input read by a resize op's operand
        is loaded where the point lies within it, and is 0 elsewhere (the op selects its
        fill there); two such reads at disjoint intervals load together into the array they
        share, which holds whichever is within, and 0 where neither is (`_paired_reads`). An
        input read by a take's operand is loaded last, at the index computed from the others
        (`taken_indices`)."""
        kb = self.kb
        firsts = {second: first for first, second in self.paired.items()}
        places: dict[tuple[int, DimMap], tuple[SSAValue, SSAValue, SSAValue | None]] = {}
        for (i, m), dense in self.ordered_reads:
            tensor, t = kb.inputs[i], cast(TensorType, self.fusion.inputs[i].type)
            taken = self.taken_indices(point, k, tensor, m)
            off = kb.value(self.offset(point, tensor, m, dense, t.get_shape(), taken))
            lowest = min(map_dims(m), default=0)
            within = kb.within(m, lambda x, lowest=lowest: point.index(x, lowest))
            if (i, m) in self.paired:  # loaded with its second
                places[i, m] = (tensor, off, within)
                continue
            w = self.width(m)
            first = firsts.get((i, m))
            either, select = within, None
            if first is not None:
                select = places[first]
                first_within = select[2]
                assert within is not None and first_within is not None
                covered = self._covers(first[1], m)
                either = None if covered else arith.OrIOp(first_within, within).result
            if either is not None:
                zero, at = constant(0, t.element_type), kb.mul(k, w)
                for e in range(w):
                    kernel.ArrayStoreOp(zero, self.arrays[i, m], kb.value(kb.add(at, e)))
            with kb.if_(either):
                vector = _vector(t.element_type, w)
                if select is None:
                    loaded = kernel.LoadOp(tensor, off, vector).result
                else:
                    first_tensor, first_off, first_within = select
                    assert first_within is not None
                    pair = ((first_tensor, first_off), (tensor, off))
                    loaded = kernel.SelectLoadOp(first_within, pair, vector).result
                kernel.ArrayStoreOp(loaded, self.arrays[i, m], kb.value(kb.mul(k, w)))

    def index_needs(self, e: Indexed) -> Needs:
        """What a take's index is computed from (once per `Indexed` entry)."""
        if e not in self._index_needs:
            self._index_needs[e] = expand(body_ops(self.fusion), {e.index: [e.index_map]})
        return self._index_needs[e]

    def take_depth(self, m: DimMap) -> int:
        """0 for a read with map `m` at no take's index, else 1 + the deepest read its indices
        are computed from: loads in this order find their indices loaded."""
        depth = 0
        for e in m:
            if isinstance(e, Indexed):
                needs = self.index_needs(e)
                reads = [m for arg in self.fusion.inputs for m in needs.get(arg, [])]
                depth = max(depth, 1 + max(map(self.take_depth, reads), default=0))
        return depth

    def taken_indices(
        self, point: _Point, k: Index, tensor: SSAValue, m: DimMap
    ) -> dict[Indexed, Index]:
        """The clamped index of each `Indexed` dim of `tensor`, read with map `m`, at vector
        `k`: its index value computed from the loaded reads (the same along the vector, or the
        vector is one element: `_vector_width`)."""
        taken: dict[Indexed, Index] = {}
        for d, e in enumerate(m):
            if isinstance(e, Indexed):
                ops, needs = body_ops(self.fusion), self.index_needs(e)
                value = self.compute_values(ops, needs, point, k, 0, [(e.index, e.index_map)])[0]
                taken[e] = self.kb.taken_index(tensor, d, value)
        return taken

    def compute_values(
        self,
        ops: Sequence[Operation],
        needs: Needs,
        point: _Point,
        k: Index,
        j: Index,
        wanted: Sequence[tuple[SSAValue, DimMap]],
    ) -> list[SSAValue]:
        """The scalar code of `ops` under `needs` for element `j` of vector `k`, from the
        loaded reads; the `wanted` values (value, map)."""
        kb = self.kb
        position = {arg: i for i, arg in enumerate(self.fusion.inputs)}
        inner = self.rank - 1

        def index(x: int) -> Index:
            """The element's index along iteration dim x (for resize ops)."""
            return kb.add(point.index(x, 0), j) if x == inner else point.index(x, 0)

        def read(value: SSAValue, m: DimMap) -> SSAValue:
            i = position[value]
            if not isinstance(value.type, TensorType):
                return kb.inputs[i]
            w = self.width(m)
            index = kb.add(kb.mul(k, w), j) if w > 1 else k
            return kernel.ArrayLoadOp(self.arrays[i, m], kb.value(index)).result

        width = self.p.vector_width
        where = ElementPosition(
            kb,
            self.rank,
            index,
            lambda x: point.sizes[x],
            lambda: kb.add(point.flat, j),
            (lambda: (point.flat, j, width)) if width > 1 else None,
        )
        env = compute_element(ops, needs, read, position=where)
        return [env[v, m] if (v, m) in env else read(v, m) for v, m in wanted]

    def compute(self, point: _Point, k: Index, j: Index) -> list[SSAValue]:
        """The scalar code of the fusion for element `j` of vector `k`; the outputs' values."""
        outputs = zip(self.fusion.output_op.values, self.space.output_maps, strict=True)
        return self.compute_values(
            body_ops(self.fusion), self.space.needs, point, k, j, list(outputs)
        )

    def compute_and_store(self, point: _Point, k: Index) -> None:
        kb, p = self.kb, self.p
        for x in self.resized_dims:  # before the loop: stores use these indices too
            point.index(x, 0)
        for m in self.random_maps:  # (what `lower_random` reads)
            if drawn_in_its_own_space(m, self.rank):
                _ = point.flat
            else:
                for x in map_dims(m):
                    point.index(x, 0)
        if p.vector_width > 1:
            with kb.loop(0, p.vector_width, unroll=True, name="j") as j:
                for array, value in zip(self.out_arrays, self.compute(point, k, j), strict=True):
                    kernel.ArrayStoreOp(value, array, j)
            values: list[SSAValue] = []
        else:
            values = self.compute(point, k, 0)
        # Offsets and predicates first, in this block: indices must dominate every store.
        plans: list[tuple[SSAValue | None, SSAValue]] = []
        for o, m in enumerate(self.space.output_maps):
            t = cast(TensorType, self.fusion.output_op.values[o].type)
            missing = [d for d in map_dims(self.ref_map) if d not in map_dims(m)]
            lowest = min([*missing, *map_dims(m)], default=0)
            only_first = [kb.cmp("eq", point.index(d, lowest), 0) for d in missing]
            off = self.offset(point, kb.outputs[o], m, p.dense_outputs[o], t.get_shape())
            plans.append((kb.all_of(only_first), kb.value(off)))
        for o, (condition, off) in enumerate(plans):
            tensor = kb.outputs[o]
            with kb.if_(condition):
                if p.vector_width == 1:
                    kernel.StoreOp(values[o], tensor, off)
                else:
                    el = fu.element_type(self.fusion.output_op.values[o].type)
                    w = self.width(self.space.output_maps[o])
                    vector = kernel.ArrayLoadOp(
                        self.out_arrays[o], kb.value(0), _vector(el, w)
                    ).result
                    kernel.StoreOp(vector, tensor, off)


def _vector(element: Attribute, width: int) -> Attribute:
    return VectorType(element, [width]) if width > 1 else element
