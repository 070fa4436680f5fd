// Layer norm (examples/layer_norm.mlir) is one segment: the persistent scheduler accepts the
// whole fusion, so nothing is split; the segment yields the fusion's outputs in their order.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="16384x4096,4096,4096"}' | filecheck %s

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

// CHECK:      fusion.fusion @layer_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>, %b: tensor<?xbf16>)
// CHECK-NEXT:   %y, %mean, %invstd = fusion.segment "persistent" (%x, %w, %b) : (tensor<?x?xbf16>, tensor<?xbf16>, tensor<?xbf16>) -> (tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>) {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: tensor<?x?xbf16>, %[[W:.*]]: tensor<?xbf16>, %[[B:.*]]: tensor<?xbf16>):
// CHECK-NEXT:     %n = fusion.dim %[[X]][0] : tensor<?x?xbf16>
// CHECK-NEXT:     %d = fusion.dim %[[X]][1] : tensor<?x?xbf16>
// CHECK-NEXT:     %xf = fusion.cast %[[X]] : tensor<?x?xbf16> -> tensor<?x?xf32>
// CHECK:          %eps = fusion.constant 1.000000e-05 : f32
// CHECK:          %[[Y:.*]] = fusion.cast %shifted : tensor<?x?xf32> -> tensor<?x?xbf16>
// CHECK-NEXT:     fusion.yield %[[Y]], %{{.*}}, %{{.*}} : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   fusion.output %y, %mean, %invstd : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
// CHECK-NOT:  fusion.segment
