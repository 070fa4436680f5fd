"""The inner-outer persistent scheduler: a fusion that reduces one 2-D tensor along both axes
(nvFuser's `InnerOuterPersistent`), such as the backward of layer norm and RMS norm: dx needs
sums over each row, dw and db sums over each column of the same per-element values.

It takes the form the `split-reductions` pass leaves: reductions over dim 1 of an `[N, H]`
space (any number of stages, as the persistent scheduler takes them) and `partial_sum`s over
dim 0 of it into `splits` chunks of rows, each an output of the fusion (the `segment_set` after
it is the kernel boundary; a plain `sum` over the chunks completes it in a second kernel). A
fusion with partial sums and no reduction is taken too: a column sum split over row chunks.

The kernel is the persistent template's (`persistent.emit_rows`) with one row per block at a
time: block g walks the rows of chunk g, and each row is read once and kept in registers across
its reductions, as there. A thread's slots are the same columns of every row, so the values a
partial sum adds up are added into an array of one register per slot; after the last row the
thread stores its array as row g of the partial sums (vectorized like the row). The inputs are
read from global memory once; the partial sums add `splits x H` elements, a few percent of the
traffic at the splits `split-reductions` picks.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import cast

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.analyses import memoized
from fuser.transforms.schedulers.base import (
    ACCEPT,
    LaunchConfig,
    Params,
    Scheduler,
    Verdict,
    check_grid,
    reject,
)
from fuser.transforms.schedulers.info import FusionInfo
from fuser.transforms.schedulers.persistent import PersistentParams, Sizing, emit_rows, size_row
from fuser.transforms.schedulers.reduction_layout import Problem, plan_layout, refusal_key
from fuser.transforms.schedulers.reduction_parts import KernelParts
from fuser.transforms.schedulers.reduction_structure import Structure, structure_of

REGISTER_BUDGET = 128
"""32-bit registers per thread for the slots' values (the persistent scheduler allows 40): the
kernel runs one row per block at a time, so its blocks are better small, with more of the row
per thread. On an H100, layer norm backward of [16384, 4096] went from 0.277 to 0.201 ms in
bf16 and from 0.375 to 0.295 ms in f32 (blocks of 512 and 1024 threads to 256), RMS norm's
unchanged (benchmarks/RESULTS.md, run 23). Two rows per block at a time (a row per
`threadIdx.y`, the accumulators summed across it at the end) was slower on every shape tried
but one."""


def analyze(fusion: fu.FusionOp, info: FusionInfo) -> tuple[Structure, Problem, Sizing] | str:
    """The structure, layout and row sizing of `fusion` for `info`, or why the template does
    not take it (once per (fusion, info) under an open analysis cache)."""
    return memoized("inner_outer", (fusion, info), lambda: _analyze(fusion, info))


def _analyze(fusion: fu.FusionOp, info: FusionInfo) -> tuple[Structure, Problem, Sizing] | str:
    structure = structure_of(fusion, partials=True)
    if structure.error is not None:
        return structure.error
    if not structure.partials:
        return "no 'fusion.partial_sum' over rows (the persistent scheduler's form)"
    if len({op.split_count for op in structure.partials}) > 1:
        return "the partial sums have different splits: one kernel walks one set of row chunks"
    problem = plan_layout(structure, info)
    if isinstance(problem, str):
        return problem
    if not problem.layout.inner:
        return (
            "the rows are not the fastest-varying dim of the inputs: the inner-outer scheduler "
            "walks rows along the fastest dim"
        )
    sizing = size_row(structure, problem, REGISTER_BUDGET)
    if isinstance(sizing, str):
        return sizing
    return structure, problem, sizing


class InnerOuterScheduler(Scheduler):
    """Norm backwards: row sums and column partial sums of one read of `[N, H]` inputs."""

    name = "inner_outer"

    def accepts(self, fusion: fu.FusionOp, info: FusionInfo) -> Verdict:
        result = analyze(fusion, info)
        return reject(result) if isinstance(result, str) else ACCEPT

    def heuristics_key(self, fusion: fu.FusionOp, info: FusionInfo) -> Hashable:
        """The layout and the row's sizing (threads per row, chunks per thread)."""
        result = analyze(fusion, info)
        if isinstance(result, str):
            return refusal_key(structure_of(fusion, partials=True), info, result)
        _, problem, sizing = result
        return (problem.layout, sizing.bdx, sizing.chunks)

    def heuristics(self, fusion: fu.FusionOp, info: FusionInfo) -> PersistentParams:
        result = analyze(fusion, info)
        if isinstance(result, str):
            raise ValueError(
                f"inner-outer scheduler cannot schedule @{fusion.sym_name.data}: {result}"
            )
        _, problem, sizing = result
        return PersistentParams(
            block=(sizing.bdx, 1, 1), layout=problem.layout, chunks=sizing.chunks
        )

    def launch_config(self, fusion: fu.FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        p = cast(PersistentParams, params)
        splits = structure_of(fusion, partials=True).partials[0].split_count
        grid = (splits, 1, 1)
        check_grid(fusion, self.name, grid)
        return LaunchConfig(grid, p.block)

    def emit(self, fusion: fu.FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        p = cast(PersistentParams, params)
        structure = structure_of(fusion, partials=True)
        assert structure.error is None, structure.error
        parts = KernelParts(structure, p.layout, kernel_name, p.block[0])
        with parts.kb.build():
            emit_rows(parts, p)
        return parts.kb.func
