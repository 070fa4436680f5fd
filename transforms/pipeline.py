"""`fuser-compile`: the pipeline from a fusion to a host program and its kernels, defined once.

`PIPELINE` lists the stages in order, each the function its own pass applies:

1. `fuser-decompose` (`transforms.decompose`): ops no scheduler reads (`scatter`) rewritten
   into ops they do;
2. `fuser-hoist-views` (`transforms.hoist_views`): reshapes and slices moved above pointwise
   chains to the inputs;
3. `split-k` (`transforms.split_k`): the matmuls the compiler split, rewritten;
4. `split-reductions` (`transforms.split_reductions`): the column sums split beside row sums;
5. `fuser-segment` (`transforms.segment`): the fusion cut into scheduled segments;
6. `fuser-lower-host` (`transforms.lower_to_host`): a `host.program` and a `kernel.func` per
   segment;
7. `lower-stream-parallel` (`transforms.lower_stream_parallel`): marked loops over streams;
8. `fuser-plan-memory` (`transforms.plan_memory`): the intermediates in one workspace.

Before them, outputs with a stride order are made row-major permutations of themselves
(`transforms.output_layouts`; `FusionCompiler` hands them back permuted, as it writes aliased
outputs into their inputs after a run).

`run_pipeline` runs them on a `Compilation` (one fusion, its input metadata and the options).
`fd.execute` runs it for a signature that needs a new program (`FusionCompiler._new_program`),
and `fuser-opt -p 'fuser-compile{shapes=...}'` runs the same stages through `CompilePass`, which
replaces each `fusion.fusion` of a module by its program and kernels: what `execute` runs is
what the pass prints. Options of the pass: `shapes`, `arch` and `sm_count` as every pass takes
them (without `shapes`, the recorded or static ones), `streams` (as `lower-stream-parallel`),
`splits` (as `split-k`: unset lets the planner choose; the column sums `split-reductions` would
split are planned by their own rule), `merge` and `welford` (as
`fuser-segment`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from fuser.dialects import fusion as fu
from fuser.options import DEFAULT_STREAMS
from fuser.transforms.decompose import decompose
from fuser.transforms.hoist_views import hoist_views
from fuser.transforms.lower_stream_parallel import lower_stream_parallel
from fuser.transforms.lower_to_host import HostLowering, lower_fusion, replace_by_lowering
from fuser.transforms.output_layouts import physical_outputs
from fuser.transforms.plan_memory import plan_memory
from fuser.transforms.schedule import (
    ScheduleOptionError,
    device_options,
    pass_fusion_info,
    recorded_shapes,
)
from fuser.transforms.schedulers.analyses import AnalysisCache, cached_analyses
from fuser.transforms.schedulers.info import DEFAULT_ARCH, DEFAULT_SM_COUNT, FusionInfo
from fuser.transforms.schedulers.kernel_builder import kernel_comments
from fuser.transforms.schedulers.shapes import ShapeMismatch
from fuser.transforms.segment import SegmentationError, segment_fusion
from fuser.transforms.segment_rules import MergePredicate, merge_rule
from fuser.transforms.split_k import apply_split_k, plan_split_k
from fuser.transforms.split_reductions import (
    apply_split_reductions,
    plan_split_reductions,
    split_pays,
)
from fuser.transforms.translate_welford import check_mode


@dataclass
class Compilation:
    """One fusion on its way through `PIPELINE`: the fusion (rewritten in place by split-K and
    segmentation: pass a copy to keep the original), its input metadata and the options, and
    what the stages leave (the segmenter's log, the lowering)."""

    fusion: fu.FusionOp
    info: FusionInfo
    split_factors: tuple[int, ...] = ()
    should_merge: MergePredicate | None = None
    welford: str = "auto"
    streams: int = DEFAULT_STREAMS
    kernel_prefix: str | None = None
    comments: bool | None = None
    """Whether kernels get `kernel.comment` ops (None: as the caller's `kernel_comments`)."""
    analyses: AnalysisCache | None = None
    """Where the lowering keeps the schedulers' analyses of the final segments (for reuse)."""
    reduction_splits: tuple[int, ...] = ()
    """The `split-reductions` factors of the fusion's column sums."""
    unsplit: fu.FusionOp | None = None
    """The fusion before `split-reductions` split it, until it is segmented."""
    log: list[str] = field(default_factory=list[str])
    lowering: HostLowering | None = None

    @property
    def lowered(self) -> HostLowering:
        assert self.lowering is not None, "the pipeline has not lowered the fusion yet"
        return self.lowering


def _decompose(c: Compilation) -> None:
    decompose(c.fusion)


def _hoist_views(c: Compilation) -> None:
    hoist_views(c.fusion, c.info)


def _split_k(c: Compilation) -> None:
    if c.split_factors:
        apply_split_k(c.fusion, c.split_factors)


def _split_reductions(c: Compilation) -> None:
    if any(f > 1 for f in c.reduction_splits):
        c.unsplit = c.fusion.clone()
        apply_split_reductions(c.fusion, c.reduction_splits)


def _segment(c: Compilation) -> None:
    def segment() -> None:
        segment_fusion(c.fusion, c.info, should_merge=c.should_merge, log=c.log, welford=c.welford)

    if c.unsplit is None:
        segment()
        return
    try:
        segment()
        why = None if split_pays(c.fusion) else "a partial sum is in a segment without row sums"
    except SegmentationError as e:
        why = f"the split fusion has no segmentation: {e}"
    if why is not None:  # segment the fusion as it was before `split-reductions`
        c.log.append(f"split-reductions: undone, {why}")
        c.fusion = c.unsplit
        segment()
    c.unsplit = None


def _lower(c: Compilation) -> None:
    scope = nullcontext() if c.analyses is None else cached_analyses(c.analyses)
    with kernel_comments(c.comments), scope:
        c.lowering = lower_fusion(c.fusion, c.info, kernel_prefix=c.kernel_prefix)


def _streams(c: Compilation) -> None:
    lower_stream_parallel(c.lowered.program, c.streams)


def _plan_memory(c: Compilation) -> None:
    plan_memory(c.lowered.program)


Stage = Callable[[Compilation], None]

PIPELINE: tuple[tuple[str, Stage], ...] = (
    ("fuser-decompose", _decompose),
    ("fuser-hoist-views", _hoist_views),
    ("split-k", _split_k),
    ("split-reductions", _split_reductions),
    ("fuser-segment", _segment),
    ("fuser-lower-host", _lower),
    ("lower-stream-parallel", _streams),
    ("fuser-plan-memory", _plan_memory),
)
"""The stages from a fusion to a host program, in order, by the name of the pass of each."""


def run_pipeline(
    c: Compilation, after: Callable[[str, Compilation], None] | None = None
) -> HostLowering:
    """Run every stage of `PIPELINE` on `c` (calling `after(stage name, c)` after each, for
    dumps) and return the lowering."""
    for name, stage in PIPELINE:
        stage(c)
        if after is not None:
            after(name, c)
    return c.lowered


@dataclass(frozen=True)
class CompilePass(ModulePass):
    """Runs `PIPELINE` on every `fusion.fusion` of a module and replaces it by its program and
    kernels (see the module docstring)."""

    name = "fuser-compile"

    shapes: str = ""
    arch: str = DEFAULT_ARCH
    sm_count: int = DEFAULT_SM_COUNT
    streams: int = DEFAULT_STREAMS
    splits: int | None = None
    merge: str = ""
    welford: str = "auto"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_mode(self.welford, self.name)
        if self.streams < 1:
            raise ScheduleOptionError(
                f"{self.name}: streams must be at least 1, got {self.streams}"
            )
        if self.splits is not None and self.splits < 1:
            raise ScheduleOptionError(
                f"{self.name}: splits must be at least 1 (1 never splits), got {self.splits}"
            )
        predicate = merge_rule(self.merge, self.name, ScheduleOptionError)
        shapes, device = device_options(
            self.name, self.shapes, self.arch, self.sm_count, ScheduleOptionError
        )
        for fusion in [f for f in op.walk() if isinstance(f, fu.FusionOp)]:
            physical_outputs(fusion)  # as FusionCompiler does first (fuser-output-layouts)
            given = (
                shapes
                if shapes is not None
                else recorded_shapes(fusion, self.name, ScheduleOptionError)
            )
            info = pass_fusion_info(self.name, fusion, given, device, ScheduleOptionError)
            try:
                factors = plan_split_k(
                    fusion, info.input_shapes, self.sm_count, splits=self.splits, arch=self.arch
                )
                c = Compilation(fusion, info, factors, predicate, self.welford, self.streams)
                c.reduction_splits = plan_split_reductions(fusion, info)
                lowering = run_pipeline(c)
            except ShapeMismatch as e:
                raise ScheduleOptionError(
                    f"{self.name}: the input shapes do not fit fusion @{fusion.sym_name.data}: {e}"
                ) from None
            replace_by_lowering(fusion, lowering)
