// fuser's kernel support: the NaN-propagating `fuser::maximum` / `fuser::minimum`, the exact
// integer powers of `fuser::pow`, `fuser::gcd`, and `fuser::Limits` (the identities of max and
// min).
#pragma once

namespace fuser {

// max/min that propagate NaN like torch.maximum (fmaxf/fminf return the operand that is not NaN):
// one PTX max.NaN/min.NaN on sm_80 and later.
__device__ __forceinline__ float maximum(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return a != a ? a : (b != b ? b : fmaxf(a, b));
#endif
}
__device__ __forceinline__ float minimum(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return a != a ? a : (b != b ? b : fminf(a, b));
#endif
}
__device__ __forceinline__ double maximum(double a, double b) {
  return a != a ? a : (b != b ? b : fmax(a, b));
}
__device__ __forceinline__ double minimum(double a, double b) {
  return a != a ? a : (b != b ? b : fmin(a, b));
}
// pow, exact where the result is an integer that CUDA's pow (2 ulp) comes within 0.5 of: an
// integral base to a non-negative integral power (integer pow computes in floating point).
__device__ __forceinline__ float pow(float x, float y) {
  const float r = powf(x, y);
  return y >= 0.0f && rintf(y) == y && rintf(x) == x && fabsf(r) < 1048576.0f ? rintf(r) : r;
}
__device__ __forceinline__ double pow(double x, double y) {
  const double r = ::pow(x, y);
  return y >= 0.0 && rint(y) == y && rint(x) == x && fabs(r) < 562949953421312.0 ? rint(r) : r;
}
// The greatest common divisor as torch's CUDA gcd computes it: Euclid's algorithm on |a| and |b| in
// the signed type, where |INT_MIN| wraps to INT_MIN, so a gcd with INT_MIN may come out negative
// (gcd(380, INT_MIN) is -4). The magnitudes are taken in the unsigned type (no signed overflow) and
// converted back; `x % -1` is taken as 0 without dividing (C leaves INT_MIN % -1 undefined).
template <typename T, typename U> __device__ __forceinline__ T gcd_signed(T a, T b) {
  a = a < 0 ? T(U(0) - U(a)) : a;
  b = b < 0 ? T(U(0) - U(b)) : b;
  while (a != 0) {
    const T r = a == T(-1) ? T(0) : b % a;
    b = a;
    a = r;
  }
  return b;
}
__device__ __forceinline__ int gcd(int a, int b) { return gcd_signed<int, unsigned>(a, b); }
__device__ __forceinline__ long long gcd(long long a, long long b) {
  return gcd_signed<long long, unsigned long long>(a, b);
}
// Integers compare plainly.
template <typename T> __device__ __forceinline__ T maximum(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T minimum(T a, T b) { return a < b ? a : b; }

// The identities of max and min.
template <typename T> struct Limits;
template <> struct Limits<float> {
  __device__ static float lowest() { return -__int_as_float(0x7f800000); }
  __device__ static float highest() { return __int_as_float(0x7f800000); }
};
template <> struct Limits<double> {
  __device__ static double lowest() { return -__longlong_as_double(0x7ff0000000000000LL); }
  __device__ static double highest() { return __longlong_as_double(0x7ff0000000000000LL); }
};
template <> struct Limits<int> {
  __device__ static int lowest() { return -2147483647 - 1; }
  __device__ static int highest() { return 2147483647; }
};
template <> struct Limits<long long> {
  __device__ static long long lowest() { return -9223372036854775807LL - 1; }
  __device__ static long long highest() { return 9223372036854775807LL; }
};

}  // namespace fuser
