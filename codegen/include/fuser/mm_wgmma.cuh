// fuser's matmul tile `fuser::mm::Wgmma<T, BM, BN, BK, STAGES, LOAD_A, LOAD_B>`: Hopper's
// tensor-core tile (sm_90a; f16/bf16 operands, f32 accumulators), cp.async into 128-byte-swizzled
// atoms and wgmma from shared memory. It has the members of every tile (see mm_mma.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fuser/mm_base.cuh"

// 128 threads (a warpgroup) multiply a 64 x N block of A by an N-wide block of B straight from
// shared memory (`wgmma.mma_async`): no ldmatrix, and each operand byte is read once per
// warpgroup instead of once per warp. The operands are described by 64-bit descriptors: the
// tile's shared address, the byte offsets between 8-row core-matrix groups (stride) and between
// 64-element atoms along M or N (leading, for an MN-major operand), and the 128-byte swizzle.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FUSER_WGMMA 1
#else
#define FUSER_WGMMA 0
#endif

// Wgmma64<T, N>: one m64nNk16 wgmma step (generated: PTX names each accumulator register).
#include "fuser/mm_wgmma64.cuh"

namespace fuser {
namespace mm {

__device__ __forceinline__ unsigned long long wgmma_descriptor(unsigned address, unsigned leading,
                                                               unsigned stride) {
  return (unsigned long long)((address & 0x3FFFF) >> 4) |
         ((unsigned long long)((leading & 0x3FFFF) >> 4) << 16) |
         ((unsigned long long)((stride & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() {
#if FUSER_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if FUSER_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Until at most `Pending` of this warpgroup's committed wgmma groups are still running.
template <int Pending> __device__ __forceinline__ void wgmma_wait() {
#if FUSER_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}
// What this thread wrote to shared memory (cp.async or stores) becomes visible to wgmma's reads.
__device__ __forceinline__ void fence_async_shared() {
#if FUSER_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// A BM x BN tile of C = A B on Hopper's tensor cores (f16/bf16 operands, f32 accumulators):
// BM / 64 warpgroups, each 64 rows by all BN columns; k tiles of 64 (one 128-byte atom of K) in
// a ring of STAGES atom-laid-out tiles (Operand<..., ATOMS>), each multiplied by four wgmma
// steps. While tile t is multiplied, tile t - 1's wgmmas may still run and tiles up to
// t + STAGES - 2 are on their way (cp.async); the stage of tile t - 2 is the one refilled. The
// fragment order of the accumulators is mma.sync's, per 16-row slice of a warp.
template <typename T, int BM, int BN, int BK, int STAGES, int LOAD_A, int LOAD_B> struct Wgmma {
  static constexpr int THREADS = 2 * BM;  // 128 threads per 64 rows
  static constexpr int ACC = BN / 2;
  using A = Operand<T, BM, BK, LOAD_A, THREADS, true>;
  using B = Operand<T, BN, BK, LOAD_B, THREADS, true>;
  static constexpr int STAGE = A::ELEMS + B::ELEMS;
  static constexpr int SHARED_BYTES = STAGES * STAGE * (int)sizeof(T) + 1024;  // + alignment
  static constexpr int PREFETCH = STAGES - 2;  // k tiles loading ahead of the one multiplied
  static_assert(sizeof(T) == 2 && BM % 64 == 0 && BK == 64 && STAGES >= 3, "tile shape");

  __device__ static int frag_row(int i) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    return (warp / 4) * 64 + (warp % 4) * 16 + lane / 4 + ((i % 4) / 2) * 8;
  }
  __device__ static int frag_col(int i) {
    return (i / 4) * 8 + (threadIdx.x % 4) * 2 + i % 2;
  }

  // The descriptor of k step ks of an operand tile at shared address `tile`, from M (or N)
  // index `mn` (a multiple of 64) on.
  template <typename Op> __device__ static unsigned long long descriptor(unsigned tile, int mn,
                                                                         int ks) {
    if (Op::K_ROWS) return wgmma_descriptor(tile + mn * 128 + ks * 32, 16, 1024);
    return wgmma_descriptor(tile + (mn / 64) * (BK * 128) + ks * 2048, BK * 128, 1024);
  }

  // acc = A[m0:m0+BM, k0:k1] B[k0:k1, n0:n0+BN] with wgmma tiles (see `run_tiles`).
  template <int R>
  __device__ static void mainloop(float (&acc)[ACC], Tensor<T, R> a, long long a_off,
                                  Tensor<T, R> b, long long b_off, long long m0, long long n0,
                                  long long k0, long long k1) {
    static_assert(FUSER_WGMMA, "wgmma tiles need sm_90a");
    run_tiles<Wgmma>(acc, a, a_off, b, b_off, m0, n0, k0, k1);
  }

  // acc = the product of la's and lb's next `tiles` k tiles; EDGES false: both interior().
  template <bool EDGES>
  __device__ static void tiles_loop(float (&acc)[ACC], A& la, B& lb, int tiles) {
    extern __shared__ __align__(1024) unsigned char fuser_matmul_shared[];
    const unsigned raw = shared_address(fuser_matmul_shared);
    const unsigned base = (raw + 1023) & ~1023u;  // the 128-byte swizzle repeats every 1024
    T* shared = reinterpret_cast<T*>(fuser_matmul_shared + (base - raw));
    constexpr int STAGE_BYTES = STAGE * (int)sizeof(T), A_BYTES = A::ELEMS * (int)sizeof(T);
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int s = 0; s < PREFETCH; ++s) {
      if (s < tiles) {
        la.template load<EDGES>(shared + s * STAGE, base + s * STAGE_BYTES);
        lb.template load<EDGES>(shared + s * STAGE + A::ELEMS,
                                base + s * STAGE_BYTES + A_BYTES);
      }
      cp_async_commit();
    }
    const int rows = (threadIdx.x / 128) * 64;  // this warpgroup's rows of the tile
    for (int t = 0; t < tiles; ++t) {
      cp_async_wait<PREFETCH - 1>();
      fence_async_shared();
      __syncthreads();  // k tile t landed; every warpgroup's wgmmas of tile t - 2 are done
      const int write = (t + PREFETCH) % STAGES;  // tile t - 2's stage
      if (t + PREFETCH < tiles) {
        la.template load<EDGES>(shared + write * STAGE, base + write * STAGE_BYTES);
        lb.template load<EDGES>(shared + write * STAGE + A::ELEMS,
                                base + write * STAGE_BYTES + A_BYTES);
      }
      cp_async_commit();
      const unsigned stage = base + (t % STAGES) * STAGE_BYTES;
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks)
        Wgmma64<T, BN>::template run<!A::K_ROWS, !B::K_ROWS>(
            acc, descriptor<A>(stage, rows, ks), descriptor<B>(stage + A_BYTES, 0, ks));
      wgmma_commit();
      wgmma_wait<1>();  // tile t - 1's wgmmas are done: its stage is free after the next barrier
    }
    wgmma_wait<0>();
    cp_async_wait<0>();
  }
};

}  // namespace mm
}  // namespace fuser
