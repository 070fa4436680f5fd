// kernel.random as the calls of fuser/random.cuh: a block (subsequence) and a component.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s
// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUNDTRIP

kernel.func @draws(%seed: i64, %offset: i64, %b: i32, %c: i32, %l: i64, %k: i64, %out: !kernel.tensor<f32, 1>) {
  %u = kernel.random uniform %seed, %offset, %b, %c : i32 -> f32
  %z = kernel.random normal %seed, %offset, %b, %c : i32 -> f32
  %d = kernel.random uniform %seed, %offset, %l, %k : i64 -> f64
  %e = kernel.random normal %seed, %offset, %l, %k : i64 -> f64
  kernel.store %u, %out[%b] : f32, !kernel.tensor<f32, 1>, i32
  kernel.return
}

// CHECK-LABEL: void draws(
// CHECK-NEXT:    float u = fuser::rand_f32(seed, offset, b, c);
// CHECK-NEXT:    float z = fuser::randn_f32(seed, offset, b, c);
// CHECK-NEXT:    double d = fuser::rand_f64(seed, offset, l, k);
// CHECK-NEXT:    double e = fuser::randn_f64(seed, offset, l, k);

// ROUNDTRIP:       %u = kernel.random uniform %seed, %offset, %b, %c : i32 -> f32
// ROUNDTRIP-NEXT:  %z = kernel.random normal %seed, %offset, %b, %c : i32 -> f32
