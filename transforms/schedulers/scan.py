"""The scan scheduler: one kernel for a fusion of one scan (`fusion.cumsum`, `cumprod`,
`cummax`, `cummin`) with pointwise ops before it (what it scans) and after it (what its outputs
compute from the running values), all on the scan's shape, inputs broadcast into it.

Two templates, by where the scanned dim lies:

- **Along rows** (the scanned dim is the innermost): `blockDim.x` threads walk each row in tiles
  of `blockDim.x * vector_width * unroll` elements, `blockDim.y` rows a block. A thread loads its
  `unroll` vectors of the tile first (many loads in flight), then per vector scans its elements
  in registers, gets the combination of the vectors of the threads before it from
  `kernel.block_scan` (warp shuffles; through shared memory past 32 threads), adds the running
  value of the tiles before (a loop-carried register), computes the outputs and stores them.
  So each element is read once and written once: a one-pass scan whose carry crosses tiles
  within a block. The threads per row are chosen so that the rows fill the GPU: a warp per row
  where there are many rows (no barrier at all), up to 1024 threads per row where there are few.
- **Along columns** (another dim): each thread walks one column of the scanned dim, `unroll`
  steps loaded ahead, the running value in a register; consecutive threads take consecutive
  columns, so every step is coalesced.

nvFuser hands scans to ATen (`ExprEval`) or to its greedy scheduler; Inductor scans a whole row
in one Triton program (`tl.associative_scan`). Rows too few to fill the GPU (fewer than about
one per SM, each long) would want a scan split across blocks (a decoupled look-back or a second
pass): this template gives each such row one block, correct but not at full bandwidth.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerType, TensorType, VectorType
from xdsl.ir import SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.around_op import (
    AroundOp,
    AroundOpScheduler,
    Reads,
    around_op,
    call_extents,
    pow2_at_least,
)
from fuser.transforms.schedulers.base import (
    LaunchConfig,
    Params,
    check_grid,
)
from fuser.transforms.schedulers.info import FusionInfo, TensorMeta
from fuser.transforms.schedulers.iteration_space import (
    DimMap,
    Needs,
    identity_map,
    map_dims,
)
from fuser.transforms.schedulers.kernel_builder import (
    Index,
    KernelBuilder,
    comment,
    named,
)
from fuser.transforms.schedulers.pointwise import INT32_MAX, span
from fuser.transforms.schedulers.reduction_parts import combine, neutral

ROW_THREADS = (1, 1024)
"""The fewest and most threads that scan one row together (powers of two; up to 32 they are
lanes of one warp)."""
BLOCK_THREADS = 256
"""Threads of a block that scans short rows (several rows a block)."""
THREADS_PER_SM = 1024
"""Threads per SM the rows should give at least: half of an H100's 2048, each with `unroll`
vectors in flight, keeps its memory busy."""
LOAD_BYTES = 64
"""Bytes each thread loads per input read ahead of its scans (unroll x vector)."""
MAX_UNROLL = 4
"""Vectors per thread at most (registers: each is scanned, then kept for the outputs)."""
MAX_ELEMENTS = 16
"""Elements per thread per tile at most (unroll x vector width)."""
COLUMN_THREADS = 128
"""Threads of a block that scans columns."""
COLUMN_STEPS = 8
"""Steps of a column loaded ahead."""


@dataclass(frozen=True)
class ScanParams(Params):
    """The scan template's parameters. Along rows, `block` is (threads per row, rows per block,
    1); along columns, (`COLUMN_THREADS`, 1, 1)."""

    along_rows: bool
    """The scanned dim is the innermost (the row template), else the column template."""
    vector_width: int
    """Consecutive elements of a row per load and store (1: scalar accesses)."""
    unroll: int
    """Vectors of a row (or steps of a column) each thread loads at once."""
    index_bits: int
    """32 or 64: the width of index arithmetic."""


def structure(fusion: fu.FusionOp) -> AroundOp | str:
    """The scan with its prologue and epilogue, or why this template does not take the fusion's
    ops (once per fusion under an open analysis cache)."""
    return memoized("scan_structure", fusion, lambda: around_op(fusion, (fu.ScanOp,), "scan"))


def scan_reads(fusion: fu.FusionOp, s: AroundOp) -> Reads:
    """Every input read, before or after the scan: both at the scan's points (its operand and
    result share a shape); by input index, each input's reads in their order."""
    reads = dict.fromkeys((*s.reads_before(fusion), *s.reads_after(fusion)))
    return tuple(sorted(reads, key=lambda read: read[0]))


@dataclass(frozen=True)
class ScanAnalysis:
    """The structure with one call's extents (the scan's shape)."""

    structure: AroundOp
    extents: tuple[int, ...]

    @property
    def scan(self) -> fu.ScanOp:
        return cast(fu.ScanOp, self.structure.op)


def analyze(fusion: fu.FusionOp, info: FusionInfo) -> ScanAnalysis | str:
    return memoized("scan", (fusion, info), lambda: _analysis(fusion, info))


def _analysis(fusion: fu.FusionOp, info: FusionInfo) -> ScanAnalysis | str:
    s = structure(fusion)
    if isinstance(s, str):
        return s
    extents = call_extents(fusion, info, s, "scan")
    if isinstance(extents, str):
        return extents
    return ScanAnalysis(s, extents[1])


def _vector_width(fusion: fu.FusionOp, info: FusionInfo, a: ScanAnalysis) -> int:
    """The widest vector every access along the rows can use, or 1: stride 1 along them, the
    row's full extent (no run-time broadcast), other strides and the pointer aligned, the row
    length a multiple."""
    inner = len(a.extents) - 1
    s = a.structure
    accesses: list[tuple[int, TensorMeta, DimMap]] = []
    for i, m in scan_reads(fusion, s):
        if inner in map_dims(m):
            el = kernel.byte_size(fu.element_type(fusion.inputs[i].type))
            accesses.append((el, cast(TensorMeta, info.inputs[i]), m))
    for value in fusion.output_op.values:
        el = kernel.byte_size(fu.element_type(value.type))
        accesses.append((el, TensorMeta.contiguous(a.extents), s.result_space))
    widest = kernel.MAX_VECTOR_BYTES // max(el for el, _, _ in accesses)
    for width in sorted(kernel.VECTOR_WIDTHS, reverse=True):
        if width > widest or a.extents[inner] % width:
            continue
        if all(
            _vectorizable(meta, m, inner, a.extents[inner], width, el) for el, meta, m in accesses
        ):
            return width
    return 1


def _vectorizable(
    meta: TensorMeta, m: DimMap, inner: int, extent: int, width: int, el: int
) -> bool:
    d = m.index(inner)
    others = [
        meta.strides[e] for e, x in enumerate(m) if x is not None and e != d and meta.shape[e] != 1
    ]
    return (
        meta.strides[d] == 1
        and meta.shape[d] == extent
        and all(s % width == 0 for s in others)
        and meta.alignment % (width * el) == 0
    )


class ScanScheduler(AroundOpScheduler[ScanAnalysis]):
    """A fusion of one scan with pointwise ops around it, as one kernel (see the module
    docstring)."""

    name = "scan"

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> ScanAnalysis | str:
        return analyze(fusion, info)

    def structure(self, fusion: fu.FusionOp) -> object:
        return structure(fusion)

    def params_of(
        self, fusion: fu.FusionOp, info: FusionInfo, analysis: ScanAnalysis
    ) -> ScanParams:
        extents = analysis.extents
        along_rows = analysis.scan.axis == len(extents) - 1
        numel = math.prod(extents)
        spans = [span(m) for m in info.inputs if m is not None]
        if not along_rows:
            reach = numel + COLUMN_THREADS * COLUMN_STEPS
            bits = 64 if max([reach, *spans]) > INT32_MAX else 32
            return ScanParams((COLUMN_THREADS, 1, 1), False, 1, COLUMN_STEPS, bits)
        width = _vector_width(fusion, info, analysis)
        el = max(
            kernel.byte_size(fu.element_type(v.type))
            for v in (
                *fusion.output_op.values,
                *(fusion.inputs[i] for i, _ in scan_reads(fusion, analysis.structure)),
            )
        )
        unroll = max(1, min(MAX_UNROLL, LOAD_BYTES // (width * el), MAX_ELEMENTS // width))
        n = extents[-1]
        rows = numel // n if n else 0
        low, high = ROW_THREADS
        fill = pow2_at_least(-(-info.device.sm_count * THREADS_PER_SM // max(rows, 1)))
        useful = pow2_at_least(-(-n // (width * unroll)))
        threads = max(low, min(high, fill, useful))
        per_block = max(1, min(BLOCK_THREADS // threads, pow2_at_least(max(rows, 1))))
        reach = numel + threads * width * unroll + n
        bits = 64 if max([reach, *spans]) > INT32_MAX else 32
        return ScanParams((threads, per_block, 1), True, width, unroll, bits)

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(ScanParams, params)
        analysis = analyze(fusion, info)
        if isinstance(analysis, str):
            raise ValueError(analysis)
        extents = analysis.extents
        axis = analysis.scan.axis
        lines = math.prod(e for d, e in enumerate(extents) if d != axis)
        per_block = p.block[1] if p.along_rows else p.block[0]
        grid = (max(1, -(-lines // per_block)), 1, 1)
        check_grid(fusion, "scan", grid)
        return LaunchConfig(grid, p.block)

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        p = cast(ScanParams, params)
        s = structure(fusion)
        assert not isinstance(s, str), s
        threads = p.block[0] * p.block[1] * p.block[2]
        kb = KernelBuilder(fusion, kernel_name, IntegerType(p.index_bits), threads)
        with kb.build():
            _ScanKernel(fusion, s, p, kb).build()
        return kb.func


class _ScanKernel:
    """The body of one scan kernel (both templates)."""

    def __init__(self, fusion: fu.FusionOp, s: AroundOp, p: ScanParams, kb: KernelBuilder) -> None:
        self.fusion, self.s, self.p, self.kb = fusion, s, p, kb
        self.scan = scan = cast(fu.ScanOp, s.op)
        self.space = s.result_space  # the operand's too: a scan keeps the shape
        self.reads = scan_reads(fusion, s)
        self.rank = len(self.space)
        self.axis = scan.axis
        self.el = fu.element_type(scan.result.type)
        self.kind = kernel.ReduceKind(scan.kind)
        self.static = tuple(scan.result.type.get_shape())

    def extent(self, d: int) -> Index:
        """The scan's extent along dim d: static, or the first output's."""
        if self.static[d] != DYNAMIC_INDEX:
            return self.static[d]
        return self.kb.size(self.kb.outputs[0], d)

    def offset(self, tensor: SSAValue, m: DimMap, index: Callable[[int], Index]) -> Index:
        """The element offset in a parameter read (an input, a dim of extent 1 at run time
        read with stride 0) or written (an output) with map `m` at the point `index`."""
        static = tuple(cast(TensorType, self._fusion_value(tensor).type).get_shape())
        written = tensor in self.kb.outputs
        return self.kb.access_offset(tensor, m, static, index, broadcast=not written)

    def _fusion_value(self, param: SSAValue) -> SSAValue:
        kb = self.kb
        if param in kb.inputs:
            return self.fusion.inputs[list(kb.inputs).index(param)]
        return self.fusion.output_op.values[list(kb.outputs).index(param)]

    def build(self) -> None:
        if self.p.along_rows:
            self.rows()
        else:
            self.columns()

    # --- values at a point ---------------------------------------------------------------

    def element(
        self,
        needs: Needs,
        wanted: Sequence[tuple[SSAValue, DimMap]],
        read: Callable[[int, DimMap], SSAValue],
        env: dict[tuple[SSAValue, DimMap], SSAValue] | None = None,
    ) -> list[SSAValue]:
        """The scalars of `wanted` at one point, an input read being `read(input, map)`."""
        return self.s.values_at(self.fusion, self.kb, needs, wanted, read, env)

    def masked(self, value: SSAValue, valid: SSAValue | None) -> SSAValue:
        """`value` where `valid`, the scan's identity elsewhere."""
        if valid is None:
            return value
        return arith.SelectOp(valid, value, neutral(self.kind, self.el)).result

    def carry(self) -> SSAValue:
        """A one-element local array holding the running value, set to the identity."""
        array = kernel.AllocOp(kernel.ArrayType(1, self.el, kernel.MemorySpace.LOCAL)).result
        array.name_hint = "running"
        kernel.ArrayStoreOp(neutral(self.kind, self.el), array, self.kb.value(0))
        return array

    def outputs_at(
        self, scanned: SSAValue, read: Callable[[int, DimMap], SSAValue]
    ) -> list[SSAValue]:
        """The outputs' scalars at a point where the scan's value is `scanned`."""
        env: dict[tuple[SSAValue, DimMap], SSAValue] = {(self.scan.result, self.space): scanned}
        wanted = [(v, identity_map(cast(TensorType, v.type))) for v in self.fusion.output_op.values]
        return self.element(self.s.needs_after, wanted, read, env)

    # --- along rows ------------------------------------------------------------------------

    def rows(self) -> None:
        kb, p = self.kb, self.p
        v, u = p.vector_width, p.unroll
        tx_n, ty_n = p.block[0], p.block[1]
        inner = self.rank - 1
        tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
        ty = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.Y) if ty_n > 1 else 0
        bx = kb.geometry(kernel.BlockIdOp, kernel.Dimension.X)
        n = self.extent(inner)
        outer = [self.extent(d) for d in range(inner)]
        rows: Index = 1
        for e in outer:
            rows = kb.mul(rows, e)
        row = named(kb.add(kb.mul(bx, ty_n), ty), "row")
        exact = isinstance(rows, int) and rows > 0 and rows % ty_n == 0  # every row is one
        row_valid = None if exact else kb.cmp("slt", row, rows)
        at = kb.delinearize(row, outer) if outer else []
        rows_index = dict(enumerate(at))
        arrays: dict[tuple[int, DimMap], SSAValue] = {}
        for i, m in self.reads:
            el = fu.element_type(self.fusion.inputs[i].type)
            size = u * v if inner in map_dims(m) else u
            array = kernel.AllocOp(kernel.ArrayType(size, el, kernel.MemorySpace.LOCAL)).result
            array.name_hint = f"{kb.inputs[i].name_hint}_buf"
            arrays[i, m] = array
        scanned = kernel.AllocOp(kernel.ArrayType(v, self.el, kernel.MemorySpace.LOCAL)).result
        scanned.name_hint = "scanned"
        out_arrays: list[SSAValue] = []
        if v > 1:
            for o, value in enumerate(self.fusion.output_op.values):
                el = fu.element_type(value.type)
                array = kernel.AllocOp(kernel.ArrayType(v, el, kernel.MemorySpace.LOCAL)).result
                array.name_hint = f"{kb.outputs[o].name_hint}_buf"
                out_arrays.append(array)
        running = self.carry()
        tile = tx_n * v * u
        with kb.loop(0, n, tile, name="tile") as base:

            def start(k: Index) -> Index:
                return kb.add(kb.add(base, kb.mul(k, tx_n * v)), kb.mul(tx, v))

            def index_at(j: Index) -> Callable[[int], Index]:
                return lambda d: j if d == inner else rows_index[d]

            def valid(j: Index) -> SSAValue | None:
                return kb.all_of([c for c in (row_valid, kb.cmp("slt", j, n)) if c is not None])

            comment("load the tile's vectors")
            with kb.unrolled(u, "k") as k:
                j = start(k)
                with kb.if_(valid(j)):
                    for (i, m), array in arrays.items():
                        tensor = kb.inputs[i]
                        el = fu.element_type(self.fusion.inputs[i].type)
                        along = inner in map_dims(m)
                        t = VectorType(el, [v]) if along and v > 1 else el
                        loaded = kernel.LoadOp(
                            tensor, kb.value(self.offset(tensor, m, index_at(j))), t
                        ).result
                        kernel.ArrayStoreOp(loaded, array, kb.value(kb.mul(k, v) if along else k))
            with kb.unrolled(u, "k") as k:
                j = start(k)
                ok = valid(j)

                def read_at(lane: Index) -> Callable[[int, DimMap], SSAValue]:
                    def read(i: int, m: DimMap) -> SSAValue:
                        along = inner in map_dims(m)
                        index = kb.add(kb.mul(k, v), lane) if along else k
                        return kernel.ArrayLoadOp(arrays[i, m], kb.value(index)).result

                    return read

                comment(f"scan the thread's {v} elements")
                with kb.unrolled(v, "l") as lane:
                    before = self.s.needs_before
                    (x,) = self.element(before, [(self.scan.input, self.space)], read_at(lane))
                    kernel.ArrayStoreOp(self.masked(x, ok), scanned, kb.value(lane))
                local = kernel.ArrayLoadOp(scanned, kb.value(0)).result
                for lane in range(1, v):
                    x = kernel.ArrayLoadOp(scanned, kb.value(lane)).result
                    local = combine(self.kind, local, x)
                    kernel.ArrayStoreOp(local, scanned, kb.value(lane))
                comment(
                    lambda: (
                        f"{self.scan.name}: the threads before this one, and the row's tiles before"
                    )
                )
                local.name_hint = "thread_total"
                scan = kernel.BlockScanOp(self.kind, local, kernel.Dimension.X)
                scan.exclusive.name_hint, scan.total.name_hint = "before", "total"
                carried = named(kernel.ArrayLoadOp(running, kb.value(0)).result, "carried")
                prefix = named(combine(self.kind, carried, scan.exclusive), "prefix")
                kernel.ArrayStoreOp(combine(self.kind, carried, scan.total), running, kb.value(0))
                with kb.unrolled(v, "l") as lane:
                    y = combine(
                        self.kind, prefix, kernel.ArrayLoadOp(scanned, kb.value(lane)).result
                    )
                    values = self.outputs_at(y, read_at(lane))
                    if v > 1:
                        for array, value in zip(out_arrays, values, strict=True):
                            kernel.ArrayStoreOp(value, array, kb.value(lane))
                if v > 1:
                    values = [
                        kernel.ArrayLoadOp(
                            array, kb.value(0), VectorType(fu.element_type(o.type), [v])
                        ).result
                        for array, o in zip(out_arrays, self.fusion.output_op.values, strict=True)
                    ]
                offsets = [
                    self.offset(out, identity_map(cast(TensorType, o.type)), index_at(j))
                    for out, o in zip(kb.outputs, self.fusion.output_op.values, strict=True)
                ]
                with kb.if_(ok):
                    for out, value, off in zip(kb.outputs, values, offsets, strict=True):
                        kernel.StoreOp(value, out, kb.value(off))

    # --- along columns ---------------------------------------------------------------------

    def columns(self) -> None:
        kb, p = self.kb, self.p
        steps = p.unroll
        a = self.axis
        tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
        bx = kb.geometry(kernel.BlockIdOp, kernel.Dimension.X)
        others = [d for d in range(self.rank) if d != a]
        sizes = [self.extent(d) for d in others]
        count: Index = 1
        for e in sizes:
            count = kb.mul(count, e)
        column = named(kb.add(kb.mul(bx, p.block[0]), tx), "column")
        column_valid = kb.cmp("slt", column, count)
        at = dict(zip(others, kb.delinearize(column, sizes), strict=True))
        n = self.extent(a)
        arrays: dict[tuple[int, DimMap], SSAValue] = {}
        for i, m in self.reads:
            el = fu.element_type(self.fusion.inputs[i].type)
            array = kernel.AllocOp(kernel.ArrayType(steps, el, kernel.MemorySpace.LOCAL)).result
            array.name_hint = f"{kb.inputs[i].name_hint}_buf"
            arrays[i, m] = array
        running = self.carry()
        with kb.if_(column_valid), kb.loop(0, n, steps, name="step") as first:

            def index_at(j: Index) -> Callable[[int], Index]:
                return lambda d: j if d == a else at[d]

            comment("load the column's next steps")
            with kb.unrolled(steps, "k") as k:
                j = kb.add(first, k)
                with kb.if_(kb.cmp("slt", j, n)):
                    for (i, m), array in arrays.items():
                        tensor = kb.inputs[i]
                        off = self.offset(tensor, m, index_at(j))
                        kernel.ArrayStoreOp(
                            kernel.LoadOp(tensor, kb.value(off)).result, array, kb.value(k)
                        )
            with kb.unrolled(steps, "k") as k:
                j = kb.add(first, k)
                with kb.if_(kb.cmp("slt", j, n)):

                    def read(i: int, m: DimMap) -> SSAValue:
                        return kernel.ArrayLoadOp(arrays[i, m], kb.value(k)).result

                    (x,) = self.element(self.s.needs_before, [(self.scan.input, self.space)], read)
                    comment(lambda: f"{self.scan.name}: the column's running value")
                    y = combine(self.kind, kernel.ArrayLoadOp(running, kb.value(0)).result, x)
                    kernel.ArrayStoreOp(y, running, kb.value(0))
                    values = self.outputs_at(y, read)
                    for out, value, o in zip(
                        kb.outputs, values, self.fusion.output_op.values, strict=True
                    ):
                        off = self.offset(out, identity_map(cast(TensorType, o.type)), index_at(j))
                        kernel.StoreOp(value, out, kb.value(off))
