// scf.for with iter_args (including a swap), scf.if with and without results, #pragma unroll,
// and how values are named. Ops outside a kernel.func are not printed.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s

func.func @host_side() {
  func.return
}

// Fibonacci numbers, then a swap. Loop-carried values live in variables named after the loop's
// results; scf.yield assigns them in order, so a swap saves the value it overwrites first.
kernel.func @fib(%out: !kernel.tensor<i64, 1>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %fa, %fb = scf.for %i = %c0 to %n step %c1 iter_args(%a = %zero, %b = %one) -> (i64, i64) : i32 {
    %s = arith.addi %a, %b : i64
    scf.yield %b, %s : i64, i64
  }
  %p, %q = scf.for %i = %c0 to %n step %c1 iter_args(%x = %fa, %y = %fb) -> (i64, i64) : i32 {
    scf.yield %y, %x : i64, i64
  }
  kernel.store %p, %out[%c0] : i64, !kernel.tensor<i64, 1>, i32
  kernel.store %q, %out[%c1] : i64, !kernel.tensor<i64, 1>, i32
  kernel.return
}

// CHECK-NOT:   host_side
// CHECK-LABEL: extern "C" __global__ void fib(Tensor<long long, 1> out, int n) {
// CHECK-NEXT:    long long fa = 0LL;
// CHECK-NEXT:    long long fb = 1LL;
// CHECK-NEXT:    for (int i = 0; i < n; ++i) {
// CHECK-NEXT:      long long s = fa + fb;
// CHECK-NEXT:      fa = fb;
// CHECK-NEXT:      fb = s;
// CHECK-NEXT:    }
// CHECK-NEXT:    long long p = fa;
// CHECK-NEXT:    long long q = fb;
// CHECK-NEXT:    for (int i_1 = 0; i_1 < n; ++i_1) {
// CHECK-NEXT:      long long p_old = p;
// CHECK-NEXT:      p = q;
// CHECK-NEXT:      q = p_old;
// CHECK-NEXT:    }
// CHECK-NEXT:    out.data[0] = p;
// CHECK-NEXT:    out.data[1] = q;
// CHECK-NEXT:  }

// A clamp written with scf.if results inside a loop whose carried value the if produces; an
// scf.if without results; unroll hints; names that are C++ keywords, CUDA built-ins or used
// twice, and values without a name.
kernel.func @clamp_sum(%x: !kernel.tensor<f64, 1>, %lo: f64, %hi: f64, %out: !kernel.tensor<f64, 1>, %m: i32) attributes {max_threads = 64 : i64} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c16 = arith.constant 16 : i32
  %zero = arith.constant 0.000000e+00 : f64
  %total = scf.for %k = %c0 to %c16 step %c2 iter_args(%acc = %zero) -> (f64) : i32 {
    %v = kernel.load %x[%k] : !kernel.tensor<f64, 1>, i32 -> f64
    %below = arith.cmpf olt, %v, %lo : f64
    %clamped = scf.if %below -> (f64) {
      scf.yield %lo : f64
    } else {
      %above = arith.cmpf ogt, %v, %hi : f64
      %int = scf.if %above -> (f64) {
        scf.yield %hi : f64
      } else {
        scf.yield %v : f64
      }
      scf.yield %int : f64
    }
    %next = arith.addf %acc, %clamped : f64
    scf.yield %next : f64
  } {unroll}
  // not unrolled: the upper bound is not a constant
  %threadIdx = scf.for %k = %c0 to %m step %c1 iter_args(%acc = %total) -> (f64) : i32 {
    %exp = math.exp %acc : f64
    %0 = arith.mulf %exp, %acc : f64
    scf.yield %0 : f64
  } {unroll}
  %pos = arith.cmpf ogt, %threadIdx, %zero : f64
  scf.if %pos {
    kernel.store %threadIdx, %out[%c0] : f64, !kernel.tensor<f64, 1>, i32
  } else {
    %1 = arith.negf %threadIdx : f64
    kernel.store %1, %out[%c0] : f64, !kernel.tensor<f64, 1>, i32
  }
  kernel.return
}

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(64) clamp_sum(Tensor<double, 1> x, double lo, double hi, Tensor<double, 1> out, int m) {
// CHECK-NEXT:    double total = 0.0;
// CHECK-NEXT:    #pragma unroll
// CHECK-NEXT:    for (int k = 0; k < 16; k += 2) {
// CHECK-NEXT:      double v = x.data[k];
// CHECK-NEXT:      bool below = v < lo;
// CHECK-NEXT:      double clamped;
// CHECK-NEXT:      if (below) {
// CHECK-NEXT:        clamped = lo;
// CHECK-NEXT:      } else {
// CHECK-NEXT:        bool above = v > hi;
// CHECK-NEXT:        double int_;
// CHECK-NEXT:        if (above) {
// CHECK-NEXT:          int_ = hi;
// CHECK-NEXT:        } else {
// CHECK-NEXT:          int_ = v;
// CHECK-NEXT:        }
// CHECK-NEXT:        clamped = int_;
// CHECK-NEXT:      }
// CHECK-NEXT:      double next = total + clamped;
// CHECK-NEXT:      total = next;
// CHECK-NEXT:    }
// CHECK-NEXT:    double threadIdx_ = total;
// CHECK-NEXT:    for (int k_1 = 0; k_1 < m; ++k_1) {
// CHECK-NEXT:      double exp_ = exp(threadIdx_);
// CHECK-NEXT:      double mulf0 = exp_ * threadIdx_;
// CHECK-NEXT:      threadIdx_ = mulf0;
// CHECK-NEXT:    }
// CHECK-NEXT:    bool pos = threadIdx_ > 0.0;
// CHECK-NEXT:    if (pos) {
// CHECK-NEXT:      out.data[0] = threadIdx_;
// CHECK-NEXT:    } else {
// CHECK-NEXT:      double negf0 = -threadIdx_;
// CHECK-NEXT:      out.data[0] = negf0;
// CHECK-NEXT:    }
// CHECK-NEXT:  }
