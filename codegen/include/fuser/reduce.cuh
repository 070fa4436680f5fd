// fuser's kernel support: the reduction functors (`fuser::Sum`, `Max`, `Min`, `Prod`) and the warp, block
// and grid reductions that `kernel.warp_reduce`, `kernel.block_reduce` and `kernel.grid_reduce`
// become.
#pragma once

#include "fuser/core.cuh"
#include "fuser/math.cuh"

namespace fuser {

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
struct Prod {
  template <typename T> __device__ T operator()(T a, T b) const { return a * b; }
  template <typename T> __device__ static T identity() { return T(1); }
};

// The lane `lane_mask` away (xor) in the warp.
template <typename T> __device__ __forceinline__ T shfl_xor(unsigned mask, T v, int lane_mask) {
  return __shfl_xor_sync(mask, v, lane_mask);
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
// (in a loop), which end with a barrier. Caution: a reduction along x over runs of 32 lanes or
// fewer (warp shuffles only) passes no barrier yet takes a slot, so slot 0, that one, slot 0
// would let the third write while the first is still read; the emitter has no such sequence
// (such reductions sit in loops, slot -1), but one that adds it must count them out.
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
  if (Along == Y && 32 % bx == 0 && (bx * by) % 32 == 0 && blockDim.z == 1) {
    // Each warp holds 32 / bx whole rows of x: xor-shuffles across those rows (lanes bx, 2 bx,
    // ... apart) combine them, then every thread folds its column's warps in order (one value
    // a warp, consecutive in shared memory: no bank conflicts).
    const int warps = bx * by / 32, lane = tid % 32;
    for (int offset = 16; offset >= bx; offset /= 2) {
      const T other = shfl_xor(0xffffffffu, v, offset);
      v = (lane & offset) ? op(other, v) : op(v, other);
    }
    if (lane < bx) buf[(tid / 32) * bx + lane] = v;
    __syncthreads();
    v = buf[threadIdx.x];
    for (int w = 1; w < warps; ++w) v = op(v, buf[w * bx + threadIdx.x]);
    if (Slot < 0) __syncthreads();  // the scratch array is free for the next reduction
    return v;
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
