// fuser's matmul tiles, their common part (see `fuser.transforms.schedulers.matmul`): how an
// operand tile travels from global to shared memory (`Load`, cp.async, `Operand`) and
// `run_tiles`, the k loop driver of the tensor-core tiles (mm_mma.cuh, mm_wgmma.cuh).
#pragma once

#include "fuser/core.cuh"

namespace fuser {
namespace mm {

// How an operand tile travels from global to shared memory, and how it is laid out there.
// K_*: one shared row per M (or N) index holding consecutive k; MN_*: one row per k holding
// consecutive M (or N) indices. *_ASYNC copy 16-byte chunks with cp.async (the rows of the global
// operand must be 16-byte aligned); a chunk that is not wholly inside the operand is loaded
// element by element and zero-filled; *_ELEMENTS load element by element, for any strides and
// alignment.
enum Load { K_ASYNC = 0, MN_ASYNC = 1, K_ELEMENTS = 2, MN_ELEMENTS = 3 };

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes from global memory to the shared address `dst`, asynchronously, all of them.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int Pending> __device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

// One operand's tile in shared memory: MN x BK elements (MN = BM for A, BN for B), written by
// THREADS threads in 16-byte chunks. Chunks are swizzled (chunk ^ a function of the row) so that
// neither the chunk writes nor ldmatrix's eight row reads hit one bank twice; the function of the
// row is the same for rows 16 apart, so moving 16 rows (a fragment block, a k step) adds a
// constant.
// ATOMS (the wgmma tiles): the tile is laid out as the 128-byte-swizzled atoms wgmma reads, 8
// rows of 128 bytes each: K rows must then be 64 elements long (one atom wide), and MN rows are
// cut into 64-element atoms stored one after another (the rows of atom j at j * BK * 64).
template <typename T, int MN, int BK, int LOAD, int THREADS, bool ATOMS = false> struct Operand {
  static constexpr bool K_ROWS = LOAD == K_ASYNC || LOAD == K_ELEMENTS;
  static constexpr int K_TILE = BK;
  static constexpr bool ASYNC = LOAD == K_ASYNC || LOAD == MN_ASYNC;
  static constexpr int ROWS = K_ROWS ? MN : BK;
  static constexpr int ROW = K_ROWS ? BK : MN;  // elements per row
  static constexpr int CHUNKS = ROW / 8;        // 16-byte chunks per row
  static constexpr int ELEMS = MN * BK;
  static constexpr int PER_THREAD = ROWS * CHUNKS / THREADS;
  static constexpr int RSTEP = THREADS / CHUNKS;  // rows between one thread's chunks
  static_assert(ROW % 8 == 0 && (CHUNKS & (CHUNKS - 1)) == 0, "rows of 2^n 16-byte chunks");
  static_assert(CHUNKS >= 2 && ROWS * CHUNKS % THREADS == 0 && THREADS % CHUNKS == 0,
                "chunks spread evenly, a thread's chunks in one column");
  static_assert(!ATOMS || (K_ROWS ? ROW == 64 : ROW % 64 == 0), "rows of whole 128-byte atoms");

  __device__ static int offset(int row, int chunk) {
    if (ATOMS && !K_ROWS)
      return (chunk / 8) * (ROWS * 64) + row * 64 + ((chunk % 8) ^ (row & 7)) * 8;
    const int swizzled = CHUNKS >= 8 ? chunk ^ (row & 7)
                                     : chunk ^ ((row / (8 / CHUNKS)) & (CHUNKS - 1));
    return row * ROW + swizzled * 8;
  }

  const T* data;  // the operand at this block's batch offset
  long long s_mn, s_k;
  const T* next;   // this thread's first chunk of the next k tile (async loads)
  long long step;  // from one of this thread's chunks to the next
  int mn0, mn_end, k_end, k_next;
  int full;  // async loads of a k tile inside k_end: K rows, the chunks (bits) whose row is
             // inside mn_end; MN rows, the bytes every chunk copies

  __device__ Operand(const T* data_, long long s_mn_, long long s_k_, int mn0_, int mn_end_,
                     int k_begin, int k_end_)
      : data(data_), s_mn(s_mn_), s_k(s_k_), mn0(mn0_), mn_end(mn_end_), k_end(k_end_),
        k_next(k_begin) {
    const int row = threadIdx.x / CHUNKS, c = threadIdx.x % CHUNKS;
    const int mn = K_ROWS ? mn0 + row : mn0 + c * 8;
    const int k = K_ROWS ? k_begin + c * 8 : k_begin + row;
    next = data + (mn * s_mn + k * s_k);
    step = RSTEP * (K_ROWS ? s_mn : s_k);
    full = 0;
    if (K_ROWS) {
#pragma unroll
      for (int p = 0; p < PER_THREAD; ++p) full |= (mn + p * RSTEP < mn_end ? 1 : 0) << p;
    } else {
      const int n = mn_end - mn;
      full = (n < 0 ? 0 : (n > 8 ? 8 : n)) * (int)sizeof(T);
    }
  }

  // Whether every k tile of this block lies wholly inside the operand: true for all blocks but
  // those at an edge of M, N or K (the same for every thread of the block).
  __device__ bool interior() const { return mn0 + MN <= mn_end && (k_end - k_next) % BK == 0; }

  // This thread's chunks of the next k tile into the tile at `tile` (shared address `addr`).
  // EDGES false: the caller knows the block is interior(), and no edge code is compiled.
  template <bool EDGES> __device__ void load(T* tile, unsigned addr) {
    const int row0 = threadIdx.x / CHUNKS, c = threadIdx.x % CHUNKS;
    const bool inside = k_next + BK <= k_end;
    const T* src = next;
    // every chunk of this thread inside the operand, the common case: plain copies
    if (ASYNC && (!EDGES || (inside && full == (K_ROWS ? (1 << PER_THREAD) - 1 : 16)))) {
#pragma unroll
      for (int p = 0; p < PER_THREAD; ++p, src += step)
        cp_async16(addr + offset(row0 + p * RSTEP, c) * (int)sizeof(T), src);
      next += BK * s_k;
      k_next += BK;
      return;
    }
    if (!ASYNC) {
#pragma unroll
      for (int p = 0; p < PER_THREAD; ++p) chunk_elements(tile, row0 + p * RSTEP, c);
    } else {
      // At the operand's edge a chunk is copied whole or loaded element by element: a partial
      // cp.async would still address 16 bytes, past the end of a small operand. The element
      // loads come in a second loop, not unrolled, so that the common path pays no registers.
      unsigned edges = 0;
#pragma unroll
      for (int p = 0; p < PER_THREAD; ++p, src += step) {
        const int row = row0 + p * RSTEP;
        const int mn = K_ROWS ? mn0 + row : mn0 + c * 8;
        const int k = K_ROWS ? k_next + c * 8 : k_next + row;
        const bool whole =
            inside ? (K_ROWS ? ((full >> p) & 1) != 0 : full == 16)
                   : (K_ROWS ? mn < mn_end && k + 8 <= k_end : k < k_end && mn + 8 <= mn_end);
        if (whole)
          cp_async16(addr + offset(row, c) * (int)sizeof(T), src);
        else
          edges |= 1u << p;
      }
#pragma unroll 1
      for (int p = 0; p < PER_THREAD; ++p)
        if ((edges >> p) & 1) chunk_elements(tile, row0 + p * RSTEP, c);
    }
    next += BK * s_k;
    k_next += BK;
  }

  // Chunk `c` of tile row `row` of the k tile at k_next, element by element (zero outside the
  // operand), as one 16-byte shared-memory store.
  __device__ void chunk_elements(T* tile, int row, int c) const {
    const int mn = K_ROWS ? mn0 + row : mn0 + c * 8;
    const int k = K_ROWS ? k_next + c * 8 : k_next + row;
    Vec<T, 8> v;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int m = K_ROWS ? mn : mn + e, kk = K_ROWS ? k + e : k;
      v.v[e] = m < mn_end && kk < k_end ? data[m * s_mn + kk * s_k] : T(0.0f);
    }
    *reinterpret_cast<Vec<T, 8>*>(tile + offset(row, c)) = v;
  }
};

// acc = A[m0:m0+BM, k0:k1] B[k0:k1, n0:n0+BN] by the k loop of `Tiles` (Mma or Wgmma: its
// operands `Tiles::A`, `Tiles::B` and `Tiles::tiles_loop<EDGES>`) for the last two dims of `a`
// ([.., M, K]) and `b` ([.., K, N]) at element offsets a_off and b_off; out-of-range rows and
// columns are zero. A block wholly inside both operands (most blocks) runs the loop compiled
// without edge code.
template <typename Tiles, typename T, int R>
__device__ __forceinline__ void run_tiles(float (&acc)[Tiles::ACC], Tensor<T, R> a,
                                          long long a_off, Tensor<T, R> b, long long b_off,
                                          long long m0, long long n0, long long k0,
                                          long long k1) {
  typename Tiles::A la(a.data + a_off, a.stride[R - 2], a.stride[R - 1], (int)m0,
                       (int)a.size[R - 2], (int)k0, (int)k1);
  typename Tiles::B lb(b.data + b_off, b.stride[R - 1], b.stride[R - 2], (int)n0,
                       (int)b.size[R - 1], (int)k0, (int)k1);
  constexpr int BK = Tiles::A::K_TILE;
  const int tiles = k1 > k0 ? (int)((k1 - k0 + BK - 1) / BK) : 0;
  if (la.interior() && lb.interior())
    Tiles::template tiles_loop<false>(acc, la, lb, tiles);
  else
    Tiles::template tiles_loop<true>(acc, la, lb, tiles);
}

}  // namespace mm
}  // namespace fuser
