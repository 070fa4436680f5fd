// Outputs of different shapes: the space is the largest output's; %e (the innermost dim only)
// is stored by the points of row 0, at its own offset.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="8,3x8"}' | filecheck %s

fusion.fusion @two(%x: tensor<?xf32>, %w: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) {
  %e = fusion.exp %x : tensor<?xf32>
  %m = fusion.dim %w[0] : tensor<?x?xf32>
  %b = fusion.broadcast_in_dim %e [1] sizes(%m) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.add %w, %b : tensor<?x?xf32>
  fusion.output %e, %y : tensor<?xf32>, tensor<?x?xf32>
}

// CHECK:      kernel.func @two_pointwise(%x: !kernel.tensor<f32, 1>, %w: !kernel.tensor<f32, 2>, %e: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 2>)
// CHECK-SAME:   reference=1, vector_width=4
// CHECK-SAME:   dense_reads=(False, True), dense_outputs=(False, True)
// CHECK:        %e_1 = math.exp
// CHECK:        %y_1 = arith.addf %{{.*}}, %e_1 : f32
// CHECK:        %outer = arith.divsi %elem_1, %y_size1 : i32
// CHECK-NEXT:   %[[ROW0:.*]] = arith.cmpi eq, %outer, %{{.*}} : i32
// CHECK-NEXT:   %[[INNER:.*]] = arith.remsi %elem_1, %y_size1 : i32
// CHECK-NEXT:   %e_off = arith.muli %[[INNER]], %e_bstride0 : i32
// CHECK-NEXT:   scf.if %[[ROW0]] {
// CHECK-NEXT:     %[[EV:.*]] = kernel.array_load %e_buf[%{{.*}}] : !kernel.array<4xf32, local>, i32 -> vector<4xf32>
// CHECK-NEXT:     kernel.store %[[EV]], %e[%e_off] : vector<4xf32>, !kernel.tensor<f32, 1>, i32
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[YV:.*]] = kernel.array_load %y_buf[%{{.*}}] : !kernel.array<4xf32, local>, i32 -> vector<4xf32>
// CHECK-NEXT:   kernel.store %[[YV]], %y[%elem_1] : vector<4xf32>, !kernel.tensor<f32, 2>, i32
