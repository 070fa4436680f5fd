// kernel.block_scan as fuser::block_scan of fuser/scan.cuh: the exclusive prefix and the
// group's total as a structured binding; a scan in a loop takes scratch slot -1 (it ends with a
// barrier, so the next scan may write the scratch array).
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s
// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUNDTRIP
// RUN: fuser-opt %s -t cuda | filecheck %s --check-prefix=INCLUDES

kernel.func @scans(%x: f32, %i: i64, %n: i32, %out: !kernel.tensor<f32, 1>) attributes {max_threads = 512 : i64} {
  %before, %total = kernel.block_scan sum %x along x : f32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %k = %c0 to %n step %c1 : i32 {
    %b, %t = kernel.block_scan max %i along x : i64
    scf.yield
  }
  %s = arith.addf %before, %total : f32
  kernel.store %s, %out[%c0] : f32, !kernel.tensor<f32, 1>, i32
  kernel.return
}

// CHECK:      auto [before, total] = fuser::block_scan<512, 0>(x, fuser::Sum());
// CHECK:        auto [b, t] = fuser::block_scan<512, -1>(i, fuser::Max());
// CHECK:      float s = before + total;

// ROUNDTRIP:  %before, %total = kernel.block_scan sum %x along x : f32
// ROUNDTRIP:  %b, %t = kernel.block_scan max %i along x : i64

// INCLUDES:   #include "fuser/scan.cuh"
