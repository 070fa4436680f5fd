"""The sort scheduler: one kernel for a fusion of one `fusion.topk` or `fusion.argsort` along the
innermost dim, with pointwise ops before it (what it orders, on its operand's shape) and after
it (on its results' shape).

A block orders one row. Its threads load the row into registers, element e of thread t at index
t + e * blockDim.x (so each load instruction is coalesced), computing the prologue as they go;
`kernel.block_topk` (`fuser/sort.cuh`) then finds the k-th key by a radix selection over the
registers (a shared 256-bin histogram per byte, one shared atomic per distinct byte of a warp;
ties by index through a second selection over their indices), gathers the k taken into shared
memory and sorts them there (bitonic, by key then index); the threads compute the epilogue at
the k results and store them. `argsort` is the top n of n: no selection, the whole row sorted
in shared memory. So a row is read once and its results written once.

nvFuser hands these ops to ATen (`ExprEval`), whose `topk` is a radix selection over global
memory, several passes per row. This template takes rows up to `MAX_ROW` elements (1024 threads
x 32 registers) whose sort width fits in shared memory; longer rows would want a selection over
several blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerType, TensorType
from xdsl.ir import SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.around_op import (
    AroundOp,
    AroundOpScheduler,
    around_op,
    call_extents,
    pow2_at_least,
)
from fuser.transforms.schedulers.base import (
    ACCEPT,
    LaunchConfig,
    Params,
    Verdict,
    check_grid,
    reject,
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
    op_label,
    op_text,
)
from fuser.transforms.schedulers.pointwise import INT32_MAX, span

MAX_THREADS = 1024
MAX_ELEMENTS = 32
"""Elements of its row each thread holds in registers at most."""
MAX_ROW = MAX_THREADS * MAX_ELEMENTS
"""The longest row the template orders."""
ELEMENTS = 16
"""Elements per thread where the row allows (fewer threads, more rows in flight per SM)."""
SCRATCH_BYTES = 2048
"""Shared memory `block_topk` declares itself (its histogram and counters), at most."""


@dataclass(frozen=True)
class SortParams(Params):
    """The sort template's parameters (`block` is `(threads, 1, 1)`)."""

    elements: int
    """Elements of the row each thread holds (rows up to threads x elements long)."""
    width: int
    """The sort's width: shared slots for the taken elements (a power of two, at least k)."""
    index_bits: int
    """32 or 64: the width of index arithmetic."""


@dataclass(frozen=True)
class SortStructure:
    """The sort with its prologue and epilogue (`around_op`), and where its row length is."""

    around: AroundOp
    length_read: tuple[int, int] | None
    """An input read along the row, and its dim there: where the kernel reads the row's length
    (None: the length is static)."""

    @property
    def op(self) -> fu.TopkOp | fu.ArgsortOp:
        return cast(fu.TopkOp | fu.ArgsortOp, self.around.op)


def structure(fusion: fu.FusionOp) -> SortStructure | str:
    """The sort and the maps of the values around it, or why this template does not take the
    fusion's ops (once per fusion under an open analysis cache)."""
    return memoized("sort_structure", fusion, lambda: _structure(fusion))


def _structure(fusion: fu.FusionOp) -> SortStructure | str:
    around = around_op(fusion, fu.SORT_OPS, "sort")
    if isinstance(around, str):
        return around
    op = cast(fu.TopkOp | fu.ArgsortOp, around.op)
    input_t = cast(TensorType, op.input.type)
    inner = input_t.get_num_dims() - 1
    if op.axis != inner:
        return f"{op_label(op)} orders dim {op.axis}: a sort kernel orders the innermost dim"
    length_read = None
    if input_t.get_shape()[-1] == DYNAMIC_INDEX:
        reads = around.reads_before(fusion)
        along = [(i, m.index(inner)) for i, m in reads if inner in map_dims(m)]
        if not along:
            return "no input is read along the sorted row: a sort kernel reads its length there"
        length_read = along[0]
    return SortStructure(around, length_read)


@dataclass(frozen=True)
class SortAnalysis:
    """The structure with one call's extents."""

    structure: SortStructure
    row_extents: tuple[int, ...]
    result_extents: tuple[int, ...]


def analyze(fusion: fu.FusionOp, info: FusionInfo) -> SortAnalysis | str:
    return memoized("sort", (fusion, info), lambda: _analysis(fusion, info))


def _analysis(fusion: fu.FusionOp, info: FusionInfo) -> SortAnalysis | str:
    s = structure(fusion)
    if isinstance(s, str):
        return s
    extents = call_extents(fusion, info, s.around, "sort")
    if isinstance(extents, str):
        return extents
    row, result = extents
    if s.length_read is not None:
        i, d = s.length_read
        if cast(TensorMeta, info.inputs[i]).shape[d] != row[-1]:
            return f"input #{i}, read along the row, is broadcast there: the row's length is not"
    if row[-1] > MAX_ROW:
        return (
            f"rows of {row[-1]} elements are longer than the {MAX_ROW} a sort kernel holds "
            f"({MAX_THREADS} threads x {MAX_ELEMENTS})"
        )
    return SortAnalysis(s, row, result)


def _shared_bytes(op: fu.TopkOp | fu.ArgsortOp, width: int) -> int:
    """The launch's dynamic shared memory: the sort's values and indices, `width` each."""
    el = fu.element_type(op.input.type)
    return kernel.dynamic_shared_bytes(
        [
            kernel.ArrayType(width, el, kernel.MemorySpace.DYNAMIC),
            kernel.ArrayType(width, fu.I32, kernel.MemorySpace.DYNAMIC),
        ]
    )


class SortScheduler(AroundOpScheduler[SortAnalysis]):
    """A fusion of one `topk` or `argsort` along rows with pointwise ops around it, as one
    kernel (see the module docstring)."""

    name = "sort"

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> SortAnalysis | str:
        return analyze(fusion, info)

    def structure(self, fusion: fu.FusionOp) -> object:
        return structure(fusion)

    def params_of(
        self, fusion: fu.FusionOp, info: FusionInfo, analysis: SortAnalysis
    ) -> SortParams:
        n = analysis.row_extents[-1]
        op = analysis.structure.op
        threads = max(32, min(MAX_THREADS, pow2_at_least(-(-n // ELEMENTS))))
        elements = max(1, -(-n // threads))
        # the parameters are computed for each row length, so a width for this one holds it
        taken = op.count if isinstance(op, fu.TopkOp) else n
        width = pow2_at_least(max(taken, 1))
        numel = max(math.prod(analysis.row_extents), math.prod(analysis.result_extents))
        spans = [span(m) for m in info.inputs if m is not None]
        bits = 64 if max([numel + threads * elements, *spans]) > INT32_MAX else 32
        return SortParams((threads, 1, 1), elements, width, bits)

    def verdict_of(self, fusion: fu.FusionOp, info: FusionInfo, analysis: SortAnalysis) -> Verdict:
        p = self.params_of(fusion, info, analysis)
        need = _shared_bytes(analysis.structure.op, p.width) + SCRATCH_BYTES
        if need > info.device.max_shared_memory_per_block:
            return reject(
                f"a sort {p.width} wide (the row, or k, rounded up to a power of two) takes "
                f"{need} bytes of shared memory, more than the "
                f"{info.device.max_shared_memory_per_block} a block has"
            )
        return ACCEPT

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(SortParams, params)
        analysis = analyze(fusion, info)
        if isinstance(analysis, str):
            raise ValueError(analysis)
        rows = math.prod(analysis.row_extents[:-1])
        grid = (max(1, rows), 1, 1)
        check_grid(fusion, "sort", grid)
        return LaunchConfig(grid, p.block, _shared_bytes(analysis.structure.op, p.width))

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        p = cast(SortParams, params)
        s = structure(fusion)
        assert not isinstance(s, str), s
        kb = KernelBuilder(fusion, kernel_name, IntegerType(p.index_bits), p.block[0])
        with kb.build():
            _SortKernel(fusion, s, p, kb).build()
        return kb.func


class _SortKernel:
    """The body of one sort kernel."""

    def __init__(
        self, fusion: fu.FusionOp, s: SortStructure, p: SortParams, kb: KernelBuilder
    ) -> None:
        self.fusion, self.s, self.p, self.kb = fusion, s, p, kb
        self.op = s.op
        self.around = s.around
        self.rank = len(s.around.operand_space)

    def offset(self, i: int, m: DimMap, index: Callable[[int], Index]) -> Index:
        """The element offset of input `i` read with map `m` at the point `index` (a dim of
        extent 1 at run time read with stride 0)."""
        static = tuple(cast(TensorType, self.fusion.inputs[i].type).get_shape())
        return self.kb.access_offset(self.kb.inputs[i], m, static, index)

    def element(
        self,
        needs: Needs,
        wanted: Sequence[tuple[SSAValue, DimMap]],
        index: Callable[[int], Index],
        env: dict[tuple[SSAValue, DimMap], SSAValue] | None = None,
    ) -> list[SSAValue]:
        """The scalars of `wanted` at the point `index`, inputs loaded there."""
        kb = self.kb

        def load(i: int, m: DimMap) -> SSAValue:
            return kernel.LoadOp(kb.inputs[i], kb.value(self.offset(i, m, index))).result

        return self.around.values_at(self.fusion, kb, needs, wanted, load, env)

    def build(self) -> None:
        kb, p, op, s = self.kb, self.p, self.op, self.s
        threads, inner = p.block[0], self.rank - 1
        tx = kb.geometry(kernel.ThreadIdOp, kernel.Dimension.X)
        row = kb.geometry(kernel.BlockIdOp, kernel.Dimension.X)
        row_shape = cast(TensorType, op.input.type).get_shape()
        out = kb.outputs[0]
        outer = [
            row_shape[d] if row_shape[d] != DYNAMIC_INDEX else kb.size(out, d) for d in range(inner)
        ]
        at = dict(enumerate(kb.delinearize(row, outer))) if outer else {}
        if s.length_read is None:
            n: Index = row_shape[-1]
        else:
            i, d = s.length_read
            n = kb.size(kb.inputs[i], d)
        n = named(kb.value(n), "row_length")
        if isinstance(op, fu.TopkOp):
            k: SSAValue = kb.value(op.count)
        else:
            k = n
        el = fu.element_type(op.input.type)
        row_t = kernel.ArrayType(p.elements, el, kernel.MemorySpace.LOCAL)
        values = kernel.AllocOp(row_t, zeroed=True).result  # (elements past the row: not read)
        values.name_hint = "row"
        comment("load the block's row, element e of this thread at threadIdx.x + e * blockDim.x")
        with kb.unrolled(p.elements, "e") as e:
            j = kb.add(tx, kb.mul(e, threads))
            with kb.if_(kb.cmp("slt", j, n)):
                index = self._point(at, j)
                around = s.around
                (x,) = self.element(around.needs_before, [(op.input, around.operand_space)], index)
                kernel.ArrayStoreOp(x, values, kb.value(e))
        space = kernel.MemorySpace.DYNAMIC
        top = kernel.AllocOp(kernel.ArrayType(p.width, el, space)).result
        top.name_hint = "top"
        where = kernel.AllocOp(kernel.ArrayType(p.width, fu.I32, space)).result
        where.name_hint = "top_index"
        descending = (
            op.largest is not None if isinstance(op, fu.TopkOp) else op.descending is not None
        )
        comment(lambda: op_text(op))
        equal_zeros = isinstance(op, fu.ArgsortOp)  # torch.argsort compares, topk selects bits
        kernel.BlockTopkOp(values, n, k, top, where, descending, equal_zeros)
        with kb.loop(tx, k, threads, name="j") as j:
            index = self._point(at, j)
            env: dict[tuple[SSAValue, DimMap], SSAValue] = {}
            if isinstance(op, fu.TopkOp):
                env[op.values, s.around.result_space] = kernel.ArrayLoadOp(top, j).result
            position = kernel.ArrayLoadOp(where, j).result
            env[op.results[-1], s.around.result_space] = arith.ExtSIOp(position, fu.I64).result
            outputs = self.fusion.output_op.values
            wanted = [(v, identity_map(cast(TensorType, v.type))) for v in outputs]
            results = self.element(s.around.needs_after, wanted, index, env)
            for param, value, (v, m) in zip(kb.outputs, results, wanted, strict=True):
                static = tuple(cast(TensorType, v.type).get_shape())
                off = kb.access_offset(param, m, static, index, broadcast=False)
                kernel.StoreOp(value, param, kb.value(off))

    def _point(self, at: dict[int, Index], j: Index) -> Callable[[int], Index]:
        inner = self.rank - 1
        return lambda d: j if d == inner else at[d]
