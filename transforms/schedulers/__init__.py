"""Kernel templates ("schedulers") for fusions, and the choice among them.

`SCHEDULERS` lists the templates in priority order; `propose` gives a fusion to the first that
accepts it. The order puts the most specialized template first, as a fusion a later one also
accepts runs better on an earlier one:

1. `transpose`: pointwise fusions reading an input whose fastest dim is not the output's (a
   transposed view): tiles staged through shared memory, read and written coalesced.
2. `pointwise`: pointwise ops, casts and broadcasts, no reduction.
3. `reduction`: reductions of one shape over the same axes with a pointwise prologue, an
   epilogue on reduced values and full-shape outputs of the prologue, read in one streaming pass;
   it rejects fusions with persistent buffers (a reduction result used with per-element values,
   or a reduction of another's result).
4. `persistent`: inner normalizations (softmax, layer norm, RMS norm) whose rows fit in
   registers: each row is read once and kept on chip across its reductions.
5. `inner_outer`: the `split-reductions` form of a fusion reducing one 2-D tensor along both
   axes (norm backwards): row reductions and partial sums over chunks of rows, from one read of
   each row kept in registers.
6. `looped`: inner normalizations whose rows are too long for registers (softmax over a large
   vocabulary): one kernel that walks each row once per stage of reductions, the later walks
   served by L2.
7. `scan`: one scan (`cumsum`, `cumprod`, `cummax`, `cummin`) with pointwise ops before and
   after it on its shape: rows scanned by a warp to a block each, in tiles with a running value
   carried across them; other dims by a thread per column.
8. `sort`: one `topk` or `argsort` along rows with pointwise ops before and after it: a block
   per row, held in registers, a radix selection of the k-th key and a bitonic sort of the k
   taken in shared memory.
9. `matmul`: one `fusion.matmul` (2-D or batched, or a split-K partial) with a pointwise
   epilogue, as one tiled kernel (tensor cores for f16/bf16). No other template takes a matmul
   and it takes nothing else, so its place in the order only decides whose reason comes first.
"""

from __future__ import annotations

from fuser.dialects.fusion import FusionOp
from fuser.transforms.schedulers.base import (
    Params,
    Scheduler,
    SchedulingError,
    cached_heuristics,
)
from fuser.transforms.schedulers.info import FusionInfo
from fuser.transforms.schedulers.inner_outer import InnerOuterScheduler
from fuser.transforms.schedulers.looped import LoopedScheduler
from fuser.transforms.schedulers.matmul import MatmulScheduler
from fuser.transforms.schedulers.persistent import PersistentScheduler
from fuser.transforms.schedulers.pointwise import PointwiseScheduler
from fuser.transforms.schedulers.reduction import ReductionScheduler
from fuser.transforms.schedulers.scan import ScanScheduler
from fuser.transforms.schedulers.sort import SortScheduler
from fuser.transforms.schedulers.transpose import TransposeScheduler

SCHEDULERS: tuple[Scheduler, ...] = (
    TransposeScheduler(),
    PointwiseScheduler(),
    ReductionScheduler(),
    PersistentScheduler(),
    InnerOuterScheduler(),
    LoopedScheduler(),
    ScanScheduler(),
    SortScheduler(),
    MatmulScheduler(),
)
"""Every scheduler, in priority order."""


def get_scheduler(name: str) -> Scheduler:
    """The scheduler called `name` (as in `fuser.scheduler` attributes)."""
    for scheduler in SCHEDULERS:
        if scheduler.name == name:
            return scheduler
    raise KeyError(f"no scheduler named {name!r}")


def contenders(
    fusion: FusionOp, info: FusionInfo, first: Scheduler, params: Params, most: int
) -> list[tuple[Scheduler, Params]]:
    """The schedulers `first` names as worth timing against its kernel with `params` that
    accept `fusion` for `info` (at most `most`), with their parameters (multi-kernel)."""
    found: list[tuple[Scheduler, Params]] = []
    for name in first.contenders(params)[:most]:
        scheduler = get_scheduler(name)
        if scheduler.accepts(fusion, info):
            found.append((scheduler, cached_heuristics(scheduler, fusion, info)))
    return found


def propose(fusion: FusionOp, info: FusionInfo) -> tuple[Scheduler, Params]:
    """The first scheduler that accepts `fusion` for `info`, with its parameters.

    Raises SchedulingError listing every scheduler's reason when none accepts. The parameters
    are computed once per heuristics key while an analysis cache is open (`cached_heuristics`).
    """
    reasons: list[str] = []
    for scheduler in SCHEDULERS:
        verdict = scheduler.accepts(fusion, info)
        if verdict:
            return scheduler, cached_heuristics(scheduler, fusion, info)
        reasons.append(f"  {scheduler.name}: {verdict.reason}")
    raise SchedulingError(
        f"no scheduler accepts fusion @{fusion.sym_name.data}:\n" + "\n".join(reasons)
    )
