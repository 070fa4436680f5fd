// The matmul tile ops as CUDA: `kernel.matmul_mainloop` calls the tile that its
// `#kernel.matmul` config names (`fuser::mm::Mma<...>` for the tensor cores, `Simt<...>` for
// f32/f64) with the accumulator array and the operands, `kernel.matmul_frag` its `frag_row` and
// `frag_col`; the source includes the header of each tile it uses (and f16's for `__half`).
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s
// RUN: fuser-opt %s -t cuda | filecheck %s --check-prefix=PRE

kernel.func @tile(%a: !kernel.tensor<f16, 3>, %b: !kernel.tensor<f16, 3>, %c: !kernel.tensor<f32, 3>) attributes {max_threads = 128 : i64} {
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %m0 = arith.constant 64 : i64
  %k = kernel.size %a[2] : !kernel.tensor<f16, 3>
  %a_off = kernel.stride %a[0] : !kernel.tensor<f16, 3>
  %acc = kernel.alloc : !kernel.array<32xf32, local>
  kernel.matmul_mainloop %acc, %a[%a_off], %b[%z] rows %m0 cols %z k %z to %k config #kernel.matmul<mma f16, tile 64x64x32, warps 2x2, stages 4, a mn_async, b k_elements> : !kernel.array<32xf32, local>, !kernel.tensor<f16, 3>, !kernel.tensor<f16, 3>, i64
  %i = arith.constant 6 : i64
  %r, %col = kernel.matmul_frag %i config #kernel.matmul<mma f16, tile 64x64x32, warps 2x2, stages 4, a mn_async, b k_elements> : i64
  %v = kernel.array_load %acc[%i] : !kernel.array<32xf32, local>, i64 -> f32
  %row = arith.addi %m0, %r : i64
  %s = kernel.stride %c[1] : !kernel.tensor<f32, 3>
  %t = arith.muli %row, %s : i64
  %off = arith.addi %t, %col : i64
  kernel.store %v, %c[%off] : f32, !kernel.tensor<f32, 3>, i64
  kernel.return
}

// CHECK:      extern "C" __global__ void __launch_bounds__(128) tile(Tensor<__half, 3> a, Tensor<__half, 3> b, Tensor<float, 3> c) {
// CHECK:        alignas(16) float acc[32];
// CHECK-NEXT:   fuser::mm::Mma<__half, 64, 64, 32, 2, 2, 4, fuser::mm::MN_ASYNC, fuser::mm::K_ELEMENTS>::mainloop(acc, a, a_off, b, 0LL, 64LL, 0LL, 0LL, k);
// CHECK-NEXT:   long long r = fuser::mm::Mma<__half, 64, 64, 32, 2, 2, 4, fuser::mm::MN_ASYNC, fuser::mm::K_ELEMENTS>::frag_row(6LL);
// CHECK-NEXT:   long long col = fuser::mm::Mma<__half, 64, 64, 32, 2, 2, 4, fuser::mm::MN_ASYNC, fuser::mm::K_ELEMENTS>::frag_col(6LL);
// CHECK-NEXT:   float v = acc[6LL];

// -----

kernel.func @simt(%a: !kernel.tensor<f64, 2>, %b: !kernel.tensor<f64, 2>) attributes {max_threads = 256 : i64} {
  %z = arith.constant 0 : i32
  %k = arith.constant 100 : i32
  %acc = kernel.alloc : !kernel.array<16xf64, local>
  kernel.matmul_mainloop %acc, %a[%z], %b[%z] rows %z cols %z k %z to %k config #kernel.matmul<simt f64, tile 64x64x8, warps 8x1, stages 2, a k_elements, b mn_elements> : !kernel.array<16xf64, local>, !kernel.tensor<f64, 2>, !kernel.tensor<f64, 2>, i32
  kernel.return
}

// CHECK:      simt(Tensor<double, 2> a, Tensor<double, 2> b) {
// CHECK-NEXT:   alignas(16) double acc[16];
// CHECK-NEXT:   fuser::mm::Simt<double, 64, 64, 8, fuser::mm::K_ELEMENTS, fuser::mm::MN_ELEMENTS>::mainloop(acc, a, 0, b, 0, 0, 0, 0, 100);

// PRE:      #include "fuser/core.cuh"
// PRE-NEXT: #include "fuser/mm_mma.cuh"
// PRE-NEXT: #include "fuser/mm_simt.cuh"
// PRE-NEXT: #include <cuda_fp16.h>
// PRE-EMPTY:
// PRE:      extern "C" __global__ void __launch_bounds__(128) tile(
