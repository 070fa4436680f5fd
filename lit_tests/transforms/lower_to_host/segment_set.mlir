// Host lowering of a fusion split by two segment_sets: three launches in order, each
// intermediate allocated before the launch that writes it and freed after the last launch that
// reads it; %t is an output and stays. Every extent is a host.dim of %x.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="1024x1024,1024x1024"},fuser-lower-host' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-segment{shapes="1024x1024,1024x1024"},fuser-lower-host' -t cuda | filecheck %s --check-prefix=CUDA

fusion.fusion @forced(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %a = fusion.add %x, %y : tensor<?x?xf32>
  %e = fusion.exp %a : tensor<?x?xf32>
  %s1 = fusion.segment_set %e : tensor<?x?xf32>
  %m = fusion.mul %s1, %x : tensor<?x?xf32>
  %t = fusion.tanh %m : tensor<?x?xf32>
  %s2 = fusion.segment_set %t : tensor<?x?xf32>
  %n = fusion.neg %s2 : tensor<?x?xf32>
  fusion.output %n, %t : tensor<?x?xf32>, tensor<?x?xf32>
}

// CHECK:      host.program @forced(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {fuser.shapes = "1024x1024,1024x1024"} {
// CHECK-NEXT:   %x_d0 = host.dim %x[0] : tensor<?x?xf32>
// CHECK-NEXT:   %x_d1 = host.dim %x[1] : tensor<?x?xf32>
// CHECK-NEXT:   %s1 = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:        host.launch @forced_s0_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%x, %y : tensor<?x?xf32>, tensor<?x?xf32>) outs(%s1 : tensor<?x?xf32>)
// CHECK-NEXT:   %t = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK-NEXT:   %s2 = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:        host.launch @forced_s1_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%x, %s1 : tensor<?x?xf32>, tensor<?x?xf32>) outs(%t, %s2 : tensor<?x?xf32>, tensor<?x?xf32>)
// CHECK-NEXT:   host.deallocate %s1 : tensor<?x?xf32>
// CHECK-NEXT:   %n = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:        host.launch @forced_s2_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%s2 : tensor<?x?xf32>) outs(%n : tensor<?x?xf32>)
// CHECK-NEXT:   host.deallocate %s2 : tensor<?x?xf32>
// CHECK-NEXT:   host.return %n, %t : tensor<?x?xf32>, tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: kernel.func @forced_s0_pointwise(%x: !kernel.tensor<f32, 2>, %y: !kernel.tensor<f32, 2>, %s1: !kernel.tensor<f32, 2>)
// CHECK:      kernel.func @forced_s1_pointwise(%x: !kernel.tensor<f32, 2>, %s1: !kernel.tensor<f32, 2>, %t: !kernel.tensor<f32, 2>, %s2: !kernel.tensor<f32, 2>)
// CHECK:      kernel.func @forced_s2_pointwise(%s2: !kernel.tensor<f32, 2>, %n: !kernel.tensor<f32, 2>)
// CHECK-NOT:  fusion.{{fusion|segment}}

// CUDA-COUNT-3: extern "C" __global__ void __launch_bounds__({{[0-9]+}}) forced_s{{[0-2]}}_pointwise(
// CUDA-NOT:     host.
