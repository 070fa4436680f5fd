// fusion.rand and fusion.randn: random numbers of a static or dynamic shape under a seed and an
// offset (i64 scalars); one `index` size per dynamic dim.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP

fusion.fusion @draws(%x: tensor<?x3xf32>, %seed: i64, %offset: i64) -> (tensor<?x3xf32>, tensor<2x5xf64>) {
  %n = fusion.dim %x[0] : tensor<?x3xf32>
  %u = fusion.rand %seed, %offset sizes(%n) : tensor<?x3xf32>
  %z = fusion.randn %seed, %offset : tensor<2x5xf64>
  %y = fusion.add %x, %u : tensor<?x3xf32>
  fusion.output %y, %z : tensor<?x3xf32>, tensor<2x5xf64>
}

// CHECK-LABEL: fusion.fusion @draws
// CHECK-NEXT:    %n = fusion.dim %x[0] : tensor<?x3xf32>
// CHECK-NEXT:    %u = fusion.rand %seed, %offset sizes(%n) : tensor<?x3xf32>
// CHECK-NEXT:    %z = fusion.randn %seed, %offset : tensor<2x5xf64>
