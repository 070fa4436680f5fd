// A heads permute [b, s, h, d] -> [b, h, s, d] of a squeezed [b, s, 1, h, d] input keeps the
// innermost dim (d, stride 1): the pointwise scheduler reads it through both ops, 8-wide, and
// writes the output contiguous; the squeezed dim is indexed with 0.
// RUN: fuser-opt %s -p 'fuser-compile{shapes="2x128x1x16x64"}' | filecheck %s

fusion.fusion @heads(%x: tensor<?x?x1x?x?xbf16>) -> (tensor<?x?x?x?xbf16>) {
  %s = fusion.squeeze %x [2] : tensor<?x?x1x?x?xbf16> -> tensor<?x?x?x?xbf16>
  %p = fusion.permute %s [0, 2, 1, 3] : tensor<?x?x?x?xbf16> -> tensor<?x?x?x?xbf16>
  %f = fusion.cast %p : tensor<?x?x?x?xbf16> -> tensor<?x?x?x?xf32>
  %r = fusion.relu %f : tensor<?x?x?x?xf32>
  %y = fusion.cast %r : tensor<?x?x?x?xf32> -> tensor<?x?x?x?xbf16>
  fusion.output %y : tensor<?x?x?x?xbf16>
}

// CHECK:      host.launch @heads_s0_pointwise {{.*}} ins(%x : tensor<?x?x1x?x?xbf16>) outs(%y : tensor<?x?x?x?xbf16>)
// CHECK:      kernel.func @heads_s0_pointwise
// CHECK-SAME: fuser.scheduler = "pointwise"
// CHECK-SAME: vector_width=8
// CHECK:      kernel.load %x[%x_off] : !kernel.tensor<bf16, 5>, i32 -> vector<8xbf16>
