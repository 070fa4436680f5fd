// A row reduction: softmax over the last axis of a [N, D] tensor, one block of blockDim.x
// threads per row. Each thread folds a strided slice of its row, block_reduce combines the
// partial max and sum, and a last loop normalizes.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s

kernel.func @softmax(%x: !kernel.tensor<f32, 2>, %y: !kernel.tensor<f32, 2>) attributes {max_threads = 256 : i64} {
  %tid = kernel.thread_id x : i64
  %row = kernel.block_id x : i64
  %bdim = kernel.block_dim x : i64
  %d = kernel.size %x[1] : !kernel.tensor<f32, 2>
  %xs0 = kernel.stride %x[0] : !kernel.tensor<f32, 2>
  %xs1 = kernel.stride %x[1] : !kernel.tensor<f32, 2>
  %ys0 = kernel.stride %y[0] : !kernel.tensor<f32, 2>
  %ys1 = kernel.stride %y[1] : !kernel.tensor<f32, 2>
  %xrow = arith.muli %row, %xs0 : i64
  %yrow = arith.muli %row, %ys0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  kernel.comment "fusion.max %m"
  %mloc = scf.for %j = %tid to %d step %bdim iter_args(%acc = %ninf) -> (f32) : i64 {
    %jo = arith.muli %j, %xs1 : i64
    %o = arith.addi %xrow, %jo : i64
    %v = kernel.load %x[%o] : !kernel.tensor<f32, 2>, i64 -> f32
    %acc2 = arith.maximumf %acc, %v : f32
    scf.yield %acc2 : f32
  }
  %m = kernel.block_reduce max %mloc along x : f32
  kernel.comment "fusion.sub, fusion.exp, fusion.sum %s"
  %sloc = scf.for %j = %tid to %d step %bdim iter_args(%acc = %zero) -> (f32) : i64 {
    %jo = arith.muli %j, %xs1 : i64
    %o = arith.addi %xrow, %jo : i64
    %v = kernel.load %x[%o] : !kernel.tensor<f32, 2>, i64 -> f32
    %c = arith.subf %v, %m : f32
    %e = math.exp %c : f32
    %acc2 = arith.addf %acc, %e : f32
    scf.yield %acc2 : f32
  }
  %s = kernel.block_reduce sum %sloc along x : f32
  kernel.comment "fusion.div %y"
  %inv = arith.divf %one, %s : f32
  scf.for %j = %tid to %d step %bdim : i64 {
    %jo = arith.muli %j, %xs1 : i64
    %o = arith.addi %xrow, %jo : i64
    %v = kernel.load %x[%o] : !kernel.tensor<f32, 2>, i64 -> f32
    %c = arith.subf %v, %m : f32
    %e = math.exp %c : f32
    %p = arith.mulf %e, %inv : f32
    %yo1 = arith.muli %j, %ys1 : i64
    %yo = arith.addi %yrow, %yo1 : i64
    kernel.store %p, %y[%yo] : f32, !kernel.tensor<f32, 2>, i64
  }
  kernel.return
}

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(256) softmax(Tensor<float, 2> x, Tensor<float, 2> y) {
// CHECK:         long long xrow = row * xs0;
// CHECK-NEXT:    long long yrow = row * ys0;

// The running max starts at -inf and folds with the NaN-propagating maximum.
// CHECK-NEXT:    // fusion.max %m
// CHECK-NEXT:    float mloc = (-__int_as_float(0x7f800000));
// CHECK-NEXT:    for (long long j = tid; j < d; j += bdim) {
// CHECK-NEXT:      long long jo = j * xs1;
// CHECK-NEXT:      long long o = xrow + jo;
// CHECK-NEXT:      float v = x.data[o];
// CHECK-NEXT:      float acc2 = fuser::maximum(mloc, v);
// CHECK-NEXT:      mloc = acc2;
// CHECK-NEXT:    }
// CHECK-NEXT:    float m = fuser::block_reduce<fuser::X, 256, 0>(mloc, fuser::Max());

// Names reused in a later loop (%j, %jo, %o, %v, %acc2) get a suffix: names are unique in a
// kernel, so no scope shadows another.
// CHECK-NEXT:    // fusion.sub, fusion.exp, fusion.sum %s
// CHECK-NEXT:    float sloc = 0.0f;
// CHECK-NEXT:    for (long long j_1 = tid; j_1 < d; j_1 += bdim) {
// CHECK-NEXT:      long long jo_1 = j_1 * xs1;
// CHECK-NEXT:      long long o_1 = xrow + jo_1;
// CHECK-NEXT:      float v_1 = x.data[o_1];
// CHECK-NEXT:      float c = v_1 - m;
// CHECK-NEXT:      float e = expf(c);
// CHECK-NEXT:      float acc2_1 = sloc + e;
// CHECK-NEXT:      sloc = acc2_1;
// CHECK-NEXT:    }
// CHECK-NEXT:    float s = fuser::block_reduce<fuser::X, 256, 1>(sloc, fuser::Sum());
// CHECK-NEXT:    // fusion.div %y
// CHECK-NEXT:    float inv = 1.0f / s;
// CHECK-NEXT:    for (long long j_2 = tid; j_2 < d; j_2 += bdim) {
// CHECK:           float p = e_1 * inv;
// CHECK:           y.data[yo] = p;
// CHECK-NEXT:    }
// CHECK-NEXT:  }
