"""`split-reductions`: the column sums of a fusion that also sums its rows become partial sums
over chunks of rows, so that one kernel reads the rows once for both (the inner-outer form);
the sums of a few long rows become partial sums over runs of each row, so that every SM works.

The backward of layer norm and RMS norm reduces one `[N, H]` tensor along both axes: dx needs a
sum over each row, dw and db a sum over each column. No kernel can finish both in one pass (a
column's sum needs every row), so fuser made two kernels that each read the inputs, the first
writing a full `[N, H]` f32 intermediate for the second. This pass rewrites each column sum

```mlir
%dw = fusion.sum %g [0] : tensor<?x?xf32> -> tensor<?xf32>
```
into
```mlir
%dw_partial = fusion.partial_sum %g [0] splits(264) : tensor<?x?xf32> -> tensor<264x?xf32>
%dw_partials = fusion.segment_set %dw_partial : tensor<264x?xf32>
%dw = fusion.sum %dw_partials [0] : tensor<264x?xf32> -> tensor<?xf32>
```
so that the first segment (the row sums, dx and the partial sums: the `inner_outer` scheduler)
reads every input once, and the second sums `splits x H` partials (the reduction scheduler), as
`split-k` does for a matmul's K. Only the order of the f32 additions changes.

**When.** A `sum` over dim 0 (with or without `keepdim`) of a 2-D value, in a fusion that also
reduces a value of the same shape over dim 1 (`sum`, `max`, `min`, `var_mean`, `welford`) that
can share its kernel (it does not need the column sum, and no `segment_set` lies upstream of
either), or, in a fusion whose only reductions are column sums, whose rows are too narrow for
the reduction scheduler to fill the GPU (fewer than `NARROW_VECTORS_PER_SM` x SMs 16-byte
vectors: a column sum of a tall, narrow matrix, which the inner-outer kernel then takes alone);
with the inputs' rows their fastest dim, for concrete shapes with enough rows: the
factor is `min(k * sm_count, N // MIN_CHUNK_ROWS)` with `k` chunks per SM (2 to 8: enough
blocks for `THREADS_PER_SM`), and a factor below 2 leaves the fusion alone. nvFuser's
`InnerOuterPersistent` scheduler finishes the partials inside its one kernel; fuser keeps the
second kernel (a few microseconds) visible in the IR.

**A few long rows.** A fusion whose only reductions are `sum`s over the last dim of 1-D or 2-D
values of one shape (a pointwise prologue, full-shape outputs beside them: one streaming
kernel) gets one block per row from the reduction scheduler: 16 rows use 16 SMs. Its sums
become

```mlir
%s_partial = fusion.partial_sum %x [1] splits(16) : tensor<?x?xf32> -> tensor<?x16xf32>
%s_partials = fusion.segment_set %s_partial : tensor<?x16xf32>
%s = fusion.sum %s_partials [1] : tensor<?x16xf32> -> tensor<?xf32>
```
each row cut into runs of `ceil(H / splits)`, a block per run (the reduction scheduler's row
split), where the rows are fewer than the SMs (`ROW_SPLIT_BLOCKS_PER_SM`): the factor is
`ceil(sm_count / rows)`, at most the runs of `MIN_RUN_BYTES` a row holds, moved up (below
twice itself) to the first whose runs are whole 16-byte vectors. nvFuser splits such a row
across blocks with a grid reduction in one kernel; here too the second kernel is in the IR.

A split is undone where it does not pay: when the segmenter finds no segmentation of the split
fusion, or one where a partial sum does not share its segment with a reduction over rows (a row
too long for registers leaves the two apart). The pipeline then segments the fusion as it was
before the split and logs why (`transforms.pipeline`).

**Where it runs.** `FusionBuilder` plans the factors for each new signature
(`plan_split_reductions`) beside the split-K factors; a program is reused only for signatures
with the same factors.
`fuser-opt -p 'split-reductions{shapes="16384x4096,..."}'` runs it on its own (options as
`split-k`: `shapes`, `arch`, `sm_count`, and `splits` to force the factor of the column sums,
or of the row sums where there are none; 1 never splits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from fuser.dialects import fusion as fu
from fuser.dialects import kernel
from fuser.transforms.schedulers.info import FusionInfo
from fuser.transforms.schedulers.reduction_structure import structure_of
from fuser.transforms.schedulers.shapes import value_shapes
from fuser.transforms.split_pass import SplitPass, rewrite_split

THREADS_PER_SM = 512
"""Threads per SM the chunks aim at: the inner-outer kernel gives each chunk a block, which
walks its rows one at a time, so a GPU with fewer threads than this per SM waits on memory (on
an H100, RMS norm backward of [32768, 1024] bf16 in blocks of 64 threads took 0.150 ms with 2
chunks per SM, 0.096 with 8), and more chunks than needed cost partials and their sum ([16384,
4096] in blocks of 256 threads: 0.168 ms with 2, 0.198 with 8)."""
MIN_CHUNKS_PER_SM, MAX_CHUNKS_PER_SM = 2, 8
VECTOR_BYTES = 16
"""Bytes a thread loads at once along a row, for the estimate of the block's threads."""
NARROW_VECTORS_PER_SM = 4
"""A column sum with no row sums beside it is split where its rows hold fewer 16-byte vectors
than this many per SM: the reduction scheduler's outer kernel then has fewer blocks (8 threads
of vectors wide) than half the SMs (a [1048576, 64] f32 sum ran on 2 blocks)."""
ROW_SPLIT_BLOCKS_PER_SM = 1
"""Blocks per SM a split of a few long rows aims at: each row is cut into runs, a block each,
so that `rows x splits` blocks cover the GPU (sum(-1) of [16, 4194304] f32 ran on 16 blocks
of 1024 threads at 59% of copy bandwidth). On an H100, 1 (16 runs a row, blocks of 1024
threads) took 0.093 ms for that sum, 2 and 4 (blocks of 512) 0.099; a sum of one row of
16777216 took 0.031 ms with 1 and 0.029 with 4 (benchmarks/RESULTS.md, run 29)."""
MIN_RUN_BYTES = 65536
"""The fewest bytes a run of a split row holds: a block of 1024 threads loads 64 KiB in one
iteration of its loop."""
MIN_CHUNK_ROWS = 8
"""The fewest rows a chunk sums: fewer would write more partials than they save. A narrow column
sum alone is split only with this many rows per SM (a small matrix is one kernel's work)."""

_ROW_REDUCTIONS = (fu.ReductionOp, fu.VarMeanOp, fu.WelfordOp)


class SplitReductionsOptionError(DiagnosticException):
    """A `split-reductions` option that is malformed or does not fit the module."""


def split_candidates(fusion: fu.FusionOp) -> list[fu.SumOp]:
    """The sums `split-reductions` may rewrite, in block order (the order
    `plan_split_reductions` gives their factors), not the sums of the chunks of an earlier
    split: the column sums (dim 0 of a 2-D value), or, in a fusion whose reductions are all row
    sums (the last dim of a 1-D or 2-D value), those. Types only: a fusion without candidates
    (softmax, a norm) plans nothing for a new shape."""
    ops = list(fusion.body.block.ops)
    if any(isinstance(op, fu.SegmentOp) for op in ops):
        return []
    rows_only = all(
        isinstance(op, fu.SumOp) and _is_row_sum(op)
        for op in ops
        if isinstance(op, _ROW_REDUCTIONS)
    )

    def split(op: fu.SumOp) -> bool:  # the sum of the chunks of an earlier split
        staged = op.input.owner
        return isinstance(staged, fu.SegmentSetOp) and isinstance(
            staged.input.owner, fu.PartialSumOp
        )

    return [
        op
        for op in ops
        if isinstance(op, fu.SumOp)
        and (_is_column_sum(op) or (rows_only and _is_row_sum(op)))
        and not split(op)
    ]


def _rank(op: Operation) -> int:
    return len(fu.shape_of(op.operands[0].type) or ())


def _is_column_sum(op: fu.SumOp) -> bool:
    return _rank(op) == 2 and op.reduction_axes == (0,)


def _is_row_sum(op: fu.SumOp) -> bool:
    return _rank(op) in (1, 2) and op.reduction_axes == (_rank(op) - 1,)


def plan_split_reductions(
    fusion: fu.FusionOp,
    info: FusionInfo | None,
    *,
    splits: int | None = None,
    log: list[str] | None = None,
) -> tuple[int, ...]:
    """The factor of each of the fusion's `split_candidates` for the inputs and device of
    `info` (1 for those left alone): see the module docstring. `log`, if given, receives a line
    per sum (one for the row sums) saying why. Raises ShapeMismatch when the shapes do not fit
    the fusion."""
    sums = split_candidates(fusion)
    if not sums:
        return ()
    lines: list[str] = [] if log is None else log
    if splits is not None:
        lines.extend(f"split-reductions: {_label(op)}: splits={splits} forced" for op in sums)
        return (splits,) * len(sums)
    if info is None:
        raise ValueError("plan_split_reductions needs the inputs' metadata unless splits is given")
    env = value_shapes(fusion, info.input_shapes)
    if _is_row_sum(sums[0]):  # (the candidates are all column sums or all row sums)
        return _plan_row_splits(fusion, info, env, sums, lines)
    # the inner-outer kernel walks rows along the fastest dim of its inputs
    columns_fastest = all(
        m is None or len(m.shape) != 2 or m.shape[1] <= 1 or m.strides[1] == 1 for m in info.inputs
    )
    rows = [(op, _upstream(op.operands[0])) for op in fusion.body.block.ops if _reduces_rows(op)]
    # a column sum alone is split only where no other reduction would have shared its kernel
    sums_only = all(op in sums for op in fusion.body.block.ops if isinstance(op, _ROW_REDUCTIONS))
    vector = max(1, VECTOR_BYTES // _widest(fusion))  # elements a thread loads at once
    factors: list[int] = []
    for op in sums:
        shape = cast(tuple[int, int], env[op.input])
        n, h = shape
        before = _upstream(op.input)
        partners = [
            r
            for r, r_before in rows
            if env[r.operands[0]] == shape
            and op not in r_before
            and not any(isinstance(u, fu.SegmentSetOp) for u in r_before | before)
        ]
        same_shape = [r for r, _ in rows if env[r.operands[0]] == shape]
        narrow = -(-h // vector) < NARROW_VECTORS_PER_SM * info.device.sm_count and sums_only
        if not partners and same_shape:
            factor, why = (
                1,
                (
                    "no reduction over the rows of the same shape can share its kernel (each "
                    "needs this sum or lies across a segment_set): not split"
                ),
            )
        elif not partners and not narrow:
            factor, why = 1, "no reduction over the rows, and columns enough to fill the GPU"
        elif not partners and n < MIN_CHUNK_ROWS * info.device.sm_count:
            factor, why = 1, f"no reduction over the rows, and {n} rows are few: one kernel"
        elif not columns_fastest:
            factor, why = 1, "an input's rows are not its fastest dim: not split"
        else:
            per_sm = _chunks_per_sm(-(-h // vector))
            factor = min(per_sm * info.device.sm_count, n // MIN_CHUNK_ROWS)
            if factor < 2:
                factor, why = 1, f"{n} rows make fewer than 2 chunks of {MIN_CHUNK_ROWS}: not split"
            else:
                why = f"splits({factor}), chunks of {-(-n // factor)} rows"
        lines.append(f"split-reductions: {_label(op)} {n}x{h}: {why}")
        factors.append(factor)
    return tuple(factors)


def _plan_row_splits(
    fusion: fu.FusionOp,
    info: FusionInfo,
    env: Mapping[SSAValue, object],
    sums: Sequence[fu.SumOp],
    lines: list[str],
) -> tuple[int, ...]:
    """The factors of a fusion whose reductions are the row sums `sums`: one factor for all of
    them, above 1 where the rows are too few to give every SM `ROW_SPLIT_BLOCKS_PER_SM`
    block(s) and long enough to cut into runs of `MIN_RUN_BYTES`, otherwise 1."""
    shape = cast(tuple[int, ...], env[sums[0].input])
    label = f"{_label(sums[0])} {'x'.join(map(str, shape))}"
    rows, n = math.prod(shape[:-1]), shape[-1]
    element = _widest(fusion, len(shape))
    why: str | None = None
    structure = structure_of(fusion)
    if any(env[op.input] != shape for op in sums):
        why = "its row sums reduce tensors of different shapes"
    elif structure.error is not None or structure.persistent_reason is not None:
        why = "one streaming kernel does not take the fusion"
    elif any(
        m is not None and m.shape and m.shape[-1] > 1 and m.strides[-1] != 1 for m in info.inputs
    ):
        why = "an input's rows are not its fastest dim"
    wanted = -(-ROW_SPLIT_BLOCKS_PER_SM * info.device.sm_count // max(rows, 1))
    factor = min(wanted, n * element // MIN_RUN_BYTES)
    if why is None and rows == 0:
        why = "no rows"
    elif why is None and factor < 2:
        why = (
            f"{rows} row(s) give the GPU enough blocks"
            if wanted < 2
            else f"rows of {n} are too short to split"
        )
    if why is not None:
        lines.append(f"split-reductions: {label}: {why}: not split")
        return (1,) * len(sums)
    # a factor whose runs start at multiples of the 16-byte vector keeps loads vectorized
    vector = max(1, VECTOR_BYTES // element)
    factor = next((f for f in range(factor, 2 * factor) if -(-n // f) % vector == 0), factor)
    lines.append(f"split-reductions: {label}: splits({factor}) a row, runs of {-(-n // factor)}")
    return (factor,) * len(sums)


def _widest(fusion: fu.FusionOp, rank: int = 2) -> int:
    """Bytes of an element of the fusion's widest input of `rank` dims (4 without one)."""
    return max(
        (
            kernel.byte_size(fu.element_type(t))
            for t in (a.type for a in fusion.inputs)
            if len(fu.shape_of(t) or ()) == rank
        ),
        default=4,
    )


def _chunks_per_sm(vectors: int) -> int:
    """Chunks per SM for rows of `vectors` 16-byte vectors: enough blocks for `THREADS_PER_SM`,
    a block's threads estimated as the inner-outer scheduler sizes them (two vectors per
    thread)."""
    threads = min(1024, max(32, -(-vectors // 2)))
    per_sm = -(-THREADS_PER_SM // threads)
    return min(MAX_CHUNKS_PER_SM, max(MIN_CHUNKS_PER_SM, per_sm))


def split_pays(segmented: fu.FusionOp) -> bool:
    """Whether every `partial_sum` of a segmented fusion shares its segment with a reduction
    over rows, or the fusion has none (a column sum split alone); otherwise the split only
    added a kernel."""
    alone = False
    rows = False
    for segment in segmented.body.block.ops:
        if not isinstance(segment, fu.SegmentOp):
            continue
        ops = list(segment.body.walk())
        has_rows = any(_reduces_rows(op) for op in ops)
        rows = rows or has_rows
        columns = any(isinstance(op, fu.PartialSumOp) and _is_column_split(op) for op in ops)
        alone = alone or (columns and not has_rows)
    return not (alone and rows)


def _is_column_split(op: fu.PartialSumOp) -> bool:
    """Whether `op` sums chunks of the rows of a 2-D value (not chunks of each row)."""
    return _rank(op) == 2 and op.axis == 0


def _reduces_rows(op: Operation) -> bool:
    """Whether `op` reduces a 2-D value over dim 1 (each row)."""
    return (
        isinstance(op, _ROW_REDUCTIONS)
        and len(fu.shape_of(op.operands[0].type) or ()) == 2
        and tuple(op.axes.get_values()) == (1,)
    )


def _upstream(value: SSAValue) -> set[Operation]:
    """Every op of the fusion's body that `value` depends on."""
    found: set[Operation] = set()
    todo = [value]
    while todo:
        owner = todo.pop().owner
        if isinstance(owner, Operation) and owner not in found:
            found.add(owner)
            todo.extend(owner.operands)
    return found


def _label(op: fu.SumOp) -> str:
    hint = op.result.name_hint
    return f"%{hint}" if hint else "fusion.sum"


@dataclass
class SplitSum(RewritePattern):
    """Rewrites a column or row sum with a factor above 1 in `factors` into its partial sums,
    a `segment_set` and the sum over the chunks."""

    factors: Mapping[Operation, int]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fu.SumOp, rewriter: PatternRewriter, /) -> None:
        s = self.factors.get(op, 1)
        if s < 2:
            return
        t = cast(TensorType, op.input.type)
        name = op.result.name_hint or "sum"
        axis = op.reduction_axes[0]
        partial_type = TensorType(t.element_type, fu.partial_sum_shape(t.get_shape(), axis, s))
        partial = fu.PartialSumOp(op.input, axis, s, partial_type)
        partial.result.name_hint = f"{name}_partial"
        staged = fu.SegmentSetOp(partial.result)
        staged.result.name_hint = f"{name}_partials"
        total = fu.SumOp(staged.result, [axis], op.keepdim is not None, op.result.type)
        total.result.name_hint = name
        rewriter.replace(op, [partial, staged, total])


def apply_split_reductions(fusion: fu.FusionOp, factors: Sequence[int]) -> int:
    """Rewrites the fusion's `split_candidates` in place with the given factors (one each, as
    `plan_split_reductions` returns them; 1 leaves a sum alone). Returns how many were split."""
    return rewrite_split(
        fusion,
        split_candidates(fusion),
        factors,
        SplitSum,
        "apply_split_reductions",
        "column and row sum(s)",
    )


@dataclass(frozen=True)
class SplitReductionsPass(SplitPass):
    """Splits the column sums of fusions that also sum their rows, and the sums of a few long
    rows (see the module docstring)."""

    name = "split-reductions"
    error = SplitReductionsOptionError

    def candidates(self, fusion: fu.FusionOp) -> Sequence[Operation]:
        return split_candidates(fusion)

    def plan(self, fusion: fu.FusionOp, info: FusionInfo | None) -> tuple[int, ...]:
        return plan_split_reductions(fusion, info, splits=self.splits)

    def rewrite(self, fusion: fu.FusionOp, factors: Sequence[int]) -> int:
        return apply_split_reductions(fusion, factors)
