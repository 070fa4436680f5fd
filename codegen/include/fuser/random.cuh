// fuser's random numbers (`kernel.random`, from `fusion.rand` / `fusion.randn`): Philox4x32-10
// with curand's constants and nvFuser's counter layout, and curand's conversions to floats,
// written so each element is a function of (seed, offset, index) alone.
// `fuser.runtime.philox` is the same definition in numpy (the reference); the uniform
// conversions use __fmul_rn / __fadd_rn so that no fused multiply-add changes their rounding.
#pragma once

namespace fuser {

struct Words {
  unsigned x, y, z, w;
};

// Philox4x32-10 under key `seed` at counter (offset low, offset high, subsequence low, high).
__device__ __forceinline__ Words philox(unsigned long long seed, unsigned long long offset,
                                        unsigned long long subsequence) {
  unsigned k0 = unsigned(seed), k1 = unsigned(seed >> 32);
  Words c{unsigned(offset), unsigned(offset >> 32), unsigned(subsequence),
          unsigned(subsequence >> 32)};
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    const unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = Words{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

__device__ __forceinline__ unsigned word(const Words& r, unsigned i) {
  return i == 0 ? r.x : (i == 1 ? r.y : (i == 2 ? r.z : r.w));
}

// Uniform in (0, 1]: w * 2**-32 + 2**-33, each step rounded to f32.
__device__ __forceinline__ float uniform_open_f32(unsigned w) {
  return __fadd_rn(__fmul_rn(__uint2float_rn(w), 2.3283064e-10f), 2.3283064e-10f / 2.0f);
}
// Uniform in (0, 1] of 53 bits from two words.
__device__ __forceinline__ double uniform_open_f64(unsigned low, unsigned high) {
  const unsigned long long z =
      (unsigned long long)low ^ ((unsigned long long)high << 21);
  return __dadd_rn(__dmul_rn(__ull2double_rn(z), 1.1102230246251565e-16),
                   1.1102230246251565e-16 / 2.0);
}

// The elements of fusion.rand / fusion.randn: element `subsequence * 4 + c` (f32) or
// `subsequence * 2 + c` (f64) of the result under (seed, offset). A kernel that draws the elements
// of one block in one unrolled loop passes one subsequence expression, so the block is computed
// once.

// fusion.rand (f32): word c of the block, in [0, 1).
__device__ __forceinline__ float rand_f32(long long seed, long long offset,
                                          unsigned long long subsequence, unsigned c) {
  const float u = uniform_open_f32(word(philox(seed, offset, subsequence), c));
  return u == 1.0f ? 0.0f : u;
}
// fusion.randn (f32): Box-Muller of the word pair of component c.
__device__ __forceinline__ float randn_f32(long long seed, long long offset,
                                           unsigned long long subsequence, unsigned c) {
  const Words r = philox(seed, offset, subsequence);
  const unsigned pair = c & 2u;
  const float u = uniform_open_f32(word(r, pair));
  const float v = __fmul_rn(uniform_open_f32(word(r, pair + 1)), 6.2831855f);
  const float radius = sqrtf(-2.0f * logf(u));
  return radius * ((c & 1u) == 0 ? sinf(v) : cosf(v));
}
// fusion.rand (f64): words 2c, 2c + 1 of the block.
__device__ __forceinline__ double rand_f64(long long seed, long long offset,
                                           unsigned long long subsequence, unsigned c) {
  const Words r = philox(seed, offset, subsequence);
  const double u = c == 0 ? uniform_open_f64(r.x, r.y) : uniform_open_f64(r.z, r.w);
  return u == 1.0 ? 0.0 : u;
}
// fusion.randn (f64): Box-Muller of the block's two uniforms.
__device__ __forceinline__ double randn_f64(long long seed, long long offset,
                                            unsigned long long subsequence, unsigned c) {
  const Words r = philox(seed, offset, subsequence);
  const double u = uniform_open_f64(r.x, r.y);
  const double v = uniform_open_f64(r.z, r.w) * 6.283185307179586;
  const double radius = sqrt(-2.0 * log(u));
  return radius * (c == 0 ? sin(v) : cos(v));
}

}  // namespace fuser
