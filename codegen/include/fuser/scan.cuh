// fuser's kernel support: the block scan that `kernel.block_scan` becomes.
#pragma once

#include "fuser/reduce.cuh"

namespace fuser {

template <typename T> struct ScanResult {
  T exclusive;  // the combination of the values of the threads before this one in its group
  T total;      // the combination of the values of the whole group
};

// Inclusive scan over aligned runs of `width` lanes (a power of two up to 32): lane k of a run
// gets the combination of lanes 0..k of it, each step taking the partial sum `offset` lanes up.
template <typename T, typename Op>
__device__ __forceinline__ T warp_scan(T v, Op op, int lane, int width, unsigned mask) {
  for (int offset = 1; offset < width; offset *= 2) {
    const T other = __shfl_up_sync(mask, v, offset, width);
    if (lane >= offset) v = op(other, v);
  }
  return v;
}

// Scans `v` across threadIdx.x, separately for each group of threads sharing threadIdx.y and
// threadIdx.z. blockDim.x a power of two up to 32: shuffles within each run of lanes; a multiple
// of 32: each warp scans, the warps' totals go through shared memory, and each warp scans them
// again; any other width: thread 0 of each group scans its group's values in shared memory.
// Every thread of the block must call it. Slot is the scratch slot, as for block_reduce; a scan
// in a loop (Slot -1) ends with a barrier, so its scratch array is free for the next one.
template <int MaxThreads, int Slot, typename T, typename Op>
__device__ ScanResult<T> block_scan(T v, Op op) {
  const int bx = blockDim.x;
  const int tid = threadIdx.x + bx * (threadIdx.y + blockDim.y * threadIdx.z);
  const int group = tid / bx, pos = threadIdx.x;
  const T identity = Op::template identity<T>();
  if (32 % bx == 0) {
    const int left = bx * blockDim.y * blockDim.z - (tid & ~31);
    const unsigned mask = left >= 32 ? 0xffffffffu : (1u << left) - 1;
    const T inclusive = warp_scan(v, op, pos, bx, mask);
    const T before = __shfl_up_sync(mask, inclusive, 1, bx);
    const T total = __shfl_sync(mask, inclusive, bx - 1, bx);
    return ScanResult<T>{pos == 0 ? identity : before, total};
  }
  T* buf = scratch<T, (MaxThreads < 32 ? 32 : MaxThreads), Slot>();
  if (bx % 32 == 0) {
    const int warps = bx / 32, lane = pos % 32, warp = pos / 32;
    const T inclusive = warp_scan(v, op, lane, 32, 0xffffffffu);
    const T before_in_warp = __shfl_up_sync(0xffffffffu, inclusive, 1);
    if (lane == 31) buf[group * warps + warp] = inclusive;
    __syncthreads();
    const T mine = lane < warps ? buf[group * warps + lane] : identity;
    const T warp_totals = warp_scan(mine, op, lane, 32, 0xffffffffu);
    const T before_warp = __shfl_sync(0xffffffffu, warp_totals, (warp + 31) % 32);
    const T total = __shfl_sync(0xffffffffu, warp_totals, warps - 1);
    if (Slot < 0) __syncthreads();  // the scratch array is free for the next scan
    T exclusive = lane == 0 ? identity : before_in_warp;
    if (warp > 0) exclusive = op(before_warp, exclusive);
    return ScanResult<T>{exclusive, total};
  }
  buf[group * bx + pos] = v;
  __syncthreads();
  if (pos == 0) {
    for (int i = 1; i < bx; ++i) buf[group * bx + i] = op(buf[group * bx + i - 1], buf[group * bx + i]);
  }
  __syncthreads();
  const ScanResult<T> result{pos == 0 ? identity : buf[group * bx + pos - 1], buf[group * bx + bx - 1]};
  __syncthreads();  // the scratch array is free for the next scan
  return result;
}

}  // namespace fuser
