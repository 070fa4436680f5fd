// Host lowering of `z / broadcast(sum(x))`: one normalization (persistent) launch when a row fits
// in registers; otherwise a reduction then a pointwise launch, the row sums allocated in between
// and freed right after the division reads them. The output takes z's extents.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="4096x1024,4096x1024"},fuser-lower-host' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-segment{shapes="64x100000,64x100000"},fuser-lower-host' | filecheck %s --check-prefix=SPLIT
// RUN: fuser-opt %s -p 'fuser-segment{shapes="64x100000,64x100000"},fuser-lower-host' -t cuda | filecheck %s --check-prefix=CUDA

fusion.fusion @sum_div(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = fusion.broadcast_in_dim %s [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.div %z, %sb : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   host.program @sum_div(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.shapes = "4096x1024,4096x1024"} {
// CHECK-NEXT:     %z_d0 = host.dim %z[0] : tensor<?x?xf32>
// CHECK-NEXT:     %z_d1 = host.dim %z[1] : tensor<?x?xf32>
// CHECK-NEXT:     %y = host.allocate(%z_d0, %z_d1) : tensor<?x?xf32>
// CHECK:          host.launch @sum_div_s0_persistent grid({{.*}}) block [{{.*}}] smem {{[0-9]+}} ins(%x, %z : tensor<?x?xf32>, tensor<?x?xf32>) outs(%y : tensor<?x?xf32>)
// CHECK-NEXT:     host.return %y : tensor<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   kernel.func @sum_div_s0_persistent(
// CHECK-NOT:    fusion.{{fusion|segment}}

// SPLIT:      host.program @sum_div(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fuser.shapes = "64x100000,64x100000"} {
// SPLIT-NEXT:   %x_d0 = host.dim %x[0] : tensor<?x?xf32>
// SPLIT-NEXT:   %s = host.allocate(%x_d0) : tensor<?xf32>
// SPLIT:        host.launch @sum_div_s0_reduction grid({{.*}}) block [{{.*}}] smem {{[0-9]+}} ins(%x : tensor<?x?xf32>) outs(%s : tensor<?xf32>)
// SPLIT-NEXT:   %z_d0 = host.dim %z[0] : tensor<?x?xf32>
// SPLIT-NEXT:   %z_d1 = host.dim %z[1] : tensor<?x?xf32>
// SPLIT-NEXT:   %y = host.allocate(%z_d0, %z_d1) : tensor<?x?xf32>
// SPLIT:        host.launch @sum_div_s1_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%z, %s : tensor<?x?xf32>, tensor<?xf32>) outs(%y : tensor<?x?xf32>)
// SPLIT-NEXT:   host.deallocate %s : tensor<?xf32>
// SPLIT-NEXT:   host.return %y : tensor<?x?xf32>
// SPLIT-NEXT: }
// SPLIT-NEXT: kernel.func @sum_div_s0_reduction(%x: !kernel.tensor<f32, 2>, %s: !kernel.tensor<f32, 1>) attributes {fuser.scheduler = "reduction"
// SPLIT:      kernel.func @sum_div_s1_pointwise(%z: !kernel.tensor<f32, 2>, %s: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 2>) attributes {fuser.scheduler = "pointwise"

// CUDA:     extern "C" __global__ void __launch_bounds__({{[0-9]+}}) sum_div_s0_reduction(Tensor<float, 2> x, Tensor<float, 1> s)
// CUDA:     extern "C" __global__ void __launch_bounds__({{[0-9]+}}) sum_div_s1_pointwise(Tensor<float, 2> z, Tensor<float, 1> s, Tensor<float, 2> y)
// CUDA-NOT: host.
