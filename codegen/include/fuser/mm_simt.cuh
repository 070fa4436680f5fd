// fuser's matmul tile `fuser::mm::Simt<T, BM, BN, BK, LOAD_A, LOAD_B>`: the f32/f64 tile on the
// CUDA cores. It has the members of every tile (see mm_mma.cuh).
#pragma once

#include "fuser/mm_base.cuh"

namespace fuser {
namespace mm {

// A BM x BN tile of C = A B on the CUDA cores (f32 or f64), 256 threads as 16 x 16: thread
// (ty, tx) computes rows ty + 16 i and column pairs 2 tx + 32 j (+1). k tiles of BK are loaded
// element by element into registers while the previous one is multiplied from shared memory.
template <typename T, int BM, int BN, int BK, int LOAD_A, int LOAD_B> struct Simt {
  static constexpr int THREADS = 256;
  static constexpr int TM = BM / 16, TP = BN / 32;  // rows and column pairs per thread
  static constexpr int ACC = TM * TP * 2;
  static constexpr int PAD = 16 / (int)sizeof(T);  // keeps a column of k rows off one bank
  static constexpr int LDA = BM + PAD, LDB = BN + PAD;
  static constexpr int LA = BM * BK / THREADS, LB = BN * BK / THREADS;
  static constexpr int SHARED_BYTES = 2 * BK * (LDA + LDB) * (int)sizeof(T);
  static_assert(BM % 16 == 0 && BN % 32 == 0 && LA * THREADS == BM * BK &&
                    LB * THREADS == BN * BK, "tile shape");

  __device__ static int frag_row(int i) { return (int)threadIdx.x / 16 + 16 * (i / (2 * TP)); }
  __device__ static int frag_col(int i) {
    return 2 * ((int)threadIdx.x % 16) + 32 * ((i / 2) % TP) + i % 2;
  }

  // Element p of this thread's share of an MN x BK tile: (mn, k), consecutive threads along
  // the operand's contiguous dim.
  template <int LOAD, int MN>
  __device__ static void coordinates(int p, int& mn, int& k) {
    const int e = (int)threadIdx.x + p * THREADS;
    const bool k_fast = LOAD == K_ASYNC || LOAD == K_ELEMENTS;
    mn = k_fast ? e / BK : e % MN;
    k = k_fast ? e % BK : e / MN;
  }

  template <int R>
  __device__ static void mainloop(T (&acc)[ACC], Tensor<T, R> a, long long a_off,
                                  Tensor<T, R> b, long long b_off, long long m0,
                                  long long n0, long long k0, long long k1) {
    extern __shared__ __align__(128) unsigned char fuser_matmul_shared[];
    T* as = reinterpret_cast<T*>(fuser_matmul_shared);  // [2][BK][LDA]
    T* bs = as + 2 * BK * LDA;                           // [2][BK][LDB]
    const T* ap = a.data + a_off;
    const T* bp = b.data + b_off;
    const long long sam = a.stride[R - 2], sak = a.stride[R - 1];
    const long long sbk = b.stride[R - 2], sbn = b.stride[R - 1];
    const int M = (int)a.size[R - 2], N = (int)b.size[R - 1];
    const int tx = (int)threadIdx.x % 16, ty = (int)threadIdx.x / 16;
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = T(0);
    const int tiles = k1 > k0 ? (int)((k1 - k0 + BK - 1) / BK) : 0;
    T ra[LA], rb[LB];
    auto fetch = [&](int t) {
      const int kt = (int)k0 + t * BK;
#pragma unroll
      for (int p = 0; p < LA; ++p) {
        int mn, k;
        coordinates<LOAD_A, BM>(p, mn, k);
        const int m = (int)m0 + mn, kk = kt + k;
        ra[p] = m < M && kk < k1 ? ap[m * sam + kk * sak] : T(0);
      }
#pragma unroll
      for (int p = 0; p < LB; ++p) {
        int mn, k;
        coordinates<LOAD_B, BN>(p, mn, k);
        const int n = (int)n0 + mn, kk = kt + k;
        rb[p] = n < N && kk < k1 ? bp[kk * sbk + n * sbn] : T(0);
      }
    };
    auto stash = [&](int buffer) {
#pragma unroll
      for (int p = 0; p < LA; ++p) {
        int mn, k;
        coordinates<LOAD_A, BM>(p, mn, k);
        as[(buffer * BK + k) * LDA + mn] = ra[p];
      }
#pragma unroll
      for (int p = 0; p < LB; ++p) {
        int mn, k;
        coordinates<LOAD_B, BN>(p, mn, k);
        bs[(buffer * BK + k) * LDB + mn] = rb[p];
      }
    };
    if (tiles > 0) {
      fetch(0);
      stash(0);
    }
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
      const int buffer = t % 2;
      if (t + 1 < tiles) fetch(t + 1);
      const T* at = as + buffer * BK * LDA;
      const T* bt = bs + buffer * BK * LDB;
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        T x[TM];
        Vec<T, 2> y[TP];
#pragma unroll
        for (int i = 0; i < TM; ++i) x[i] = at[k * LDA + ty + 16 * i];
#pragma unroll
        for (int j = 0; j < TP; ++j)
          y[j] = *reinterpret_cast<const Vec<T, 2>*>(&bt[k * LDB + 2 * tx + 32 * j]);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TP; ++j) {
            acc[(i * TP + j) * 2] += x[i] * y[j].v[0];
            acc[(i * TP + j) * 2 + 1] += x[i] * y[j].v[1];
          }
      }
      if (t + 1 < tiles) stash(1 - buffer);
      __syncthreads();
    }
  }
};

}  // namespace mm
}  // namespace fuser
