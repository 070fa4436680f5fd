// Warp, block and grid reductions and Welford combines.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// Row sums of a [N, D] tensor, one block of blockDim.x threads per row: each thread sums a
// strided slice of its row, the block combines the partial sums, thread 0 stores the result.
kernel.func @row_sum(%x: !kernel.tensor<f32, 2>, %out: !kernel.tensor<f32, 1>) attributes {max_threads = 512 : i64} {
  %tid = kernel.thread_id x : i64
  %row = kernel.block_id x : i64
  %bdim = kernel.block_dim x : i64
  %d = kernel.size %x[1] : !kernel.tensor<f32, 2>
  %s0 = kernel.stride %x[0] : !kernel.tensor<f32, 2>
  %s1 = kernel.stride %x[1] : !kernel.tensor<f32, 2>
  %rowoff = arith.muli %row, %s0 : i64
  %zero = arith.constant 0.000000e+00 : f32
  %acc = scf.for %j = %tid to %d step %bdim iter_args(%a = %zero) -> (f32) : i64 {
    %jo = arith.muli %j, %s1 : i64
    %off = arith.addi %rowoff, %jo : i64
    %v = kernel.load %x[%off] : !kernel.tensor<f32, 2>, i64 -> f32
    %a2 = arith.addf %a, %v : f32
    scf.yield %a2 : f32
  }
  kernel.comment "fusion.sum %s"
  %sum = kernel.block_reduce sum %acc along x : f32
  %c0 = arith.constant 0 : i64
  %first = arith.cmpi eq, %tid, %c0 : i64
  scf.if %first {
    %os = kernel.stride %out[0] : !kernel.tensor<f32, 1>
    %o = arith.muli %row, %os : i64
    kernel.store %sum, %out[%o] : f32, !kernel.tensor<f32, 1>, i64
  }
  kernel.return
}

// CHECK:      %acc = scf.for %j = %tid to %d step %bdim iter_args(%a = %zero) -> (f32) : i64 {
// CHECK:        kernel.comment "fusion.sum %s"
// CHECK-NEXT:   %sum = kernel.block_reduce sum %acc along x : f32
// CHECK:          kernel.store %sum, %out[%o] : f32, !kernel.tensor<f32, 1>, i64

// CHECK-GENERIC: %sum = "kernel.block_reduce"(%acc) <{kind = #kernel<reduce_kind sum>, along = #kernel<dim x>}> : (f32) -> f32

// Every reduction op, kind and type.
kernel.func @all_reductions(%f: f32, %g: f64, %i: i32, %l: i64, %work: !kernel.tensor<f64, 1>, %sem: !kernel.tensor<i32, 1>) {
  %r0 = kernel.warp_reduce sum %f : f32
  %r1 = kernel.warp_reduce max %g : f64
  %r2 = kernel.warp_reduce min %i : i32
  %r3 = kernel.block_reduce max %l along y : i64
  %r4 = kernel.block_reduce min %f along x : f32
  %r6 = kernel.warp_reduce prod %l : i64
  %r7 = kernel.block_reduce prod %g along x : f64
  %a0, %m0, %n0 = kernel.warp_welford %f, %f, %f : f32
  %a1, %m1, %n1 = kernel.block_welford %g, %g, %g along y : f64
  %r5, %last = kernel.grid_reduce sum %g, %work, %sem along x : f64, !kernel.tensor<f64, 1>, !kernel.tensor<i32, 1>
  scf.if %last {
    %c0 = arith.constant 0 : i32
    kernel.store %r5, %work[%c0] : f64, !kernel.tensor<f64, 1>, i32
  }
  kernel.return
}

// CHECK:      kernel.func @all_reductions(%f: f32, %g: f64, %i: i32, %l: i64, %work: !kernel.tensor<f64, 1>, %sem: !kernel.tensor<i32, 1>) {
// CHECK-NEXT:   %r0 = kernel.warp_reduce sum %f : f32
// CHECK-NEXT:   %r1 = kernel.warp_reduce max %g : f64
// CHECK-NEXT:   %r2 = kernel.warp_reduce min %i : i32
// CHECK-NEXT:   %r3 = kernel.block_reduce max %l along y : i64
// CHECK-NEXT:   %r4 = kernel.block_reduce min %f along x : f32
// CHECK-NEXT:   %r6 = kernel.warp_reduce prod %l : i64
// CHECK-NEXT:   %r7 = kernel.block_reduce prod %g along x : f64
// CHECK-NEXT:   %a0, %m0, %n0 = kernel.warp_welford %f, %f, %f : f32
// CHECK-NEXT:   %a1, %m1, %n1 = kernel.block_welford %g, %g, %g along y : f64
// CHECK-NEXT:   %r5, %last = kernel.grid_reduce sum %g, %work, %sem along x : f64, !kernel.tensor<f64, 1>, !kernel.tensor<i32, 1>
// CHECK-NEXT:   scf.if %last {

// CHECK-GENERIC:      %r0 = "kernel.warp_reduce"(%f) <{kind = #kernel<reduce_kind sum>}> : (f32) -> f32
// CHECK-GENERIC-NEXT: %r1 = "kernel.warp_reduce"(%g) <{kind = #kernel<reduce_kind max>}> : (f64) -> f64
// CHECK-GENERIC-NEXT: %r2 = "kernel.warp_reduce"(%i) <{kind = #kernel<reduce_kind min>}> : (i32) -> i32
// CHECK-GENERIC-NEXT: %r3 = "kernel.block_reduce"(%l) <{kind = #kernel<reduce_kind max>, along = #kernel<dim y>}> : (i64) -> i64
// CHECK-GENERIC-NEXT: %r4 = "kernel.block_reduce"(%f) <{kind = #kernel<reduce_kind min>, along = #kernel<dim x>}> : (f32) -> f32
// CHECK-GENERIC-NEXT: %r6 = "kernel.warp_reduce"(%l) <{kind = #kernel<reduce_kind prod>}> : (i64) -> i64
// CHECK-GENERIC-NEXT: %r7 = "kernel.block_reduce"(%g) <{kind = #kernel<reduce_kind prod>, along = #kernel<dim x>}> : (f64) -> f64
// CHECK-GENERIC-NEXT: %a0, %m0, %n0 = "kernel.warp_welford"(%f, %f, %f) : (f32, f32, f32) -> (f32, f32, f32)
// CHECK-GENERIC-NEXT: %a1, %m1, %n1 = "kernel.block_welford"(%g, %g, %g) <{along = #kernel<dim y>}> : (f64, f64, f64) -> (f64, f64, f64)
// CHECK-GENERIC-NEXT: %r5, %last = "kernel.grid_reduce"(%g, %work, %sem) <{kind = #kernel<reduce_kind sum>, along = #kernel<dim x>}> : (f64, !kernel.tensor<f64, 1>, !kernel.tensor<i32, 1>) -> (f64, i1)

// Welford over a row, as fusion.var_mean lowers: each thread folds its elements into
// (mean, M2, count), the warp combines the states.
kernel.func @row_welford(%x: !kernel.tensor<f32, 1>, %var: !kernel.tensor<f32, 1>, %mean: !kernel.tensor<f32, 1>) attributes {max_threads = 32 : i64} {
  %lane = kernel.thread_id x : i32
  %n = kernel.size %x[0] : !kernel.tensor<f32, 1>
  %n32 = arith.trunci %n : i64 to i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %avg, %m2, %cnt = scf.for %j = %lane to %n32 step %c32 iter_args(%a = %zero, %m = %zero, %c = %zero) -> (f32, f32, f32) : i32 {
    %v = kernel.load %x[%j] : !kernel.tensor<f32, 1>, i32 -> f32
    %c2 = arith.addf %c, %one : f32
    %delta = arith.subf %v, %a : f32
    %step = arith.divf %delta, %c2 : f32
    %a2 = arith.addf %a, %step : f32
    %delta2 = arith.subf %v, %a2 : f32
    %dd = arith.mulf %delta, %delta2 : f32
    %m3 = arith.addf %m, %dd : f32
    scf.yield %a2, %m3, %c2 : f32, f32, f32
  }
  kernel.comment "fusion.var_mean %var, %mean"
  %avg_w, %m2_w, %cnt_w = kernel.warp_welford %avg, %m2, %cnt : f32
  %variance = arith.divf %m2_w, %cnt_w : f32
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %lane, %c0 : i32
  scf.if %first {
    kernel.store %variance, %var[%c0] : f32, !kernel.tensor<f32, 1>, i32
    kernel.store %avg_w, %mean[%c0] : f32, !kernel.tensor<f32, 1>, i32
  }
  kernel.return
}

// CHECK:      kernel.comment "fusion.var_mean %var, %mean"
// CHECK-NEXT: %avg_w, %m2_w, %cnt_w = kernel.warp_welford %avg, %m2, %cnt : f32
// CHECK-NEXT: %variance = arith.divf %m2_w, %cnt_w : f32
