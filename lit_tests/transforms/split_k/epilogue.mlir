// A linear layer with bias and relu, as FusionDefinition writes it (bf16 math in f32 with casts
// around it): after split-K the epilogue reads the cast of the sum, so it follows the sum, past
// the segment_set, into the reduction's segment. `fusion.dim` of the matmul now reads the cast.
// RUN: fuser-opt %s -p 'split-k{shapes="256x65536,65536x256,256"}' | filecheck %s
// The segmenter then makes exactly two kernels: the partial matmul (its segment_set a plain set
// yielded at the boundary) and the reduction, which holds the sum, the cast and the epilogue.
// RUN: fuser-opt %s -p 'split-k{shapes="256x65536,65536x256,256"},fuser-segment{shapes="256x65536,65536x256,256"}' | filecheck %s --check-prefix=SEGMENTS

fusion.fusion @linear_relu(%t0: tensor<?x?xbf16>, %t1: tensor<?x?xbf16>, %t2: tensor<?xbf16>) -> tensor<?x?xbf16> {
  %t3 = fusion.matmul %t0, %t1 : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<?x?xbf16>
  %t3_size0 = fusion.dim %t3[0] : tensor<?x?xbf16>
  %t4 = fusion.broadcast_in_dim %t2 [1] sizes(%t3_size0) : tensor<?xbf16> -> tensor<?x?xbf16>
  %t5 = fusion.cast %t3 : tensor<?x?xbf16> -> tensor<?x?xf32>
  %t6 = fusion.cast %t4 : tensor<?x?xbf16> -> tensor<?x?xf32>
  %t7 = fusion.add %t5, %t6 : tensor<?x?xf32>
  %t8 = fusion.cast %t7 : tensor<?x?xf32> -> tensor<?x?xbf16>
  %t9 = fusion.cast %t8 : tensor<?x?xbf16> -> tensor<?x?xf32>
  %t10 = fusion.relu %t9 : tensor<?x?xf32>
  %t11 = fusion.cast %t10 : tensor<?x?xf32> -> tensor<?x?xbf16>
  fusion.output %t11 : tensor<?x?xbf16>
}

// CHECK-LABEL: fusion.fusion @linear_relu
// CHECK-NEXT:    %t3_partial = fusion.matmul %t0, %t1 splits(32) : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<32x?x?xf32>
// CHECK-NEXT:    %t3_partials = fusion.segment_set %t3_partial : tensor<32x?x?xf32>
// CHECK-NEXT:    %t3_sum = fusion.sum %t3_partials [0] : tensor<32x?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %t3 = fusion.cast %t3_sum : tensor<?x?xf32> -> tensor<?x?xbf16>
// CHECK-NEXT:    %t3_size0 = fusion.dim %t3[0] : tensor<?x?xbf16>
// CHECK-NEXT:    %t4 = fusion.broadcast_in_dim %t2 [1] sizes(%t3_size0) : tensor<?xbf16> -> tensor<?x?xbf16>
// CHECK-NEXT:    %t5 = fusion.cast %t3 : tensor<?x?xbf16> -> tensor<?x?xf32>
// CHECK-NEXT:    %t6 = fusion.cast %t4 : tensor<?x?xbf16> -> tensor<?x?xf32>
// CHECK-NEXT:    %t7 = fusion.add %t5, %t6 : tensor<?x?xf32>
// CHECK:         %t10 = fusion.relu %t9 : tensor<?x?xf32>
// CHECK-NEXT:    %t11 = fusion.cast %t10 : tensor<?x?xf32> -> tensor<?x?xbf16>
// CHECK-NEXT:    fusion.output %t11 : tensor<?x?xbf16>

// SEGMENTS-LABEL: fusion.fusion @linear_relu
// SEGMENTS-NEXT:    %t3_partials = fusion.segment "matmul" (%t0, %t1) : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> (tensor<32x?x?xf32>) {
// SEGMENTS-NEXT:    ^bb0(%[[A:.*]]: tensor<?x?xbf16>, %[[B:.*]]: tensor<?x?xbf16>):
// SEGMENTS-NEXT:      %t3_partial = fusion.matmul %[[A]], %[[B]] splits(32) : tensor<?x?xbf16>, tensor<?x?xbf16> -> tensor<32x?x?xf32>
// SEGMENTS-NEXT:      %[[P:.*]] = fusion.set %t3_partial : tensor<32x?x?xf32>
// SEGMENTS-NEXT:      fusion.yield %[[P]] : tensor<32x?x?xf32>
// SEGMENTS-NEXT:    }
// SEGMENTS-NEXT:    %t11 = fusion.segment "reduction" (%t2, %t3_partials) : (tensor<?xbf16>, tensor<32x?x?xf32>) -> (tensor<?x?xbf16>) {
// SEGMENTS:           %t3_sum = fusion.sum %{{.*}} [0] : tensor<32x?x?xf32> -> tensor<?x?xf32>
// SEGMENTS-NEXT:      %t3 = fusion.cast %t3_sum : tensor<?x?xf32> -> tensor<?x?xbf16>
// SEGMENTS:           %t7 = fusion.add %t5, %t6 : tensor<?x?xf32>
// SEGMENTS:           %t10 = fusion.relu %t9 : tensor<?x?xf32>
// SEGMENTS:           fusion.yield
// SEGMENTS-NEXT:    }
// SEGMENTS-NEXT:    fusion.output %t11 : tensor<?x?xbf16>
