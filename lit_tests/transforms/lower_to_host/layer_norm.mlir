// Host lowering of the bundled layer norm: one persistent segment, so one launch; its three
// results are outputs (allocated before the launch, never freed by the program). The kernel is
// the only thing the CUDA target prints.
// RUN: fuser-opt %S/../../../examples/layer_norm.mlir -p 'fuser-segment{shapes="4096x1024,1024,1024"},fuser-lower-host' | filecheck %s
// RUN: fuser-opt %S/../../../examples/layer_norm.mlir -p 'fuser-segment{shapes="4096x1024,1024,1024"},fuser-lower-host' -t cuda | filecheck %s --check-prefix=CUDA

// CHECK:      host.program @layer_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>, %b: tensor<?xbf16>) -> (tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>) attributes {fuser.shapes = "4096x1024,1024,1024"} {
// CHECK-NEXT:   %x_d0 = host.dim %x[0] : tensor<?x?xbf16>
// CHECK-NEXT:   %x_d1 = host.dim %x[1] : tensor<?x?xbf16>
// CHECK-NEXT:   %y = host.allocate(%x_d0, %x_d1) : tensor<?x?xbf16>
// CHECK-NEXT:   %mean = host.allocate(%x_d0) : tensor<?xf32>
// CHECK-NEXT:   %invstd = host.allocate(%x_d0) : tensor<?xf32>
// CHECK:        host.launch @layer_norm_s0_persistent grid({{.*}}) block [{{.*}}] smem {{[0-9]+}} ins(%x, %w, %b : tensor<?x?xbf16>, tensor<?xbf16>, tensor<?xbf16>) outs(%y, %mean, %invstd : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>)
// CHECK-NOT:    host.deallocate
// CHECK:        host.return %y, %mean, %invstd : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: kernel.func @layer_norm_s0_persistent(%x: !kernel.tensor<bf16, 2>, %w: !kernel.tensor<bf16, 1>, %b: !kernel.tensor<bf16, 1>, %y: !kernel.tensor<bf16, 2>, %mean: !kernel.tensor<f32, 1>, %invstd: !kernel.tensor<f32, 1>)
// CHECK-SAME: fuser.scheduler = "persistent"

// CUDA:      extern "C" __global__ void __launch_bounds__({{[0-9]+}}) layer_norm_s0_persistent(Tensor<__nv_bfloat16, 2> x, Tensor<__nv_bfloat16, 1> w, Tensor<__nv_bfloat16, 1> b, Tensor<__nv_bfloat16, 2> y, Tensor<float, 1> mean, Tensor<float, 1> invstd)
// CUDA-NOT:  host.
