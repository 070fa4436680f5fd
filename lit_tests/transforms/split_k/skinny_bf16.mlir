// A skinny bf16 matmul with a long K: [256, 65536] x [65536, 256] has 8 output tiles of 64x128
// (the matmul scheduler's tile for it, two CTAs per SM) on 132 SMs: 33 partials per tile fill
// the wave, and 32 cuts K into chunks of 2048, a multiple of the K-step (64 on Hopper's wgmma
// tiles, 32 on mma.sync's: the same factor on an A100, as the SM80 run shows). The
// partial matmul writes f32 partials, the segment_set is the kernel boundary, the sum over axis
// 0 completes the product and the cast rounds it once to bf16, under the matmul's own name.
// (The factors here follow `matmul_tiles.matmul_tile`; they change with its tiles.)
// RUN: fuser-opt %s -p 'split-k{shapes="256x65536,65536x256"}' | filecheck %s
// RUN: fuser-opt %s -p 'split-k{shapes="256x65536,65536x256" arch=sm_80}' | filecheck %s
// A large square matmul already fills the GPU (512 tiles of 128x256): left alone.
// RUN: fuser-opt %s -p 'split-k{shapes="4096x4096,4096x4096"}' | filecheck %s --check-prefix=SQUARE
// A short K cannot give two chunks of 4 K-steps of 64: left alone.
// RUN: fuser-opt %s -p 'split-k{shapes="256x255,255x256"}' | filecheck %s --check-prefix=SQUARE
// 128x32768x128 is 4 tiles: 66 fill the wave, 64 gives chunks of 512, a multiple of the K-step.
// RUN: fuser-opt %s -p 'split-k{shapes="128x32768,32768x128"}' | filecheck %s --check-prefix=FOUR-TILES
// A device of 64 SMs holds 16 chunks per tile.
// RUN: fuser-opt %s -p 'split-k{shapes="256x65536,65536x256" sm_count=64}' | filecheck %s --check-prefix=SMALL-GPU

fusion.fusion @skinny(%a: tensor<?x?xbf16>, %b: tensor<?x?xbf16>) -> (tensor<?x?xbf16>) {
  %mm = fusion.matmul %a, %b : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xbf16>
  fusion.output %mm : tensor<?x?xbf16>
}

// CHECK-LABEL: fusion.fusion @skinny(%a: tensor<?x?xbf16>, %b: tensor<?x?xbf16>) -> tensor<?x?xbf16> {
// CHECK-NEXT:    %mm_partial = fusion.matmul %a, %b splits(32) : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<32x?x?xf32>
// CHECK-NEXT:    %mm_partials = fusion.segment_set %mm_partial : tensor<32x?x?xf32>
// CHECK-NEXT:    %mm_sum = fusion.sum %mm_partials [0] : tensor<32x?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %mm = fusion.cast %mm_sum : tensor<?x?xf32> -> tensor<?x?xbf16>
// CHECK-NEXT:    fusion.output %mm : tensor<?x?xbf16>
// CHECK-NEXT:  }

// SQUARE-LABEL: fusion.fusion @skinny
// SQUARE-NEXT:    %mm = fusion.matmul %a, %b : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xbf16>
// SQUARE-NEXT:    fusion.output %mm : tensor<?x?xbf16>
// SQUARE-NOT:     splits
// SQUARE-NOT:     fusion.segment_set

// FOUR-TILES:      %mm_partial = fusion.matmul %a, %b splits(64) : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<64x?x?xf32>
// FOUR-TILES-NEXT: %mm_partials = fusion.segment_set %mm_partial : tensor<64x?x?xf32>
// FOUR-TILES-NEXT: %mm_sum = fusion.sum %mm_partials [0] : tensor<64x?x?xf32> -> tensor<?x?xf32>

// SMALL-GPU: %mm_partial = fusion.matmul %a, %b splits(16) : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<16x?x?xf32>
