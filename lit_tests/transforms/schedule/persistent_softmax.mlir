// softmax(-1) of a bf16 [32768, 1024] tensor (the benchmark shape): the persistent scheduler.
// Each row is read once, as four 16-byte vectors (8 bf16) per thread, a warp per row and 4 rows
// per block; the 32 values of a thread stay SSA scalars (registers) through the max, the sum of
// exp(x - max) and the division (a product with the sum's reciprocal), and are stored as four
// vectors.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="32768x1024"}' | filecheck %s
// A row of 100000 f32 elements does not fit in registers: no scheduler takes the fusion, and the
// error says why for each.
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="10x100000"}' 2>&1 | filecheck %s --check-prefix=LONG

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
// CHECK-SAME: vector_width=8, index_bits=32), chunks=4)"
// CHECK-SAME: fuser.launch = "grid=[8192, 1, 1] block=[32, 4, 1] smem=0"
// CHECK-NOT:  scf.for
// CHECK:      %row = arith.addi %{{.*}}, %thread_id_y : i32
// CHECK:      %col = arith.muli %thread_id_x, %{{.*}} : i32
// CHECK:      %valid = arith.cmpi slt, %col, %end : i32
// CHECK:      %valid_3 = arith.cmpi slt, %col_3, %end : i32
// CHECK:      kernel.comment "load x"
// CHECK:      scf.if %valid {
// CHECK-NEXT:   %{{.*}} = kernel.load %x[%{{.*}}] : !kernel.tensor<bf16, 2>, i32 -> vector<8xbf16>
// CHECK:      scf.if %valid_3 {
// CHECK-NEXT:   %{{.*}} = kernel.load %x[%{{.*}}] : !kernel.tensor<bf16, 2>, i32 -> vector<8xbf16>
// CHECK:      %xf_31 = arith.extf %{{.*}} : bf16 to f32
// CHECK:      kernel.comment "reduce fusion.max xf"
//               masked chunks give -inf; a warp holds the row: warp shuffles, no block reduction
// CHECK:      %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK:      arith.select %valid, %{{.*}}, %[[NEG]] : f32
// CHECK:      %m = kernel.warp_reduce max %{{.*}} : f32
// CHECK:      %c_31 = arith.subf %xf_31, %m : f32
// CHECK:      %e_31 = math.exp %c_31 : f32
// CHECK:      kernel.comment "reduce fusion.sum e"
// CHECK:      %s = kernel.warp_reduce sum %{{.*}} : f32
//               the division by the row's sum: one reciprocal per row, a product per element
// CHECK:      %inv_s = arith.divf %{{.*}}, %s : f32
// CHECK-NEXT: %y = arith.mulf %e, %inv_s : f32
// CHECK:      %y_31 = arith.mulf %e_31, %inv_s : f32
// CHECK-NOT:  arith.divf
// CHECK:      %yo_buf = kernel.alloc : !kernel.array<8xbf16, local>
// CHECK:      %[[V:.*]] = kernel.array_load %yo_buf[%{{.*}}] : !kernel.array<8xbf16, local>, i32 -> vector<8xbf16>
// CHECK:      scf.if %valid {
// CHECK-NEXT:   kernel.store %[[V]], %yo[%{{.*}}] : vector<8xbf16>, !kernel.tensor<bf16, 2>, i32
// CHECK:      scf.if %valid_3 {
// CHECK-NEXT:   kernel.store %{{.*}}, %yo[%{{.*}}] : vector<8xbf16>, !kernel.tensor<bf16, 2>, i32
// CHECK-NOT:  kernel.store

// LONG:      fuser-opt: error: no scheduler accepts fusion @softmax:
// LONG-NEXT:   pointwise: 'fusion.max' (%m) is a reduction
// LONG-NEXT:   reduction: it has persistent buffers: 'fusion.sum' (%s) needs the result of 'fusion.max' (%m): the row must stay on chip between the two reductions
// LONG-NEXT:   persistent: row of 100000 f32 elements does not fit in registers: at most 32768 (1024 threads x 32 elements of 1 register(s) each)
// LONG-NOT:  Traceback
