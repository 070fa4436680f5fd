"""The output tile of a matmul kernel: which block of C one CTA computes, and how far along K.

The matmul scheduler builds its kernels around these tiles, and `split-k` counts them to decide
whether a matmul fills the GPU; keeping the choice in one small module keeps the two in step.
`matmul_tile` is pure (shapes, element type and target arch in, tile out) and assumes an
H100-sized GPU (`WAVE` CTAs of the largest tile fill it once). The tile shapes below are those of
the tensor-core tiles of both engines; on Hopper (`has_wgmma`) every one of them takes k tiles of
`WGMMA_K` (one 128-byte swizzle atom of K, what `wgmma` reads).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.ir import Attribute

from fuser.dialects.fusion import BF16, F16, F64
from fuser.transforms.schedulers.info import DEFAULT_ARCH, DEFAULT_SM_COUNT


@dataclass(frozen=True)
class MatmulTile:
    """A CTA's tile: `m` x `n` outputs, accumulated over K in steps of `k`; `per_sm` CTAs of it
    fit on one H100 SM at once (registers and shared memory), so `per_sm * sm_count` CTAs fill
    one wave."""

    m: int
    n: int
    k: int
    per_sm: int = 1

    def count(self, m: int, n: int, batch: int = 1) -> int:
        """The CTAs a grid of these tiles needs for an `[batch, m, n]` output."""
        return batch * -(-m // self.m) * -(-n // self.n)


WAVE = DEFAULT_SM_COUNT
"""CTAs that fill an H100 once at one CTA per SM (the large tensor-core tile takes a whole SM)."""

LARGE = MatmulTile(128, 256, 32)
"""Tensor cores, 8 warps of 64 x 64 outputs (5 stages, 120 KiB of shared memory): the most work
per byte of shared memory read. bf16 4096^3 on an H100 (benchmarks/matmul.py --sweep and
fd.execute A/B, same runs): 128 x 256 x 32 with 5 stages 400 TFLOP/s, 4 stages 394-398, 3
stages 396-399; 128 x 256 x 64 with 4 stages 390-391, 3 stages 382; 256 x 128 x 64: 373;
128 x 128: 363."""
MEDIUM = MatmulTile(128, 128, 32, per_sm=2)
"""Tensor cores, 4 warps of 64 x 64: twice the CTAs of LARGE, for outputs LARGE cannot fill."""
WIDE = MatmulTile(64, 128, 32, per_sm=2)
"""Tensor cores, 4 warps of 32 x 64: outputs MEDIUM cannot fill but that still hold `WIDE_MIN`
of these tiles, with a K of at least `WIDE_MIN_K`: the partials of split-K. Against SMALL it
halves the re-reads of A (each of A's row blocks is read once per column block of C) for twice
the split factor: bf16 [256, 65536] x [65536, 256] on an H100 through fd.execute took 39.6 us
split 32 ways against 41.1 us for SMALL split 16 ways (128 x 128 split 64 ways: 40.9; 64 x 64
split 32 ways: 43.7; cuBLAS 30.9)."""
WIDE_MIN = 8
"""The fewest WIDE tiles of an output for which WIDE is chosen over SMALL. Below it the split
factor's partials (an f32 [s, M, N] tensor written and read again, s about 2 `WAVE` / tiles)
cost more than the re-reads WIDE saves: [128, 32768] x [32768, 128] (2 WIDE tiles) runs best on
SMALL split 32 or 64 ways (17.1-17.4 us, cuBLAS 14.5)."""
WIDE_MIN_K = 8192
"""The shortest K for which WIDE is chosen over SMALL: a long K is split many ways, and the
operands' re-reads then dominate; a short one keeps SMALL's twice as many CTAs (split-K may not
split it at all)."""
SMALL = MatmulTile(64, 64, 64, per_sm=2)
"""Tensor cores, 4 warps of 32 x 32: small or skinny outputs, and the partials of split-K, which
stream K (a deep pipeline over long k tiles keeps the SM's loads in flight). Up to three fit on an
SM; two per SM ran best: the partials of bf16 [256, 65536] x [65536, 256] took 37.1 us split 16
ways (256 CTAs) against 44.7 us split 8 ways (128 CTAs) on an H100."""


WGMMA_K = 64
"""The k tile of every wgmma tile: 64 f16/bf16 elements, one 128-byte swizzle atom. bf16 on an
H100 (benchmarks/RESULTS.md run 13, kernels alone): 4096^3 on 128 x 256 with 3 stages 510
TFLOP/s against 395 for mma.sync's best; the split-K partials of [256, 65536] x [65536, 256] on
64 x 128 split 32 ways 30.5 us against 34.7."""


def has_wgmma(arch: str) -> bool:
    """Whether `arch` has warpgroup MMA (Hopper, compiled for sm_90a: see
    `runtime.compiled_kernel.sass_target`)."""
    return arch in ("sm_90", "sm_90a")


def matmul_tile(
    m: int, n: int, k: int, element_type: Attribute, arch: str = DEFAULT_ARCH
) -> MatmulTile:
    """The tile the matmul scheduler uses for `[m, k] x [k, n]` operands of `element_type` on
    `arch`.

    Tensor-core (f16/bf16) tiles: LARGE once its tiles fill a wave, else MEDIUM once those fill
    half a wave, else WIDE once the output holds `WIDE_MIN` of those and K is `WIDE_MIN_K` or
    more, else SMALL; with k tiles of `WGMMA_K` where `has_wgmma(arch)`. f32 and f64 run on the
    SIMT path: 128 x 128 (f32) or 64 x 64 (f64) tiles with K steps of 8, 64 x 64 for small f32
    outputs.
    """
    if element_type in (F16, BF16):
        if LARGE.count(m, n) >= WAVE:
            tile = LARGE
        elif MEDIUM.count(m, n) >= WAVE // 2:
            tile = MEDIUM
        elif WIDE.count(m, n) >= WIDE_MIN and k >= WIDE_MIN_K:
            tile = WIDE
        else:
            tile = SMALL
        return replace(tile, k=WGMMA_K) if has_wgmma(arch) else tile
    if element_type == F64:
        return MatmulTile(64, 64, 8)
    if MatmulTile(128, 128, 8).count(m, n) >= WAVE:
        return MatmulTile(128, 128, 8)
    return MatmulTile(64, 64, 16)
