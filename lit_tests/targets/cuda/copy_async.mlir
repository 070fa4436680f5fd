// Arrays in dynamic shared memory are pointers into the launch's dynamic shared memory, each at
// the next 16-byte boundary in program order (`kernel.dynamic_shared_bytes`: one bf16 at 0, 512
// at 16, the f32 at 1040); asynchronous copies, their commit and wait are `fuser::copy_async`
// calls (fuser/copy.cuh, included only where used).
// RUN: fuser-opt %s -t cuda | filecheck %s

kernel.func @copy_ahead(%x: !kernel.tensor<bf16, 1>, %ok: i1) attributes {max_threads = 64 : i64} {
  %tid = kernel.thread_id x : i32
  %c8 = arith.constant 8 : i32
  %off = arith.muli %tid, %c8 : i32
  %one = kernel.alloc : !kernel.array<1xbf16, dynamic>
  %stage = kernel.alloc : !kernel.array<512xbf16, dynamic>
  %sums = kernel.alloc : !kernel.array<64xf32, dynamic>
  kernel.copy_async %x[%off], %stage[%off] elements 8 if %ok : !kernel.tensor<bf16, 1>, i32, !kernel.array<512xbf16, dynamic>, i32
  kernel.copy_async %x[%off], %stage[%off] elements 2 if %ok : !kernel.tensor<bf16, 1>, i32, !kernel.array<512xbf16, dynamic>, i32
  kernel.copy_async_commit
  kernel.copy_async_wait pending 1
  kernel.return
}

// CHECK:      #include "fuser/copy.cuh"
// CHECK:      extern __shared__ __align__(16) unsigned char fuser_dynamic_shared[];
// CHECK-NEXT: __nv_bfloat16* one = reinterpret_cast<__nv_bfloat16*>(fuser_dynamic_shared + 0);
// CHECK-NEXT: __nv_bfloat16* stage = reinterpret_cast<__nv_bfloat16*>(fuser_dynamic_shared + 16);
// CHECK-NEXT: float* sums = reinterpret_cast<float*>(fuser_dynamic_shared + 1040);
// CHECK-NEXT: fuser::copy_async<16>(&stage[off], &x.data[off], ok);
// CHECK-NEXT: fuser::copy_async<4>(&stage[off], &x.data[off], ok);
// CHECK-NEXT: fuser::copy_async_commit();
// CHECK-NEXT: fuser::copy_async_wait<1>();
