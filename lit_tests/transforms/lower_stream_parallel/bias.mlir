// A stream-parallel fusion that the schedulers take whole: one reduction kernel per slice, with a
// pointwise prologue and two outputs. The bias %b is broadcast along new dims, the stream axis
// among them, so every slice reads it whole (no alias_select); the extent %n0 of the stream axis
// is not needed by a slice and leaves the kernel's fusion.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="6x30x100,100"},fuser-lower-host{shapes="6x30x100,100"},lower-stream-parallel' | filecheck %s

fusion.fusion @bias_exp_sum(%x: tensor<?x?x?xf32>, %b: tensor<?xf32>) -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %n0 = fusion.dim %x[0] : tensor<?x?x?xf32>
  %n1 = fusion.dim %x[1] : tensor<?x?x?xf32>
  %bb = fusion.broadcast_in_dim %b [2] sizes(%n0, %n1) {fusion.stream_axis = 0 : i64} : tensor<?xf32> -> tensor<?x?x?xf32>
  %y = fusion.add %x, %bb {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32>
  %e = fusion.exp %y {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32>
  %s = fusion.sum %e [2] {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32> -> tensor<?x?xf32>
  fusion.output %s, %e : tensor<?x?xf32>, tensor<?x?x?xf32>
}

// CHECK:      %s = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:      %e = host.allocate(%x_d0, %x_d1, %x_d2) : tensor<?x?x?xf32>
// CHECK:      %caller = host.get_current_stream : !host.stream
// CHECK:      host.for %i = %c0 to %x_d0 step %c1 {
// CHECK:        host.synchronize %caller
// CHECK-NEXT:   %x_i = host.alias_select %x[%i] axis 0 : tensor<?x?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:   %s_i = host.alias_select %s[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:   %e_i = host.alias_select %e[%i] axis 0 : tensor<?x?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:   {{.*}} = host.grid @bias_exp_sum_s0_reduction ins(%x_i, %b : tensor<?x?xf32>, tensor<?xf32>)
// CHECK-NEXT:   host.launch @bias_exp_sum_s0_reduction grid({{.*}}) block [{{.*}}] smem {{[0-9]+}} ins(%x_i, %b : tensor<?x?xf32>, tensor<?xf32>) outs(%s_i, %e_i : tensor<?xf32>, tensor<?x?xf32>)
// CHECK-NEXT:   host.set_current_stream %caller
// CHECK-NEXT: }
// CHECK:      kernel.func @bias_exp_sum_s0_reduction(%x: !kernel.tensor<f32, 2>, %b: !kernel.tensor<f32, 1>, %s: !kernel.tensor<f32, 1>, %e: !kernel.tensor<f32, 2>)
