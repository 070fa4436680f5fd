"""The matmul scheduler: one `fusion.matmul` (2-D or batched, plain or split-K partial) and a
pointwise epilogue on its result, as one tiled kernel.

**What it takes.** Exactly one `fusion.matmul` whose operands are fusion inputs (of any strides),
pointwise ops after it (a bias through `broadcast_in_dim` of another input, an activation, casts:
the epilogue), and outputs that all have the matmul's output shape. Anything else is rejected
with the reason: a second matmul, a reduction, a `segment_set`, an operand computed in the
fusion, an output of another shape.

**The kernel.** Each block computes one `BM x BN` tile of C for one value of the leading dims
(the splits of a partial, then the batch dims, flattened into `blockIdx.z`); `blockIdx.x` walks
the tiles in groups of `group_m` tile rows (consecutive blocks share A's rows and B's columns in
L2). The tile comes from `matmul_tiles.matmul_tile`, the same choice `split-k` counts with.

- `kernel.matmul_mainloop` accumulates the tile over `[k0, k1)` (all of K, or the partial's chunk
  `ceil(K / s)`) into a per-thread `local` array, through a C++ tile of the preamble that the
  op's `#kernel.matmul` config names. f16/bf16 operands run on the tensor cores with f32
  accumulators. On Hopper (`matmul_tiles.has_wgmma`) the tile is `fuser::mm::Wgmma`: a warpgroup
  per 64 rows issues `wgmma.mma_async` m64nNk16 on operands read straight from shared memory,
  where `cp.async` lays each k tile of 64 out as the 128-byte-swizzled atoms wgmma's descriptors
  describe (K-major or MN-major, whichever dim of the operand is contiguous). Why: the
  `mma.sync` loop below is bound by shared-memory bandwidth on an H100 (its `ldmatrix` reads
  plus the `cp.async` writes: with the MMAs removed, the split-K partials of [256, 65536] x
  [65536, 256] still took 35 us of 34; with the loads removed, 23), and wgmma reads each operand
  byte once per warpgroup instead of once per warp. Elsewhere the tile is `fuser::mm::Mma`:
  `mma.sync.m16n8k16`, operands staged in a `stages`-deep ring of swizzled shared-memory tiles
  by 16-byte `cp.async` copies (a chunk that crosses M, N or k1 is loaded element by element
  and zero-filled past them), and read by `ldmatrix` (`.trans` for an operand whose M or N dim
  is the contiguous one); an operand whose rows are not 16-byte aligned (odd leading stride,
  unaligned pointer, a split chunk that is not a multiple of 8) or that is contiguous in neither
  dim is loaded element by element into the same tiles instead (`*_elements`). f32/f64 operands
  run on the CUDA cores (`fuser::mm::Simt`: 16 x 16 threads, each a few rows by a few column
  pairs of the tile, double-buffered shared memory).

  What made the tensor-core loop fast (H100, bf16 4096^3 on the 128 x 256 x 64 tile: 314 -> 392
  TFLOP/s, 400 on 128 x 256 x 32 with 5 stages; the `mma.sync` ceiling measured 620): B's
  fragments are loaded in the register order `mma` takes them (each n8 half in two consecutive
  registers: without it ptxas added 77 moves per 64 mma), every `ldmatrix` address is a per-lane
  base plus a constant (the swizzle is the same for rows 16 apart), and a k tile inside K copies
  its chunks with precomputed byte counts.
- The epilogue is ordinary kernel IR: for each pair of accumulators, `kernel.matmul_frag` gives
  its row and column in the tile; inside M x N the accumulator is rounded to the matmul's result
  type (f16/bf16 for half operands; the partial's f32 is kept), the epilogue ops are lowered by
  `scalar_lowering` for each of the two elements (inputs read at their broadcast indices), and
  every output is stored, as one 2-element vector when N is even.

The launch is `grid = (tiles, 1, leading)`, `block = (threads, 1, 1)` and the tile's dynamic
shared memory. Index arithmetic is i32 unless an extent or offset needs i64; the C++ tile
addresses its operands in 64 bits.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType, VectorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.base import (
    ACCEPT,
    MAX_GRID,
    AnalyzedScheduler,
    LaunchConfig,
    Params,
    Verdict,
    call_shapes,
    check_grid,
    reject,
)
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.schedulers.iteration_space import (
    DimMap,
    Needs,
    expand,
    identity_map,
    unshifted,
)
from fuser.transforms.schedulers.kernel_builder import (
    Index,
    KernelBuilder,
    compute_element,
    named,
    op_text,
)
from fuser.transforms.schedulers.matmul_tiles import has_wgmma, matmul_tile
from fuser.transforms.schedulers.scalar_lowering import convert, is_pointwise

MMA_SHAPES: dict[tuple[int, int, int], tuple[tuple[int, int], int]] = {
    (128, 256, 64): ((2, 4), 4),
    (128, 256, 32): ((2, 4), 5),
    (256, 128, 64): ((4, 2), 3),
    (128, 128, 32): ((2, 2), 3),
    (128, 128, 64): ((2, 2), 3),
    (64, 64, 64): ((2, 2), 4),
    (64, 64, 32): ((2, 2), 4),
    (64, 128, 32): ((2, 2), 4),
}
"""Warps and pipeline stages of each tensor-core tile `matmul_tile` may give: warp tiles of
64 x 64 (32 x 32 for the 64 x 64 tiles, 32 x 64 for 64 x 128); for the 128 x 256 tile, warp
tiles of 32 x 64 ran 6-14% slower (more shared memory reads per mma). Stages as measured best
on an H100 (`benchmarks/matmul.py --sweep`); fewer where the device's shared memory per block
does not hold them (an A100's 163 KiB takes 3 stages
of the 128 x 256 x 64 tile), down to 2."""
WGMMA_SHAPES: dict[tuple[int, int, int], tuple[tuple[int, int], int]] = {
    (128, 256, 64): ((8, 1), 4),
    (128, 128, 64): ((8, 1), 3),
    (64, 128, 64): ((4, 1), 4),
    (64, 64, 64): ((4, 1), 4),
}
"""Warps (a warpgroup per 64 rows) and pipeline stages of each wgmma tile `matmul_tile` may
give on Hopper (at least 3: the tile multiplied, the one before it still in wgmma, one loading):
4 stages of 128 x 256 (192 KiB, one CTA per SM: bf16 4096^3 at 604 TFLOP/s against 489 with 3,
benchmarks/RESULTS.md run 15), 3 of 128 x 128 (96 KiB, two CTAs per SM; 4 ran no faster), 4 of
the 64-row tiles (two or three CTAs per SM; 5 ran no faster), fewer where the device's shared
memory per block does not hold them."""
GROUP_M = 8
"""Tile rows per group of the block order (`blockIdx.x`)."""
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class MatmulParams(Params):
    """The matmul template's parameters (`block` is `(threads, 1, 1)`)."""

    engine: str
    """`mma` (tensor cores) or `simt`."""
    tile: tuple[int, int, int]
    """BM, BN, BK."""
    warps: tuple[int, int]
    stages: int
    load_a: str
    """How A reaches shared memory: a `kernel.MatmulLoad` value."""
    load_b: str
    group_m: int
    pair_stores: bool
    """N is even: outputs are stored two elements at a time."""
    index_bits: int
    shared_bytes: int


@dataclass(frozen=True)
class _Structure:
    """The parts of a fusion the template works with (from its types alone)."""

    matmul: fu.MatmulOp
    lhs: int
    """Input position of A."""
    rhs: int
    lhs_transposed: bool
    """A is its input with the last two dims swapped (a `fusion.permute` read as
    `kernel.transposed`)."""
    rhs_transposed: bool
    epilogue: tuple[Operation, ...]
    needs: Needs
    """The maps under which each value is needed, outputs at the identity map."""
    output_maps: tuple[DimMap, ...]

    @property
    def rank(self) -> int:
        """The rank of the matmul's result (leading dims, M, N)."""
        return self.matmul.result.type.get_num_dims()

    @property
    def element_type(self) -> Attribute:
        return fu.element_type(self.matmul.lhs.type)


def _label(op: Operation) -> str:
    return f"'{op.name}'" + (f" ({op_text(op).split(' ', 1)[1]})" if op.results else "")


def _structure(fusion: fu.FusionOp) -> _Structure | str:
    """The matmul and its epilogue, or why this template cannot take the fusion."""
    body = [op for op in fusion.body.block.ops if not isinstance(op, fu.OutputOp)]
    matmuls = [op for op in body if isinstance(op, fu.MatmulOp)]
    if not matmuls:
        return "no 'fusion.matmul'"
    if len(matmuls) > 1:
        return f"{len(matmuls)} matmuls ({_label(matmuls[1])} is the second): one kernel takes one"
    matmul = matmuls[0]
    epilogue: list[Operation] = []
    for op in body:
        if op is matmul or isinstance(op, fu.DimOp):
            continue
        if isinstance(op, fu.SegmentSetOp):
            return f"{_label(op)} marks a kernel boundary"
        if not is_pointwise(op):
            return (
                f"{_label(op)} is not a pointwise op: only a pointwise epilogue can follow a matmul"
            )
        epilogue.append(op)
    positions: list[tuple[int, bool]] = []
    for name, operand in (("lhs", matmul.lhs), ("rhs", matmul.rhs)):
        read = _operand_input(fusion, operand)
        if read is None:
            owner = operand.owner
            what = _label(owner) if isinstance(owner, Operation) else "a value"
            return (
                f"{_label(matmul)} {name} is computed in the fusion (by {what}): the operands of "
                "a matmul must be fusion inputs, or their transposes"
            )
        positions.append(read)
    outputs = list(fusion.output_op.values)
    if not outputs:
        return "the fusion has no outputs"
    c_type = matmul.result.type
    roots: dict[SSAValue, list[DimMap]] = {}
    maps: list[DimMap] = []
    for i, value in enumerate(outputs):
        t = value.type
        if (
            not isinstance(t, TensorType)
            or t.get_num_dims() != c_type.get_num_dims()
            or not fu.shapes_compatible(t.get_shape(), c_type.get_shape())
        ):
            return (
                f"output #{i} has type {t}; every output must have the matmul's shape "
                f"{fu.format_shape(c_type.get_shape())}"
            )
        m = identity_map(t)
        roots.setdefault(value, []).append(m)
        maps.append(m)
    needs = expand(epilogue, roots)
    c_map = identity_map(c_type)
    if any(m != c_map for m in needs.get(matmul.result, [])):
        return (
            f"the epilogue reads the result of {_label(matmul)} through a permute or squeeze: "
            "it must read each element of the result at its own position"
        )
    (lhs, lhs_t), (rhs, rhs_t) = positions
    return _Structure(matmul, lhs, rhs, lhs_t, rhs_t, tuple(epilogue), needs, tuple(maps))


def _operand_input(fusion: fu.FusionOp, operand: SSAValue) -> tuple[int, bool] | None:
    """The fusion input a matmul operand is, and whether as the permute that swaps its last
    two dims (`linear`'s `[N, K]` weight read as `[K, N]`); None for another computed operand."""
    transposed = False
    owner = operand.owner
    if isinstance(owner, fu.PermuteOp):
        rank = len(owner.source_dims)
        if owner.source_dims == (*range(rank - 2), rank - 1, rank - 2):
            operand, transposed = owner.input, True
    if isinstance(operand, BlockArgument) and operand.owner is fusion.body.block:
        return operand.index, transposed
    return None


def operand_meta(meta: TensorMeta, transposed: bool) -> TensorMeta:
    """The layout a matmul reads an operand input of layout `meta` in (its last two dims
    swapped where it reads the transpose)."""
    if not transposed:
        return meta
    swap = (*range(len(meta.shape) - 2), len(meta.shape) - 1, len(meta.shape) - 2)
    return replace(
        meta,
        shape=tuple(meta.shape[d] for d in swap),
        strides=tuple(meta.strides[d] for d in swap),
    )


@dataclass(frozen=True)
class _Problem:
    """A fusion's structure with the shapes of one call."""

    structure: _Structure
    shape: tuple[int, ...]
    """The matmul's result shape: leading dims (splits, batch), M, N."""
    k: int

    @property
    def m(self) -> int:
        return self.shape[-2]

    @property
    def n(self) -> int:
        return self.shape[-1]

    @property
    def leading(self) -> int:
        return math.prod(self.shape[:-2])


def _structure_of(fusion: fu.FusionOp) -> _Structure | str:
    """`_structure(fusion)`, once per fusion under an open analysis cache."""
    return memoized("matmul_structure", fusion, lambda: _structure(fusion))


def _analyze(fusion: fu.FusionOp, info: FusionInfo) -> _Problem | str:
    """Once per (fusion, info) under an open analysis cache."""
    return memoized("matmul", (fusion, info), lambda: _analysis(fusion, info))


def _analysis(fusion: fu.FusionOp, info: FusionInfo) -> _Problem | str:
    structure = _structure_of(fusion)
    if isinstance(structure, str):
        return structure
    env = call_shapes(fusion, info)
    if isinstance(env, str):
        return env
    shape = cast(tuple[int, ...], env[structure.matmul.result])
    for i, value in enumerate(fusion.output_op.values):
        got = cast(tuple[int, ...], env[value])  # outputs are tensors
        if got != shape:
            return (
                f"output #{i} has shape {list(got)}, the matmul's result "
                f"{list(shape)}: every output must have the matmul's shape"
            )
    for i, arg in enumerate(fusion.inputs):
        meta = info.inputs[i]
        if meta is None:
            continue
        for m in structure.needs.get(arg, []):
            for d, x in enumerate(unshifted(m)):
                if x is not None and meta.shape[d] not in (1, shape[x]):
                    return (
                        f"input #{i} has extent {meta.shape[d]} in dim {d}, which cannot be "
                        f"indexed by dim {x} (extent {shape[x]}) of the output {list(shape)}"
                    )
    k = operand_meta(cast(TensorMeta, info.inputs[structure.lhs]), structure.lhs_transposed).shape[
        -1
    ]
    problem = _Problem(structure, shape, k)
    if max(problem.m, problem.n, k) > INT32_MAX:
        return f"extents {problem.m} x {k} x {problem.n} exceed 32 bits"
    if problem.leading > MAX_GRID[2]:
        return (
            f"{problem.leading} leading (split and batch) indices: more than the {MAX_GRID[2]} "
            "blocks of gridDim.z"
        )
    return problem


def _span(meta: TensorMeta) -> int:
    if 0 in meta.shape:
        return 0
    return 1 + sum((e - 1) * abs(s) for e, s in zip(meta.shape, meta.strides, strict=True))


def choose_load(
    meta: TensorMeta,
    mn_axis: int,
    k_axis: int,
    element_bytes: int,
    split_chunk: int | None,
    engine: kernel.MatmulEngine,
) -> kernel.MatmulLoad:
    """How an operand (A: `mn_axis` -2, `k_axis` -1; B: the reverse) reaches shared memory.

    Async 16-byte copies along its contiguous dim (K preferred: stride 1, or extent 1) when every
    row of that dim starts 16-byte aligned: the pointer, the other matrix stride and the batch
    strides (and, along K, a split chunk's start) in multiples of 16 bytes; element loads
    otherwise, the smaller stride fastest. Strides of extent-1 dims do not matter; a broadcast
    dim (stride 0, extent > 1) is not contiguous. The SIMT tile always loads elements.
    """
    shape, strides = meta.shape, meta.strides
    rank = len(shape)
    vec = 16 // element_bytes

    def stride(axis: int) -> int:
        return 0 if shape[axis] <= 1 else strides[axis]

    def contiguous(axis: int) -> bool:
        return shape[axis] <= 1 or strides[axis] == 1

    s_mn, s_k = stride(mn_axis % rank), stride(k_axis % rank)
    k_fast = abs(s_k) <= abs(s_mn)
    if engine == kernel.MatmulEngine.SIMT:
        return kernel.MatmulLoad.K_ELEMENTS if k_fast else kernel.MatmulLoad.MN_ELEMENTS
    aligned = meta.alignment >= 16 and all(stride(d) % vec == 0 for d in range(rank - 2))
    k_extent = shape[k_axis % rank]
    chunk_ok = split_chunk is None or split_chunk % vec == 0 or split_chunk >= k_extent
    if aligned and contiguous(k_axis % rank) and s_mn % vec == 0 and chunk_ok:
        return kernel.MatmulLoad.K_ASYNC
    if aligned and contiguous(mn_axis % rank) and s_k % vec == 0:
        return kernel.MatmulLoad.MN_ASYNC
    return kernel.MatmulLoad.K_ELEMENTS if k_fast else kernel.MatmulLoad.MN_ELEMENTS


def _engine(element_type: Attribute, arch: str) -> kernel.MatmulEngine:
    if element_type not in (fu.F16, fu.BF16):
        return kernel.MatmulEngine.SIMT
    return kernel.MatmulEngine.WGMMA if has_wgmma(arch) else kernel.MatmulEngine.MMA


def config_of(p: MatmulParams, element_type: Attribute) -> kernel.MatmulConfigAttr:
    """The `#kernel.matmul` config of a kernel built from `p`."""
    return kernel.MatmulConfigAttr(
        kernel.MatmulEngine(p.engine),
        element_type,
        p.tile,
        p.warps,
        p.stages,
        kernel.MatmulLoad(p.load_a),
        kernel.MatmulLoad(p.load_b),
    )


class MatmulScheduler(AnalyzedScheduler[_Problem]):
    """One matmul with a pointwise epilogue, as one tiled kernel (see the module docstring)."""

    name = "matmul"

    # The heuristics key is the parameters themselves (tile, stages, loads, index width: a
    # few numbers that follow from M, N, K and the operands' layouts with little work); a
    # fusion that is not one matmul is refused alike for every shape.

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> _Problem | str:
        return _analyze(fusion, info)

    def verdict_of(self, fusion: fu.FusionOp, info: FusionInfo, analysis: _Problem) -> Verdict:
        needed = config_of(self.params_of(fusion, info, analysis), analysis.structure.element_type)
        if needed.shared_bytes() > info.device.max_shared_memory_per_block:
            return reject(
                f"the tile needs {needed.shared_bytes()} bytes of shared memory, more than the "
                f"device's {info.device.max_shared_memory_per_block}"
            )
        return ACCEPT

    def refusal_key(self, fusion: fu.FusionOp, info: FusionInfo, reason: str) -> Hashable:
        structural = isinstance(_structure_of(fusion), str)
        return ("refused", reason if structural else info)

    def params_of(self, fusion: fu.FusionOp, info: FusionInfo, analysis: _Problem) -> MatmulParams:
        problem = analysis
        structure = problem.structure
        el = structure.element_type
        engine = _engine(el, info.device.arch)
        t = matmul_tile(problem.m, problem.n, problem.k, el, info.device.arch)
        tile = (t.m, t.n, t.k)
        if engine != kernel.MatmulEngine.SIMT:
            shapes = WGMMA_SHAPES if engine == kernel.MatmulEngine.WGMMA else MMA_SHAPES
            warps, stages = shapes[tile]
            stage_bytes = (tile[0] + tile[1]) * tile[2] * kernel.byte_size(el)
            limit = info.device.max_shared_memory_per_block
            fewest = 2
            if engine == kernel.MatmulEngine.WGMMA:
                limit -= 1024  # the tile aligns its shared memory to 1024 bytes
                fewest = 3  # a tile multiplied, one being read by wgmma, one loading
            stages = max(fewest, min(stages, limit // stage_bytes))
        else:
            warps, stages = kernel.SIMT_WARPS, 2
        splits = structure.matmul.split_count
        chunk = None if splits is None else -(-problem.k // splits)
        a_meta = operand_meta(
            cast(TensorMeta, info.inputs[structure.lhs]), structure.lhs_transposed
        )
        b_meta = operand_meta(
            cast(TensorMeta, info.inputs[structure.rhs]), structure.rhs_transposed
        )
        el_bytes = kernel.byte_size(el)
        load_a = choose_load(a_meta, -2, -1, el_bytes, chunk, engine)
        load_b = choose_load(b_meta, -1, -2, el_bytes, chunk, engine)
        numel = math.prod(problem.shape)
        spans = [_span(m) for m in info.inputs if m is not None]
        # the epilogue's offsets: outputs (contiguous) and inputs, plus a tile of slack
        reach = max([numel, *spans]) + tile[0] * max(problem.n, 1) + tile[1]
        config = kernel.MatmulConfigAttr(engine, el, tile, warps, stages, load_a, load_b)
        return MatmulParams(
            block=(config.threads, 1, 1),
            engine=engine.value,
            tile=tile,
            warps=warps,
            stages=stages,
            load_a=load_a.value,
            load_b=load_b.value,
            group_m=GROUP_M,
            pair_stores=problem.n % 2 == 0,
            index_bits=64 if reach > INT32_MAX else 32,
            shared_bytes=config.shared_bytes(),
        )

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(MatmulParams, params)
        problem = _analyze(fusion, info)
        if isinstance(problem, str):
            raise ValueError(problem)
        bm, bn, _ = p.tile
        tiles = -(-problem.m // bm) * -(-problem.n // bn)
        grid = (max(1, tiles), 1, max(1, problem.leading))
        check_grid(fusion, f"matmul ({bm}x{bn} tiles)", grid)
        return LaunchConfig(grid, p.block, p.shared_bytes)

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        structure = _structure(fusion)
        if isinstance(structure, str):
            raise ValueError(f"matmul scheduler cannot emit @{fusion.sym_name.data}: {structure}")
        return _MatmulKernel(fusion, structure, cast(MatmulParams, params), kernel_name).build()


class _MatmulKernel:
    """The kernel of one fusion for one `MatmulParams` (see the module docstring)."""

    def __init__(
        self, fusion: fu.FusionOp, structure: _Structure, p: MatmulParams, name: str
    ) -> None:
        self.fusion, self.s, self.p = fusion, structure, p
        self.kb = KernelBuilder(fusion, name, fu.I64 if p.index_bits == 64 else fu.I32, p.block[0])
        self.config = config_of(p, structure.element_type)
        self.lead = structure.rank - 2
        self.leading: list[Index] = []
        self.row: Index = 0
        self.cols: list[Index] = []

    def build(self) -> kernel.FuncOp:
        kb, s, p = self.kb, self.s, self.p
        a = self._operand(kb.inputs[s.lhs], s.lhs_transposed)
        b = self._operand(kb.inputs[s.rhs], s.rhs_transposed)
        rank = s.rank - (0 if s.matmul.split_count is None else 1)  # of the operands
        bm, bn, _ = p.tile
        with kb.build():
            m = kb.size(a, rank - 2)
            k = kb.size(a, rank - 1)
            n = kb.size(b, rank - 1)
            m0, n0 = self._tile_origin(m, n, bm, bn)
            out = kb.outputs[0]
            if self.lead:
                bz = kb.geometry(kernel.BlockIdOp, kernel.Dimension.Z)
                sizes = [kb.size(out, d) for d in range(self.lead)]
                self.leading = [
                    named(x, f"lead{d}") for d, x in enumerate(kb.delinearize(bz, sizes))
                ]
            batch = self.leading if s.matmul.split_count is None else self.leading[1:]
            a_off = named(kb.offset([(x, kb.stride(a, d)) for d, x in enumerate(batch)]), "a_off")
            b_off = named(kb.offset([(x, kb.stride(b, d)) for d, x in enumerate(batch)]), "b_off")
            k0, k1 = self._k_range(k)
            acc = kernel.AllocOp(
                kernel.ArrayType(
                    self.config.acc_size,
                    kernel.accumulator_type(s.element_type),
                    kernel.MemorySpace.LOCAL,
                )
            ).result
            acc.name_hint = "acc"
            kernel.CommentOp(op_text(s.matmul))
            kernel.MatmulMainloopOp(
                acc,
                a,
                kb.value(a_off),
                b,
                kb.value(b_off),
                kb.value(m0),
                kb.value(n0),
                kb.value(k0),
                kb.value(k1),
                self.config,
            )
            self._epilogue(acc, m, n, m0, n0)
        return kb.func

    def _operand(self, tensor: SSAValue, transposed: bool) -> SSAValue:
        """The tensor parameter the mainloop reads an operand from: the input, or its
        transpose (`kernel.transposed`, hoisted)."""
        if not transposed:
            return tensor
        kb = self.kb

        def make() -> SSAValue:
            view = kernel.TransposedOp(tensor).result
            view.name_hint = f"{tensor.name_hint}_t"
            return view

        return kb.hoist(("transposed", tensor), make)

    def _tile_origin(self, m: SSAValue, n: SSAValue, bm: int, bn: int) -> tuple[Index, Index]:
        """The first row and column of this block's tile: blockIdx.x in groups of `group_m`
        tile rows, each walked column by column."""
        kb, g = self.kb, self.p.group_m
        bx = kb.geometry(kernel.BlockIdOp, kernel.Dimension.X)
        tiles_m = named(kb.div(kb.add(m, bm - 1), bm), "tiles_m")
        tiles_n = named(kb.div(kb.add(n, bn - 1), bn), "tiles_n")
        per_group = named(kb.mul(tiles_n, g), "group_tiles")
        first = named(kb.mul(kb.div(bx, per_group), g), "group_first")
        left = arith.SubiOp(kb.value(tiles_m), kb.value(first)).result
        rows = arith.MinSIOp(left, kb.value(g)).result
        rows.name_hint = "group_rows"
        within = named(kb.rem(bx, per_group), "in_group")
        tile_m = kb.add(first, kb.rem(within, rows))
        tile_n = kb.div(within, rows)
        return named(kb.mul(tile_m, bm), "m0"), named(kb.mul(tile_n, bn), "n0")

    def _k_range(self, k: SSAValue) -> tuple[Index, Index]:
        """`[k0, k1)`: all of K, or split `lead0`'s chunk of `ceil(K / s)`."""
        splits = self.s.matmul.split_count
        if splits is None:
            return 0, k
        kb = self.kb
        chunk = named(kb.div(kb.add(k, splits - 1), splits), "k_chunk")
        start = kb.value(kb.mul(self.leading[0], chunk))
        k0 = arith.MinSIOp(start, k).result
        k0.name_hint = "k0"
        k1 = arith.MinSIOp(kb.value(kb.add(k0, chunk)), k).result
        k1.name_hint = "k1"
        return k0, k1

    # --- the epilogue ---------------------------------------------------------------------

    def _epilogue(self, acc: SSAValue, m: SSAValue, n: SSAValue, m0: Index, n0: Index) -> None:
        kb, p, fusion = self.kb, self.p, self.fusion
        outputs = list(fusion.output_op.values)
        pairs: list[SSAValue] = []
        if p.pair_stores:
            for o, value in enumerate(outputs):
                array = kernel.AllocOp(
                    kernel.ArrayType(2, fu.element_type(value.type), kernel.MemorySpace.LOCAL)
                ).result
                array.name_hint = f"{kb.outputs[o].name_hint}_pair"
                pairs.append(array)
        bases = [
            kb.offset([(x, kb.stride(kb.outputs[o], d)) for d, x in enumerate(self.leading)])
            for o in range(len(outputs))
        ]
        with kb.loop(0, self.config.acc_size // 2, unroll=True, name="q") as q:
            i = named(kb.mul(q, 2), "i")
            frag = kernel.MatmulFragOp(kb.value(i), self.config)
            frag.row.name_hint, frag.col.name_hint = "tile_row", "tile_col"
            self.row = named(kb.add(m0, frag.row), "row")
            col = named(kb.add(n0, frag.col), "col")
            self.cols = [col, named(kb.add(col, 1), "col1")]
            in_rows = kb.cmp("slt", self.row, m)
            if p.pair_stores:
                inside = kb.all_of([in_rows, kb.cmp("slt", col, n)])
                with kb.if_(inside):
                    for e in range(2):
                        values = self._compute(acc, kb.add(i, e), e)
                        for array, v in zip(pairs, values, strict=True):
                            kernel.ArrayStoreOp(v, array, kb.value(e))
                    for o, array in enumerate(pairs):
                        el = fu.element_type(outputs[o].type)
                        vector = kernel.ArrayLoadOp(array, kb.value(0), VectorType(el, [2])).result
                        kernel.StoreOp(
                            vector, kb.outputs[o], kb.value(self._out_offset(o, bases[o], 0))
                        )
            else:
                with kb.if_(in_rows):
                    for e in range(2):
                        with kb.if_(kb.cmp("slt", self.cols[e], n)):
                            values = self._compute(acc, kb.add(i, e), e)
                            for o, v in enumerate(values):
                                off = self._out_offset(o, bases[o], e)
                                kernel.StoreOp(v, kb.outputs[o], kb.value(off))

    def _out_offset(self, o: int, base: Index, e: int) -> Index:
        kb, out = self.kb, self.kb.outputs[o]
        terms = [
            (self.row, kb.stride(out, self.lead)),
            (self.cols[e], kb.stride(out, self.lead + 1)),
        ]
        return named(kb.add(base, kb.offset(terms)), f"{out.name_hint}_off")

    def _index(self, dim: int, e: int) -> Index:
        """The index along output dim `dim` of element `e` of the pair."""
        if dim < self.lead:
            return self.leading[dim]
        return self.row if dim == self.lead else self.cols[e]

    def _compute(self, acc: SSAValue, i: Index, e: int) -> list[SSAValue]:
        """The outputs' values at element `e` of the pair (accumulator `i`)."""
        kb, s, fusion = self.kb, self.s, self.fusion
        c = s.matmul.result
        value = kernel.ArrayLoadOp(acc, kb.value(i)).result
        value = convert(value, fu.element_type(c.type))
        if value.name_hint is None:
            value.name_hint = c.name_hint
        env: dict[tuple[SSAValue, DimMap], SSAValue] = {
            (c, m): value for m in s.needs.get(c, [identity_map(c.type)])
        }
        position = {arg: k for k, arg in enumerate(fusion.inputs)}

        def read(v: SSAValue, m: DimMap) -> SSAValue:
            k = position[v]
            tensor = kb.inputs[k]
            t = v.type
            if not isinstance(t, TensorType):
                return tensor
            offset = kb.access_offset(tensor, m, t.get_shape(), lambda x: self._index(x, e))
            off = named(offset, f"{tensor.name_hint}_off")
            return kernel.LoadOp(tensor, kb.value(off)).result

        env = compute_element(s.epilogue, s.needs, read, env)
        outputs = zip(fusion.output_op.values, s.output_maps, strict=True)
        return [env[v, m] if (v, m) in env else read(v, m) for v, m in outputs]
