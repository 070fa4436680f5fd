"""`translate-welford`: Welford statistics as two plain passes, where a persistent kernel gains.

`fusion.welford` (avg, var_sum, count) and `fusion.var_mean` (var, mean) compute the mean and
the sum of squared deviations of each row in one pass. Once a row stays on chip (the inner
persistent scheduler), the same statistics are two plain sums over it, which is what nvFuser's
`TranslateApplicableWelford` (`csrc/fusion_segmenter.cpp`) rewrites them into:

    sum = fusion.sum x [axes]
    mean = fusion.div sum, N                      (the old avg / mean)
    mean_b = fusion.broadcast_in_dim mean ...     (an existing broadcast of the mean, if any)
    dev = fusion.sub x, mean_b
    var_sum = fusion.sum (fusion.mul dev, dev) [axes]
    var = fusion.div var_sum, max(N - correction, 0)      (var_mean only)

The deviations are taken from the mean itself, so a large mean (1e4, std 1) does not cancel, as
in the reference interpreter. When the fusion already broadcasts the mean to the input's shape
(layer norm subtracts it), that broadcast is reused (moved up to the mean, with the
`fusion.dim`s its sizes need), as nvFuser does; the subtraction is not (see `_translate`).

**The element count N.** Where every reduced extent is static in the input's type, N is a scalar
`fusion.constant` (and welford's `count` a broadcast of it). Where one is dynamic, N is the sum
over the reduced axes of a broadcast `1 : i64`: `fusion.dim` extents are `index` values, which
the kernels cannot yet read as numbers (`lower_pointwise` has no lowering for a cast of an
`index`), while a sum of a constant is a reduction of the same shape and axes as the mean's own,
so it lands in the same kernel and stage. On an H100 the extra block reduction cost nothing
measurable for layer norm f32 [8192, 8192] (182.9 us with the count as a scalar kernel
parameter, 183.0 us with the sum of ones) and about 3% for bf16 [16384, 4096] (104.8 vs 107.6
us). `_element_count` is the one place to change once an extent can be a number in the kernels.

**When** (`decide`, nvFuser's `wouldTranslateToPersistent`; `decision_key` says which shapes
share a decision): with `mode=auto` a fusion (or a
segment, in `fuser-segment`) is translated only if the persistent scheduler accepts the
translated form for the given shapes (its rows fit in registers) and it reduces over the innermost
dims; a row that does not fit keeps its one-pass Welford (the looped scheduler walks such a row
once per pass from L2, and the two-pass form would add a pass), and a reduction over outer dims
would need the reduction split across blocks (a grid reduction) to keep the two passes on chip.
`AUTO_TRANSLATE` then says, by the scheduler that takes the Welford form, whether the two-pass
form is wanted: that table is the one place to change the defaults (`benchmarks/welford.py`
times both paths; as measured, normalizations keep the in-kernel Welford and statistics alone
are translated). `mode=always` translates every
Welford, `mode=never` none.

The pass `translate-welford{mode=auto shapes="16384x4096" arch=sm_90 sm_count=132}` applies this
to every `fusion.fusion` of a module that is not segmented yet (`shapes` as for
`fuser-schedule`; needed with `mode=auto` unless the shapes are static). The compiler and
`fuser-segment` call `decide` and `translate_region` themselves.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from fuser.dialects import fusion as fu
from fuser.options import WELFORD_MODES
from fuser.transforms.schedule import device_options, pass_fusion_info
from fuser.transforms.schedulers import SCHEDULERS
from fuser.transforms.schedulers.info import DEFAULT_ARCH, DEFAULT_SM_COUNT, FusionInfo
from fuser.transforms.schedulers.persistent import PersistentScheduler
from fuser.transforms.schedulers.reduction_layout import plan_layout
from fuser.transforms.schedulers.reduction_structure import structure_of

__all__ = [
    "AUTO_TRANSLATE",
    "MODES",
    "Decision",
    "TranslateWelford",
    "TranslateWelfordOptionError",
    "TranslateWelfordPass",
    "check_mode",
    "decide",
    "decision_key",
    "translate_region",
    "translated",
    "welford_ops",
]

MODES = WELFORD_MODES
"""The values of the `mode` option (`fuser.options.WELFORD_MODES`)."""

AUTO_TRANSLATE: dict[str, bool] = {
    "persistent": False,
    "reduction": True,
}
"""With `mode=auto`, for a fusion or segment whose two-pass form the persistent scheduler
accepts: whether to translate it, by the scheduler that takes it untranslated (a fusion that no
scheduler takes untranslated is translated). The one place to change the defaults;
`benchmarks/welford.py` times both paths.

- `persistent`: layer norm and other normalizations, whose rows stay in registers either way.
  nvFuser translates them; here the in-kernel Welford (already two passes over registers, one
  block reduction fewer) was as fast or faster on an H100: layer norm f32 [8192, 8192] 0.178 vs
  0.177 ms, f32 [65536, 1024] 0.177 vs 0.179 ms, bf16 [16384, 4096] 0.109 vs 0.090 ms.
- `reduction`: statistics alone (`var_mean` of a tensor), which the reduction scheduler reads in
  one streaming pass; nvFuser keeps those (its PR #2491: no gain). Here, on an H100, var_mean(-1)
  f32 [16384, 4096] took 0.089-0.090 ms as two passes in registers (persistent) vs 0.091-0.092
  ms in one streaming pass, bf16 0.048 vs 0.049 ms: translated. Rows too long for registers and
  outer reductions keep the streaming Welford (see above).
"""

WelfordLike = fu.WelfordOp | fu.VarMeanOp


class TranslateWelfordOptionError(DiagnosticException):
    """A `translate-welford` (or `welford=`) option that is malformed or does not fit."""


def check_mode(mode: str, where: str) -> str:
    """`mode` if it is one of MODES, else a TranslateWelfordOptionError naming `where`."""
    if mode not in MODES:
        raise TranslateWelfordOptionError(
            f"{where}: unknown Welford translation mode {mode!r}: expected one of "
            + ", ".join(MODES)
        )
    return mode


def welford_ops(region: Region | Block) -> list[Operation]:
    """The `fusion.welford` and `fusion.var_mean` ops of a region or block, in order."""
    return [op for op in region.walk() if isinstance(op, WelfordLike)]


# --------------------------------------------------------------------------------------------
# The rewrite
# --------------------------------------------------------------------------------------------


def _blocker(op: fu.WelfordOp | fu.VarMeanOp) -> str | None:
    """Why `op` cannot be rewritten (results declared with different shapes), or None."""
    shapes = {tuple(cast(TensorType, r.type).get_shape()) for r in op.results}
    if len(shapes) != 1:
        return f"'{op.name}' declares results of different shapes"
    return None


def _hint(base: str | None, suffix: str) -> str:
    name = f"{base}_{suffix}" if base else suffix
    return name if re.fullmatch(r"[A-Za-z_$.-][A-Za-z0-9_$.-]*", name) else suffix


class _Builder:
    """The new ops of one translation, in order, with the `fusion.dim`s they need."""

    def __init__(self, op: Operation, x: SSAValue) -> None:
        self.x = x
        self.ops: list[Operation] = []
        block = op.parent_block()
        assert block is not None
        self.block = block
        self.position = {o: i for i, o in enumerate(block.ops)}
        self.limit = self.position[op]
        self.dims: dict[int, SSAValue] = {}
        for o in list(block.ops)[: self.limit]:
            if isinstance(o, fu.DimOp) and o.input is x:
                self.dims.setdefault(o.axis.value.data, o.result)

    def add(self, op: Operation, name: str | None = None) -> SSAValue:
        self.ops.append(op)
        if name is not None:
            op.results[0].name_hint = name
        return op.results[0]

    def dim(self, axis: int) -> SSAValue:
        """The extent of the input along `axis` (an existing `fusion.dim` before the op, or a
        new one)."""
        if axis not in self.dims:
            name = _hint(self.x.name_hint, f"size{axis}")
            self.dims[axis] = self.add(fu.DimOp(self.x, axis), name)
        return self.dims[axis]

    def available(self, v: SSAValue, moves: list[Operation]) -> bool:
        """Whether `v` is defined before the op, or by a `fusion.dim` of such a value that can
        move up (appended to `moves`)."""
        if isinstance(v, BlockArgument):
            return True
        owner = v.owner
        assert isinstance(owner, Operation)
        if owner.parent_block() is not self.block:
            return False
        if self.position[owner] < self.limit or owner in moves:
            return True
        if isinstance(owner, fu.DimOp) and self.available(owner.input, moves):
            moves.append(owner)
            return True
        return False


def _element_count(
    b: _Builder, axes: Sequence[int], keep: bool, reduced: Sequence[int], t: Attribute
) -> tuple[SSAValue, SSAValue | None]:
    """N as a value to divide by (a scalar of type `t`, or a tensor of the reduced shape), and
    the count as an i64 tensor of the reduced shape where it is one already (else None)."""
    shape = cast(TensorType, b.x.type).get_shape()
    extents = [shape[a] for a in axes]
    base = b.x.name_hint
    if DYNAMIC_INDEX not in extents:
        return b.add(fu.ConstantOp.of(float(math.prod(extents)), t), _hint(base, "count")), None
    one = b.add(fu.ConstantOp.of(1, fu.I64), "one")
    sizes = [b.dim(d) for d, e in enumerate(shape) if e == DYNAMIC_INDEX]
    ones = b.add(fu.BroadcastInDimOp(one, [], TensorType(fu.I64, shape), sizes), "ones")
    count = b.add(fu.SumOp(ones, axes, keep, TensorType(fu.I64, reduced)), _hint(base, "count"))
    return b.add(fu.CastOp(count, TensorType(t, reduced)), _hint(base, "count_f")), count


def _existing_broadcast(
    b: _Builder, old_mean: SSAValue, dims: tuple[int, ...]
) -> tuple[fu.BroadcastInDimOp, list[Operation]] | None:
    """A broadcast of the old mean to the input's shape that can move up to the new mean, and
    the `fusion.dim`s defined after the op that its sizes need (moved up too), or None. Its
    sizes must be the input's own extents (`fusion.dim`s of it): a broadcast of the mean to
    another tensor's extents has the input's type but not, at run time, its shape."""
    for use in old_mean.uses:
        bcast = use.operation
        if (
            isinstance(bcast, fu.BroadcastInDimOp)
            and use.index == 0
            and bcast.result.type == b.x.type
            and bcast.dims == dims
            and bcast.parent_block() is b.block
            and all(
                isinstance(size.owner, fu.DimOp)
                and size.owner.input is b.x
                and size.owner.axis.value.data == d
                for d, size in zip(bcast.sized_dims(), bcast.sizes, strict=True)
            )
        ):
            moves: list[Operation] = []
            if all(b.available(s, moves) for s in bcast.sizes):
                return bcast, moves
    return None


def _mean_broadcast(
    b: _Builder, mean: SSAValue, dims: tuple[int, ...], existing: fu.BroadcastInDimOp | None
) -> SSAValue:
    """`mean` broadcast to the input's shape: the existing broadcast, moved here, or a new
    one."""
    if existing is not None:
        existing.detach()
        b.ops.append(existing)
        return existing.result
    x_type = cast(TensorType, b.x.type)
    mean_shape = cast(TensorType, mean.type).get_shape()
    sizes = [b.dim(d) for d in fu.broadcast_sized_dims(mean_shape, dims, x_type.get_shape())]
    return b.add(fu.BroadcastInDimOp(mean, dims, x_type, sizes), _hint(mean.name_hint, "b"))


def _translate(op: fu.WelfordOp | fu.VarMeanOp, rewriter: PatternRewriter) -> None:
    x = op.input
    x_type = cast(TensorType, x.type)
    t = x_type.element_type
    rank = x_type.get_num_dims()
    axes = tuple(op.axes.get_values())
    keep = isinstance(op, fu.VarMeanOp) and op.keepdim is not None
    old_mean = op.avg if isinstance(op, fu.WelfordOp) else op.mean
    mean_type = old_mean.type
    reduced = tuple(mean_type.get_shape())
    b = _Builder(op, x)
    base = x.name_hint
    dims = tuple(range(rank)) if keep else tuple(d for d in range(rank) if d not in axes)
    found = _existing_broadcast(b, old_mean, dims)
    existing = None
    if found is not None:
        existing, moves = found
        for moved in moves:  # the dims its sizes need go first: they depend on inputs only
            moved.detach()
            b.ops.append(moved)
            if isinstance(moved, fu.DimOp) and moved.input is x:
                b.dims.setdefault(moved.axis.value.data, moved.result)

    total = b.add(fu.SumOp(x, axes, keep, mean_type), _hint(base, "sum"))
    n, count = _element_count(b, axes, keep, reduced, t)
    mean = b.add(fu.DivOp(total, n, mean_type), old_mean.name_hint or _hint(base, "mean"))
    mean_b = _mean_broadcast(b, mean, dims, existing)
    # A new `x - mean` (as nvFuser), even where the fusion subtracts the mean too (layer norm):
    # that one stays where it was, so the persistent kernel may recompute it from the loaded
    # row instead of keeping the f32 deviations live across the second reduction (ptxas: 64
    # instead of 111 registers per thread for bf16 layer norm [16384, 4096]).
    dev = b.add(fu.SubOp(x, mean_b, x_type), _hint(base, "dev"))
    square = b.add(fu.MulOp(dev, dev, x_type), _hint(base, "dev2"))
    var_sum_hint = op.var_sum.name_hint if isinstance(op, fu.WelfordOp) else None
    var_sum = b.add(fu.SumOp(square, axes, keep, mean_type), var_sum_hint or _hint(base, "m2"))

    results: list[SSAValue | None]
    if isinstance(op, fu.WelfordOp):
        count_result: SSAValue | None = None
        if op.count.uses:
            count_result = count
            if count_result is None:  # static extents: the scalar count, broadcast
                kept = [d for d in range(rank) if d not in axes]
                count_type = op.count.type
                extents = [x_type.get_shape()[a] for a in axes]
                c = b.add(fu.ConstantOp.of(math.prod(extents), fu.I64), _hint(base, "n"))
                sizes = [
                    b.dim(kept[j])
                    for j, e in enumerate(count_type.get_shape())
                    if e == DYNAMIC_INDEX
                ]
                count_result = b.add(fu.BroadcastInDimOp(c, [], count_type, sizes))
            count_result.name_hint = op.count.name_hint or count_result.name_hint
        results = [mean, var_sum, count_result]
    else:
        correction = op.correction.value.data
        divisor = n
        if correction:
            if count is None:
                extents = [x_type.get_shape()[a] for a in axes]
                dof = max(math.prod(extents) - correction, 0)
                divisor = b.add(fu.ConstantOp.of(float(dof), t), "dof")
            else:
                count_type = cast(TensorType, count.type)
                c = b.add(fu.ConstantOp.of(correction, fu.I64), "correction")
                zero = b.add(fu.ConstantOp.of(0, fu.I64), "zero")
                fewer = b.add(fu.SubOp(count, c, count_type), "dof_raw")
                dof = b.add(fu.MaximumOp(fewer, zero, count_type), "dof")
                divisor = b.add(fu.CastOp(dof, TensorType(t, reduced)), "dof_f")
        var = b.add(fu.DivOp(var_sum, divisor, op.var.type), op.var.name_hint)
        results = [var, mean]
    rewriter.replace(op, b.ops, results)


@dataclass
class TranslateWelford(RewritePattern):
    """Rewrites one `fusion.welford` or `fusion.var_mean` into the two-pass form (see the
    module docstring); ops whose results are declared with different shapes stay."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fu.WelfordOp | fu.VarMeanOp, rewriter: PatternRewriter, /):
        if _blocker(op) is None:
            _translate(op, rewriter)


def translate_region(region: Region) -> int:
    """Translates every Welford op of `region` (a fusion's or a segment's body) in place;
    returns how many were rewritten."""
    before = len(welford_ops(region))
    if before:
        PatternRewriteWalker(TranslateWelford(), apply_recursively=False).rewrite_region(region)
    return before - len(welford_ops(region))


def translated(fusion: fu.FusionOp) -> fu.FusionOp:
    """A verified copy of `fusion` with every Welford op translated."""
    copy = fusion.clone()
    translate_region(copy.body)
    copy.verify()
    return copy


# --------------------------------------------------------------------------------------------
# When to translate
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """Whether to translate the Welford ops of a fusion or segment, and why (for the log)."""

    translate: bool
    reason: str

    def __str__(self) -> str:
        return ("translated: " if self.translate else "kept: ") + self.reason


_PERSISTENT = PersistentScheduler()


def _untranslated_scheduler(fusion: fu.FusionOp, info: FusionInfo) -> str | None:
    for scheduler in SCHEDULERS:
        if scheduler.accepts(fusion, info):
            return scheduler.name
    return None


def decision_key(
    fusion: fu.FusionOp, info: FusionInfo, mode: str, two_pass: fu.FusionOp
) -> Hashable:
    """A small value from which `decide(fusion, info, mode, two_pass)` follows: the heuristics
    key (`Scheduler.heuristics_key`) of the persistent scheduler on the two-pass form, and of
    every scheduler on the Welford form, which say who accepts each. A new row count or hidden
    size of a layer norm that keeps these keys keeps the decision, without deciding again."""
    if mode != "auto":
        return (mode,)
    return (
        mode,
        _PERSISTENT.heuristics_key(two_pass, info),
        tuple(s.heuristics_key(fusion, info) for s in SCHEDULERS),
    )


def decide(
    fusion: fu.FusionOp,
    info: FusionInfo,
    mode: str = "auto",
    two_pass: fu.FusionOp | None = None,
) -> Decision:
    """Whether to translate the Welford ops of `fusion` (a whole fusion, or a segment as a
    fusion of its own) for the inputs of `info` under `mode` (see the module docstring).
    `two_pass` is the translated fusion, when the caller has it already."""
    check_mode(mode, "translate-welford")
    ops = welford_ops(fusion.body)
    if not ops:
        return Decision(False, "no welford or var_mean")
    if mode == "never":
        return Decision(False, "welford=never")
    blocked = [r for op in ops if (r := _blocker(cast(WelfordLike, op))) is not None]
    if blocked:
        return Decision(False, blocked[0])
    if mode == "always":
        return Decision(True, "welford=always")
    if two_pass is None:
        two_pass = translated(fusion)
    structure = structure_of(two_pass)
    if structure.error is not None:
        return Decision(False, f"the two-pass form is not one reduction kernel: {structure.error}")
    problem = plan_layout(structure, info)
    if isinstance(problem, str):
        return Decision(False, f"the two-pass form cannot be laid out: {problem}")
    if not problem.layout.inner:
        return Decision(
            False,
            "the reduced dims are not the innermost: two passes over columns would keep them "
            "on chip across blocks (a grid reduction), and the persistent scheduler takes rows",
        )
    verdict = _PERSISTENT.accepts(two_pass, info)
    if not verdict:
        return Decision(
            False,
            f"the persistent scheduler rejects the two-pass form ({verdict.reason}); a row "
            "walked once per pass reads it once more in two passes than in one Welford pass",
        )
    baseline = _untranslated_scheduler(fusion, info)
    if baseline is None:
        return Decision(
            True,
            "the persistent scheduler accepts the two-pass form, and no "
            "scheduler takes the Welford form",
        )
    wanted = AUTO_TRANSLATE.get(baseline, True)
    what = (
        f"the persistent scheduler accepts the two-pass form; the Welford form goes to "
        f"{baseline} (AUTO_TRANSLATE[{baseline!r}] is {wanted})"
    )
    return Decision(wanted, what)


# --------------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TranslateWelfordPass(ModulePass):
    """Translates the Welford ops of every unsegmented `fusion.fusion` (see the module
    docstring)."""

    name = "translate-welford"

    mode: str = "auto"
    shapes: str = ""
    arch: str = DEFAULT_ARCH
    sm_count: int = DEFAULT_SM_COUNT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_mode(self.mode, self.name)
        shapes, device = device_options(
            self.name, self.shapes, self.arch, self.sm_count, TranslateWelfordOptionError
        )
        for fusion in [f for f in op.walk() if isinstance(f, fu.FusionOp)]:
            if not welford_ops(fusion.body) or any(
                isinstance(s, fu.SegmentOp) for s in fusion.body.block.ops
            ):
                continue
            if self.mode == "auto":
                info = pass_fusion_info(
                    self.name, fusion, shapes, device, TranslateWelfordOptionError
                )
                if not decide(fusion, info).translate:
                    continue
            elif self.mode == "never":
                continue
            translate_region(fusion.body)
