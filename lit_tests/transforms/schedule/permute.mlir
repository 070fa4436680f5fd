// Kernels index their inputs through permute and squeeze. gelu(x^T + b), x [2048, 4096]: the
// permuted x changes its innermost dim against the output's, so the transpose scheduler takes
// it and the kernel reads x itself (no copy), staged through shared memory. A heads permute
// [b, s, h, d] -> [b, h, s, d] keeps the innermost dim: the pointwise scheduler, vectorized.
// A squeezed dim is indexed with 0.
// RUN: fuser-opt %s -p 'fuser-compile{shapes="2048x4096,2048"}' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-compile{shapes="2048x4096,2048"}' -t cuda | filecheck %s --check-prefix=CUDA

fusion.fusion @gelu_t(%x: tensor<?x?xf32>, %b: tensor<?xf32>) -> (tensor<?x?xf32>) {
  %xt = fusion.permute %x [1, 0] : tensor<?x?xf32> -> tensor<?x?xf32>
  %n = fusion.dim %xt[0] : tensor<?x?xf32>
  %bb = fusion.broadcast_in_dim %b [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %s = fusion.add %xt, %bb : tensor<?x?xf32>
  %y = fusion.gelu %s tanh : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// CHECK:      host.launch @gelu_t_s0_transpose {{.*}} ins(%x, %b : tensor<?x?xf32>, tensor<?xf32>) outs(%y : tensor<?x?xf32>)
// CHECK:      kernel.func @gelu_t_s0_transpose
// CHECK-SAME: fuser.scheduler = "transpose"
// CHECK-SAME: staged=(0,)

// CUDA: __shared__
