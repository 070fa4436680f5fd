// A linear layer, a [M, K] @ permute(w [N, K]): the matmul scheduler reads the weight as its
// transpose in place (`kernel.transposed` swaps the last two sizes and strides), so no kernel
// copies it; the bias is added in the epilogue.
// RUN: fuser-opt %s -p 'fuser-compile{shapes="128x64,32x64,32"}' | filecheck %s

fusion.fusion @linear(%a: tensor<?x64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>) -> (tensor<?x32xbf16>) {
  %wt = fusion.permute %w [1, 0] : tensor<32x64xbf16> -> tensor<64x32xbf16>
  %c = fusion.matmul %a, %wt : tensor<?x64xbf16>, tensor<64x32xbf16> -> tensor<?x32xbf16>
  %m = fusion.dim %c[0] : tensor<?x32xbf16>
  %bb = fusion.broadcast_in_dim %b [1] sizes(%m) : tensor<32xbf16> -> tensor<?x32xbf16>
  %cf = fusion.cast %c : tensor<?x32xbf16> -> tensor<?x32xf32>
  %bf = fusion.cast %bb : tensor<?x32xbf16> -> tensor<?x32xf32>
  %s = fusion.add %cf, %bf : tensor<?x32xf32>
  %y = fusion.cast %s : tensor<?x32xf32> -> tensor<?x32xbf16>
  fusion.output %y : tensor<?x32xbf16>
}

// CHECK:      host.launch @linear_s0_matmul {{.*}} ins(%a, %w, %b : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>)
// CHECK:      kernel.func @linear_s0_matmul
// CHECK:      %w_t = kernel.transposed %w : !kernel.tensor<bf16, 2>
// CHECK:      kernel.matmul_mainloop %acc, %a[{{.*}}], %w_t[{{.*}}]
