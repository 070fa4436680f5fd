"""The random numbers of `fusion.rand` and `fusion.randn` in numpy: the reference's definition,
which the kernels' `fuser/random.cuh` computes the same way.

The generator is Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
with curand's and nvFuser's constants and layout: key (seed low, seed high), counter (offset
low, offset high, subsequence low, subsequence high), 10 rounds. Element i of a result (its
row-major index in the result's shape) takes:

- f32: word `i % 4` of the block at subsequence `i / 4`;
- f64: words `2 (i % 2)` and `2 (i % 2) + 1` of the block at subsequence `i / 2`.

Conversions (curand's, computed without fused multiply-adds so they are exact in both places):

- a uniform f32 in (0, 1] is `w * 2**-32 + 2**-33` (each step rounded to f32); `fusion.rand`
  maps 1.0 to 0.0, for [0, 1);
- a uniform f64 in (0, 1] is `(w0 ^ (w1 << 21)) * 2**-53 + 2**-54`, 1.0 likewise mapped to 0.0;
- normal (Box-Muller, the words paired as nvFuser pairs them): from a pair of uniforms u, v
  in (0, 1] (f32: words 2p, 2p + 1 for pair p = (i % 4) / 2; f64: the two uniforms of the
  block), `sqrt(-2 log u)` times
  `sin(2 pi v)` for an even component and `cos(2 pi v)` for an odd one. The logarithm never
  sees 0.

So the numbers depend on (seed, offset, i) alone, as in nvFuser (whose counter layout and
uniform conversion these are): never on a schedule, a block size or a vector width. The
standard uniform numbers are exact in both places; an affine map of them (`uniform`'s bounds,
`normal`'s mean and deviation) the kernels may compute with one fused multiply-add, within a
unit of the reference's two roundings.
"""

from __future__ import annotations

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)

TWO_POW_32_INV = np.float32(2.3283064e-10)
TWO_POW_53_INV = 1.1102230246251565e-16
TWO_PI_F32 = np.float32(6.2831855)


def philox(seed: int, offset: int, subsequence: np.ndarray) -> np.ndarray:
    """The four 32-bit words (an array of shape `subsequence.shape + (4,)`, uint32) of
    Philox4x32-10 under key `seed` at counter (`offset`, `subsequence`)."""
    sub = np.asarray(subsequence, np.uint64)
    seed_u, offset_u = np.uint64(seed & 0xFFFFFFFFFFFFFFFF), np.uint64(offset & 0xFFFFFFFFFFFFFFFF)
    c = [
        np.full(sub.shape, offset_u & _MASK32, np.uint64),
        np.full(sub.shape, offset_u >> np.uint64(32), np.uint64),
        sub & _MASK32,
        sub >> np.uint64(32),
    ]
    k0 = np.uint32(seed_u & _MASK32)
    k1 = np.uint32(seed_u >> np.uint64(32))
    with np.errstate(over="ignore"):
        for r in range(10):
            p0, p1 = _M0 * c[0], _M1 * c[2]
            c = [
                ((p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0)) & _MASK32,
                p1 & _MASK32,
                ((p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1)) & _MASK32,
                p0 & _MASK32,
            ]
            if r < 9:
                k0, k1 = k0 + _W0, k1 + _W1
    return np.stack(c, axis=-1).astype(np.uint32)


def _uniform_f32(words: np.ndarray) -> np.ndarray:
    """(0, 1], each step rounded to f32."""
    return words.astype(np.float32) * TWO_POW_32_INV + TWO_POW_32_INV / np.float32(2)


def _uniform_f64(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """(0, 1] from two words, 53 bits of them."""
    z = low.astype(np.uint64) ^ (high.astype(np.uint64) << np.uint64(21))
    return z.astype(np.float64) * TWO_POW_53_INV + TWO_POW_53_INV / 2


def random(
    shape: tuple[int, ...],
    dtype: np.dtype,
    seed: int,
    offset: int,
    normal: bool,
    wide: bool = False,
) -> np.ndarray:
    """`fusion.rand` (normal=False) or `fusion.randn` of `shape` in f32 or f64 (`dtype`);
    `wide`: an f32 normal's transform in float64 (from the same f32 uniform and angle), as the
    reference's float64 mode holds f32 results."""
    count = int(np.prod(shape, dtype=np.int64))
    i = np.arange(count, dtype=np.uint64)
    return elements(i, dtype, seed, offset, normal, wide).reshape(shape)


def elements(
    i: np.ndarray, dtype: np.dtype, seed: int, offset: int, normal: bool, wide: bool = False
) -> np.ndarray:
    """Elements `i` (row-major indices, an array) of `fusion.rand` / `fusion.randn` (`wide`:
    see `random`)."""
    i = np.asarray(i, np.uint64).reshape(-1)
    with np.errstate(all="ignore"):
        if dtype == np.float32:
            words = philox(seed, offset, i >> np.uint64(2))
            component = (i & np.uint64(3)).astype(np.int64)
            if not normal:
                u = _uniform_f32(np.take_along_axis(words, component[:, None], 1)[:, 0])
                values = np.where(u == np.float32(1), np.float32(0), u)
            else:
                pair = component // 2 * 2
                u = _uniform_f32(np.take_along_axis(words, pair[:, None], 1)[:, 0])
                v = _uniform_f32(np.take_along_axis(words, pair[:, None] + 1, 1)[:, 0])
                angle = v * TWO_PI_F32  # rounded to f32, as the kernels' __fmul_rn
                if wide:
                    u, angle = u.astype(np.float64), angle.astype(np.float64)
                radius = np.sqrt(-2 * np.log(u))
                values = radius * np.where(component % 2 == 0, np.sin(angle), np.cos(angle))
        else:
            words = philox(seed, offset, i >> np.uint64(1))
            component = (i & np.uint64(1)).astype(np.int64)
            if not normal:
                w0 = np.take_along_axis(words, 2 * component[:, None], 1)[:, 0]
                w1 = np.take_along_axis(words, 2 * component[:, None] + 1, 1)[:, 0]
                u = _uniform_f64(w0, w1)
                values = np.where(u == 1.0, 0.0, u)
            else:
                u = _uniform_f64(words[:, 0], words[:, 1])
                v = _uniform_f64(words[:, 2], words[:, 3]) * (2 * np.pi)
                radius = np.sqrt(-2.0 * np.log(u))
                values = radius * np.where(component == 0, np.sin(v), np.cos(v))
    return np.asarray(values, np.float64 if wide else dtype)
