"""What the two split rewrites share: `split-k` (matmuls) and `split-reductions` (column sums)
each plan a factor per candidate op from the concrete shapes and the SM count, then rewrite the
ops whose factor is above 1 with a pattern. `SplitPass` is their pass (options and the walk over a
module's fusions); `rewrite_split` applies a plan.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker, RewritePattern
from xdsl.utils.exceptions import DiagnosticException

from fuser.dialects import fusion as fu
from fuser.transforms.schedule import device_options, pass_fusion_info
from fuser.transforms.schedulers.info import DEFAULT_ARCH, DEFAULT_SM_COUNT, FusionInfo
from fuser.transforms.schedulers.shapes import ShapeMismatch


def rewrite_split(
    fusion: fu.FusionOp,
    ops: Sequence[Operation],
    factors: Sequence[int],
    pattern: Callable[[Mapping[Operation, int]], RewritePattern],
    where: str,
    what: str,
) -> int:
    """Rewrites each of `ops` (a fusion's candidates, in the order of the plan) whose factor
    in `factors` is above 1 with `pattern(chosen)`; returns how many. `where` names the caller
    and `what` the candidates ("plain matmul(s)") in the ValueError for a plan that does not
    fit."""
    if len(factors) != len(ops):
        raise ValueError(
            f"{where}: {len(factors)} factor(s) for the {len(ops)} {what} of fusion "
            f"@{fusion.sym_name.data}"
        )
    if any(f < 1 for f in factors):
        raise ValueError(f"{where}: split factors must be >= 1, got {list(factors)}")
    chosen: dict[Operation, int] = {op: f for op, f in zip(ops, factors, strict=True) if f > 1}
    if chosen:
        PatternRewriteWalker(pattern(chosen), apply_recursively=False).rewrite_region(fusion.body)
    return len(chosen)


@dataclass(frozen=True)
class SplitPass(ModulePass):
    """A split rewrite as a pass: `splits` forces the factor (1 never splits); unset, `plan`
    decides from `shapes` (each tensor input's concrete shape, as `fuser-schedule` takes them;
    recorded or static ones when omitted) on `sm_count` SMs of `arch`."""

    error: ClassVar[type[DiagnosticException]]
    """The exception of the pass's option errors."""

    splits: int | None = None
    shapes: str = ""
    arch: str = DEFAULT_ARCH
    sm_count: int = DEFAULT_SM_COUNT

    @abstractmethod
    def candidates(self, fusion: fu.FusionOp) -> Sequence[Operation]:
        """The ops of `fusion` the pass may split (none for a segmented fusion)."""

    @abstractmethod
    def plan(self, fusion: fu.FusionOp, info: FusionInfo | None) -> tuple[int, ...]:
        """The factor of each candidate (`info` is None where `splits` is forced and no shapes
        are given)."""

    @abstractmethod
    def rewrite(self, fusion: fu.FusionOp, factors: Sequence[int]) -> int:
        """Rewrites the candidates with the factors of the plan."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.splits is not None and self.splits < 1:
            raise self.error(
                f"{self.name}: splits must be at least 1 (1 never splits), got {self.splits}"
            )
        shapes, device = device_options(
            self.name, self.shapes, self.arch, self.sm_count, self.error
        )
        for fusion in [f for f in op.walk() if isinstance(f, fu.FusionOp)]:
            if not self.candidates(fusion):
                continue
            info = None
            if self.splits is None or shapes is not None:
                info = pass_fusion_info(self.name, fusion, shapes, device, self.error)
            try:
                factors = self.plan(fusion, info)
            except ShapeMismatch as e:
                raise self.error(
                    f"{self.name}: the shapes do not fit fusion @{fusion.sym_name.data}: {e}"
                ) from None
            self.rewrite(fusion, factors)
