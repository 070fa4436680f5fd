// matmul: 2-D and batched, static and dynamic dims, every allowed element type.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

fusion.fusion @mm2d(%a: tensor<3x127xf16>, %b: tensor<127x5xf16>, %c: tensor<1x1xbf16>, %d: tensor<1x1xbf16>) -> (tensor<3x5xf16>, tensor<1x1xbf16>) {
  %ab = fusion.matmul %a, %b : tensor<3x127xf16>, tensor<127x5xf16> -> tensor<3x5xf16>
  %cd = fusion.matmul %c, %d : tensor<1x1xbf16>, tensor<1x1xbf16> -> tensor<1x1xbf16>
  fusion.output %ab, %cd : tensor<3x5xf16>, tensor<1x1xbf16>
}

// CHECK-LABEL: fusion.fusion @mm2d
// CHECK-NEXT:    %ab = fusion.matmul %a, %b : tensor<3x127xf16>, tensor<127x5xf16> -> tensor<3x5xf16>
// CHECK-NEXT:    %cd = fusion.matmul %c, %d : tensor<1x1xbf16>, tensor<1x1xbf16> -> tensor<1x1xbf16>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "mm2d"
// CHECK-GENERIC:         %ab = "fusion.matmul"(%a, %b) : (tensor<3x127xf16>, tensor<127x5xf16>) -> tensor<3x5xf16>
// CHECK-GENERIC-NEXT:    %cd = "fusion.matmul"(%c, %d) : (tensor<1x1xbf16>, tensor<1x1xbf16>) -> tensor<1x1xbf16>

// Dynamic dims: M, K and N unknown; a static K on one side meets a dynamic K on the other, and
// a result may be more static than its operands.
fusion.fusion @dynamic(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x8xf64>, %d: tensor<?x3xf64>) -> (tensor<?x?xf32>, tensor<4x3xf64>) {
  %ab = fusion.matmul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %cd = fusion.matmul %c, %d : tensor<?x8xf64>, tensor<?x3xf64> -> tensor<4x3xf64>
  fusion.output %ab, %cd : tensor<?x?xf32>, tensor<4x3xf64>
}

// CHECK-LABEL: fusion.fusion @dynamic
// CHECK-NEXT:    %ab = fusion.matmul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %cd = fusion.matmul %c, %d : tensor<?x8xf64>, tensor<?x3xf64> -> tensor<4x3xf64>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "dynamic"
// CHECK-GENERIC:         %ab = "fusion.matmul"(%a, %b) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-GENERIC-NEXT:    %cd = "fusion.matmul"(%c, %d) : (tensor<?x8xf64>, tensor<?x3xf64>) -> tensor<4x3xf64>

// Batched: leading dims agree (or are dynamic), two batch dims.
fusion.fusion @batched(%a: tensor<7x3x127xbf16>, %b: tensor<?x127x5xbf16>, %c: tensor<2x?x4x8xf32>, %d: tensor<2x3x8x?xf32>) -> (tensor<7x3x5xbf16>, tensor<2x3x4x?xf32>) {
  %ab = fusion.matmul %a, %b : tensor<7x3x127xbf16>, tensor<?x127x5xbf16> -> tensor<7x3x5xbf16>
  %cd = fusion.matmul %c, %d : tensor<2x?x4x8xf32>, tensor<2x3x8x?xf32> -> tensor<2x3x4x?xf32>
  fusion.output %ab, %cd : tensor<7x3x5xbf16>, tensor<2x3x4x?xf32>
}

// CHECK-LABEL: fusion.fusion @batched
// CHECK-NEXT:    %ab = fusion.matmul %a, %b : tensor<7x3x127xbf16>, tensor<?x127x5xbf16> -> tensor<7x3x5xbf16>
// CHECK-NEXT:    %cd = fusion.matmul %c, %d : tensor<2x?x4x8xf32>, tensor<2x3x8x?xf32> -> tensor<2x3x4x?xf32>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "batched"
// CHECK-GENERIC:         %ab = "fusion.matmul"(%a, %b) : (tensor<7x3x127xbf16>, tensor<?x127x5xbf16>) -> tensor<7x3x5xbf16>
// CHECK-GENERIC-NEXT:    %cd = "fusion.matmul"(%c, %d) : (tensor<2x?x4x8xf32>, tensor<2x3x8x?xf32>) -> tensor<2x3x4x?xf32>

// Split-K partials: `splits(s)` leads the result with s, in the accumulator type.
fusion.fusion @partial(%a: tensor<2x?x96xbf16>, %b: tensor<2x96x?xbf16>, %c: tensor<7x5xf64>, %d: tensor<5x3xf64>) -> (tensor<4x2x?x?xf32>, tensor<3x7x3xf64>) {
  %ab = fusion.matmul %a, %b splits(4) : tensor<2x?x96xbf16>, tensor<2x96x?xbf16> -> tensor<4x2x?x?xf32>
  %cd = fusion.matmul %c, %d splits(3) : tensor<7x5xf64>, tensor<5x3xf64> -> tensor<3x7x3xf64>
  fusion.output %ab, %cd : tensor<4x2x?x?xf32>, tensor<3x7x3xf64>
}

// CHECK-LABEL: fusion.fusion @partial
// CHECK-NEXT:    %ab = fusion.matmul %a, %b splits(4) : tensor<2x?x96xbf16>, tensor<2x96x?xbf16> -> tensor<4x2x?x?xf32>
// CHECK-NEXT:    %cd = fusion.matmul %c, %d splits(3) : tensor<7x5xf64>, tensor<5x3xf64> -> tensor<3x7x3xf64>
// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "partial"
// CHECK-GENERIC:         %ab = "fusion.matmul"(%a, %b) <{splits = 4 : i64}> : (tensor<2x?x96xbf16>, tensor<2x96x?xbf16>) -> tensor<4x2x?x?xf32>
