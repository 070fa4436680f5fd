// Layer norm (examples/layer_norm.mlir, bf16 [16384, 4096]): var_mean in the kernel in two
// passes over the row in registers (a block sum gives the mean, then a block sum of squared
// deviations from it; no Welford combine), the deviations taken from the mean result itself so
// that `x - mean` is one expression; rsqrt(var + eps) once per row, weight and bias loaded only
// after the reduction (they are not needed before), the normalized row stored as 16-byte
// vectors and mean / invstd stored by the row's first thread.
// The slots of a thread (4 chunks of 8) are local arrays that `{unroll}` loops index, so the
// IR holds each computation once. Without comments (`comments=false`, as the runtime compiler
// schedules unless FUSER_DUMP shows kernels), the kernel is the same less its `kernel.comment`s.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="16384x4096,4096,4096"}' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="16384x4096,4096,4096" comments=false}' | filecheck %s --check-prefix=QUIET

fusion.fusion @layer_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>, %b: tensor<?xbf16>)
    -> (tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xbf16>
  %d = fusion.dim %x[1] : tensor<?x?xbf16>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %var, %mean = fusion.var_mean %xf [1] correction(0) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  %eps = fusion.constant 1.000000e-05 : f32
  %var_eps = fusion.add %var, %eps : (tensor<?xf32>, f32) -> tensor<?xf32>
  %invstd = fusion.rsqrt %var_eps : tensor<?xf32>
  %mean_b = fusion.broadcast_in_dim %mean [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %invstd_b = fusion.broadcast_in_dim %invstd [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %centered = fusion.sub %xf, %mean_b : tensor<?x?xf32>
  %normed = fusion.mul %centered, %invstd_b : tensor<?x?xf32>
  %wf = fusion.cast %w : tensor<?xbf16> -> tensor<?xf32>
  %bf = fusion.cast %b : tensor<?xbf16> -> tensor<?xf32>
  %w_b = fusion.broadcast_in_dim %wf [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %b_b = fusion.broadcast_in_dim %bf [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %scaled = fusion.mul %normed, %w_b : tensor<?x?xf32>
  %shifted = fusion.add %scaled, %b_b : tensor<?x?xf32>
  %y = fusion.cast %shifted : tensor<?x?xf32> -> tensor<?x?xbf16>
  fusion.output %y, %mean, %invstd : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
}

// CHECK:      kernel.func @layer_norm_persistent(%x: !kernel.tensor<bf16, 2>, %w: !kernel.tensor<bf16, 1>, %b: !kernel.tensor<bf16, 1>, %y: !kernel.tensor<bf16, 2>, %mean: !kernel.tensor<f32, 1>, %invstd: !kernel.tensor<f32, 1>)
// CHECK-SAME: fuser.scheduler = "persistent"
// CHECK-SAME: fuser.params = "PersistentParams(block=(128, 1, 1), layout=Layout(inner=True
// CHECK-SAME: AccessPlan(param=1, map=(1,), dims=(1,), kept='none', reduced='unit', vector=True)
// CHECK-SAME: vector_width=8, index_bits=32), chunks=4, prefetch=False, shared_sums=False)"
// CHECK-SAME: fuser.launch = "grid=[16384, 1, 1] block=[128, 1, 1] smem=0"
// CHECK:      kernel.comment "load x"
// CHECK-NEXT: %x_buf = kernel.alloc zeroed : !kernel.array<32xbf16, local>
// CHECK-NEXT: scf.for
// CHECK:        scf.if %valid {
// CHECK-NEXT:     %[[X:.*]] = kernel.load %x[%{{.*}}] : !kernel.tensor<bf16, 2>, i32 -> vector<8xbf16>
// CHECK-NEXT:     kernel.array_store %[[X]], %x_buf[%{{.*}}] : vector<8xbf16>, !kernel.array<32xbf16, local>, i32
// CHECK-NEXT:   }
// CHECK-NEXT: } {unroll}
// CHECK-NEXT: %xf_slots = kernel.alloc : !kernel.array<32xf32, local>
// CHECK-NEXT: scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:        %xf = arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT:   kernel.array_store %xf, %xf_slots[%[[S]]] : f32, !kernel.array<32xf32, local>, i32
// CHECK-NEXT: } {unroll}
// CHECK-NOT:  kernel.load %w
// CHECK:      kernel.comment "reduce fusion.var_mean xf"
// CHECK:      %[[SUM:.*]] = kernel.block_reduce sum %{{.*}} along x : f32
// CHECK:      %[[AVG:.*]] = arith.divf %[[SUM]], %{{.*}} : f32
// CHECK:      %mean_1 = arith.select %{{.*}}, %{{.*}}, %[[AVG]] : f32
// CHECK:          %[[XS:.*]] = kernel.array_load %xf_slots[%{{.*}}] : !kernel.array<32xf32, local>, i32 -> f32
// CHECK-NEXT:     %[[D:.*]] = arith.subf %[[XS]], %mean_1 : f32
// CHECK-NEXT:     arith.mulf %[[D]], %[[D]] : f32
// CHECK:      %[[M2:.*]] = kernel.block_reduce sum %{{.*}} along x : f32
// CHECK-NOT:  kernel.block_welford
// CHECK:      %var = arith.divf %[[M2]], %{{.*}} : f32
// CHECK:      kernel.comment "load w"
// CHECK-NEXT: %w_buf = kernel.alloc zeroed : !kernel.array<32xbf16, local>
// CHECK:          kernel.load %w[%col_3] : !kernel.tensor<bf16, 1>, i32 -> vector<8xbf16>
// CHECK:      kernel.comment "load b"
// CHECK-NEXT: %b_buf = kernel.alloc zeroed : !kernel.array<32xbf16, local>
// CHECK:          kernel.load %b[%col_4] : !kernel.tensor<bf16, 1>, i32 -> vector<8xbf16>
// CHECK:      %var_eps = arith.addf %var, %{{.*}} : f32
// CHECK:      %invstd_1 = math.rsqrt %var_eps : f32
// CHECK-NOT:  math.rsqrt
// CHECK:      %y_slots = kernel.alloc : !kernel.array<32xbf16, local>
// CHECK-NEXT: scf.for %[[S1:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT:   %[[XF:.*]] = kernel.array_load %xf_slots[%[[S1]]] : !kernel.array<32xf32, local>, i32 -> f32
// CHECK:        %centered = arith.subf %[[XF]], %mean_1 : f32
// CHECK:        %normed = arith.mulf %centered, %invstd_1 : f32
// CHECK-NOT:    kernel.array_load %x_buf
// CHECK:        kernel.array_store %y_1, %y_slots[%[[S1]]] : bf16, !kernel.array<32xbf16, local>, i32
// CHECK-NEXT: } {unroll}
// CHECK-NEXT: kernel.comment "store output #0"
// CHECK-NEXT: scf.for
// CHECK:        %[[Y:.*]] = kernel.array_load %y_slots[%{{.*}}] : !kernel.array<32xbf16, local>, i32 -> vector<8xbf16>
// CHECK:        scf.if %valid_5 {
// CHECK-NEXT:     kernel.store %[[Y]], %y[%{{.*}}] : vector<8xbf16>, !kernel.tensor<bf16, 2>, i32
// CHECK-NEXT:   }
// CHECK-NEXT: } {unroll}
// CHECK:      %[[FIRST:.*]] = arith.cmpi eq, %thread_id_x, %{{.*}} : i32
// CHECK-NEXT: %[[HEAD:.*]] = arith.andi %[[FIRST]], %row_ok : i1
// CHECK-NEXT: scf.if %[[HEAD]] {
// CHECK-NEXT:   kernel.comment "store output #1"
// CHECK-NEXT:   kernel.store %mean_1, %mean[%block_id_x] : f32, !kernel.tensor<f32, 1>, i32
// CHECK-NEXT:   kernel.comment "store output #2"
// CHECK-NEXT:   kernel.store %invstd_1, %invstd[%block_id_x] : f32, !kernel.tensor<f32, 1>, i32

// QUIET:      kernel.func @layer_norm_persistent(
// QUIET-NOT:  kernel.comment
// QUIET:      kernel.block_reduce sum
// QUIET-NOT:  kernel.comment
// QUIET:      kernel.return
