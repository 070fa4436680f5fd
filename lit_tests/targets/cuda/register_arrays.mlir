// Register arrays as the persistent scheduler builds them: `kernel.alloc zeroed` declares a
// local array and clears it with a store of all-zero bits per element, in a loop nvcc unrolls
// (no f16/bf16 conversion, whose inline asm would get in ptxas's way); predicated 16-byte loads
// fill it, and `{unroll}` loops over its slots index it by their induction variable, so after
// full unrolling every index is a constant and each element a register.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s

kernel.func @slot_sum(%x: !kernel.tensor<bf16, 1>, %y: !kernel.tensor<f32, 1>) attributes {max_threads = 32 : i64} {
  %tid = kernel.thread_id x : i32
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %eight = arith.constant 8 : i32
  %sixteen = arith.constant 16 : i32
  %n = kernel.size %x[0] : !kernel.tensor<bf16, 1>
  %n32 = arith.trunci %n : i64 to i32
  %first = arith.muli %tid, %eight : i32
  %buf = kernel.alloc zeroed : !kernel.array<16xbf16, local>
  scf.for %c = %z to %two step %one : i32 {
    %stride = arith.muli %c, %sixteen : i32
    %col = arith.addi %first, %stride : i32
    %valid = arith.cmpi slt, %col, %n32 : i32
    %base = arith.muli %c, %eight : i32
    scf.if %valid {
      %v = kernel.load %x[%col] : !kernel.tensor<bf16, 1>, i32 -> vector<8xbf16>
      kernel.array_store %v, %buf[%base] : vector<8xbf16>, !kernel.array<16xbf16, local>, i32
    }
  } {unroll}
  %fzero = arith.constant 0.000000e+00 : f32
  %acc = scf.for %s = %z to %sixteen step %one iter_args(%a = %fzero) -> (f32) : i32 {
    %h = kernel.array_load %buf[%s] : !kernel.array<16xbf16, local>, i32 -> bf16
    %f = arith.extf %h : bf16 to f32
    %b = arith.addf %a, %f : f32
    scf.yield %b : f32
  } {unroll}
  %flags = kernel.alloc zeroed : !kernel.array<4xi1, local>
  %halves = kernel.alloc zeroed : !kernel.array<2xf16, local>
  %counts = kernel.alloc zeroed : !kernel.array<2xi64, local>
  %total = kernel.warp_reduce sum %acc : f32
  kernel.store %total, %y[%tid] : f32, !kernel.tensor<f32, 1>, i32
  kernel.return
}

// CHECK:      alignas(16) __nv_bfloat16 buf[16];
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int z = 0; z < 16; ++z) {
// CHECK-NEXT:   buf[z] = __ushort_as_bfloat16((unsigned short)0);
// CHECK-NEXT: }
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int c = 0; c < 2; ++c) {
// CHECK:        if (valid) {
// CHECK-NEXT:     Vec<__nv_bfloat16, 8> v = *reinterpret_cast<const Vec<__nv_bfloat16, 8>*>(&x.data[col]);
// CHECK-NEXT:     *reinterpret_cast<Vec<__nv_bfloat16, 8>*>(&buf[base]) = v;
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK:      #pragma unroll
// CHECK-NEXT: for (int s = 0; s < 16; ++s) {
// CHECK-NEXT:   __nv_bfloat16 h = buf[s];
// CHECK:      alignas(16) bool flags[4];
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int z_1 = 0; z_1 < 4; ++z_1) {
// CHECK-NEXT:   flags[z_1] = false;
// CHECK:      alignas(16) __half halves[2];
// CHECK:        halves[z_2] = __ushort_as_half((unsigned short)0);
// CHECK:      alignas(16) long long counts[2];
// CHECK:        counts[z_3] = (long long)0;
