"""The shape every scheduler has: `accepts`, `heuristics`, `emit`, `launch_config`.

A scheduler is a kernel template. `accepts` says whether a fusion fits the template (with a reason
that `FUSER_DUMP=segmenter_log` shows), `heuristics` picks the template's parameters from a
`FusionInfo` (a frozen dataclass, so it prints in the IR and compares by value), `emit` builds the
`kernel.func` from the template and the scalar lowering, and `launch_config` computes the grid and
block for concrete input shapes.

`heuristics_key` is what a new shape is compared by: a small value (the layout class, the row
length class, the rows per block, ...) from which the verdict and the heuristics follow, so that
`cached_heuristics` computes the parameters once per key, not once per shape, as nvFuser's
heuristics reuse does. Equal keys must give equal parameters; a key may be finer than the
parameters (two keys, one kernel) but never coarser.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from xdsl.dialects.builtin import TensorType
from xdsl.utils.exceptions import DiagnosticException

from fuser.dialects import kernel
from fuser.dialects.fusion import FusionOp
from fuser.errors import CompilationError
from fuser.transforms.schedulers.analyses import active, memoized
from fuser.transforms.schedulers.info import FusionInfo
from fuser.transforms.schedulers.shapes import ShapeEnv, ShapeMismatch, value_shapes


class SchedulingError(CompilationError, DiagnosticException):
    """No kernel can be generated for a fusion (no scheduler accepts it, or bad shapes).

    A `CompilationError` for the Python API and a `DiagnosticException` for `fuser-opt`, which
    then prints the message without a traceback.
    """


MAX_GRID = (2**31 - 1, 65535, 65535)
"""CUDA's largest grid: blocks along x, y and z."""


def check_grid(fusion: FusionOp, scheduler: str, grid: tuple[int, int, int]) -> None:
    """Raises a `SchedulingError` naming the fusion when `grid` is over CUDA's `MAX_GRID`."""
    if any(g > limit for g, limit in zip(grid, MAX_GRID, strict=True)):
        raise SchedulingError(
            f"fusion @{fusion.sym_name.data}: the {scheduler} grid {list(grid)} is over CUDA's "
            f"grid limits (x <= {MAX_GRID[0]}, y and z <= {MAX_GRID[1]})"
        )


@dataclass(frozen=True)
class Verdict:
    """Whether a scheduler accepts a fusion, and why not."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


ACCEPT = Verdict(True)


def reject(reason: str) -> Verdict:
    return Verdict(False, reason)


@dataclass(frozen=True)
class LaunchConfig:
    """Grid, block and dynamic shared memory of one kernel launch."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class Params:
    """Base of every scheduler's heuristics: the block shape the kernel is compiled for."""

    block: tuple[int, int, int]


class Scheduler(ABC):
    """A kernel template for a class of fusions."""

    name: ClassVar[str]

    @abstractmethod
    def accepts(self, fusion: FusionOp, info: FusionInfo) -> Verdict: ...

    @abstractmethod
    def heuristics(self, fusion: FusionOp, info: FusionInfo) -> Params: ...

    def heuristics_key(self, fusion: FusionOp, info: FusionInfo) -> Hashable:
        """A small value that decides `accepts` and `heuristics` of `fusion` for `info`: two
        infos with equal keys get the same verdict and equal heuristics (see the module
        docstring). This default is `info` itself: every shape is its own class."""
        return info

    def contenders(self, params: Params) -> tuple[str, ...]:
        """Later schedulers worth timing against this one's kernel with `params`, where its
        heuristics cannot tell which is faster (multi-kernel; none by default)."""
        return ()

    @abstractmethod
    def emit(self, fusion: FusionOp, params: Params, kernel_name: str) -> kernel.FuncOp:
        """The kernel for `fusion`: parameters are the fusion's inputs then its outputs."""

    @abstractmethod
    def launch_config(self, fusion: FusionOp, params: Params, info: FusionInfo) -> LaunchConfig:
        """The launch of the kernel `emit` built from `params` for the shapes of `info`."""


A = TypeVar("A")


class AnalyzedScheduler(Scheduler, Generic[A]):
    """A scheduler whose verdict, key and heuristics all follow from one analysis of a fusion
    for an info (an `A`, or the reason it does not take the fusion): it writes `analysis`,
    `params_of`, and where they differ from the defaults `key_of`, `refusal_key` and
    `verdict_of`; `accepts`, `heuristics_key` and `heuristics` ask them the same way for every
    such scheduler."""

    @abstractmethod
    def analysis(self, fusion: FusionOp, info: FusionInfo) -> A | str:
        """What the scheduler knows of `fusion` for `info`, or why it does not take it."""

    @abstractmethod
    def params_of(self, fusion: FusionOp, info: FusionInfo, analysis: A) -> Params:
        """The template's parameters from an accepted analysis."""

    def key_of(self, fusion: FusionOp, info: FusionInfo, analysis: A) -> Hashable:
        """The heuristics key of an accepted analysis (default: the parameters themselves)."""
        return self.params_of(fusion, info, analysis)

    def refusal_key(self, fusion: FusionOp, info: FusionInfo, reason: str) -> Hashable:
        """The heuristics key of a refusal (default: `info`, every shape its own class)."""
        return info

    def verdict_of(self, fusion: FusionOp, info: FusionInfo, analysis: A) -> Verdict:
        """A last check of an analysis (default: it is accepted)."""
        return ACCEPT

    def accepts(self, fusion: FusionOp, info: FusionInfo) -> Verdict:
        result = self.analysis(fusion, info)
        if isinstance(result, str):
            return reject(result)
        return self.verdict_of(fusion, info, result)

    def heuristics_key(self, fusion: FusionOp, info: FusionInfo) -> Hashable:
        result = self.analysis(fusion, info)
        if isinstance(result, str):
            return self.refusal_key(fusion, info, result)
        if not self.verdict_of(fusion, info, result):
            return ("refused", info)
        return self.key_of(fusion, info, result)

    def heuristics(self, fusion: FusionOp, info: FusionInfo) -> Params:
        result = self.analysis(fusion, info)
        if isinstance(result, str):
            raise ValueError(
                f"{self.name} scheduler cannot schedule @{fusion.sym_name.data}: {result}"
            )
        return self.params_of(fusion, info, result)


def cached_heuristics(scheduler: Scheduler, fusion: FusionOp, info: FusionInfo) -> Params:
    """`scheduler.heuristics(fusion, info)` (the scheduler must accept), computed once per
    `heuristics_key` while an analysis cache is open, and every time otherwise."""
    if active() is None:
        return scheduler.heuristics(fusion, info)
    key = scheduler.heuristics_key(fusion, info)
    return memoized(
        "params", (scheduler.name, fusion, key), lambda: scheduler.heuristics(fusion, info)
    )


def call_shapes(fusion: FusionOp, info: FusionInfo) -> ShapeEnv | str:
    """The shape of every value of `fusion` for one call (`info`), or why the call does not fit:
    `info` describes other inputs (`info_mismatch`), or its shapes disagree (`ShapeMismatch`)."""
    if (problem := info_mismatch(fusion, info)) is not None:
        return problem
    try:
        return value_shapes(fusion, info.input_shapes)
    except ShapeMismatch as e:
        return str(e)


def info_mismatch(fusion: FusionOp, info: FusionInfo) -> str | None:
    """Why `info` does not describe the inputs of `fusion` (count, tensor or scalar, rank), or
    None: the first check of every scheduler's `accepts`."""
    if len(info.inputs) != len(fusion.inputs):
        return f"{len(info.inputs)} input(s) described for {len(fusion.inputs)} fusion inputs"
    for i, (arg, meta) in enumerate(zip(fusion.inputs, info.inputs, strict=True)):
        t = arg.type
        rank = t.get_num_dims() if isinstance(t, TensorType) else None
        if (meta is None) != (rank is None) or (meta is not None and len(meta.shape) != rank):
            return f"input #{i} of type {t} is described as {meta}"
    return None
