"""The CUDA C++ support code printed before every generated kernel.

Kernels printed by `fuser.codegen.cuda` rely on it: the `Tensor<T, N>` parameter struct (the
layout the runtime packs, see `fuser.dialects.kernel.TENSOR_STRUCT_SOURCE`), `Vec<T, N>`
for 2/4/8-wide memory accesses, and in namespace `fuser` the NaN-propagating `maximum` and
`minimum`, the reduction functors and the warp, block and grid reductions and Welford combines
that the cooperative ops of the `kernel` dialect become, and in namespace `fuser::mm` the matmul
tiles that `kernel.matmul_mainloop` and `kernel.matmul_frag` call (`MATMUL_SOURCE`: `Wgmma`,
Hopper's tensor-core tile of f16/bf16 operands (cp.async into 128-byte-swizzled atoms, wgmma
from shared memory), `Mma`, the tensor-core tile of earlier GPUs with its cp.async / ldmatrix /
mma.sync pipeline, and `Simt`, the f32/f64 tile). It is plain text so that it reads as what it
is, except the `Wgmma64` specializations (`WGMMA_STEPS`), generated because PTX names each of
up to 128 accumulator registers; NVRTC compiles it with the CUDA headers on its include path
and without <cstdint> (hence `long long`, never `int64_t`).
"""

from fuser.dialects.kernel import TENSOR_STRUCT_SOURCE


def _wgmma_step(c_type: str, ptx_type: str, n: int) -> str:
    """`Wgmma64<c_type, n>`: one `wgmma.mma_async` m64n{n}k16 with its n / 2 accumulators (PTX
    names every register; one specialization per shape and type)."""
    regs = n // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    acc = [f'"+f"(d[{i}])' for i in range(regs)]
    acc_lines = ",\n          ".join(", ".join(acc[i : i + 8]) for i in range(0, regs, 8))
    return f"""template <> struct Wgmma64<{c_type}, {n}> {{
  template <int TRANS_A, int TRANS_B>
  __device__ static void run(float (&d)[{regs}], unsigned long long a, unsigned long long b) {{
#if FUSER_WGMMA
    asm volatile(
        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptx_type}.{ptx_type} "
        "{{{outs}}}, "
        "%{regs}, %{regs + 1}, p, 1, 1, %{regs + 2}, %{regs + 3};\\n}}\\n"
        : {acc_lines}
        : "l"(a), "l"(b), "n"(TRANS_A), "n"(TRANS_B));
#endif
  }}
}};
"""


WGMMA_STEPS = "".join(
    _wgmma_step(c, ptx, n)
    for c, ptx in (("__half", "f16"), ("__nv_bfloat16", "bf16"))
    for n in (64, 128, 256)
)
"""The `Wgmma64<T, N>` specializations of the preamble: f16 and bf16, N of 64, 128 and 256 (the
wgmma tiles' BN)."""

MATMUL_SOURCE = (
    r"""// ---- matmul tiles (kernel.matmul_mainloop, kernel.matmul_frag) ------------
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

// ---- Hopper (sm_90a): warpgroup MMA ------------------------------------------------------
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

// d += a * b for one m64nNk16 step of a warpgroup (f32 accumulators, N / 2 per thread): a and b
// are descriptors; TRANS_A / TRANS_B say the operand is MN-major (M or N contiguous).
template <typename T, int N> struct Wgmma64;
"""
    + WGMMA_STEPS
    + r"""
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
"""
)
"""The matmul tiles (see `fuser.transforms.schedulers.matmul`): `Wgmma<T, BM, BN, BK, STAGES,
LOAD_A, LOAD_B>`, `Mma<T, BM, BN, BK, WARPS_M, WARPS_N, STAGES, LOAD_A, LOAD_B>` and `Simt<T, BM,
BN, BK, LOAD_A, LOAD_B>`, each with
`mainloop(acc, a, a_off, b, b_off, m0, n0, k0, k1)`, `frag_row(i)`, `frag_col(i)`, `ACC`,
`THREADS` and `SHARED_BYTES` (dynamic shared memory)."""

PREAMBLE = (
    r"""// ---- fuser preamble --------------------------------------------------------------
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// A generated kernel may leave a value unused: no warning for that.
#pragma nv_diag_suppress 177
#pragma nv_diag_suppress 550

// A tensor parameter: the data pointer, then sizes and strides in elements (rank 0: data only).
"""
    + TENSOR_STRUCT_SOURCE
    + r"""
// N consecutive elements, moved as one 32/64/128-bit memory transaction.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

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

// The combining functions of reductions, each with its identity.
struct Sum {
  template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
  template <typename T> __device__ static T identity() { return T{}; }
};
struct Max {
  template <typename T> __device__ T operator()(T a, T b) const { return maximum(a, b); }
  template <typename T> __device__ static T identity() { return Limits<T>::lowest(); }
};
struct Min {
  template <typename T> __device__ T operator()(T a, T b) const { return minimum(a, b); }
  template <typename T> __device__ static T identity() { return Limits<T>::highest(); }
};

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

// The lane `lane_mask` away (xor) in the warp; a Welford state moves field by field.
template <typename T> __device__ __forceinline__ T shfl_xor(unsigned mask, T v, int lane_mask) {
  return __shfl_xor_sync(mask, v, lane_mask);
}
template <typename T>
__device__ __forceinline__ Welford<T> shfl_xor(unsigned mask, Welford<T> v, int lane_mask) {
  return Welford<T>{shfl_xor(mask, v.avg, lane_mask), shfl_xor(mask, v.m2, lane_mask),
                    shfl_xor(mask, v.n, lane_mask)};
}

// Xor-shuffle butterfly over aligned runs of `width` lanes (a power of two up to 32). Both
// partners combine (lower lane, upper lane) in that order, so every lane gets the same bits.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op, int width = 32, unsigned mask = 0xffffffffu) {
  const int lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
  for (int offset = width / 2; offset > 0; offset /= 2) {
    const T other = shfl_xor(mask, v, offset);
    v = (lane & offset) ? op(other, v) : op(v, other);
  }
  return v;
}

enum Dim { X, Y };

// Shared scratch arrays per element type and size: Slot 0 and 1 alternate between consecutive
// block reductions (so that one needs no barrier after its last read: the next one writes the
// other array, and the one after that writes only after every thread passed the barrier of the
// one in between); slot -1 is for reductions that may follow each other without one in between
// (in a loop), which end with a barrier.
template <typename T, int Size, int Slot> __device__ __forceinline__ T* scratch() {
  __shared__ T buffer[Size];
  return buffer;
}

// Combines `v` across threadIdx.<Along> (x or y), separately for each group of threads sharing
// the other thread indices; every thread of a group gets its group's result. Any block shape of
// at most MaxThreads threads works; every thread of the block must call it. The emitter numbers
// the block reductions of a kernel 0, 1, 0, 1, ... in program order (Slot), or -1 inside loops.
template <Dim Along, int MaxThreads, int Slot, typename T, typename Op>
__device__ T block_reduce(T v, Op op) {
  T* buf = scratch<T, (MaxThreads < 32 ? 32 : MaxThreads), Slot>();
  const int bx = blockDim.x, by = blockDim.y;
  const int tid = threadIdx.x + bx * (threadIdx.y + by * threadIdx.z);
  const int n = Along == X ? bx : by;                    // threads per group
  const int pos = Along == X ? threadIdx.x : threadIdx.y;  // this thread's place in its group
  const int group = Along == X ? tid / bx : threadIdx.x + bx * threadIdx.z;
  if (Along == X && n % 32 == 0) {
    // Each warp lies in one group: reduce the warps, then every run of `width` lanes (a power
    // of two >= the group's warps) reduces the group's warps.
    const int warps = n / 32, lane = pos % 32;
    v = warp_reduce(v, op);
    if (lane == 0) buf[group * warps + pos / 32] = v;
    __syncthreads();
    int width = 1;
    while (width < warps) width *= 2;
    const int k = lane & (width - 1);
    v = warp_reduce(k < warps ? buf[group * warps + k] : Op::template identity<T>(), op, width);
    if (Slot < 0) __syncthreads();  // the scratch array is free for the next reduction
    return v;
  }
  if (Along == X && 32 % n == 0) {
    // Groups are aligned runs of n < 32 lanes; the last warp may be partial.
    const int left = bx * by * blockDim.z - (tid & ~31);
    return warp_reduce(v, op, n, left >= 32 ? 0xffffffffu : (1u << left) - 1);
  }
  // Any shape: stage all values group by group; threads 0..31 of a group fold every 32nd
  // value into their own slot; then each thread folds its group's first min(n, 32) slots.
  buf[group * n + pos] = v;
  __syncthreads();
  if (pos < 32) {
    for (int i = pos + 32; i < n; i += 32) v = op(v, buf[group * n + i]);
    buf[group * n + pos] = v;
  }
  __syncthreads();
  v = buf[group * n];
  for (int i = 1; i < n && i < 32; ++i) v = op(v, buf[group * n + i]);
  __syncthreads();  // the scratch array is free for the next reduction
  return v;
}

// Welford combines: a warp, or a block along x or y as block_reduce does.
template <typename T> __device__ __forceinline__ Welford<T> warp_welford(T avg, T m2, T n) {
  return warp_reduce(Welford<T>{avg, m2, n}, WelfordCombine());
}
template <Dim Along, int MaxThreads, int Slot, typename T>
__device__ __forceinline__ Welford<T> block_welford(T avg, T m2, T n) {
  return block_reduce<Along, MaxThreads, Slot>(Welford<T>{avg, m2, n}, WelfordCombine());
}

template <typename T> struct GridResult {
  T value;
  bool last;
};

// Combines one value per block (thread (0, 0, 0)'s) over the blocks that share the other block
// indices, across blockIdx.<along>. Each block stores its value in `work` and counts itself in
// `sem` (one zeroed counter per group); the block that arrives last combines the values in
// block order, so the result does not depend on arrival order, and resets the counter. Only
// that block gets last = true and the result. Correct, not tuned: one thread per block works.
template <typename T, typename Op>
__device__ GridResult<T> grid_reduce(T v, Op op, Tensor<T, 1> work, Tensor<int, 1> sem, Dim along) {
  __shared__ bool block_is_last;
  const long long members = along == X ? gridDim.x : gridDim.y;
  const long long member = along == X ? blockIdx.x : blockIdx.y;
  const long long group = along == X ? blockIdx.y + (long long)gridDim.y * blockIdx.z
                                     : blockIdx.x + (long long)gridDim.x * blockIdx.z;
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    work.data[(group * members + member) * work.stride[0]] = v;
    __threadfence();  // the value is visible to every block before the block is counted
    int* counter = &sem.data[group * sem.stride[0]];
    block_is_last = atomicAdd(counter, 1) == members - 1;
    if (block_is_last) *counter = 0;  // ready for the next launch
  }
  __syncthreads();
  const bool last = block_is_last;
  if (last) {
    __threadfence();
    v = __ldcg(&work.data[group * members * work.stride[0]]);  // L2: other blocks' stores
    for (long long i = 1; i < members; ++i)
      v = op(v, __ldcg(&work.data[(group * members + i) * work.stride[0]]));
  }
  __syncthreads();  // block_is_last is free for the next grid reduction
  return GridResult<T>{v, last};
}

}  // namespace fuser
"""
    + MATMUL_SOURCE
    + r"""// ---- end of the fuser preamble --------------------------------------------------------
"""
)
"""The text printed before the kernels (`-t 'cuda{preamble=false}'` leaves it out)."""
