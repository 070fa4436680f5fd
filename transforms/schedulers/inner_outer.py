"""The inner-outer persistent scheduler: a fusion that reduces one 2-D tensor along both axes
(nvFuser's `InnerOuterPersistent`), such as the backward of layer norm and RMS norm: dx needs
sums over each row, dw and db sums over each column of the same per-element values.

It takes the form the `split-reductions` pass leaves: reductions over dim 1 of an `[N, H]`
space (any number of stages, as the persistent scheduler takes them) and `partial_sum`s over
dim 0 of it into `splits` chunks of rows, each an output of the fusion (the `segment_set` after
it is the kernel boundary; a plain `sum` over the chunks completes it in a second kernel). A
fusion with partial sums and no reduction is taken too: a column sum split over row chunks.

The kernel walks its rows as the persistent template does (`row_walk.walk_rows`, each row's
phases by `persistent.emit_row`) with one row per block at a time (short rows: several, a row
per `threadIdx.y`, the accumulators summed across it at the end): block g walks the rows of
chunk g, and each row is read once and kept in registers across its reductions, as there. A
thread's slots are the same columns of every row, so the values a partial sum adds up are added
into one accumulator per slot; after the last row the thread stores them as row g of the partial
sums (vectorized like the row). The inputs are read from global memory once; the partial sums
add `splits x H` elements, a few percent of the traffic at the splits `split-reductions` picks.

Where shared memory holds them (`SHARED_SUMS`, `PREFETCH`; on sm_80 and later), the kernel
keeps its accumulators there rather than in registers, and starts copying the next row's reads
into shared memory (`cp.async`, two buffers taking turns) before working on this one: a block
works on one row at a time, and without the copies in flight its SM's memory traffic stopped
at each row's reductions. On an H100 (benchmarks/RESULTS.md, run 28), layer norm backward of
[2048, 12288] bf16 went from 0.160 to 0.087 ms and of [16384, 4096] bf16 from 0.200 to 0.159
ms, RMS norm's from 0.096 to 0.066 and from 0.169 to 0.147 ms (with the partial sums stored as
vectors of 16 bytes at most). Where the buffers do not fit beside the accumulators, each row is
loaded when its turn comes; where the accumulators do not fit either, they stay in registers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.base import LaunchConfig, Params, check_grid
from fuser.transforms.schedulers.info import FusionInfo, arch_number
from fuser.transforms.schedulers.persistent import (
    Analysis,
    PersistentParams,
    PersistentScheduler,
    Sizing,
    analyze_rows,
    row_params,
)
from fuser.transforms.schedulers.reduction_layout import Problem
from fuser.transforms.schedulers.reduction_parts import KernelParts
from fuser.transforms.schedulers.reduction_structure import Structure, structure_of
from fuser.transforms.schedulers.row_walk import can_stage, dynamic_arrays, walk_rows

REGISTER_BUDGET = 128
"""32-bit registers per thread for the slots' values (the persistent scheduler allows 40): the
kernel runs one row per block at a time, so its blocks are better small, with more of the row
per thread. On an H100, layer norm backward of [16384, 4096] went from 0.277 to 0.201 ms in
bf16 and from 0.375 to 0.295 ms in f32 (blocks of 512 and 1024 threads to 256), RMS norm's
unchanged (benchmarks/RESULTS.md, run 23). Two rows per block at a time (a row per
`threadIdx.y`, the accumulators summed across it at the end) was slower for rows of 768 to
12288 elements; short rows take several (`SHORT_ROW_THREADS`)."""


SHARED_SUMS = True
"""Keep the partial sums' accumulators in shared memory where they fit (see the module
docstring)."""
PREFETCH = True
"""With `SHARED_SUMS`, copy each row's reads into shared memory while the row before it is
worked on."""
STATIC_SHARED_RESERVE = 16 * 1024
"""Shared memory per block left to the kernel's static arrays (block reductions' scratch)."""

SHORT_ROW_THREADS = 64
"""Rows that take fewer threads than this are worked on several at a time (a row per
`threadIdx.y`, `BLOCK_THREADS` threads a block): a column sum of a tall, narrow matrix."""
BLOCK_THREADS = 256


def analyze(fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
    """The structure, layout and row sizing of `fusion` for `info`, or why the template does
    not take it (once per (fusion, info) under an open analysis cache)."""
    return memoized("inner_outer", (fusion, info), lambda: _analyze(fusion, info))


def _analyze(fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
    structure = structure_of(fusion, partials=True)
    if len({op.split_count for op in structure.partials}) > 1:
        return "the partial sums have different splits: one kernel walks one set of row chunks"
    if SHARED_SUMS:
        shared = analyze_rows(structure, info, REGISTER_BUDGET, shared_sums=True)
        # short rows (several a block) keep their few sums in registers: a column sum of
        # [4194304, 16] f32 took 0.175 ms with them in shared memory, 0.125 in registers
        if not isinstance(shared, str) and shared[2].bdx >= SHORT_ROW_THREADS:
            _, problem, sizing = shared
            staged = (
                PREFETCH
                and (arch_number(info.device.arch) or 0) >= kernel.ASYNC_COPY_ARCH
                and can_stage(structure, problem.layout)
            )
            room = info.device.max_shared_memory_per_block - STATIC_SHARED_RESERVE
            options = [replace(sizing, prefetch=True), sizing] if staged else [sizing]
            for option in options:  # (rows this long: one a block)
                params = row_params(problem, option, 1)
                if shared_bytes(structure, params) <= room:
                    return structure, problem, option
    return analyze_rows(structure, info, REGISTER_BUDGET)


def shared_bytes(structure: Structure, p: PersistentParams) -> int:
    """The dynamic shared memory the kernel takes: its partial sums and staged reads."""
    return kernel.dynamic_shared_bytes(dynamic_arrays(structure, p))


def _rows_per_block(sizing: Sizing) -> int:
    """One row at a time, except short rows (fewer than `SHORT_ROW_THREADS` threads):
    `BLOCK_THREADS` threads of them at a time."""
    return 1 if sizing.bdx >= SHORT_ROW_THREADS else max(1, BLOCK_THREADS // sizing.bdx)


class InnerOuterScheduler(PersistentScheduler):
    """Norm backwards: row sums and column partial sums of one read of `[N, H]` inputs (the
    persistent template, one row per block at a time; see the module docstring)."""

    name = "inner_outer"

    def structure(self, fusion: fu.FusionOp) -> Structure:
        return structure_of(fusion, partials=True)

    def analysis(self, fusion: fu.FusionOp, info: FusionInfo) -> Analysis:
        return analyze(fusion, info)

    def rows_per_block(self, sizing: Sizing, problem: Problem, info: FusionInfo) -> int:
        return _rows_per_block(sizing)

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        structure = self.structure(fusion)
        grid = (structure.partials[0].split_count, 1, 1)
        check_grid(fusion, self.name, grid)
        shared = shared_bytes(structure, cast(PersistentParams, params))
        return LaunchConfig(grid, params.block, shared)

    def emit_body(self, parts: KernelParts, p: PersistentParams) -> None:
        """Block g walks the rows of chunk g (`row_walk.walk_rows`)."""
        walk_rows(parts, p)
