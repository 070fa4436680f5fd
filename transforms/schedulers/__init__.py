"""Kernel templates ("schedulers") for fusions, and the choice among them.

`SCHEDULERS` lists the templates in priority order; `propose` gives a fusion to the first that
accepts it. The order puts the most specialized template first, as a fusion a later one also
accepts runs better on an earlier one:

1. `pointwise`: pointwise ops, casts and broadcasts, no reduction.

The reduction and persistent (normalization) schedulers go after it when they exist: they accept
fusions with reductions, which `pointwise` rejects.
"""

from __future__ import annotations

from fuser.dialects.fusion import FusionOp
from fuser.transforms.schedulers.base import Params, Scheduler, SchedulingError
from fuser.transforms.schedulers.info import FusionInfo
from fuser.transforms.schedulers.pointwise import PointwiseScheduler

SCHEDULERS: tuple[Scheduler, ...] = (PointwiseScheduler(),)
"""Every scheduler, in priority order."""


def get_scheduler(name: str) -> Scheduler:
    """The scheduler called `name` (as in `fuser.scheduler` attributes)."""
    for scheduler in SCHEDULERS:
        if scheduler.name == name:
            return scheduler
    raise KeyError(f"no scheduler named {name!r}")


def propose(fusion: FusionOp, info: FusionInfo) -> tuple[Scheduler, Params]:
    """The first scheduler that accepts `fusion` for `info`, with its parameters.

    Raises SchedulingError listing every scheduler's reason when none accepts.
    """
    reasons: list[str] = []
    for scheduler in SCHEDULERS:
        verdict = scheduler.accepts(fusion, info)
        if verdict:
            return scheduler, scheduler.heuristics(fusion, info)
        reasons.append(f"  {scheduler.name}: {verdict.reason}")
    raise SchedulingError(
        f"no scheduler accepts fusion @{fusion.sym_name.data}:\n" + "\n".join(reasons)
    )
