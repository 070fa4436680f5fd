// A pointwise fusion with 128-bit vector accesses: y = bf16(silu(f32(x)) + bias), 8 elements
// per thread, computed in f32 between an f16 load and a bf16 store.
// RUN: fuser-opt %s -t cuda | filecheck %s
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s --check-prefix=BARE

kernel.func @silu_add(%x: !kernel.tensor<f16, 1>, %bias: f32, %y: !kernel.tensor<bf16, 1>) attributes {max_threads = 128 : i64} {
  %tid = kernel.thread_id x : i64
  %bid = kernel.block_id x : i64
  %bdim = kernel.block_dim x : i64
  %c8 = arith.constant 8 : i64
  %base = arith.muli %bid, %bdim : i64
  %lin = arith.addi %base, %tid : i64
  %off = arith.muli %lin, %c8 : i64
  %n = kernel.size %x[0] : !kernel.tensor<f16, 1>
  %in = arith.cmpi slt, %off, %n : i64
  scf.if %in {
    %z = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %eight = arith.constant 8 : i32
    %fone = arith.constant 1.000000e+00 : f32
    %xs = kernel.alloc : !kernel.array<8xf16, local>
    %ys = kernel.alloc : !kernel.array<8xbf16, local>
    %xv = kernel.load %x[%off] : !kernel.tensor<f16, 1>, i64 -> vector<8xf16>
    kernel.array_store %xv, %xs[%z] : vector<8xf16>, !kernel.array<8xf16, local>, i32
    scf.for %k = %z to %eight step %one : i32 {
      %h = kernel.array_load %xs[%k] : !kernel.array<8xf16, local>, i32 -> f16
      %f = arith.extf %h : f16 to f32
      kernel.comment "fusion.sigmoid %sig"
      %neg = arith.negf %f : f32
      %e = math.exp %neg : f32
      %den = arith.addf %e, %fone : f32
      %sig = arith.divf %fone, %den : f32
      kernel.comment "fusion.mul %silu"
      %silu = arith.mulf %f, %sig : f32
      kernel.comment "fusion.add %out"
      %out = arith.addf %silu, %bias : f32
      %o = arith.truncf %out : f32 to bf16
      kernel.array_store %o, %ys[%k] : bf16, !kernel.array<8xbf16, local>, i32
    } {unroll}
    %yv = kernel.array_load %ys[%z] : !kernel.array<8xbf16, local>, i32 -> vector<8xbf16>
    kernel.store %yv, %y[%off] : vector<8xbf16>, !kernel.tensor<bf16, 1>, i64
  }
  kernel.return
}

// The includes come first: fuser's core header (the parameter struct) and the real
// half-precision headers of the types the kernel uses, nothing else.
// CHECK-NOT:  fuser/copy.cuh
// CHECK:      #include "fuser/core.cuh"
// CHECK-NEXT: #include <cuda_bf16.h>
// CHECK-NEXT: #include <cuda_fp16.h>
// CHECK-EMPTY:
// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(128) silu_add(Tensor<__half, 1> x, float bias, Tensor<__nv_bfloat16, 1> y) {
// CHECK-NEXT:    long long tid = (long long)threadIdx.x;
// CHECK-NEXT:    long long bid = (long long)blockIdx.x;
// CHECK-NEXT:    long long bdim = (long long)blockDim.x;
// CHECK-NEXT:    long long base = bid * bdim;
// CHECK-NEXT:    long long lin = base + tid;
// CHECK-NEXT:    long long off = lin * 8LL;
// CHECK-NEXT:    long long n = x.size[0];
// CHECK-NEXT:    bool in = off < n;
// CHECK-NEXT:    if (in) {
// CHECK-NEXT:      alignas(16) __half xs[8];
// CHECK-NEXT:      alignas(16) __nv_bfloat16 ys[8];
// CHECK-NEXT:      Vec<__half, 8> xv = *reinterpret_cast<const Vec<__half, 8>*>(&x.data[off]);
// CHECK-NEXT:      *reinterpret_cast<Vec<__half, 8>*>(&xs[0]) = xv;
// CHECK-NEXT:      #pragma unroll
// CHECK-NEXT:      for (int k = 0; k < 8; ++k) {
// CHECK-NEXT:        __half h = xs[k];
// CHECK-NEXT:        float f = __half2float(h);
// CHECK-NEXT:        // fusion.sigmoid %sig
// CHECK-NEXT:        float neg = -f;
// CHECK-NEXT:        float e = expf(neg);
// CHECK-NEXT:        float den = e + 1.0f;
// CHECK-NEXT:        float sig = 1.0f / den;
// CHECK-NEXT:        // fusion.mul %silu
// CHECK-NEXT:        float silu = f * sig;
// CHECK-NEXT:        // fusion.add %out
// CHECK-NEXT:        float out = silu + bias;
// CHECK-NEXT:        __nv_bfloat16 o = __float2bfloat16_rn(out);
// CHECK-NEXT:        ys[k] = o;
// CHECK-NEXT:      }
// CHECK-NEXT:      Vec<__nv_bfloat16, 8> yv = *reinterpret_cast<const Vec<__nv_bfloat16, 8>*>(&ys[0]);
// CHECK-NEXT:      *reinterpret_cast<Vec<__nv_bfloat16, 8>*>(&y.data[off]) = yv;
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// Without the preamble the kernel is all there is.
// BARE-NOT:   #include
// BARE:       extern "C" __global__ void __launch_bounds__(128) silu_add(
// BARE-NOT:   fuser preamble
