// A rank-0 tensor broadcast on every axis of the space: read once per vector at offset 0, from
// a 1-element array, while x streams in vectors.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes=",48x16"}' | filecheck %s

fusion.fusion @scale(%s: tensor<f32>, %x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %m = fusion.dim %x[0] : tensor<?x?xf32>
  %n = fusion.dim %x[1] : tensor<?x?xf32>
  %b = fusion.broadcast_in_dim %s [] sizes(%m, %n) : tensor<f32> -> tensor<?x?xf32>
  %y = fusion.mul %x, %b : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// CHECK:      kernel.func @scale_pointwise(%s: !kernel.tensor<f32, 0>, %x: !kernel.tensor<f32, 2>, %y: !kernel.tensor<f32, 2>)
// CHECK-SAME:   vector_width=4
// CHECK-SAME:   dense_reads=(False, True)
// CHECK:        %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:        %s_buf = kernel.alloc : !kernel.array<1xf32, local>
// CHECK-NEXT:   %x_buf = kernel.alloc : !kernel.array<4xf32, local>
// CHECK:        scf.if %in_bounds {
// CHECK-NEXT:     %[[S:.*]] = kernel.load %s[%[[ZERO]]] : !kernel.tensor<f32, 0>, i32 -> f32
// CHECK-NEXT:     kernel.array_store %[[S]], %s_buf[%[[ZERO]]] : f32, !kernel.array<1xf32, local>, i32
// CHECK-NEXT:     %[[X:.*]] = kernel.load %x[%elem] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:          scf.for %j = {{.*}} {
// CHECK-NEXT:       kernel.comment "fusion.broadcast_in_dim %b"
// CHECK-NEXT:       %b = kernel.array_load %s_buf[%[[ZERO]]] : !kernel.array<1xf32, local>, i32 -> f32
// CHECK-NEXT:       kernel.comment "fusion.mul %y"
// CHECK:            %{{.*}} = arith.mulf %{{.*}}, %b : f32
