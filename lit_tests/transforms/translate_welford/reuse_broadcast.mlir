// Layer norm already broadcasts the mean to subtract it: the translation reuses that broadcast
// (moved up to the new mean, with the fusion.dim %d its sizes need), so no second broadcast of
// the mean appears. The deviations are a subtraction of their own: the layer norm's centering
// stays where it was (the persistent kernel recomputes it from the loaded row).
// RUN: fuser-opt %s -p 'translate-welford{mode=always}' | filecheck %s

fusion.fusion @layer_norm(%x: tensor<?x?xf32>, %w: tensor<?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %var, %mean = fusion.var_mean %x [1] correction(0) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  %eps = fusion.constant 1.000000e-05 : f32
  %var_eps = fusion.add %var, %eps : (tensor<?xf32>, f32) -> tensor<?xf32>
  %invstd = fusion.rsqrt %var_eps : tensor<?xf32>
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %mean_b = fusion.broadcast_in_dim %mean [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %invstd_b = fusion.broadcast_in_dim %invstd [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %centered = fusion.sub %x, %mean_b : tensor<?x?xf32>
  %normed = fusion.mul %centered, %invstd_b : tensor<?x?xf32>
  %w_b = fusion.broadcast_in_dim %w [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.mul %normed, %w_b : tensor<?x?xf32>
  fusion.output %y, %var : tensor<?x?xf32>, tensor<?xf32>
}

// CHECK-LABEL: fusion.fusion @layer_norm
// CHECK-NEXT:    %n = fusion.dim %x[0] : tensor<?x?xf32>
// CHECK-NEXT:    %d = fusion.dim %x[1] : tensor<?x?xf32>
// CHECK-NEXT:    %x_sum = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:    %one = fusion.constant 1 : i64
// CHECK-NEXT:    %ones = fusion.broadcast_in_dim %one [] sizes(%n, %d) : i64 -> tensor<?x?xi64>
// CHECK-NEXT:    %x_count = fusion.sum %ones [1] : tensor<?x?xi64> -> tensor<?xi64>
// CHECK-NEXT:    %x_count_f = fusion.cast %x_count : tensor<?xi64> -> tensor<?xf32>
// CHECK-NEXT:    %mean = fusion.div %x_sum, %x_count_f : tensor<?xf32>
// CHECK-NEXT:    %mean_b = fusion.broadcast_in_dim %mean [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %x_dev = fusion.sub %x, %mean_b : tensor<?x?xf32>
// CHECK-NEXT:    %x_dev2 = fusion.mul %x_dev, %x_dev : tensor<?x?xf32>
// CHECK-NEXT:    %x_m2 = fusion.sum %x_dev2 [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:    %var = fusion.div %x_m2, %x_count_f : tensor<?xf32>
// CHECK-NEXT:    %eps = fusion.constant 1.000000e-05 : f32
// CHECK-NEXT:    %var_eps = fusion.add %var, %eps : (tensor<?xf32>, f32) -> tensor<?xf32>
// CHECK-NEXT:    %invstd = fusion.rsqrt %var_eps : tensor<?xf32>
// CHECK-NEXT:    %invstd_b = fusion.broadcast_in_dim %invstd [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %centered = fusion.sub %x, %mean_b : tensor<?x?xf32>
// CHECK-NEXT:    %normed = fusion.mul %centered, %invstd_b : tensor<?x?xf32>
// CHECK-NOT:     fusion.broadcast_in_dim %mean
// CHECK:         fusion.output %y, %var
