// fuser's matmul tile `fuser::mm::Mma<T, BM, BN, BK, WARPS_M, WARPS_N, STAGES, LOAD_A, LOAD_B>`:
// the tensor-core tile of sm_80 and later (f16/bf16 operands, f32 accumulators) with its cp.async /
// ldmatrix / mma.sync pipeline. Like every tile it has `mainloop(acc, a, a_off, b, b_off, m0, n0,
// k0, k1)`, `frag_row(i)`, `frag_col(i)`, `ACC`, `THREADS` and `SHARED_BYTES` (dynamic shared
// memory), which `kernel.matmul_mainloop` and `kernel.matmul_frag` become.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fuser/mm_base.cuh"

namespace fuser {
namespace mm {

// Four 8x8 b16 matrices from shared memory; lanes 8i..8i+7 give the (shared) row addresses of
// matrix i, whose fragment lands in r[i].
template <bool Trans> __device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned p) {
#if __CUDA_ARCH__ >= 800
  if (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(p));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(p));
#endif
}

// d += a * b for one m16n8k16 tile: a row-major 16x16, b column-major 16x8, d 16x8 in f32.
template <typename T> struct Mma16816;
template <> struct Mma16816<__half> {
  __device__ static void run(float* d, const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
};
template <> struct Mma16816<__nv_bfloat16> {
  __device__ static void run(float* d, const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
};

// Where this lane's ldmatrix rows lie in an operand tile, for the 16 x 16 blocks (16 MN indices
// by 16 k) a warp reads: block `b` (MN from mn_warp + 16 b) at k step `kk` starts at
// `at(b, kk)` elements. Matrix i of a block covers MN 8 x (i & 1) and k 8 x (i >> 1) (the
// order of mma's A operand); with B_ORDER, MN 8 x (i >> 1) and k 8 x (i & 1), so that each of
// the block's two n8 halves comes as two consecutive registers (mma's B operand).
template <typename Op, int BLOCKS, int KSTEPS, bool B_ORDER> struct Lanes {
  static constexpr int PER = Op::K_ROWS ? KSTEPS : BLOCKS;
  int lane[PER];

  __device__ explicit Lanes(int mn_warp) {
    const int l = threadIdx.x % 32, i = l / 8, j = l % 8;
    const int x_mn = B_ORDER ? i >> 1 : i & 1, x_k = B_ORDER ? i & 1 : i >> 1;
#pragma unroll
    for (int q = 0; q < PER; ++q)
      lane[q] = Op::K_ROWS ? Op::offset(mn_warp + x_mn * 8 + j, q * 2 + x_k)
                           : Op::offset(x_k * 8 + j, (mn_warp + q * 16) / 8 + x_mn);
  }
  __device__ int at(int block, int kk) const {
    return Op::K_ROWS ? lane[kk] + block * 16 * Op::ROW : lane[block] + kk * 16 * Op::ROW;
  }
};

// A BM x BN tile of C = A B on the tensor cores (f16/bf16 operands, f32 accumulators):
// WARPS_M x WARPS_N warps of (BM / WARPS_M) x (BN / WARPS_N) outputs each, k tiles of BK in a
// STAGES-deep cp.async pipeline, fragments double-buffered in registers.
template <typename T, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, int LOAD_A,
          int LOAD_B>
struct Mma {
  static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int MI = WM / 16, NI = WN / 8, KSTEPS = BK / 16;
  static constexpr int ACC = MI * NI * 4;
  using A = Operand<T, BM, BK, LOAD_A, THREADS>;
  using B = Operand<T, BN, BK, LOAD_B, THREADS>;
  static constexpr int STAGE = A::ELEMS + B::ELEMS;
  static constexpr int SHARED_BYTES = STAGES * STAGE * (int)sizeof(T);
  static_assert(WM % 16 == 0 && WN % 16 == 0 && KSTEPS >= 2 && STAGES >= 2, "tile shape");

  // Accumulator i of this thread holds C(row, col) of the tile; i and i + 1 (i even) are
  // neighbours in a row.
  __device__ static int frag_row(int i) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    return (warp / WARPS_N) * WM + (i / (4 * NI)) * 16 + lane / 4 + ((i % 4) / 2) * 8;
  }
  __device__ static int frag_col(int i) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    return (warp % WARPS_N) * WN + ((i / 4) % NI) * 8 + (lane % 4) * 2 + (i % 2);
  }

  __device__ static void multiply(float (&acc)[ACC], const unsigned (&a)[MI][4],
                                  const unsigned (&b)[NI / 2][4]) {
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int n = 0; n < NI; ++n) {
        const int ni = mi % 2 ? NI - 1 - n : n;  // serpentine: reuse b across neighbours
        Mma16816<T>::run(&acc[(mi * NI + ni) * 4], a[mi], b[ni / 2][2 * (ni % 2)],
                         b[ni / 2][2 * (ni % 2) + 1]);
      }
  }

  // acc = A[m0:m0+BM, k0:k1] B[k0:k1, n0:n0+BN] with mma.sync tiles (see `run_tiles`).
  template <int R>
  __device__ static void mainloop(float (&acc)[ACC], Tensor<T, R> a, long long a_off,
                                  Tensor<T, R> b, long long b_off, long long m0, long long n0,
                                  long long k0, long long k1) {
    static_assert(sizeof(T) == 2 && __CUDA_ARCH__ >= 800, "mma.sync needs sm_80 and 16-bit types");
    run_tiles<Mma>(acc, a, a_off, b, b_off, m0, n0, k0, k1);
  }

  // acc = the product of la's and lb's next `tiles` k tiles; EDGES false: both interior().
  template <bool EDGES>
  __device__ static void tiles_loop(float (&acc)[ACC], A& la, B& lb, int tiles) {
    extern __shared__ __align__(128) unsigned char fuser_matmul_shared[];
    T* shared = reinterpret_cast<T*>(fuser_matmul_shared);
    const unsigned base = shared_address(fuser_matmul_shared);
    constexpr int STAGE_BYTES = STAGE * (int)sizeof(T), A_BYTES = A::ELEMS * (int)sizeof(T);
    const int warp = threadIdx.x / 32;
    const Lanes<A, MI, KSTEPS, false> fa_at((warp / WARPS_N) * WM);
    const Lanes<B, NI / 2, KSTEPS, true> fb_at((warp % WARPS_N) * WN);
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < tiles) {
        la.template load<EDGES>(shared + s * STAGE, base + s * STAGE_BYTES);
        lb.template load<EDGES>(shared + s * STAGE + A::ELEMS,
                                base + s * STAGE_BYTES + A_BYTES);
      }
      cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    unsigned fa[2][MI][4], fb[2][NI / 2][4];
    // the fragments of k step kk of the stage at shared address `stage`
    auto fragments = [&](unsigned (&ra)[MI][4], unsigned (&rb)[NI / 2][4], unsigned stage,
                         int kk) {
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
        ldmatrix_x4<!A::K_ROWS>(ra[mi], stage + fa_at.at(mi, kk) * (int)sizeof(T));
#pragma unroll
      for (int nj = 0; nj < NI / 2; ++nj)
        ldmatrix_x4<!B::K_ROWS>(rb[nj], stage + A_BYTES + fb_at.at(nj, kk) * (int)sizeof(T));
    };
    int read = 0, write = STAGES - 1;
    fragments(fa[0], fb[0], base, 0);
    for (int t = 0; t < tiles; ++t) {
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
        if (kk == KSTEPS - 1) {  // the next k tile: landed, and visible to every warp
          cp_async_wait<STAGES - 2>();
          __syncthreads();
          read = read + 1 == STAGES ? 0 : read + 1;
        }
        fragments(fa[(kk + 1) % 2], fb[(kk + 1) % 2], base + read * STAGE_BYTES,
                  (kk + 1) % KSTEPS);
        if (kk == 0) {  // refill the stage every warp finished reading before the last barrier
          if (t + STAGES - 1 < tiles) {
            la.template load<EDGES>(shared + write * STAGE, base + write * STAGE_BYTES);
            lb.template load<EDGES>(shared + write * STAGE + A::ELEMS,
                                    base + write * STAGE_BYTES + A_BYTES);
          }
          cp_async_commit();
          write = write + 1 == STAGES ? 0 : write + 1;
        }
        multiply(acc, fa[kk % 2], fb[kk % 2]);
      }
    }
    cp_async_wait<0>();
  }
};

}  // namespace mm
}  // namespace fuser
