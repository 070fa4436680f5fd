// fuser's kernel support: the block-wide selection and sort that `kernel.block_topk` becomes
// (`fusion.topk`, and `fusion.argsort` as the top n of n).
#pragma once

#include "fuser/core.cuh"

namespace fuser {

// Order keys: unsigned integers whose ascending order is the values' ascending order. A NaN
// (any) is above +inf, as torch sorts it; -0.0 is below +0.0, as their bit patterns (and
// torch's radix select) have them. The map is one to one on everything but NaN payloads.
// `block_topk` makes -0.0 the key of +0.0 where the two must compare equal (an argsort).
template <typename T> struct OrderKey;

template <> struct OrderKey<float> {
  using Key = unsigned int;
  __device__ static Key of(float v) {
    if (v != v) return 0xffffffffu;
    const Key x = __float_as_uint(v);
    return (x & 0x80000000u) ? ~x : (x | 0x80000000u);
  }
  __device__ static float value(Key k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
  }
};

template <> struct OrderKey<double> {
  using Key = unsigned long long;
  __device__ static Key of(double v) {
    if (v != v) return ~0ull;
    const Key x = static_cast<Key>(__double_as_longlong(v));
    return (x >> 63) ? ~x : (x | (1ull << 63));
  }
  __device__ static double value(Key k) {
    return __longlong_as_double(static_cast<long long>((k >> 63) ? (k & ~(1ull << 63)) : ~k));
  }
};

template <> struct OrderKey<int> {
  using Key = unsigned int;
  __device__ static Key of(int v) { return static_cast<Key>(v) ^ 0x80000000u; }
  __device__ static int value(Key k) { return static_cast<int>(k ^ 0x80000000u); }
};

template <> struct OrderKey<long long> {
  using Key = unsigned long long;
  __device__ static Key of(long long v) { return static_cast<Key>(v) ^ (1ull << 63); }
  __device__ static long long value(Key k) { return static_cast<long long>(k ^ (1ull << 63)); }
};

// Counts `digit` (of the lanes taking part) in the 256-bin histogram: one shared atomic per
// distinct digit of a warp, so that many equal digits (a row of similar values) do not queue.
__device__ __forceinline__ void count_digit(int* hist, unsigned digit) {
  const unsigned active = __activemask();
  const unsigned peers = __match_any_sync(active, digit);
  if ((threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&hist[digit], __popc(peers));
}

// The block's radix selection state: the digits fixed so far and how many of the smallest keys
// with them are still to take.
template <typename Key> struct Selection {
  Key prefix;
  Key mask;
  int remaining;  // the rank (from 1) of the selected key among the keys that match `prefix`
  int ties;       // after the last pass: how many keys equal the selected one
};

// Fixes one 8-bit digit (at `shift`) of the `remaining`-th smallest key among the valid keys
// that match `s.prefix` under `s.mask`, from the histogram every thread has filled.
template <typename Key>
__device__ void pick_digit(int* hist, int shift, Selection<Key>& s) {
  __shared__ int picked[3];
  const int t = threadIdx.x;
  __syncthreads();  // the histogram is complete
  if (t < 32) {
    int counts[8], sum = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      counts[i] = hist[t * 8 + i];
      sum += counts[i];
    }
    int inclusive = sum;
    for (int offset = 1; offset < 32; offset *= 2) {
      const int other = __shfl_up_sync(0xffffffffu, inclusive, offset);
      if (t >= offset) inclusive += other;
    }
    int before = inclusive - sum;
    if (before < s.remaining && s.remaining <= inclusive) {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if (before + counts[i] >= s.remaining) {
          picked[0] = t * 8 + i;
          picked[1] = before;
          picked[2] = counts[i];
          break;
        }
        before += counts[i];
      }
    }
  }
  __syncthreads();
  s.prefix |= static_cast<Key>(picked[0]) << shift;
  s.mask |= static_cast<Key>(255) << shift;
  s.remaining -= picked[1];
  s.ties = picked[2];
  __syncthreads();  // `picked` and the histogram are free again
}

// The `k` smallest keys of a row (by key, then by index), sorted, into shared memory: `values`
// holds this thread's elements of the row, element e at index threadIdx.x + e * blockDim.x
// (those at n or past it are not read); `out_values` and `out_indices` (P >= min(k, n) slots,
// a power of two) get the k values and their indices in order; with `Descending` the largest
// first. NaN counts as the largest value; -0.0 as smaller than +0.0, or with EqualZeros as equal
// (then the values written back are +0.0). Ties go by index. Every thread of the block must
// call it; it ends with a barrier, after which the outputs may be read.
template <int E, int P, bool Descending, bool EqualZeros, typename T>
__device__ void block_topk(const T (&values)[E], int n, int k, T* out_values, int* out_indices) {
  using Key = typename OrderKey<T>::Key;
  constexpr int Bits = 8 * sizeof(Key);
  __shared__ int hist[256];
  __shared__ int counter;
  const int t = threadIdx.x, threads = blockDim.x;
  Key keys[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    // (with EqualZeros, -0.0 as +0.0: `v == 0` holds for both, and the sum of two zeros is +0)
    const Key key = OrderKey<T>::of(EqualZeros && values[e] == T(0) ? T(0) : values[e]);
    keys[e] = Descending ? ~key : key;
  }
  k = k < n ? k : n;
  if (k <= 0) n = 0;  // nothing taken: no element is read
  // The k-th smallest key (`chosen`), and the largest index (`last`) of the keys equal to it
  // that are taken: a radix selection over the keys' bytes, then over the ties' indices.
  Key chosen = ~static_cast<Key>(0);
  int last = n;
  if (k < n && k > 0) {
    Selection<Key> s{0, 0, k, 0};
    for (int shift = Bits - 8; shift >= 0; shift -= 8) {
      for (int i = t; i < 256; i += threads) hist[i] = 0;
      __syncthreads();
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const int j = t + e * threads;
        if (j < n && (keys[e] & s.mask) == s.prefix)
          count_digit(hist, static_cast<unsigned>((keys[e] >> shift) & 255));
      }
      pick_digit(hist, shift, s);
    }
    chosen = s.prefix;
    if (s.ties > s.remaining) {  // some keys equal to it are left out: the lowest indices go in
      Selection<unsigned> r{0, 0, s.remaining, 0};
      for (int shift = 8; shift >= 0; shift -= 8) {
        for (int i = t; i < 256; i += threads) hist[i] = 0;
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const unsigned j = t + e * threads;
          if (j < static_cast<unsigned>(n) && keys[e] == chosen && (j & r.mask) == r.prefix)
            count_digit(hist, (j >> shift) & 255);
        }
        pick_digit(hist, shift, r);
      }
      last = static_cast<int>(r.prefix);
    }
  }
  // The k taken keys into shared memory (in any order), the rest of the P slots past them.
  Key* sorted = reinterpret_cast<Key*>(out_values);
  if (t == 0) counter = 0;
  __syncthreads();
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int j = t + e * threads;
    if (j < n && (keys[e] < chosen || (keys[e] == chosen && j <= last))) {
      const int slot = atomicAdd(&counter, 1);
      sorted[slot] = keys[e];
      out_indices[slot] = j;
    }
  }
  for (int i = k + t; i < P; i += threads) {
    sorted[i] = ~static_cast<Key>(0);
    out_indices[i] = 0x7fffffff;
  }
  // Bitonic sort of the P slots by (key, index).
  for (int size = 2; size <= P; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      __syncthreads();
      for (int i = t; i < P / 2; i += threads) {
        const int lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
        const Key a = sorted[lo], b = sorted[hi];
        const int ia = out_indices[lo], ib = out_indices[hi];
        const bool greater = a > b || (a == b && ia > ib);
        if (greater == ((lo & size) == 0)) {
          sorted[lo] = b;
          sorted[hi] = a;
          out_indices[lo] = ib;
          out_indices[hi] = ia;
        }
      }
    }
  }
  __syncthreads();
  for (int i = t; i < k; i += threads) {
    const Key key = sorted[i];
    out_values[i] = OrderKey<T>::value(Descending ? ~key : key);
  }
  __syncthreads();
}

}  // namespace fuser
