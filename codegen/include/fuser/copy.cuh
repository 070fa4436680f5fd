// Asynchronous copies from global to shared memory: `kernel.copy_async`, its commit and wait.
#pragma once

namespace fuser {

// `Bytes` (4, 8 or 16) bytes from `src` to `dst` (shared), or zeros where `valid` is false
// (`src` is not read then). From sm_80 a `cp.async` (16 bytes bypass L1) that lands after a
// commit and a wait; before, a plain copy that has landed when the call returns.
template <int Bytes>
__device__ __forceinline__ void copy_async(void* dst, const void* src, bool valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int size = valid ? Bytes : 0;
  if (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(src), "r"(size)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(to), "l"(src),
                 "n"(Bytes), "r"(size)
                 : "memory");
  }
#else
  struct alignas(Bytes) Chunk {
    char b[Bytes];
  };
  Chunk c{};
  if (valid) c = *static_cast<const Chunk*>(src);
  *static_cast<Chunk*>(dst) = c;
#endif
}

// Closes the group of the copies this thread started since its last commit.
__device__ __forceinline__ void copy_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `Pending` of this thread's committed groups are in flight.
template <int Pending>
__device__ __forceinline__ void copy_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

}  // namespace fuser
