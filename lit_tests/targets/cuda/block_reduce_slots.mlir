// Block reductions alternate between two shared scratch arrays in program order (slots 0, 1,
// 0, ...), so that none needs a barrier after its last read; one inside a loop gets slot -1 and
// keeps that barrier. A division with the `afn` fast-math flag is the fast __fdividef.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s

kernel.func @slots(%x: f32, %n: i32, %out: !kernel.tensor<f32, 1>) attributes {max_threads = 256 : i64} {
  %a = kernel.block_reduce sum %x along x : f32
  %b = kernel.block_reduce max %a along x : f32
  %w0 = arith.constant 1.000000e+00 : f32
  %m, %m2, %c = kernel.block_welford %b, %w0, %w0 along y : f32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%s = %m) -> (f32) : i32 {
    %r = kernel.block_reduce sum %s along x : f32
    scf.yield %r : f32
  }
  %q = arith.divf %acc, %m2 fastmath<afn> : f32
  %e = arith.divf %q, %c : f32
  kernel.store %e, %out[%c0] : f32, !kernel.tensor<f32, 1>, i32
  kernel.return
}

// CHECK-LABEL: void __launch_bounds__(256) slots(
// CHECK-NEXT:    float a = fuser::block_reduce<fuser::X, 256, 0>(x, fuser::Sum());
// CHECK-NEXT:    float b = fuser::block_reduce<fuser::X, 256, 1>(a, fuser::Max());
// CHECK-NEXT:    auto [m, m2, c] = fuser::block_welford<fuser::Y, 256, 0>(b, 1.0f, 1.0f);
// CHECK-NEXT:    float acc = m;
// CHECK-NEXT:    for (int i = 0; i < n; ++i) {
// CHECK-NEXT:      float r = fuser::block_reduce<fuser::X, 256, -1>(acc, fuser::Sum());
// CHECK-NEXT:      acc = r;
// CHECK-NEXT:    }
// CHECK-NEXT:    float q = __fdividef(acc, m2);
// CHECK-NEXT:    float e = q / c;
