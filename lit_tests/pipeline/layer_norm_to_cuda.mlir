// The whole single-kernel pipeline on the bundled example: schedule it for concrete shapes, then
// print the kernel as CUDA. Each step is visible on its own.
// RUN: fuser-opt %S/../../examples/layer_norm.mlir -p 'fuser-schedule{shapes="4096x1024,1024,1024"}' | filecheck %s --check-prefix=IR
// RUN: fuser-opt %S/../../examples/layer_norm.mlir -p 'fuser-schedule{shapes="4096x1024,1024,1024"}' -t cuda | filecheck %s --check-prefix=CUDA

// IR:      fusion.fusion @layer_norm
// IR:      kernel.func @layer_norm_persistent(%x: !kernel.tensor<bf16, 2>, %w: !kernel.tensor<bf16, 1>, %b: !kernel.tensor<bf16, 1>, %{{.*}}: !kernel.tensor<bf16, 2>, %{{.*}}: !kernel.tensor<f32, 1>, %{{.*}}: !kernel.tensor<f32, 1>)
// IR-SAME: fuser.scheduler = "persistent"
// IR:      kernel.{{warp|block}}_{{reduce|welford}}

// CUDA:      #include <cuda_bf16.h>
// CUDA:      extern "C" __global__ void __launch_bounds__({{[0-9]+}}) layer_norm_persistent(Tensor<__nv_bfloat16, 2> x, Tensor<__nv_bfloat16, 1> w, Tensor<__nv_bfloat16, 1> b,
// CUDA:      // {{.*}}fusion.var_mean
// CUDA:      fuser::{{warp|block}}_{{reduce|welford}}
// CUDA-NOT:  fusion.fusion
