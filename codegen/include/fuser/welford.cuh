// fuser's kernel support: Welford states and their warp and block combines, which
// `kernel.warp_welford` and `kernel.block_welford` become.
#pragma once

#include "fuser/reduce.cuh"

namespace fuser {

// A Welford state: mean, M2 (the sum of squared deviations from the mean) and count, a float.
template <typename T> struct Welford {
  T avg, m2, n;
};

// A quotient of Welford counts (exact float integers): the fast division for float (2 ulp).
__device__ __forceinline__ float count_ratio(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ double count_ratio(double a, double b) { return a / b; }

// Chan et al.'s pairwise combination of Welford states; two empty states give an empty state.
// A state whose mean is +-inf holds an infinity: the mean is then the sum of the means (+-inf,
// NaN for both signs) and M2 is NaN, as torch's var_mean and the reference give (Chan's formula
// would turn inf + (finite - inf) * w into NaN).
struct WelfordCombine {
  template <typename T> __device__ Welford<T> operator()(Welford<T> a, Welford<T> b) const {
    const T n = a.n + b.n;
    if (n == T(0)) return Welford<T>{T(0), T(0), T(0)};
    if (isinf(a.avg) || isinf(b.avg)) return Welford<T>{a.avg + b.avg, (a.avg + b.avg) * T(0), n};
    const T delta = b.avg - a.avg, wb = count_ratio(b.n, n);
    return Welford<T>{a.avg + delta * wb, a.m2 + b.m2 + delta * delta * a.n * wb, n};
  }
  template <typename T> __device__ static T identity() { return T{}; }
};

// A Welford state moves through a shuffle field by field.
template <typename T>
__device__ __forceinline__ Welford<T> shfl_xor(unsigned mask, Welford<T> v, int lane_mask) {
  return Welford<T>{shfl_xor(mask, v.avg, lane_mask), shfl_xor(mask, v.m2, lane_mask),
                    shfl_xor(mask, v.n, lane_mask)};
}

// Welford combines: a warp, or a block along x or y as block_reduce does.
template <typename T> __device__ __forceinline__ Welford<T> warp_welford(T avg, T m2, T n) {
  return warp_reduce(Welford<T>{avg, m2, n}, WelfordCombine());
}
template <Dim Along, int MaxThreads, int Slot, typename T>
__device__ __forceinline__ Welford<T> block_welford(T avg, T m2, T n) {
  return block_reduce<Along, MaxThreads, Slot>(Welford<T>{avg, m2, n}, WelfordCombine());
}

}  // namespace fuser
