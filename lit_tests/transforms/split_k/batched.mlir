// Batch dims count in the output tiles and stay in the partials after the splits: a 2x3 batch of
// 128x128 bf16 outputs is 24 tiles of 64x64, 132 SMs (two such CTAs each) hold 11 chunks per
// tile, and 8 (chunks of 8192) is the largest factor down to 8 whose chunk is a multiple of the
// K-step. Static dims
// stay static.
// RUN: fuser-opt %s -p 'split-k{shapes="2x3x128x65536,2x3x65536x128"}' | filecheck %s
// A batch of 8x9 such matmuls is 288 tiles: they fill the GPU, left alone.
// RUN: fuser-opt %s -p 'split-k{shapes="8x9x128x65536,8x9x65536x128"}' | filecheck %s --check-prefix=FULL

fusion.fusion @batched(%a: tensor<?x?x128x?xbf16>, %b: tensor<?x?x?x128xbf16>) -> (tensor<?x?x128x128xbf16>) {
  %mm = fusion.matmul %a, %b : tensor<?x?x128x?xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x128x128xbf16>
  fusion.output %mm : tensor<?x?x128x128xbf16>
}

// CHECK-LABEL: fusion.fusion @batched
// CHECK-NEXT:    %mm_partial = fusion.matmul %a, %b splits(8) : tensor<?x?x128x?xbf16>, tensor<?x?x?x128xbf16> -> tensor<8x?x?x128x128xf32>
// CHECK-NEXT:    %mm_partials = fusion.segment_set %mm_partial : tensor<8x?x?x128x128xf32>
// CHECK-NEXT:    %mm_sum = fusion.sum %mm_partials [0] : tensor<8x?x?x128x128xf32> -> tensor<?x?x128x128xf32>
// CHECK-NEXT:    %mm = fusion.cast %mm_sum : tensor<?x?x128x128xf32> -> tensor<?x?x128x128xbf16>
// CHECK-NEXT:    fusion.output %mm : tensor<?x?x128x128xbf16>

// FULL:     %mm = fusion.matmul %a, %b : tensor<?x?x128x?xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x128x128xbf16>
// FULL-NOT: splits
