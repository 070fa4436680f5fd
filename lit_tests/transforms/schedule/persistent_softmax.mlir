// softmax(-1) of a bf16 [32768, 1024] tensor (the benchmark shape): the persistent scheduler.
// Each row is read once, as four 16-byte vectors (8 bf16) per thread, a warp per row and 4 rows
// per block; the 32 values of a thread are local arrays indexed by the induction variables of
// `{unroll}` loops (fully unrolled by nvcc, so they are registers) through the max, the sum of
// exp(x - max) and the division (a product with the sum's reciprocal, computed once before the
// loop), and are stored as four vectors. A value is kept in an array only where a later phase
// uses it (e, not x - max).
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="32768x1024"}' | filecheck %s
// A row of 100000 elements does not fit in registers: the looped scheduler takes the fusion, one
// kernel whose blocks walk rows gridDim.x apart, each row in two passes: the max and the sum of
// exp(x - max) together (online: the sum kept relative to the running max; both loop-carried per
// thread, then combined across the block, the sums rescaled to the row's max), then the output.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="10x100000"}' | filecheck %s --check-prefix=LONG

fusion.fusion @softmax(%x: tensor<?x?xbf16>) -> (tensor<?x?xbf16>) {
  %d = fusion.dim %x[1] : tensor<?x?xbf16>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %m = fusion.max %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = fusion.broadcast_in_dim %m [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %c = fusion.sub %xf, %mb : tensor<?x?xf32>
  %e = fusion.exp %c : tensor<?x?xf32>
  %s = fusion.sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = fusion.broadcast_in_dim %s [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.div %e, %sb : tensor<?x?xf32>
  %yo = fusion.cast %y : tensor<?x?xf32> -> tensor<?x?xbf16>
  fusion.output %yo : tensor<?x?xbf16>
}

// CHECK:      kernel.func @softmax_persistent(%x: !kernel.tensor<bf16, 2>, %yo: !kernel.tensor<bf16, 2>)
// CHECK-SAME: fuser.scheduler = "persistent"
// CHECK-SAME: fuser.params = "PersistentParams(block=(32, 4, 1), layout=Layout(inner=True
// CHECK-SAME: vector_width=8, index_bits=32), chunks=4, prefetch=False, shared_sums=False)"
// CHECK-SAME: fuser.launch = "grid=[8192, 1, 1] block=[32, 4, 1] smem=0"
// CHECK:      %row = arith.addi %{{.*}}, %thread_id_y : i32
// CHECK:      %[[FIRST:.*]] = arith.muli %thread_id_x, %{{.*}} : i32
// CHECK:      kernel.comment "load x"
// CHECK-NEXT: %x_buf = kernel.alloc zeroed : !kernel.array<32xbf16, local>
// CHECK-NEXT: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT:   %[[STEP:.*]] = arith.muli %[[C]], %{{.*}} : i32
// CHECK-NEXT:   %col = arith.addi %[[FIRST]], %[[STEP]] : i32
// CHECK-NEXT:   %valid = arith.cmpi slt, %col, %end : i32
// CHECK:        scf.if %valid {
// CHECK-NEXT:     %[[V:.*]] = kernel.load %x[%{{.*}}] : !kernel.tensor<bf16, 2>, i32 -> vector<8xbf16>
// CHECK-NEXT:     kernel.array_store %[[V]], %x_buf[%{{.*}}] : vector<8xbf16>, !kernel.array<32xbf16, local>, i32
// CHECK-NEXT:   }
// CHECK-NEXT: } {unroll}
// CHECK-NEXT: %xf_slots = kernel.alloc : !kernel.array<32xf32, local>
// CHECK-NEXT: scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:        %xf = arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT:   kernel.array_store %xf, %xf_slots[%[[S]]] : f32, !kernel.array<32xf32, local>, i32
// CHECK-NEXT: } {unroll}
// CHECK:      kernel.comment "reduce fusion.max xf"
// CHECK:      %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK:      arith.maximumf
// CHECK:      arith.select %{{.*}}, %{{.*}}, %[[NEG]] : f32
// CHECK:      %m = kernel.warp_reduce max %{{.*}} : f32
// CHECK-NEXT: %e_slots = kernel.alloc : !kernel.array<32xf32, local>
// CHECK-NEXT: scf.for
// CHECK:        %[[C2:.*]] = arith.subf %{{.*}}, %m : f32
// CHECK:        %e = math.exp %[[C2]] : f32
// CHECK-NEXT:   kernel.array_store %e, %e_slots
// CHECK-NEXT: } {unroll}
// CHECK:      kernel.comment "reduce fusion.sum e"
// CHECK:      %s_{{.*}} = kernel.warp_reduce sum %{{.*}} : f32
// CHECK-NEXT: %yo_slots = kernel.alloc : !kernel.array<32xbf16, local>
// CHECK:      %inv_s = arith.divf %{{.*}}, %s_{{.*}} : f32
// CHECK-NEXT: scf.for
// CHECK:        %y = arith.mulf %{{.*}}, %inv_s : f32
// CHECK-NOT:    arith.divf
// CHECK:      } {unroll}
// CHECK-NEXT: kernel.comment "store output #0"
// CHECK-NEXT: scf.for
// CHECK:        %[[Y:.*]] = kernel.array_load %yo_slots[%{{.*}}] : !kernel.array<32xbf16, local>, i32 -> vector<8xbf16>
// CHECK:        scf.if %valid_{{.*}} {
// CHECK-NEXT:     kernel.store %[[Y]], %yo[%{{.*}}] : vector<8xbf16>, !kernel.tensor<bf16, 2>, i32
// CHECK-NEXT:   }
// CHECK-NEXT: } {unroll}
// CHECK-NOT:  kernel.store

// LONG:      kernel.func @softmax_looped(%x: !kernel.tensor<bf16, 2>, %yo: !kernel.tensor<bf16, 2>)
// LONG-SAME:  fuser.scheduler = "looped"
// LONG-SAME:  vector_width=8, index_bits=32), unroll=4, blocks=132)"
// LONG:       scf.for %row = %block_id_x to %x_size0 step %grid_dim_x : i32 {
// LONG:         scf.for %col = %start to %x_size1 step %{{.*}} iter_args(%{{.*}} = %acc, %{{.*}} = %{{.*}}) -> (f32, f32) : i32 {
// LONG:         %m = kernel.block_reduce max %{{.*}} along x : f32
// LONG:         kernel.block_reduce sum %{{.*}} along x : f32
// LONG-NOT:     iter_args
// LONG:         scf.for %{{.*}} = %start to %x_size1 step %{{.*}} : i32 {
// LONG:           kernel.store %{{.*}}, %yo[%{{.*}}] : vector<8xbf16>, !kernel.tensor<bf16, 2>, i32
