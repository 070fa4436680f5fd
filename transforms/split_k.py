"""`split-k`: a matmul whose output tiles cannot fill the GPU becomes two kernels.

A matmul kernel gives each CTA one output tile (`matmul_tiles.matmul_tile`, the tile the matmul
scheduler uses) and walks the whole K extent with it. For a skinny output and a long K, e.g.
`[256, 65536] x [65536, 256]` in bf16, that is 8 CTAs of 64 x 128 on a GPU of 132 SMs: 94% of
the machine idles while 8 SMs stream 64 MiB. Split-K cuts K into `s` chunks, computes each
chunk's partial product in a CTA of its own (`s` times the CTAs), and sums the partials in a
second kernel:

```mlir
%mm = fusion.matmul %a, %b : tensor<256x65536xbf16>, tensor<65536x256xbf16> -> tensor<256x256xbf16>
```
becomes
```mlir
%mm_partial = fusion.matmul %a, %b splits(32) : ... -> tensor<32x256x256xf32>
%mm_partials = fusion.segment_set %mm_partial : tensor<32x256x256xf32>
%mm_sum = fusion.sum %mm_partials [0] : tensor<32x256x256xf32> -> tensor<256x256xf32>
%mm = fusion.cast %mm_sum : tensor<256x256xf32> -> tensor<256x256xbf16>
```
and every use of `%mm` reads the cast. The partial matmul (`splits(s)`: K in chunks of
`ceil(K / s)`, the last ones shorter or empty, each partial unrounded in the accumulator type) is
the matmul scheduler's segment; the `segment_set` is the kernel boundary; the sum over axis 0 is
an ordinary outer reduction for the reduction scheduler, and the cast and any epilogue that
followed the matmul (bias, activation, ...) follow the sum into that reduction segment. For
f16/bf16 operands the value is rounded once, at the cast, from an f32 accumulation, as the plain
matmul rounds its f32 accumulator: only the order of the f32 additions changes. f32 operands
need no cast; f64 operands keep f64 partials.

**The factor.** For a `[B..., M, K] x [B..., K, N]` matmul with `T = B * ceil(M / tile.m) *
ceil(N / tile.n)` output tiles on a GPU of `sm_count` SMs:

1. `s = tile.per_sm * sm_count // T`: the most partial tiles one wave holds per output tile
   (`per_sm` CTAs of the tile run at once on one SM). `s < 2` (the output tiles already fill a
   wave) means no rewrite.
2. `s = min(s, K // (MIN_K_STEPS * tile.k))`: every chunk keeps at least `MIN_K_STEPS` (4)
   full K-steps of the tile, so a chunk still pipelines its shared-memory stages and the
   partials stay small next to the operands. `s < 2` (K too short) means no rewrite.
3. Among `s` down to `ceil(2 s / 3)` (`ALIGNED_FILL`), the largest factor whose chunk
   `ceil(K / s)` is a multiple of `tile.k` is taken (else one whose chunk is a multiple of 16
   bytes, else `s`): every chunk then starts on a K-step and a 16-byte boundary, so its loads
   stay vectorized (the matmul scheduler loads a chunk that is not a multiple of 8 elements one
   element at a time), at the price of at most a third of the wave. K = 65536 with 4 tiles of
   one CTA per SM on 132 SMs gives 33 by rule 1 and 32 (chunks of 2048) here; with 3 tiles,
   44 and then 32.

An empty output (M, N or a batch dim 0) or K = 0 is never split.

**Where it runs.** `FusionCompiler` plans the factors on each new input signature from the
concrete input shapes and the device's SM count (`plan_split_k`), rewrites a copy of the fusion
(`apply_split_k`) before segmentation, and reuses a compiled program for another signature only
when its factors are the same, so a program built for one split is never run for a shape whose
factor differs. `FusionCompiler(fusion, split_k=N)` forces the factor (1: never split).

**nvFuser.** nvFuser ships only single-kernel split-K (`MatmulParams::splitk_factor`): the K axis
is rfactored inside the matmul kernel and the partial tiles are combined by a grid reduction
(later a serialized one, CTAs along `gridDim.z` taking turns on the output tile). Its default
heuristic never picks a factor; a heuristic plugin may, and its benchmarks' "auto" factor is
`num_SMs / (ceil(M / tile_M) * ceil(N / tile_N))`, the wave rule above. Its two-kernel split-K (PR
#1685) was never merged: the rfactored MMA segment had a leaf axis that maps to no input, so the
matmul scheduler could not find the operand layout; committing the K split into the definition
was discussed as the way out. That is what fuser does: the split is a property of the op in the
IR (`splits(s)`), so the partial matmul is a matmul the scheduler reads like any other, the sum
is a plain reduction, and every step prints with `fuser-opt`. As in nvFuser (its issue #2012),
a compiled kernel serves one factor; the factor is therefore part of what the program cache
compares.

Options of the pass (`fuser-opt -p 'split-k{shapes="256x65536,65536x256"}'`):
- `splits`: force this factor on every plain matmul (1: never split); unset, the rule above
  decides from `shapes` and `sm_count`.
- `shapes`: the concrete shape of every tensor input, as in `fuser-schedule` (may be omitted
  when the inputs are static, or when `splits` is given).
- `arch` (default `sm_90`) and `sm_count` (default 132): the device (its tiles, see
  `matmul_tiles.matmul_tile`, and its SMs).
Matmuls that already carry `splits` and fusions that are already segmented are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from fuser.dialects import fusion as fu
from fuser.transforms.schedulers.info import DEFAULT_ARCH, FusionInfo
from fuser.transforms.schedulers.matmul_tiles import matmul_tile
from fuser.transforms.schedulers.shapes import value_shapes
from fuser.transforms.split_pass import SplitPass, rewrite_split

__all__ = [
    "ALIGNED_FILL",
    "MIN_K_STEPS",
    "SplitKOptionError",
    "SplitKPass",
    "SplitMatmul",
    "apply_split_k",
    "plain_matmuls",
    "plan_split_k",
    "split_factor",
]

MIN_K_STEPS = 4
"""The fewest full K-steps of the matmul tile (`tile.k`) a chunk keeps: with fewer, a chunk is
too short to pipeline its loads, and the partials grow large next to the operands."""


ALIGNED_FILL = (2, 3)
"""An aligned factor may be as low as this fraction (2/3) of the wave's factor."""


class SplitKOptionError(DiagnosticException):
    """A `split-k` option that is malformed or does not fit the module."""


# --------------------------------------------------------------------------------------------
# The factor
# --------------------------------------------------------------------------------------------


def _itemsize(element_type: Attribute) -> int:
    if element_type in (fu.F16, fu.BF16):
        return 2
    return 8 if element_type == fu.F64 else 4


def _decide(
    batch: int, m: int, n: int, k: int, element_type: Attribute, sm_count: int, arch: str
) -> tuple[int, str]:
    """The split factor of one matmul (see the module docstring) and why."""
    tile = matmul_tile(m, n, k, element_type, arch)
    tiles = tile.count(m, n, batch)
    what = f"{tiles} output tile(s) of {tile.m}x{tile.n} on {sm_count} SMs"
    if tiles == 0 or k == 0:
        return 1, "empty output or K = 0: not split"
    wave = tile.per_sm * sm_count // tiles  # CTAs of this tile that run at once, per tile
    if wave < 2:
        return 1, f"{what} fill a wave: not split"
    deep = k // (MIN_K_STEPS * tile.k)
    if deep < 2:
        return 1, (
            f"{what}, but K = {k} holds fewer than 2 chunks of {MIN_K_STEPS} K-steps of "
            f"{tile.k}: not split"
        )
    s = min(wave, deep)
    cap = "one wave" if s == wave else f"chunks of >= {MIN_K_STEPS} K-steps of {tile.k}"
    num, den = ALIGNED_FILL
    candidates = range(s, max(2, -(-num * s // den)) - 1, -1)
    aligned = next((c for c in candidates if -(-k // c) % tile.k == 0), None)
    if aligned is None:
        vector = 16 // _itemsize(element_type)
        aligned = next((c for c in candidates if -(-k // c) % vector == 0), s)
    return aligned, f"{what}, {cap}: splits({aligned}), chunks of {-(-k // aligned)}"


def split_factor(
    m: int,
    n: int,
    k: int,
    element_type: Attribute,
    sm_count: int,
    batch: int = 1,
    arch: str = DEFAULT_ARCH,
) -> int:
    """The split factor the rule picks for a `[batch, m, k] x [batch, k, n]` matmul of
    `element_type` operands on `sm_count` SMs of `arch`: 1 means no split (see the module
    docstring)."""
    return _decide(batch, m, n, k, element_type, sm_count, arch)[0]


def plain_matmuls(fusion: fu.FusionOp) -> list[fu.MatmulOp]:
    """The matmuls of the fusion's body without `splits`, in block order: the ones `split-k`
    may rewrite, in the order `plan_split_k` gives their factors."""
    return [
        op for op in fusion.body.block.ops if isinstance(op, fu.MatmulOp) and op.split_count is None
    ]


def plan_split_k(
    fusion: fu.FusionOp,
    input_shapes: Sequence[tuple[int, ...] | None] | None,
    sm_count: int,
    *,
    splits: int | None = None,
    log: list[str] | None = None,
    arch: str = DEFAULT_ARCH,
) -> tuple[int, ...]:
    """The factor of each of the fusion's `plain_matmuls` on `sm_count` SMs of `arch`, 1 for
    those left alone.

    `input_shapes` holds the concrete shape of every input (None for scalars); it may be None
    when `splits` forces the factor. `log`, if given, receives a line per matmul saying why.
    Raises ShapeMismatch when the shapes do not fit the fusion.
    """
    matmuls = plain_matmuls(fusion)
    if not matmuls:
        return ()
    lines: list[str] = [] if log is None else log
    if splits is not None:
        for op in matmuls:
            lines.append(f"split-k: {_label(op)}: splits={splits} forced")
        return (splits,) * len(matmuls)
    if input_shapes is None:
        raise ValueError("plan_split_k needs the input shapes unless splits is given")
    env = value_shapes(fusion, input_shapes)
    factors: list[int] = []
    for op in matmuls:
        a, b = env[op.lhs], env[op.rhs]
        assert isinstance(a, tuple) and isinstance(b, tuple)
        batch = 1
        for extent in a[:-2]:
            batch *= extent
        element = fu.element_type(op.lhs.type)
        factor, reason = _decide(batch, a[-2], b[-1], a[-1], element, sm_count, arch)
        shape = "x".join(str(e) for e in (*a[:-2], a[-2], a[-1], b[-1]))
        lines.append(f"split-k: {_label(op)} {shape} {element}: {reason}")
        factors.append(factor)
    return tuple(factors)


def _label(op: fu.MatmulOp) -> str:
    hint = op.result.name_hint
    return f"%{hint}" if hint else "fusion.matmul"


# --------------------------------------------------------------------------------------------
# The rewrite
# --------------------------------------------------------------------------------------------


@dataclass
class SplitMatmul(RewritePattern):
    """Rewrites a plain matmul with a factor above 1 in `factors` into its split-K form: the
    partial matmul, a `segment_set`, the sum over the splits, the cast back to a half type."""

    factors: Mapping[Operation, int]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fu.MatmulOp, rewriter: PatternRewriter, /) -> None:
        s = self.factors.get(op, 1)
        if op.split_count is not None or s < 2:
            return
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        element = result_type.element_type
        accumulator = fu.F64 if element == fu.F64 else fu.F32
        shape = tuple(result_type.get_shape())
        name = op.result.name_hint or "mm"
        partial = fu.MatmulOp(op.lhs, op.rhs, TensorType(accumulator, (s, *shape)), splits=s)
        partial.result.name_hint = f"{name}_partial"
        staged = fu.SegmentSetOp(partial.result)
        staged.result.name_hint = f"{name}_partials"
        total = fu.SumOp(staged.result, [0], False, TensorType(accumulator, shape))
        new_ops: list[Operation] = [partial, staged, total]
        if element != accumulator:
            total.result.name_hint = f"{name}_sum"
            new_ops.append(fu.CastOp(total.result, result_type))
        new_ops[-1].results[0].name_hint = name
        rewriter.replace(op, new_ops)


def apply_split_k(fusion: fu.FusionOp, factors: Sequence[int]) -> int:
    """Rewrites the fusion's `plain_matmuls` in place with the given factors (one each, as
    `plan_split_k` returns them; 1 leaves a matmul alone). Returns how many were split."""
    return rewrite_split(
        fusion, plain_matmuls(fusion), factors, SplitMatmul, "apply_split_k", "plain matmul(s)"
    )


# --------------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitKPass(SplitPass):
    """Splits the K axis of matmuls that cannot fill the GPU (see the module docstring)."""

    name = "split-k"
    error = SplitKOptionError

    def candidates(self, fusion: fu.FusionOp) -> Sequence[Operation]:
        if any(isinstance(s, fu.SegmentOp) for s in fusion.body.block.ops):
            return []
        return plain_matmuls(fusion)

    def plan(self, fusion: fu.FusionOp, info: FusionInfo | None) -> tuple[int, ...]:
        shapes = None if info is None else info.input_shapes
        return plan_split_k(fusion, shapes, self.sm_count, splits=self.splits, arch=self.arch)

    def rewrite(self, fusion: fu.FusionOp, factors: Sequence[int]) -> int:
        return apply_split_k(fusion, factors)
