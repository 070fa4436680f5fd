// f32 operands need no cast: the f32 sum is the result. f64 operands keep f64 partials and sum.
// The SIMT tiles are 64x64 with K-steps of 16 (f32) and 8 (f64).
// 256x256 outputs are 16 tiles: 132 SMs hold 8 chunks per tile. For f32, K = 65536 gives chunks
// of 8192; for f64, K = 100000 gives chunks of 12500, a multiple of 16 bytes but not of a K-step
// (neither are 100000 / 7 or / 6, the aligned factors 8 may fall back to).
// RUN: fuser-opt %s -p 'split-k{shapes="256x65536,65536x256,256x100000,100000x256"}' | filecheck %s
// 64x64 outputs are one tile. f32 with K = 65536: 132 fill the wave, 128 gives chunks of 512.
// f64 with K = 1000: 31 chunks of 4 K-steps of 8 at most; 25 is the largest factor down to 21
// whose chunk (40) is a multiple of a K-step.
// RUN: fuser-opt %s -p 'split-k{shapes="64x65536,65536x64,64x1000,1000x64"}' | filecheck %s --check-prefix=ONE-TILE

fusion.fusion @simt(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf64>, %d: tensor<?x?xf64>) -> (tensor<?x?xf32>, tensor<?x?xf64>) {
  %ab = fusion.matmul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %cd = fusion.matmul %c, %d : tensor<?x?xf64>, tensor<?x?xf64> -> tensor<?x?xf64>
  fusion.output %ab, %cd : tensor<?x?xf32>, tensor<?x?xf64>
}

// CHECK-LABEL: fusion.fusion @simt
// CHECK-NEXT:    %ab_partial = fusion.matmul %a, %b splits(8) : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<8x?x?xf32>
// CHECK-NEXT:    %ab_partials = fusion.segment_set %ab_partial : tensor<8x?x?xf32>
// CHECK-NEXT:    %ab = fusion.sum %ab_partials [0] : tensor<8x?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %cd_partial = fusion.matmul %c, %d splits(8) : tensor<?x?xf64>, tensor<?x?xf64> -> tensor<8x?x?xf64>
// CHECK-NEXT:    %cd_partials = fusion.segment_set %cd_partial : tensor<8x?x?xf64>
// CHECK-NEXT:    %cd = fusion.sum %cd_partials [0] : tensor<8x?x?xf64> -> tensor<?x?xf64>
// CHECK-NEXT:    fusion.output %ab, %cd : tensor<?x?xf32>, tensor<?x?xf64>
// CHECK-NOT:     fusion.cast

// ONE-TILE: %ab_partial = fusion.matmul %a, %b splits(128) : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<128x?x?xf32>
// ONE-TILE: %ab = fusion.sum %ab_partials [0] : tensor<128x?x?xf32> -> tensor<?x?xf32>
// ONE-TILE: %cd_partial = fusion.matmul %c, %d splits(25) : tensor<?x?xf64>, tensor<?x?xf64> -> tensor<25x?x?xf64>
// ONE-TILE: %cd = fusion.sum %cd_partials [0] : tensor<25x?x?xf64> -> tensor<?x?xf64>
