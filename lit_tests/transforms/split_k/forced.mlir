// `splits=N` forces the factor on every plain matmul, whatever the shapes (none are needed),
// even on a large one; `splits=1` never splits. A matmul that already carries `splits` is left
// alone, and the IR still verifies and round-trips.
// RUN: fuser-opt %s -p 'split-k{splits=3}' | filecheck %s
// RUN: fuser-opt %s -p 'split-k{splits=3}' | fuser-opt | filecheck %s
// RUN: fuser-opt %s -p 'split-k{splits=1 shapes="256x65536,65536x256,4096x4096"}' | filecheck %s --check-prefix=NEVER

fusion.fusion @two(%a: tensor<?x?xf16>, %b: tensor<?x?xf16>, %c: tensor<4096x4096xf16>) -> (tensor<?x?xf16>, tensor<4096x4096xf16>, tensor<2x4096x4096xf32>) {
  %ab = fusion.matmul %a, %b : tensor<?x?xf16>, tensor<?x?xf16> -> tensor<?x?xf16>
  %cc = fusion.matmul %c, %c : tensor<4096x4096xf16>, tensor<4096x4096xf16> -> tensor<4096x4096xf16>
  %done = fusion.matmul %c, %c splits(2) : tensor<4096x4096xf16>, tensor<4096x4096xf16> -> tensor<2x4096x4096xf32>
  fusion.output %ab, %cc, %done : tensor<?x?xf16>, tensor<4096x4096xf16>, tensor<2x4096x4096xf32>
}

// CHECK-LABEL: fusion.fusion @two
// CHECK-NEXT:    %ab_partial = fusion.matmul %a, %b splits(3) : tensor<?x?xf16>, tensor<?x?xf16> -> tensor<3x?x?xf32>
// CHECK-NEXT:    %ab_partials = fusion.segment_set %ab_partial : tensor<3x?x?xf32>
// CHECK-NEXT:    %ab_sum = fusion.sum %ab_partials [0] : tensor<3x?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %ab = fusion.cast %ab_sum : tensor<?x?xf32> -> tensor<?x?xf16>
// CHECK-NEXT:    %cc_partial = fusion.matmul %c, %c splits(3) : tensor<4096x4096xf16>, tensor<4096x4096xf16> -> tensor<3x4096x4096xf32>
// CHECK-NEXT:    %cc_partials = fusion.segment_set %cc_partial : tensor<3x4096x4096xf32>
// CHECK-NEXT:    %cc_sum = fusion.sum %cc_partials [0] : tensor<3x4096x4096xf32> -> tensor<4096x4096xf32>
// CHECK-NEXT:    %cc = fusion.cast %cc_sum : tensor<4096x4096xf32> -> tensor<4096x4096xf16>
// CHECK-NEXT:    %done = fusion.matmul %c, %c splits(2) : tensor<4096x4096xf16>, tensor<4096x4096xf16> -> tensor<2x4096x4096xf32>
// CHECK-NEXT:    fusion.output %ab, %cc, %done : tensor<?x?xf16>, tensor<4096x4096xf16>, tensor<2x4096x4096xf32>

// NEVER-LABEL: fusion.fusion @two
// NEVER-NEXT:    %ab = fusion.matmul %a, %b : tensor<?x?xf16>, tensor<?x?xf16> -> tensor<?x?xf16>
// NEVER-NEXT:    %cc = fusion.matmul %c, %c : tensor<4096x4096xf16>, tensor<4096x4096xf16> -> tensor<4096x4096xf16>
// NEVER-NEXT:    %done = fusion.matmul %c, %c splits(2)
