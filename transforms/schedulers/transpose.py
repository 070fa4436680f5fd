"""The transpose scheduler: pointwise fusions where an input's fastest dim is not the output's,
staged through shared memory so that both the reads and the writes are coalesced.

The pointwise kernel walks the output's innermost dim; an input whose elements are adjacent along
another dim (a transposed view, `x.t()`, a permute that moves the last dim) is then read with a
stride, 32 transactions per warp access, at a third of copy bandwidth or less. Here a block takes
a square tile (`TILE` elements a side, twice that for 2-byte inputs) of the two dims involved,
the output's innermost `I` and the input's fastest `T` (a grid of tiles along I, tiles along T,
and the other dims):

1. each *staged* input (its fastest dim is T) is read along T, a warp reading 32 adjacent
   elements, into a shared-memory tile laid out `[i][t]` with rows padded to an odd number of
   4-byte words (the column reads of step 2 then fall on distinct banks), or, moving pairs, to an
   odd number of 2-byte elements (`tile + 1`);
2. after a barrier, each thread computes its elements along I, reading the staged inputs from
   the tile's columns and every other input directly (adjacent along I, or broadcast), and
   stores the outputs along I.

Threads are `(tile, rows)`, each handling `tile / rows` elements per step; with pairs (2-byte
elements, even extents and strides: one 4-byte load along T, a 2-element store along I) they are
`(tile / 2, PAIR_ROWS)`. The staged inputs share
one T: the fastest dim of the largest input that differs from the output's; others read in
place. Outputs must span the whole space (the pointwise kernel takes the rest), and both tiled
dims at least `TILE` long (a shorter one leaves most of a tile idle: the pointwise kernel reads
it); the other dims go to `blockIdx.z` (at most 65535 points).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects.builtin import TensorType, VectorType
from xdsl.ir import SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.base import (
    MAX_GRID,
    AnalyzedScheduler,
    LaunchConfig,
    Params,
    check_grid,
)
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.schedulers.iteration_space import DimMap, body_ops, iteration_space
from fuser.transforms.schedulers.kernel_builder import (
    Index,
    KernelBuilder,
    compute_element,
    named,
)
from fuser.transforms.schedulers.pointwise import INT32_MAX, span
from fuser.transforms.schedulers.pointwise import analyze as analyze_pointwise

TILE = 32
"""The tile's side: 32 elements of 4 bytes or more, twice as many of 2 bytes (a warp then
still reads 64 contiguous bytes, and each thread keeps twice the loads in flight)."""
ROWS = {TILE: 8, 2 * TILE: 4}
"""Threads along y per tile side: each thread moves tile / rows elements of the tile per step,
16 bytes of loads in flight per thread either way (256 threads a block)."""
PAIR_ROWS = 8
"""Threads along y where threads move pairs: (32, 8) threads, 8 pairs each per step."""


@dataclass(frozen=True)
class TransposeParams(Params):
    """The transpose template's parameters: `block` is (tile, rows, 1)."""

    tile: int
    """The side of a block's tile."""
    width: int
    """Adjacent elements a thread moves at once (2: 2-byte elements in pairs, 4-byte loads of
    the staged inputs along T and 2-element stores of the outputs along I; else 1)."""
    reference: int
    """The output whose shape is the iteration space."""
    tiled: int
    """T: the space dim along which the staged inputs are contiguous."""
    staged: tuple[int, ...]
    """The inputs read through the shared-memory tile."""
    index_bits: int


def _plan(fusion: fu.FusionOp, info: FusionInfo) -> TransposeParams | str:
    """The parameters for `info`, or why the template does not take the fusion (once per
    (fusion, info) under an open analysis cache)."""
    return memoized("transpose", (fusion, info), lambda: _make_plan(fusion, info))


def _make_plan(fusion: fu.FusionOp, info: FusionInfo) -> TransposeParams | str:
    analysis = analyze_pointwise(fusion, info)
    if isinstance(analysis, str):
        return "not a pointwise fusion (the pointwise scheduler says why)"
    if any(isinstance(op, fu.ResizeOp) for op in body_ops(fusion)):
        return "a resize op (pad, cat) selects per element: the pointwise kernel computes it"
    if any(isinstance(op, fu.INDEXING_OPS) for op in body_ops(fusion)):
        return "a take loads at an index: the pointwise kernel computes it"
    if any(isinstance(op, fu.RandomOp) for op in body_ops(fusion)):
        return "a random op draws by its element's index: the pointwise kernel computes it"
    extents = analysis.extents
    rank = len(extents)
    if rank < 2:
        return "the iteration space has fewer than two dims: nothing to transpose"
    if any(shape != extents for shape in analysis.output_shapes):
        return "an output does not span the iteration space: the pointwise kernel writes it"
    inner = rank - 1
    # (bytes, input, T) of each input read along I with a stride, whose fastest dim is T
    transposed: list[tuple[int, int, int]] = []
    reads = analysis.space.reads(fusion)
    for i, m in reads:
        meta = cast(TensorMeta, info.inputs[i])
        fastest = _fastest(meta)
        if inner not in m or fastest is None or m[fastest] in (None, inner):
            continue
        if meta.shape[m.index(inner)] == 1:
            continue  # broadcast along I at run time
        el = kernel.byte_size(fu.element_type(fusion.inputs[i].type))
        transposed.append((math.prod(meta.shape) * el, i, cast(int, m[fastest])))
    if not transposed:
        return (
            "no input's fastest dim differs from the output's: the pointwise kernel reads "
            "every input along it"
        )
    tiled = max(transposed)[2]
    if extents[inner] < TILE or extents[tiled] < TILE:
        return (
            f"the transposed dims are {extents[tiled]} and {extents[inner]} long: a "
            f"{TILE}x{TILE} tile would stay mostly idle"
        )
    widest = max(kernel.byte_size(fu.element_type(a.type)) for a in fusion.inputs)
    tile = 2 * TILE if widest <= 2 else TILE
    others = math.prod(e for d, e in enumerate(extents) if d not in (inner, tiled))
    if -(-extents[tiled] // tile) > MAX_GRID[1] or others > MAX_GRID[2]:
        return f"the space {list(extents)} needs more tiles than CUDA's grid y and z hold"
    maps: dict[int, int] = {}
    for i, _ in reads:
        maps[i] = maps.get(i, 0) + 1
    # inputs read under one map only: the tile holds one value per point
    staged = tuple(sorted(i for _, i, t in transposed if t == tiled and maps[i] == 1))
    if not staged:
        return "the transposed input is read under two maps: the pointwise kernel reads it"
    spans = [span(m) for m in info.inputs if m is not None]
    index_bits = 64 if max([math.prod(extents), *spans]) + tile * tile > INT32_MAX else 32
    width = 2 if tile > TILE and _pairs(fusion, info, staged, extents[tiled], extents[inner]) else 1
    return TransposeParams(
        block=(tile // width, PAIR_ROWS if width == 2 else ROWS[tile], 1),
        tile=tile,
        width=width,
        reference=analysis.reference,
        tiled=tiled,
        staged=staged,
        index_bits=index_bits,
    )


def _pairs(
    fusion: fu.FusionOp, info: FusionInfo, staged: Sequence[int], extent_t: int, extent_i: int
) -> bool:
    """Whether threads can move pairs: both tiled extents even, and each staged input of
    2-byte elements, 4-byte aligned, with even strides but along T (a pair is one 4-byte
    load; the outputs are contiguous, so an even offset along I is aligned too)."""
    if extent_t % 2 or extent_i % 2:
        return False
    for i in staged:
        meta = cast(TensorMeta, info.inputs[i])
        el = kernel.byte_size(fu.element_type(fusion.inputs[i].type))
        strides = [s for e, s in zip(meta.shape, meta.strides, strict=True) if e > 1 and s != 1]
        if el != 2 or meta.alignment % 4 or any(s % 2 for s in strides):
            return False
    return True


def _fastest(meta: TensorMeta) -> int | None:
    """The input dim of stride 1 among those longer than 1, or None."""
    unit = [d for d, e in enumerate(meta.shape) if e > 1 and meta.strides[d] == 1]
    return unit[-1] if unit else None


class TransposeScheduler(AnalyzedScheduler[TransposeParams]):
    """Pointwise fusions reading an input whose fastest dim is not the output's."""

    name = "transpose"

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> TransposeParams | str:
        """The parameters themselves (the tiled dim, the staged inputs, the index width: the
        heuristics key too), or the refusal's reason: a refusal is the same for every shape
        its reason names (a reason that depends on extents names them)."""
        return _plan(fusion, info)

    def refusal_key(self, fusion: fu.FusionOp, info: FusionInfo, reason: str) -> Hashable:
        return ("refused", reason)

    def params_of(
        self, fusion: fu.FusionOp, info: FusionInfo, analysis: TransposeParams
    ) -> TransposeParams:
        return analysis

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(TransposeParams, params)
        analysis = analyze_pointwise(fusion, info)
        if isinstance(analysis, str):
            raise ValueError(analysis)
        extents = analysis.extents
        inner = len(extents) - 1
        others = math.prod(e for d, e in enumerate(extents) if d not in (inner, p.tiled))
        grid = (-(-extents[inner] // p.tile), -(-extents[p.tiled] // p.tile), max(1, others))
        check_grid(fusion, self.name, grid)
        return LaunchConfig(grid, p.block)

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        return _TransposeKernel(fusion, cast(TransposeParams, params), kernel_name).build()


class _TransposeKernel:
    """The kernel of one fusion for one `TransposeParams` (see the module docstring)."""

    def __init__(self, fusion: fu.FusionOp, p: TransposeParams, name: str) -> None:
        self.fusion, self.p = fusion, p
        self.space = iteration_space(fusion, p.reference)
        index = fu.I64 if p.index_bits == 64 else fu.I32
        self.kb = KernelBuilder(fusion, name, index, p.block[0] * p.block[1])
        self.rank = self.space.rank
        self.inner = self.rank - 1

    def size(self, d: int) -> SSAValue:
        return self.kb.size(self.kb.outputs[self.p.reference], d)

    def offset(self, tensor: SSAValue, m: DimMap, static: Sequence[int], at: list[Index]) -> Index:
        """The element offset in `tensor` (accessed with map `m`) of the space point `at`; an
        input's dynamic dims may be broadcast at run time, an output's are not."""
        kb = self.kb
        offset = kb.access_offset(tensor, m, static, at.__getitem__, tensor not in kb.outputs)
        return named(offset, f"{tensor.name_hint}_off")

    def build(self) -> kernel.FuncOp:
        kb, p, fusion = self.kb, self.p, self.fusion
        x, y, z = kernel.Dimension.X, kernel.Dimension.Y, kernel.Dimension.Z
        with kb.build():
            tx = kb.geometry(kernel.ThreadIdOp, x)
            ty = kb.geometry(kernel.ThreadIdOp, y)
            tile = p.tile
            i0 = named(kb.mul(kb.geometry(kernel.BlockIdOp, x), tile), "i_first")
            t0 = named(kb.mul(kb.geometry(kernel.BlockIdOp, y), tile), "t_first")
            others = [d for d in range(self.rank) if d not in (self.inner, p.tiled)]
            rest = kb.delinearize(kb.geometry(kernel.BlockIdOp, z), [self.size(d) for d in others])
            base: list[Index] = [0] * self.rank
            for d, index in zip(others, rest, strict=True):
                base[d] = named(index, f"i{d}")
            tiles: dict[int, tuple[SSAValue, int]] = {}  # input -> (tile, row pitch)
            reads = self.space.reads(fusion)
            staged = [(i, m) for i, m in reads if i in p.staged]
            for i, _ in staged:
                el = fu.element_type(fusion.inputs[i].type)
                # rows of an odd number of words; of pairs (read two rows at a time): of an odd
                # number of elements
                pitch = tile + (1 if p.width == 2 else max(1, 4 // kernel.byte_size(el)))
                array = kernel.AllocOp(
                    kernel.ArrayType(tile * pitch, el, kernel.MemorySpace.SHARED)
                ).result
                array.name_hint = f"{kb.inputs[i].name_hint}_tile"
                tiles[i] = (array, pitch)
            # 1. the staged inputs, along T, into the tiles ([i][t], padded rows)
            rows, w = p.block[1], p.width
            lane = named(kb.mul(tx, w), "lane")  # the thread's first element along T, then I
            with kb.loop(0, tile // rows, unroll=True, name="k") as k:
                row = kb.add(ty, kb.mul(k, rows))
                at = self.point(base, t=kb.add(t0, lane), i=kb.add(i0, row))
                with kb.if_(self.valid(at)):
                    for i, m in staged:
                        t = cast(TensorType, fusion.inputs[i].type)
                        off = self.offset(kb.inputs[i], m, t.get_shape(), at)
                        array, pitch = tiles[i]
                        slot = kb.add(kb.mul(row, pitch), lane)
                        if w == 1:
                            loaded = kernel.LoadOp(kb.inputs[i], kb.value(off)).result
                            kernel.ArrayStoreOp(loaded, array, kb.value(slot))
                            continue
                        # one 4-byte load, two 2-byte stores (the tile's odd pitch)
                        pair = kernel.AllocOp(
                            kernel.ArrayType(w, t.element_type, kernel.MemorySpace.LOCAL)
                        ).result
                        vector = VectorType(t.element_type, [w])
                        loaded = kernel.LoadOp(kb.inputs[i], kb.value(off), vector).result
                        kernel.ArrayStoreOp(loaded, pair, kb.value(0))
                        for j in range(w):
                            element = kernel.ArrayLoadOp(pair, kb.value(j)).result
                            kernel.ArrayStoreOp(element, array, kb.value(kb.add(slot, j)))
            kernel.BarrierOp()
            # 2. each element along I: the staged inputs from the tiles' columns
            with kb.loop(0, tile // rows, unroll=True, name="k") as k:
                column = kb.add(ty, kb.mul(k, rows))
                at = self.point(base, t=kb.add(t0, column), i=kb.add(i0, lane))
                with kb.if_(self.valid(at)):
                    self.compute_and_store(at, tiles, lane, column)
        return kb.func

    def point(self, base: list[Index], t: Index, i: Index) -> list[Index]:
        at = list(base)
        at[self.p.tiled], at[self.inner] = named(t, "t"), named(i, "i")
        return at

    def valid(self, at: list[Index]) -> SSAValue | None:
        kb = self.kb
        d_t, d_i = self.p.tiled, self.inner
        return kb.all_of(
            [kb.cmp("slt", at[d_t], self.size(d_t)), kb.cmp("slt", at[d_i], self.size(d_i))]
        )

    def compute_and_store(
        self, at: list[Index], tiles: dict[int, tuple[SSAValue, int]], row: Index, column: Index
    ) -> None:
        """The fusion at the `width` points from `at` along I and their stores (a vector of
        `width` per output); a staged input's value at the j-th is element (row + j, column)
        of its tile."""
        kb, fusion, w = self.kb, self.fusion, self.p.width
        position = {arg: i for i, arg in enumerate(fusion.inputs)}
        per_point: list[list[SSAValue]] = []
        for j in range(w):
            here = list(at)
            here[self.inner] = kb.add(at[self.inner], j)

            def read(value: SSAValue, m: DimMap, j: int = j, here: list[Index] = here) -> SSAValue:
                i = position[value]
                if not isinstance(value.type, TensorType):
                    return kb.inputs[i]
                if i in tiles:
                    array, pitch = tiles[i]
                    slot = kb.add(kb.mul(kb.add(row, j), pitch), column)
                    return kernel.ArrayLoadOp(array, kb.value(slot)).result
                shape = cast(TensorType, value.type).get_shape()
                off = self.offset(kb.inputs[i], m, shape, here)
                return kernel.LoadOp(kb.inputs[i], kb.value(off)).result

            env = compute_element(body_ops(fusion), self.space.needs, read)
            outputs = zip(fusion.output_op.values, self.space.output_maps, strict=True)
            per_point.append([env[v, m] if (v, m) in env else read(v, m) for v, m in outputs])
        for o, m in enumerate(self.space.output_maps):
            t = cast(TensorType, fusion.output_op.values[o].type)
            off = kb.value(self.offset(kb.outputs[o], m, t.get_shape(), at))
            if w == 1:
                kernel.StoreOp(per_point[0][o], kb.outputs[o], off)
                continue
            array = kernel.AllocOp(
                kernel.ArrayType(w, t.element_type, kernel.MemorySpace.LOCAL)
            ).result
            array.name_hint = f"{kb.outputs[o].name_hint}_buf"
            for j in range(w):
                kernel.ArrayStoreOp(per_point[j][o], array, kb.value(j))
            vector = kernel.ArrayLoadOp(array, kb.value(0), VectorType(t.element_type, [w]))
            kernel.StoreOp(vector.result, kb.outputs[o], off)
