// A fusion segmented by hand lowers as written: each segment keeps the scheduler it names, even
// where one earlier in priority order would take it (a row sum is a reduction; "persistent" here).
// Without a shapes option the pass reads the fusion's `fuser.shapes` attribute.
// RUN: fuser-opt %s -p 'fuser-lower-host' | filecheck %s

fusion.fusion @rows(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) attributes {fuser.shapes = "16x256,16x256"} {
  %s = fusion.segment "persistent" (%x) : (tensor<?x?xf32>) -> (tensor<?xf32>) {
  ^bb0(%x0: tensor<?x?xf32>):
    %s0 = fusion.sum %x0 [1] : tensor<?x?xf32> -> tensor<?xf32>
    fusion.yield %s0 : tensor<?xf32>
  }
  %y = fusion.segment "pointwise" (%z, %s) : (tensor<?x?xf32>, tensor<?xf32>) -> (tensor<?x?xf32>) {
  ^bb0(%z0: tensor<?x?xf32>, %s1: tensor<?xf32>):
    %d = fusion.dim %z0[1] : tensor<?x?xf32>
    %sb = fusion.broadcast_in_dim %s1 [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
    %y0 = fusion.mul %z0, %sb : tensor<?x?xf32>
    fusion.yield %y0 : tensor<?x?xf32>
  }
  fusion.output %s, %y : tensor<?xf32>, tensor<?x?xf32>
}

// CHECK:      host.program @rows(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) attributes {fuser.shapes = "16x256,16x256"} {
// CHECK-NEXT:   %x_d0 = host.dim %x[0] : tensor<?x?xf32>
// CHECK-NEXT:   %s = host.allocate(%x_d0) : tensor<?xf32>
// CHECK:        host.launch @rows_s0_persistent grid({{.*}} ins(%x : tensor<?x?xf32>) outs(%s : tensor<?xf32>)
// CHECK-NEXT:   %z_d0 = host.dim %z[0] : tensor<?x?xf32>
// CHECK-NEXT:   %z_d1 = host.dim %z[1] : tensor<?x?xf32>
// CHECK-NEXT:   %y = host.allocate(%z_d0, %z_d1) : tensor<?x?xf32>
// CHECK:        host.launch @rows_s1_pointwise grid({{.*}} ins(%z, %s : tensor<?x?xf32>, tensor<?xf32>) outs(%y : tensor<?x?xf32>)
// CHECK-NEXT:   host.return %s, %y : tensor<?xf32>, tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: kernel.func @rows_s0_persistent(%x0: !kernel.tensor<f32, 2>, %s0: !kernel.tensor<f32, 1>) attributes {fuser.scheduler = "persistent"
// CHECK:      kernel.func @rows_s1_pointwise(%z0: !kernel.tensor<f32, 2>, %s1: !kernel.tensor<f32, 1>, %y0: !kernel.tensor<f32, 2>) attributes {fuser.scheduler = "pointwise"
