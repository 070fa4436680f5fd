// fuser's kernel support: what every generated kernel uses (fuser/codegen/include/fuser/*.cuh).
// The `Tensor<T, N>` parameter struct (the one definition of the layout the runtime packs:
// `fuser.runtime.compiled_kernel.pack_tensor_param`) and `Vec<T, N>` for 2/4/8-wide accesses.
// NVRTC compiles these headers without <cstdint> (hence `long long`, never `int64_t`).
#pragma once

// A generated kernel may leave a value unused: no warning for that.
#pragma nv_diag_suppress 177
#pragma nv_diag_suppress 550

// A tensor parameter: the data pointer, then sizes and strides in elements (rank 0: data only).
template <typename T, int N>
struct Tensor {
  T* data;
  long long size[N];
  long long stride[N];
};
template <typename T>
struct Tensor<T, 0> {
  T* data;
};

// `t` with its last two dims swapped (`kernel.transposed`): a matmul operand read as the
// transpose of its input (linear's weight), with no copy.
namespace fuser {
template <typename T, int N>
__device__ __forceinline__ Tensor<T, N> transposed(Tensor<T, N> t) {
  const long long size = t.size[N - 2], stride = t.stride[N - 2];
  t.size[N - 2] = t.size[N - 1];
  t.stride[N - 2] = t.stride[N - 1];
  t.size[N - 1] = size;
  t.stride[N - 1] = stride;
  return t;
}
}  // namespace fuser

// N consecutive elements, moved as one 32/64/128-bit memory transaction.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};
