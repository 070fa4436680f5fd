// A Welford reduction: layer norm of each row of a [N, D] tensor, one block per row. Each
// thread folds its strided slice into (mean, M2, count); block_welford combines the states;
// a second pass normalizes with bf16 weight and bias. Thread 0 stores mean and 1/std.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s

kernel.func @layer_norm(%x: !kernel.tensor<f32, 2>, %w: !kernel.tensor<bf16, 1>, %b: !kernel.tensor<bf16, 1>, %eps: f32, %y: !kernel.tensor<f32, 2>, %mean: !kernel.tensor<f32, 1>, %rstd: !kernel.tensor<f32, 1>) attributes {max_threads = 512 : i64} {
  %tid = kernel.thread_id x : i32
  %row = kernel.block_id x : i32
  %bdim = kernel.block_dim x : i32
  %d64 = kernel.size %x[1] : !kernel.tensor<f32, 2>
  %d = arith.trunci %d64 : i64 to i32
  %xs0 = kernel.stride %x[0] : !kernel.tensor<f32, 2>
  %row64 = arith.extsi %row : i32 to i64
  %xrow = arith.muli %row64, %xs0 : i64
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  kernel.comment "fusion.var_mean %var, %avg"
  %avg, %m2, %cnt = scf.for %j = %tid to %d step %bdim iter_args(%a = %zero, %m = %zero, %c = %zero) -> (f32, f32, f32) : i32 {
    %j64 = arith.extsi %j : i32 to i64
    %o = arith.addi %xrow, %j64 : i64
    %v = kernel.load %x[%o] : !kernel.tensor<f32, 2>, i64 -> f32
    %c2 = arith.addf %c, %one : f32
    %delta = arith.subf %v, %a : f32
    %step = arith.divf %delta, %c2 : f32
    %a2 = arith.addf %a, %step : f32
    %delta2 = arith.subf %v, %a2 : f32
    %dd = arith.mulf %delta, %delta2 : f32
    %m3 = arith.addf %m, %dd : f32
    scf.yield %a2, %m3, %c2 : f32, f32, f32
  }
  %mu, %m2_all, %n = kernel.block_welford %avg, %m2, %cnt along x : f32
  %var = arith.divf %m2_all, %n : f32
  kernel.comment "fusion.rsqrt %r"
  %ve = arith.addf %var, %eps : f32
  %r = math.rsqrt %ve : f32
  kernel.comment "fusion.sub, fusion.mul, fusion.add %y"
  scf.for %j = %tid to %d step %bdim : i32 {
    %j64 = arith.extsi %j : i32 to i64
    %o = arith.addi %xrow, %j64 : i64
    %v = kernel.load %x[%o] : !kernel.tensor<f32, 2>, i64 -> f32
    %centered = arith.subf %v, %mu : f32
    %normed = arith.mulf %centered, %r : f32
    %wh = kernel.load %w[%j] : !kernel.tensor<bf16, 1>, i32 -> bf16
    %bh = kernel.load %b[%j] : !kernel.tensor<bf16, 1>, i32 -> bf16
    %wf = arith.extf %wh : bf16 to f32
    %bf = arith.extf %bh : bf16 to f32
    %scaled = arith.mulf %normed, %wf : f32
    %shifted = arith.addf %scaled, %bf : f32
    kernel.store %shifted, %y[%o] : f32, !kernel.tensor<f32, 2>, i64
  }
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %tid, %c0 : i32
  scf.if %first {
    kernel.store %mu, %mean[%row] : f32, !kernel.tensor<f32, 1>, i32
    kernel.store %r, %rstd[%row] : f32, !kernel.tensor<f32, 1>, i32
  }
  kernel.return
}

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(512) layer_norm(Tensor<float, 2> x, Tensor<__nv_bfloat16, 1> w, Tensor<__nv_bfloat16, 1> b, float eps, Tensor<float, 2> y, Tensor<float, 1> mean, Tensor<float, 1> rstd) {
// CHECK:         int d = (int)d64;
// CHECK:         long long row64 = (long long)row;

// Three loop-carried values: declared before the loop, named after the loop's results, updated
// at the end of each iteration.
// CHECK:         // fusion.var_mean %var, %avg
// CHECK-NEXT:    float avg = 0.0f;
// CHECK-NEXT:    float m2 = 0.0f;
// CHECK-NEXT:    float cnt = 0.0f;
// CHECK-NEXT:    for (int j = tid; j < d; j += bdim) {
// CHECK:           float c2 = cnt + 1.0f;
// CHECK-NEXT:      float delta = v - avg;
// CHECK-NEXT:      float step = delta / c2;
// CHECK-NEXT:      float a2 = avg + step;
// CHECK-NEXT:      float delta2 = v - a2;
// CHECK-NEXT:      float dd = delta * delta2;
// CHECK-NEXT:      float m3 = m2 + dd;
// CHECK-NEXT:      avg = a2;
// CHECK-NEXT:      m2 = m3;
// CHECK-NEXT:      cnt = c2;
// CHECK-NEXT:    }
// CHECK-NEXT:    auto [mu, m2_all, n] = fuser::block_welford<fuser::X, 512, 0>(avg, m2, cnt);
// CHECK-NEXT:    float var = m2_all / n;
// CHECK-NEXT:    // fusion.rsqrt %r
// CHECK-NEXT:    float ve = var + eps;
// CHECK-NEXT:    float r = rsqrtf(ve);
// CHECK:         // fusion.sub, fusion.mul, fusion.add %y
// CHECK:           float centered = v_1 - mu;
// CHECK-NEXT:      float normed = centered * r;
// CHECK-NEXT:      __nv_bfloat16 wh = w.data[j_1];
// CHECK-NEXT:      __nv_bfloat16 bh = b.data[j_1];
// CHECK-NEXT:      float wf = __bfloat162float(wh);
// CHECK-NEXT:      float bf = __bfloat162float(bh);
// CHECK:           y.data[o_1] = shifted;
// CHECK:         bool first = tid == 0;
// CHECK-NEXT:    if (first) {
// CHECK-NEXT:      mean.data[row] = mu;
// CHECK-NEXT:      rstd.data[row] = r;
// CHECK-NEXT:    }
// CHECK-NEXT:  }
