// One stream-parallel `set` (nvFuser's HirLowerStreamTest.SingleSetOp): fuser-lower-host makes a
// serial loop over the stream axis, marked fuser.stream_parallel, that launches the kernel of one
// slice on alias_select views; lower-stream-parallel allocates nothing new (the output is
// allocated whole before the loop), saves the caller's stream, runs iteration i on stream
// i mod 4 after that stream waits for the caller, switches back, and makes the caller wait for
// every stream it used.
// RUN: fuser-opt %s -p 'fuser-segment{shapes=7x33},fuser-lower-host{shapes=7x33}' | filecheck %s --check-prefix=SERIAL
// RUN: fuser-opt %s -p 'fuser-segment{shapes=7x33},fuser-lower-host{shapes=7x33},lower-stream-parallel' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-segment{shapes=7x33},fuser-lower-host{shapes=7x33},lower-stream-parallel' -t cuda | filecheck %s --check-prefix=CUDA

fusion.fusion @single_set(%t0: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t1 = fusion.set %t0 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %t1 : tensor<?x?xf32>
}

// SERIAL:      host.program @single_set(%t0: tensor<?x?xf32>) -> tensor<?x?xf32>
// SERIAL-NEXT:   %t0_d0 = host.dim %t0[0] : tensor<?x?xf32>
// SERIAL-NEXT:   %t0_d1 = host.dim %t0[1] : tensor<?x?xf32>
// SERIAL-NEXT:   %t1 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// SERIAL:        %c0 = arith.constant 0 : index
// SERIAL-NEXT:   %c1 = arith.constant 1 : index
// SERIAL-NEXT:   host.for %i = %c0 to %t0_d0 step %c1 {
// SERIAL-NEXT:     %t0_i = host.alias_select %t0[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// SERIAL-NEXT:     %t1_i = host.alias_select %t1[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// SERIAL-NEXT:     {{.*}} = host.grid @single_set_s0_pointwise ins(%t0_i : tensor<?xf32>)
// SERIAL-NEXT:     host.launch @single_set_s0_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%t0_i : tensor<?xf32>) outs(%t1_i : tensor<?xf32>)
// SERIAL-NEXT:   } attributes {fuser.stream_parallel}
// SERIAL-NEXT:   host.return %t1 : tensor<?x?xf32>
// SERIAL-NEXT: }
// SERIAL-NEXT: kernel.func @single_set_s0_pointwise(%t0: !kernel.tensor<f32, 1>, %t1: !kernel.tensor<f32, 1>)

// CHECK:      host.program @single_set(%t0: tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT:   %t0_d0 = host.dim %t0[0] : tensor<?x?xf32>
// CHECK-NEXT:   %t0_d1 = host.dim %t0[1] : tensor<?x?xf32>
// CHECK-NEXT:   %t1 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// CHECK:        %c0 = arith.constant 0 : index
// CHECK-NEXT:   %c1 = arith.constant 1 : index
// CHECK-NEXT:   %caller = host.get_current_stream : !host.stream
// CHECK-NEXT:   %c4 = arith.constant 4 : index
// CHECK-NEXT:   host.for %i = %c0 to %t0_d0 step %c1 {
// CHECK-NEXT:     %slot = arith.remui %i, %c4 : index
// CHECK-NEXT:     %stream = host.stream %slot
// CHECK-NEXT:     host.set_current_stream %stream
// CHECK-NEXT:     host.synchronize %caller
// CHECK-NEXT:     %t0_i = host.alias_select %t0[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     %t1_i = host.alias_select %t1[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     {{.*}} = host.grid @single_set_s0_pointwise ins(%t0_i : tensor<?xf32>)
// CHECK-NEXT:     host.launch @single_set_s0_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%t0_i : tensor<?xf32>) outs(%t1_i : tensor<?xf32>)
// CHECK-NEXT:     host.set_current_stream %caller
// CHECK-NEXT:   }
// CHECK-NEXT:   %used = arith.minui %t0_d0, %c4 : index
// CHECK-NEXT:   host.for %j = %c0 to %used step %c1 {
// CHECK-NEXT:     %joined = host.stream %j
// CHECK-NEXT:     host.synchronize %joined
// CHECK-NEXT:   }
// CHECK-NEXT:   host.return %t1 : tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-NOT:  fuser.stream_parallel

// The kernel is the one of a slice: rank 1.
// CUDA: extern "C" __global__ void __launch_bounds__({{[0-9]+}}) single_set_s0_pointwise(Tensor<float, 1> t0, Tensor<float, 1> t1)
