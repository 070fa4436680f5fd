// Kernels inside the loop over streams: each iteration runs a pointwise kernel and a reduction
// on one [M, N] slice of a [S, M, N] input (merge=none keeps them apart; they share the loop, and
// the slice of %e the first writes is the one the second reads). The kernels are scheduled for
// the slice: rank-2 inputs, a rank-1 sum.
// RUN: fuser-opt %s -p 'fuser-segment{shapes=6x30x100 merge=none},fuser-lower-host{shapes=6x30x100},lower-stream-parallel{streams=2}' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-segment{shapes=6x30x100 merge=none},fuser-lower-host{shapes=6x30x100},lower-stream-parallel{streams=2}' -t cuda | filecheck %s --check-prefix=CUDA

fusion.fusion @exp_sum(%x: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  %e = fusion.exp %x {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32>
  %s = fusion.sum %e [2] {fusion.stream_axis = 0 : i64} : tensor<?x?x?xf32> -> tensor<?x?xf32>
  fusion.output %s : tensor<?x?xf32>
}

// CHECK:      host.program @exp_sum(%x: tensor<?x?x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT:   %x_d0 = host.dim %x[0] : tensor<?x?x?xf32>
// CHECK-NEXT:   %x_d1 = host.dim %x[1] : tensor<?x?x?xf32>
// CHECK-NEXT:   %x_d2 = host.dim %x[2] : tensor<?x?x?xf32>
// CHECK-NEXT:   %e = host.allocate(%x_d0, %x_d1, %x_d2) : tensor<?x?x?xf32>
// CHECK:        %s = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:        %caller = host.get_current_stream : !host.stream
// CHECK-NEXT:   %c2 = arith.constant 2 : index
// CHECK-NEXT:   host.for %i = %c0 to %x_d0 step %c1 {
// CHECK-NEXT:     %slot = arith.remui %i, %c2 : index
// CHECK-NEXT:     %stream = host.stream %slot
// CHECK-NEXT:     host.set_current_stream %stream
// CHECK-NEXT:     host.synchronize %caller
// CHECK-NEXT:     %x_i = host.alias_select %x[%i] axis 0 : tensor<?x?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:     %e_i = host.alias_select %e[%i] axis 0 : tensor<?x?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:     {{.*}} = host.grid @exp_sum_s0_pointwise ins(%x_i : tensor<?x?xf32>)
// CHECK-NEXT:     host.launch @exp_sum_s0_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%x_i : tensor<?x?xf32>) outs(%e_i : tensor<?x?xf32>)
// CHECK-NEXT:     %s_i = host.alias_select %s[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     {{.*}} = host.grid @exp_sum_s1_reduction ins(%e_i : tensor<?x?xf32>)
// CHECK-NEXT:     host.launch @exp_sum_s1_reduction grid({{.*}}) block [{{.*}}] smem {{[0-9]+}} ins(%e_i : tensor<?x?xf32>) outs(%s_i : tensor<?xf32>)
// CHECK-NEXT:     host.set_current_stream %caller
// CHECK-NEXT:   }
// CHECK-NEXT:   %used = arith.minui %x_d0, %c2 : index
// CHECK-NEXT:   host.for %j = %c0 to %used step %c1 {
// CHECK-NEXT:     %joined = host.stream %j
// CHECK-NEXT:     host.synchronize %joined
// CHECK-NEXT:   }
// CHECK-NEXT:   host.deallocate %e : tensor<?x?x?xf32>
// CHECK-NEXT:   host.return %s : tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: kernel.func @exp_sum_s0_pointwise(%x: !kernel.tensor<f32, 2>, %e: !kernel.tensor<f32, 2>)
// CHECK:      kernel.func @exp_sum_s1_reduction(%e: !kernel.tensor<f32, 2>, %s: !kernel.tensor<f32, 1>)

// CUDA: exp_sum_s0_pointwise(Tensor<float, 2> x, Tensor<float, 2> e)
// CUDA: exp_sum_s1_reduction(Tensor<float, 2> e, Tensor<float, 1> s)
