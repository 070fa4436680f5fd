// Reductions whose dims do not merge into one kept and one reduced group take the general
// path: the group index is delinearized (remsi/divsi) and each element is addressed through its
// strides, with scalar loads. A reduction over the middle dim keeps dims {0, 2} (outer kernel,
// threads along the kept points); a reduction over {0, 2} of a row-major tensor reduces the
// fastest dim (inner kernel) over a group of two dims that are not adjacent.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="64x333x128"}' | filecheck %s

fusion.fusion @middle(%x: tensor<?x?x?xf32>) -> (tensor<?x?xf32>) {
  %s = fusion.sum %x [1] : tensor<?x?x?xf32> -> tensor<?x?xf32>
  fusion.output %s : tensor<?x?xf32>
}

// CHECK:      kernel.func @middle_reduction(
// CHECK-SAME: fuser.scheduler = "reduction"
// CHECK-SAME: layout=Layout(inner=False, kept_dims=(0, 2), reduced_dims=(1,)
// CHECK-SAME: reads=(AccessPlan(param=0, map=(0, 1, 2), dims=(0, 1, 2), kept='general', reduced='dense', vector=False),)
// CHECK-SAME: outputs=(AccessPlan(param=1, map=(0, 2), dims=(0, 2), kept='unit', reduced='none', vector=False),)
// CHECK-SAME: vector_width=1
// CHECK-NOT:  vector<
// CHECK:      %[[KEPT:.*]] = arith.muli %x_size0, %x_size2 : i32
// CHECK:      %column_ok = arith.cmpi slt, %column, %[[KEPT]] : i32
// CHECK:      %[[I2:.*]] = arith.remsi %column, %x_size2 : i32
// CHECK-NEXT: %[[I0:.*]] = arith.divsi %column, %x_size2 : i32
// CHECK-NEXT: %[[O0:.*]] = arith.muli %[[I0]], %x_stride0 : i32
// CHECK-NEXT: %[[O2:.*]] = arith.muli %[[I2]], %x_stride2 : i32
// CHECK-NEXT: %[[BASE:.*]] = arith.addi %[[O0]], %[[O2]] : i32
// CHECK:      scf.for %row = %thread_id_y to %end
// CHECK:        %[[R:.*]] = arith.muli %row, %x_stride1 : i32
// CHECK-NEXT:   %[[OFF:.*]] = arith.addi %[[BASE]], %[[R]] : i32
// CHECK-NEXT:   scf.if %valid {
// CHECK-NEXT:     %{{.*}} = kernel.load %x[%[[OFF]]] : !kernel.tensor<f32, 3>, i32 -> f32
// CHECK:      kernel.block_reduce sum %{{.*}} along y : f32
// CHECK:      kernel.store %{{.*}}, %s[%column] : f32, !kernel.tensor<f32, 2>, i32

fusion.fusion @ends(%x: tensor<?x?x?xf32>) -> (tensor<?xf32>) {
  %m = fusion.max %x [0, 2] : tensor<?x?x?xf32> -> tensor<?xf32>
  fusion.output %m : tensor<?xf32>
}

// CHECK:      kernel.func @ends_reduction(
// CHECK-SAME: layout=Layout(inner=True, kept_dims=(1,), reduced_dims=(0, 2)
// CHECK-SAME: kept='dense', reduced='general', vector=False
// CHECK-SAME: fuser.launch = "grid=[333, 1, 1] block=[512, 1, 1] smem=0"
// CHECK-NOT:  vector<
// CHECK:      %[[RN:.*]] = arith.muli %x_size0, %x_size2 : i32
// CHECK:      %end = arith.select %row_ok, %[[RN]], %{{.*}} : i32
// CHECK:      scf.for %col = %thread_id_x to %end
// CHECK:        arith.remsi %col, %x_size2 : i32
// CHECK-NEXT:   arith.divsi %col, %x_size2 : i32
// CHECK:        kernel.load %x[%{{.*}}] : !kernel.tensor<f32, 3>, i32 -> f32
// CHECK:        arith.maximumf
// CHECK:      kernel.block_reduce max %{{.*}} along x : f32
