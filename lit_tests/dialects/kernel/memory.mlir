// Global loads and stores (scalar and vectorized), local and shared arrays, barriers.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// relu over a contiguous 1-d tensor, 4 elements per thread: a 128-bit load into a local array,
// scalar math on the array, a 128-bit store back.
kernel.func @relu_vec4(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) attributes {max_threads = 256 : i64} {
  %tid = kernel.thread_id x : i64
  %bid = kernel.block_id x : i64
  %bdim = kernel.block_dim x : i64
  %c4 = arith.constant 4 : i64
  %t = arith.muli %bid, %bdim : i64
  %u = arith.addi %t, %tid : i64
  %off = arith.muli %u, %c4 : i64
  %buf = kernel.alloc : !kernel.array<4xf32, local>
  %z = arith.constant 0 : i32
  %v = kernel.load %x[%off] : !kernel.tensor<f32, 1>, i64 -> vector<4xf32>
  kernel.array_store %v, %buf[%z] : vector<4xf32>, !kernel.array<4xf32, local>, i32
  %one = arith.constant 1 : i32
  %four = arith.constant 4 : i32
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %k = %z to %four step %one : i32 {
    %e = kernel.array_load %buf[%k] : !kernel.array<4xf32, local>, i32 -> f32
    %r = arith.maximumf %e, %zero : f32
    kernel.array_store %r, %buf[%k] : f32, !kernel.array<4xf32, local>, i32
  }
  %w = kernel.array_load %buf[%z] : !kernel.array<4xf32, local>, i32 -> vector<4xf32>
  kernel.store %w, %y[%off] : vector<4xf32>, !kernel.tensor<f32, 1>, i64
  kernel.return
}

// CHECK:      kernel.func @relu_vec4(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) attributes {max_threads = 256 : i64} {
// CHECK:        %buf = kernel.alloc : !kernel.array<4xf32, local>
// CHECK-NEXT:   %z = arith.constant 0 : i32
// CHECK-NEXT:   %v = kernel.load %x[%off] : !kernel.tensor<f32, 1>, i64 -> vector<4xf32>
// CHECK-NEXT:   kernel.array_store %v, %buf[%z] : vector<4xf32>, !kernel.array<4xf32, local>, i32
// CHECK:        scf.for %k = %z to %four step %one : i32 {
// CHECK-NEXT:     %e = kernel.array_load %buf[%k] : !kernel.array<4xf32, local>, i32 -> f32
// CHECK-NEXT:     %r = arith.maximumf %e, %zero : f32
// CHECK-NEXT:     kernel.array_store %r, %buf[%k] : f32, !kernel.array<4xf32, local>, i32
// CHECK-NEXT:   }
// CHECK-NEXT:   %w = kernel.array_load %buf[%z] : !kernel.array<4xf32, local>, i32 -> vector<4xf32>
// CHECK-NEXT:   kernel.store %w, %y[%off] : vector<4xf32>, !kernel.tensor<f32, 1>, i64
// CHECK-NEXT:   kernel.return

// CHECK-GENERIC:      %buf = "kernel.alloc"() : () -> !kernel.array<4xf32, local>
// CHECK-GENERIC:      %v = "kernel.load"(%x, %off) : (!kernel.tensor<f32, 1>, i64) -> vector<4xf32>
// CHECK-GENERIC-NEXT: "kernel.array_store"(%v, %buf, %z) : (vector<4xf32>, !kernel.array<4xf32, local>, i32) -> ()
// CHECK-GENERIC:      %w = "kernel.array_load"(%buf, %z) : (!kernel.array<4xf32, local>, i32) -> vector<4xf32>
// CHECK-GENERIC-NEXT: "kernel.store"(%w, %y, %off) : (vector<4xf32>, !kernel.tensor<f32, 1>, i64) -> ()

// The two halves of a row swapped (RoPE's rotation), 2 elements per thread: each thread
// loads from the half it does not write, one load at the selected place.
kernel.func @swap_halves(%x: !kernel.tensor<f16, 1>, %y: !kernel.tensor<f16, 1>) attributes {max_threads = 64 : i64} {
  %tid = kernel.thread_id x : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %off = arith.muli %tid, %c2 : i32
  %low = arith.cmpi ult, %off, %c64 : i32
  %up = arith.addi %off, %c64 : i32
  %down = arith.subi %off, %c64 : i32
  %v = kernel.select_load %low, %x[%up], %x[%down] : !kernel.tensor<f16, 1>, i32, !kernel.tensor<f16, 1>, i32 -> vector<2xf16>
  kernel.store %v, %y[%off] : vector<2xf16>, !kernel.tensor<f16, 1>, i32
  kernel.return
}

// CHECK:      kernel.func @swap_halves
// CHECK:        %v = kernel.select_load %low, %x[%up], %x[%down] : !kernel.tensor<f16, 1>, i32, !kernel.tensor<f16, 1>, i32 -> vector<2xf16>
// CHECK-GENERIC: %v = "kernel.select_load"(%low, %x, %up, %x, %down) : (i1, !kernel.tensor<f16, 1>, i32, !kernel.tensor<f16, 1>, i32) -> vector<2xf16>

// A 32x32 tile through shared memory (launched with 32x32 threads): read row-wise, barrier,
// read column-wise, so that x = transpose(y) for the tile.
kernel.func @transpose_tile(%x: !kernel.tensor<f64, 2>, %y: !kernel.tensor<f64, 2>) attributes {max_threads = 1024 : i64} {
  %tx = kernel.thread_id x : i32
  %ty = kernel.thread_id y : i32
  %c32 = arith.constant 32 : i32
  %row = arith.muli %ty, %c32 : i32
  %a = arith.addi %row, %tx : i32
  %col = arith.muli %tx, %c32 : i32
  %b = arith.addi %col, %ty : i32
  %tile = kernel.alloc : !kernel.array<1024xf64, shared>
  %v = kernel.load %x[%a] : !kernel.tensor<f64, 2>, i32 -> f64
  kernel.array_store %v, %tile[%a] : f64, !kernel.array<1024xf64, shared>, i32
  kernel.barrier
  %w = kernel.array_load %tile[%b] : !kernel.array<1024xf64, shared>, i32 -> f64
  kernel.store %w, %y[%a] : f64, !kernel.tensor<f64, 2>, i32
  kernel.return
}

// CHECK:      kernel.func @transpose_tile(
// CHECK:        %tile = kernel.alloc : !kernel.array<1024xf64, shared>
// CHECK-NEXT:   %v = kernel.load %x[%a] : !kernel.tensor<f64, 2>, i32 -> f64
// CHECK-NEXT:   kernel.array_store %v, %tile[%a] : f64, !kernel.array<1024xf64, shared>, i32
// CHECK-NEXT:   kernel.barrier
// CHECK-NEXT:   %w = kernel.array_load %tile[%b] : !kernel.array<1024xf64, shared>, i32 -> f64
// CHECK-NEXT:   kernel.store %w, %y[%a] : f64, !kernel.tensor<f64, 2>, i32

// CHECK-GENERIC:      %tile = "kernel.alloc"() : () -> !kernel.array<1024xf64, shared>
// CHECK-GENERIC:      "kernel.barrier"() : () -> ()

// Every vector width that fits in 16 bytes, for each element size.
kernel.func @vector_widths(%h: !kernel.tensor<bf16, 1>, %d: !kernel.tensor<f64, 1>, %b: !kernel.tensor<i1, 1>, %n: !kernel.tensor<i64, 1>) {
  %z = arith.constant 0 : i64
  %h8 = kernel.load %h[%z] : !kernel.tensor<bf16, 1>, i64 -> vector<8xbf16>
  %h2 = kernel.load %h[%z] : !kernel.tensor<bf16, 1>, i64 -> vector<2xbf16>
  %d2 = kernel.load %d[%z] : !kernel.tensor<f64, 1>, i64 -> vector<2xf64>
  %b8 = kernel.load %b[%z] : !kernel.tensor<i1, 1>, i64 -> vector<8xi1>
  %n2 = kernel.load %n[%z] : !kernel.tensor<i64, 1>, i64 -> vector<2xi64>
  kernel.store %h8, %h[%z] : vector<8xbf16>, !kernel.tensor<bf16, 1>, i64
  kernel.store %b8, %b[%z] : vector<8xi1>, !kernel.tensor<i1, 1>, i64
  %a = kernel.alloc : !kernel.array<6xbf16, local>
  %i = arith.constant 4 : i32
  kernel.array_store %h2, %a[%i] : vector<2xbf16>, !kernel.array<6xbf16, local>, i32
  %zeros = kernel.alloc zeroed : !kernel.array<16xbf16, local>
  kernel.array_store %h8, %zeros[%i] : vector<8xbf16>, !kernel.array<16xbf16, local>, i32
  kernel.return
}

// CHECK:      kernel.func @vector_widths(
// CHECK:        %h8 = kernel.load %h[%z] : !kernel.tensor<bf16, 1>, i64 -> vector<8xbf16>
// CHECK-NEXT:   %h2 = kernel.load %h[%z] : !kernel.tensor<bf16, 1>, i64 -> vector<2xbf16>
// CHECK-NEXT:   %d2 = kernel.load %d[%z] : !kernel.tensor<f64, 1>, i64 -> vector<2xf64>
// CHECK-NEXT:   %b8 = kernel.load %b[%z] : !kernel.tensor<i1, 1>, i64 -> vector<8xi1>
// CHECK-NEXT:   %n2 = kernel.load %n[%z] : !kernel.tensor<i64, 1>, i64 -> vector<2xi64>
// CHECK-NEXT:   kernel.store %h8, %h[%z] : vector<8xbf16>, !kernel.tensor<bf16, 1>, i64
// CHECK-NEXT:   kernel.store %b8, %b[%z] : vector<8xi1>, !kernel.tensor<i1, 1>, i64
// CHECK-NEXT:   %a = kernel.alloc : !kernel.array<6xbf16, local>
// CHECK-NEXT:   %i = arith.constant 4 : i32
// CHECK-NEXT:   kernel.array_store %h2, %a[%i] : vector<2xbf16>, !kernel.array<6xbf16, local>, i32
// CHECK-NEXT:   %zeros = kernel.alloc zeroed : !kernel.array<16xbf16, local>
// CHECK-NEXT:   kernel.array_store %h8, %zeros[%i] : vector<8xbf16>, !kernel.array<16xbf16, local>, i32
// CHECK-GENERIC:      %zeros = "kernel.alloc"() <{zeroed}> : () -> !kernel.array<16xbf16, local>

// Asynchronous copies into arrays in dynamic shared memory (a row ahead, two buffers): start,
// commit, wait for all but the newest group.
kernel.func @copy_ahead(%x: !kernel.tensor<bf16, 2>, %ok: i1) attributes {max_threads = 128 : i64} {
  %tid = kernel.thread_id x : i32
  %c8 = arith.constant 8 : i32
  %off = arith.muli %tid, %c8 : i32
  %stage = kernel.alloc : !kernel.array<2048xbf16, dynamic>
  %sums = kernel.alloc : !kernel.array<128xf32, dynamic>
  kernel.copy_async %x[%off], %stage[%off] elements 8 if %ok : !kernel.tensor<bf16, 2>, i32, !kernel.array<2048xbf16, dynamic>, i32
  kernel.copy_async_commit
  kernel.copy_async_wait pending 1
  %v = kernel.array_load %stage[%off] : !kernel.array<2048xbf16, dynamic>, i32 -> vector<8xbf16>
  kernel.copy_async_wait pending 0
  kernel.return
}

// CHECK:      kernel.func @copy_ahead(
// CHECK:        %stage = kernel.alloc : !kernel.array<2048xbf16, dynamic>
// CHECK-NEXT:   %sums = kernel.alloc : !kernel.array<128xf32, dynamic>
// CHECK-NEXT:   kernel.copy_async %x[%off], %stage[%off] elements 8 if %ok : !kernel.tensor<bf16, 2>, i32, !kernel.array<2048xbf16, dynamic>, i32
// CHECK-NEXT:   kernel.copy_async_commit
// CHECK-NEXT:   kernel.copy_async_wait pending 1
